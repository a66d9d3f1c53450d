// Calibration microbenchmarks of the GPU model (what `spartan-sim microbench` prints and the tests check):
// streaming read / write / copy bandwidth against the DRAM peak, random sector reads (bound by the DRAM's ACT
// constraints: tRRD, tFAW, tRC), pointer-chase latency (L2 hit and DRAM)
// in core cycles, and the L2 footprint sweep (hit rate vs working set, whose knee should sit at the L2 size).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "spartan/hw/gpu/gpu_system.h"

namespace spartan::hw::gpu {

struct MicrobenchOptions {
  double stream_l2_multiple = 8;  ///< streaming footprint = this x L2 size (at least 16 MiB)
  /// random_read: reads of one L2 sector each, over 64 x the L2 size (nearly every one a DRAM row miss)
  std::uint64_t random_requests = 1u << 18;
  std::vector<double> sweep_fractions = {0.25, 0.5, 0.75, 0.85, 0.9, 0.95, 1.0, 1.05, 1.1, 1.25, 1.5, 2.0};
  std::uint32_t sweep_passes = 2;   ///< measured passes after one warm-up pass
  std::uint64_t chase_steps = 1024;
  bool stream = true, chase = true, sweep = true;
};

struct BandwidthResult {
  std::string kernel;           ///< "stream_read", "stream_write", "copy", "random_read"
  std::uint64_t bytes = 0;      ///< bytes moved to/from DRAM by the kernel (copy: read + written; random_read: the
                                ///< sectors requested)
  double seconds = 0;           ///< simulated, first issue -> last DRAM write done
  double bytes_per_s = 0, peak_bytes_per_s = 0;
  double fraction_of_peak() const { return peak_bytes_per_s > 0 ? bytes_per_s / peak_bytes_per_s : 0; }
};

struct LatencyResult {
  double l2_hit_core_cycles = 0;  ///< mean dependent-load latency, working set in L2
  double dram_core_cycles = 0;    ///< mean dependent-load latency, every load a cold miss
  double dram_p95_core_cycles = 0;
  std::uint64_t samples = 0;
};

struct SweepPoint {
  std::uint64_t working_set_bytes = 0;
  double hit_rate = 0;  ///< L2 read hit rate over the measured passes
};

struct MicrobenchReport {
  std::string gpu;
  std::string gpu_file;  ///< the preset file it was loaded from (absolute path; GpuConfig::file)
  double peak_bytes_per_s = 0;
  std::uint64_t l2_size_bytes = 0;
  std::vector<BandwidthResult> bandwidth;
  LatencyResult latency;
  std::vector<SweepPoint> sweep;
  double knee_bytes = 0;  ///< working set where the hit rate crosses 50% (0 if it never does)
  double sim_seconds_wall = 0;
  std::uint64_t line_transactions = 0;
  /// JSON of the groups that ran: `bandwidth` (stream), `latency` (chase), `l2_sweep` + `l2_knee_bytes` +
  /// `l2_knee_over_size` (sweep; the knee is null when the hit rate never falls below 50 %).
  nlohmann::json to_json() const;
  /// Human-readable report, with the preset's latency parameters beside the measured latencies.
  std::string to_text(const GpuConfig& cfg) const;
};

/// Runs the selected microbenchmarks, one after the other, on `gpu` (each from a flushed L2).
MicrobenchReport run_microbench(GpuSystem& gpu, const MicrobenchOptions& opt = {});
/// Working-set size where the hit rate first falls below 0.5, linearly interpolated (0 if never).
double find_knee(const std::vector<SweepPoint>& sweep);

}  // namespace spartan::hw::gpu
