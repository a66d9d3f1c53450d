// The whole GPU memory hierarchy, wired in ONE place from a GpuConfig (a YAML preset):
//
//   TrafficGenerator sm[i] --> Crossbar (ports 0..sms-1, extra initiators after) --> L2Slice l2[s]
//        --> MemoryController mc[c] (one per DRAM channel, HBM/GDDR timing)
//   L2Slice l2[s] --DMI--> BackingStore (functional data: what is written is read back)
//
// Loosely timed TLM-2.0: b_transport with annotated delays, tlm_quantumkeeper in each SM, per-resource
// busy-until reservations (crossbar ports, L2 data arrays, MSHRs, DRAM banks and data buses).
// Only one GpuSystem may exist per process and it must be built before the first run() (SystemC
// elaborates once per process). Time is never reset: consecutive run() calls continue in time.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <systemc>
#include <tlm>

#include "spartan/hw/address_map.h"
#include "spartan/hw/gpu_config.h"
#include "spartan/hw/stats.h"
#include "spartan/hw/gpu/backing_store.h"  // backing_store() is part of the API: complete type
#include "spartan/hw/gpu/request.h"

namespace spartan::hw::gpu {

class TrafficGenerator;
class SmScheduler;
class Crossbar;
class L2Slice;
class MemoryController;

/// Timing of one run() ("kernel"): first issue to last completion over all SMs.
struct KernelResult {
  ps_t start_ps = 0, end_ps = 0;
  std::uint64_t requests = 0, bytes_read = 0, bytes_written = 0;
  LatencyHistogram latency_ps;  ///< per-request issue -> completion, all SMs
  double seconds() const { return double(end_ps - start_ps) * 1e-12; }
  double bytes_per_s() const { return end_ps > start_ps ? double(bytes_read + bytes_written) / seconds() : 0; }
};

class GpuSystem {
 public:
  /// The builder: creates and binds every module for `cfg`, registers all stats. Throws ConfigError.
  explicit GpuSystem(const GpuConfig& cfg);
  /// Loads `name_or_path` (preset name or YAML path, see load_gpu_config) and builds it.
  static std::unique_ptr<GpuSystem> from_preset(const std::string& name_or_path);
  ~GpuSystem();
  GpuSystem(const GpuSystem&) = delete;
  GpuSystem& operator=(const GpuSystem&) = delete;

  const GpuConfig& config() const { return cfg_; }
  const AddressMap& address_map() const { return map_; }
  StatsRegistry& stats() { return stats_; }

  /// SM-side initiators. TrafficGenerator::read()/write() issue one access from the calling SC_THREAD and
  /// return the annotated completion time; run() drives all SMs from RequestSources.
  std::size_t num_sms() const { return sms_.size(); }
  TrafficGenerator& sm(std::size_t i) { return *sms_.at(i); }

  std::size_t num_l2_slices() const { return l2_.size(); }
  L2Slice& l2_slice(std::size_t i) { return *l2_.at(i); }
  /// Attaches `obs` to the write path of slice `slice` (the SparsityMonitor: one per slice).
  void add_l2_write_observer(std::size_t slice, L2WriteObserver& obs);

  std::size_t num_memory_controllers() const { return mcs_.size(); }
  MemoryController& memory_controller(std::size_t i) { return *mcs_.at(i); }

  /// Functional memory (sparse pages). Direct read/write for test setup and result checks (no timing).
  BackingStore& backing_store() { return *store_; }

  /// Binds an extra initiator (e.g. the CompactionEngine) into the crossbar as one more port with the
  /// crossbar's latency and `port_bytes_per_cycle` bytes per crossbar cycle in each direction (0: an SM
  /// port's width, the preset's crossbar.port_bytes_per_cycle); `name` labels its stats. Call before the
  /// first run(). Its requests must not cross an L2 line.
  void bind_extra_initiator(tlm::tlm_initiator_socket<>& socket, const std::string& name,
                            std::uint32_t port_bytes_per_cycle = 0);

  /// Runs one "kernel": SM i drains sources[i] (nullptr or missing: idle), then returns when the whole
  /// simulation is idle (every SC_THREAD blocked; other modules' threads run too). Throws std::logic_error
  /// if more sources than SMs are given.
  KernelResult run(const std::vector<RequestSource*>& sources);
  /// Runs the simulation until idle without starting SMs (for modules driving their own traffic).
  void run_until_idle();
  /// Advances simulated time by `ps` (nothing must be running).
  void advance(ps_t ps);
  /// Writes back every dirty L2 line and invalidates all lines, then advances time until the last
  /// writeback is done in DRAM; returns that time (ps). Gives the next kernel a cold, idle hierarchy.
  ps_t flush_l2();
  /// Advances time (nothing must be running) to the first multiple of the DRAM refresh interval tREFI that
  /// lies at least one tREFI ahead: every channel has refreshed since (all rows closed) and the refresh
  /// phase is the same whatever ran before; the crossbar's and DRAM channels' calendars are rebased there
  /// (their bins counted from it) and no write drain is open. With flush_l2() first, work started there sees
  /// the same hierarchy state and times at any point of a run. Without refresh (tREFI 0) time stays and only
  /// the calendars are rebased (open rows stay open). Nothing may be running. Returns the time.
  ps_t align_to_refresh();
  /// Current simulated time in ps.
  ps_t now_ps() const;

  /// Stats of every component and totals as JSON; written atomically by write_stats_json().
  nlohmann::json stats_json() const { return stats_.to_json(); }
  void write_stats_json(const std::string& file) const { stats_.write_json(file); }

 private:
  GpuConfig cfg_;
  AddressMap map_;
  StatsRegistry stats_;
  std::unique_ptr<BackingStore> store_;
  std::unique_ptr<Crossbar> xbar_;
  std::vector<std::unique_ptr<TrafficGenerator>> sms_;
  std::unique_ptr<SmScheduler> sched_;
  std::vector<std::unique_ptr<L2Slice>> l2_;
  std::vector<std::unique_ptr<MemoryController>> mcs_;
};

}  // namespace spartan::hw::gpu
