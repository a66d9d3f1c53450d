// Traffic generators standing for the SMs: each issues line-granular read/write generic payloads (with real
// data) into its crossbar port. Memory-level parallelism: up to max_outstanding_lines requests in flight,
// one issue per issue_interval_cycles core cycles; when max_outstanding_lines are in flight the next
// request waits for the earliest of them to complete (out-of-order returns, as with many warps). No sc_event per transaction.
#pragma once
#include <cstdint>
#include <vector>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/tlm_quantumkeeper.h>

#include "spartan/hw/address_map.h"
#include "spartan/hw/gpu/min_heap.h"
#include "spartan/hw/gpu/sorted_queue.h"
#include "spartan/hw/gpu/request.h"
#include "spartan/hw/gpu_config.h"
#include "spartan/hw/stats.h"

namespace spartan::hw::gpu {

class Crossbar;

struct SmStats {
  std::uint64_t reads = 0, writes = 0, bytes_read = 0, bytes_written = 0;
  std::uint64_t errors = 0;  ///< requests answered with a TLM error response
  LatencyHistogram latency_ps;  ///< issue -> completion of each line request
  void register_with(StatsGroup& g) const;
};

/// Per-kernel summary of one SM (reset at each begin()).
struct SmKernelStats {
  ps_t first_issue_ps = 0, last_done_ps = 0;
  std::uint64_t requests = 0, bytes_read = 0, bytes_written = 0;
  LatencyHistogram latency_ps;
  bool active = false;
};

/// One SM's initiator (its own crossbar port) and its kernel state. It has no thread of its own: the
/// SmScheduler drives all SMs of the GPU from one SC_THREAD, always advancing the SM whose next issue is
/// earliest, so requests reach the memory system in (nearly) global time order with no context switch
/// per SM (the "one generator per SM cluster" option: here the cluster is the whole GPU).
class TrafficGenerator : public sc_core::sc_module {
 public:
  tlm_utils::simple_initiator_socket<TrafficGenerator> socket;

  TrafficGenerator(sc_core::sc_module_name name, const GpuConfig& cfg, std::uint32_t index, StatsRegistry& stats);

  /// Issues one access from the CALLING SC_THREAD at absolute time `issue_ps` (clamped to now), split into
  /// line-granular payloads issued back to back; returns the time the last one completes (ps). `dst`/`src`
  /// may be nullptr (data discarded / zeros written). No waiting happens here: the caller owns its time.
  ps_t read(std::uint64_t addr, void* dst, std::uint32_t bytes, ps_t issue_ps);
  ps_t write(std::uint64_t addr, const void* src, std::uint32_t bytes, ps_t issue_ps);

  /// Fast path used by the builder (GpuSystem): the crossbar `socket` is bound to and this SM's input port
  /// there, called directly (Crossbar::access, integer ps) instead of through b_transport. Same timing.
  void set_direct_crossbar(Crossbar* xbar, std::size_t port) { xbar_ = xbar, xbar_port_ = port; }

  const SmKernelStats& kernel_stats() const { return kstats_; }
  std::uint32_t index() const { return index_; }
  const SmStats& stats() const { return stats_; }

 private:
  friend class SmScheduler;
  /// Kernel state machine used by SmScheduler.
  void begin(RequestSource* src, ps_t t);
  /// Earliest time the next request may issue; false when the source is exhausted.
  bool next_issue_time(ps_t& t);
  /// Issues the pending request at time `t` (== the value next_issue_time gave); `now` = sc_time_stamp().
  void issue_pending(ps_t t, ps_t now);
  void finish();

  ps_t issue_line(std::uint64_t addr, std::uint8_t* data, std::uint32_t bytes, bool write, ps_t t, ps_t now);
  ps_t issue(const MemRequest& r, ps_t t, ps_t now);

  std::uint32_t index_, line_bytes_;
  FastDiv line_div_;
  ps_t issue_ps_;
  tlm::tlm_generic_payload gp_;
  std::vector<std::uint8_t> scratch_;
  std::size_t max_outstanding_;
  SortedQueue<ps_t> inflight_;  ///< completion times of the requests in flight
  Crossbar* xbar_ = nullptr;
  std::size_t xbar_port_ = 0;
  RequestSource* src_ = nullptr;
  MemRequest pending_;
  bool has_pending_ = false;
  ps_t t_ = 0, last_done_ = 0;
  ps_t reads_done_ = 0;  ///< latest completion of the reads issued since the last after_reads request
  SmStats stats_;
  SmKernelStats kstats_;
};

/// Drives every TrafficGenerator of a kernel from one SC_THREAD in issue-time order, with a
/// tlm_quantumkeeper (temporal decoupling: it synchronises with the SystemC kernel once per quantum, so
/// other modules' threads interleave at quantum granularity).
class SmScheduler : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(SmScheduler);
  explicit SmScheduler(sc_core::sc_module_name name);
  /// Starts a kernel: sms[i] drains sources[i] (nullptr: idle). Runs from the next delta cycle.
  void start(const std::vector<TrafficGenerator*>& sms, const std::vector<RequestSource*>& sources);

 private:
  void thread();
  std::vector<TrafficGenerator*> sms_;
  std::vector<RequestSource*> sources_;
  /// The quantum keeper, with its next synchronisation point readable (protected in the base class), so
  /// that the per-request test "local time reached the next sync point" is one integer compare.
  struct QuantumKeeper : tlm_utils::tlm_quantumkeeper {
    ps_t next_sync_ps() const { return m_next_sync_point.value(); }
  };
  QuantumKeeper qk_;
  sc_core::sc_event start_ev_;
  /// (next issue time, SM) of the SMs with work, a total order (ties by SM index). A member, not a local of
  /// thread(): SystemC never unwinds a thread's stack at the end of the simulation, so a local heap's storage
  /// would leak (LeakSanitizer, make test-asan).
  IssueQueue ready_;  ///< packed (time << bits | SM) keys while times fit (min_heap.h)
};

}  // namespace spartan::hw::gpu
