// Lockstep scoreboard of the sparsity monitor: the RTL (Verilated, behind its TLM transactors,
// MonitorRtlSc) and the TLM model (hw::SparsityMonitor) receive the same MMIO programming and the same
// write-request stream; the per-tile counts their flushes add into memory must be equal, as must the
// LINES_* / MATCHED / TILES registers; counting and flush cycles are reported side by side.
// Requires the TLM units (spartan_hw_units). All run_* calls must come from one SC_THREAD.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <systemc>

#include "spartan/hw/sparsity_monitor.h"

namespace spartan::rtl {

/// One monitored matrix (a region): raw element bytes, row-major with the given row pitch.
struct LockstepMatrix {
  const std::uint8_t* data = nullptr;
  std::uint32_t rows = 0, cols = 0, row_pitch_bytes = 0;
  unsigned dtype = 0;                     ///< 0 F32, 1 F16, 2 BF16
  std::uint32_t tile_rows = 32, tile_cols = 32;
};

/// The write-request stream both models see (one request offered per cycle, in the order below).
enum class LockstepStimulus {
  /// Whole 128 B lines (partial at the region's ends) in address order: one producer streaming the tensor.
  kLines,
  /// 32 B sectors (the L2's write granularity, docs/gpu-model.md) in a seeded random order: the writes of many
  /// SMs interleaved at an L2 slice. Counts must not depend on the order; the counting cost per request does
  /// (one row segment per request, but 4x the requests).
  kShuffledSectors,
  /// The requests given to run() (`given`), in their order: e.g. the writes the replay's L2 slices delivered
  /// to their monitors (`spartan-sim run --rtl`).
  kGiven,
};

/// One write request of a given stream: `len` bytes at byte `offset` of the region (inside one 128 B line).
struct LockstepRequest {
  std::uint64_t offset = 0;
  std::uint32_t len = 0;
};

struct LockstepResult {
  std::uint64_t tiles = 0, requests = 0;
  std::uint64_t count_mismatches = 0;     ///< tiles whose flushed counts differ (must be 0)
  std::uint64_t register_mismatches = 0;  ///< statistics registers / MMIO responses that differ (must be 0)
  std::uint64_t stray_writes = 0;         ///< memory writes of either model outside the job's count table (must be 0)
  double tlm_count_cycles = 0, rtl_count_cycles = 0;  ///< cycles to take the whole request stream
  std::uint32_t tlm_flush_cycles = 0, rtl_flush_cycles = 0;
  /// With set_completion(): both flushes ended with the completion counter's add (COMPL_PTR); the counter
  /// words after the flush (each model's memory; they must be equal and one more than before).
  bool completion_counted = false;
  std::uint32_t tlm_counter = 0, rtl_counter = 0;
  std::uint64_t completion_mismatches = 0;  ///< counter words that differ or did not go up by one (must be 0)
  std::uint64_t rtl_cycles_total = 0;     ///< RTL clock cycles simulated for this job (MMIO, counting, flush)
  double wall_seconds = 0;
};

class MonitorLockstep {
 public:
  /// Elaborates a TLM monitor, the RTL monitor and one functional memory each (call before sc_start).
  MonitorLockstep(const std::string& name, double clock_mhz);
  ~MonitorLockstep();
  /// The configuration of the TLM monitor the RTL is compared with: the RTL's parameters (CAPACITY,
  /// one line and one flush group per cycle, its flush window) at `clock_mhz`. A replay whose monitors differ in
  /// a field the RTL implements is not the model this lockstep validates (`spartan-sim run --rtl` refuses it).
  static hw::MonitorConfig tlm_config(double clock_mhz);
  /// Programs region 0 of both for `m` (sampling shift s), clears, writes the matrix as `stimulus` says (one
  /// request offered per cycle; `seed` orders the shuffled sectors), flushes both and compares. Call from an
  /// SC_THREAD.
  /// With kGiven, `given` holds the requests (each inside the region and inside one line; std::invalid_argument
  /// otherwise); it is ignored for the other stimuli.
  LockstepResult run(const LockstepMatrix& m, unsigned sample_shift = 0,
                     LockstepStimulus stimulus = LockstepStimulus::kLines, std::uint64_t seed = 1,
                     const std::vector<LockstepRequest>& given = {});
  /// From the next run() on, both models' COMPL_PTR (regmap monitor) = `ptr` (4-byte aligned; 0: off, the
  /// default): each flush then ends with the completion counter's add, compared in LockstepResult. `ptr` must lie
  /// outside the count tables (the lockstep's memories are its own).
  void set_completion(std::uint64_t ptr);
  /// VCD of RTL cycles [from, to) counted from the first run (call before the first run); a window past the last
  /// cycle run (up to 2^64 - 1) dumps to the end.
  void wave(const std::string& path, std::uint64_t from, std::uint64_t to);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace spartan::rtl
