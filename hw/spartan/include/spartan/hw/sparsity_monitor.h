// SparsityMonitor: counts non-zero activations per tile as they are written into an L2 slice.
//
// One instance per L2 slice, on the slice's write path (the slice calls observe_write() for every write
// request it accepts from the crossbar). Register map, counting semantics, flush state machine and timing:
// docs/hw-units.md; offsets and fields: regmap.h. Source: the Spartan paper (Dong et al., IEEE TPDS 32(10),
// 2021) describes the function; the register map, flush protocol and timing are this project's design.
//
// Sockets:
//   mmio (target):    4 KiB register window, window-relative addresses, 4-byte accesses only; bad accesses
//                     get TLM error responses (never an exception or abort).
//   mem  (initiator): flush traffic (atomic adds to the count table, and to the completion counter with
//                     COMPL_PTR != 0) into the L2.
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

#include "spartan/hw/mmio.h"
#include "spartan/hw/regmap.h"
#include "spartan/hw/unit_timing.h"

namespace spartan::hw {

/// Structural and timing parameters (defaults: docs/hw-units.md "Timing parameters"; the timing rules are
/// calibrated from the RTL, rtl/src/sparsity_monitor.v: docs/hw-units.md "Calibration from the RTL").
struct MonitorConfig {
  std::uint32_t slice_id = 0;                 ///< L2 slice index (SLICE_ID register)
  double clock_mhz = 1000.0;                  ///< the L2 clock of the GPU preset
  std::uint32_t lines_per_cycle = 1;          ///< speed-up of accept + counting stages (1 = the RTL)
  std::uint32_t counter_entries = 8192;       ///< u32 counters (CAPACITY)
  std::uint32_t flush_groups_per_cycle = 1;   ///< speed-up of the flush scan (1 = the RTL: 1 counter/cycle)
  /// Flush atomics in flight (posted reductions; = the RTL's FLUSH_OUTSTANDING). Little's law: one add per
  /// ~11 cycles (a 32 B group of 8 counters takes 10-11 scan cycles) over a ~180-cycle L2 round trip needs
  /// >= 17 in flight; 32 is the next power of two (4, the earlier RTL value, bounded the flush: docs/hw-units.md).
  std::uint32_t flush_outstanding = 32;
  std::uint32_t mmio_latency_cycles = 2;      ///< register access latency
};

/// Statistics: plain integers, read through stats(). Not registered with a StatsRegistry: spartan-sim run
/// copies the fields it exports into stats.json's units.monitors[] (Replay::run, replay.cpp), by name.
struct MonitorStats {
  std::uint64_t lines_seen = 0;           ///< write requests seen while enabled
  std::uint64_t lines_matched = 0;        ///< ... hitting >= 1 enabled region
  std::uint64_t lines_sampled = 0;        ///< ... of those, counted (sampling)
  std::uint64_t elements_counted = 0;     ///< elements inspected in sampled lines
  std::uint64_t nonzero_counted = 0;      ///< non-zero elements added to counters
  std::uint64_t partial_elements = 0;     ///< elements cut by a request boundary (not counted)
  std::uint64_t busy_ps = 0;              ///< time the accept stage was occupied (what mon% reports; docs/hw-units.md)
  /// Sum over lines of each line's wait because lines arrived faster than lines_per_cycle (line-ps: with
  /// many lines waiting at once it exceeds the elapsed time; not a duration).
  std::uint64_t backpressure_ps = 0;
  std::uint64_t flush_count = 0;
  std::uint64_t flush_rmw_groups = 0;     ///< count-table groups read-modify-written
  /// Count-table bytes the flush's atomics add to: read functionally (debug transport, no traffic) and
  /// written by the timed atomic message.
  std::uint64_t flush_bytes_read = 0, flush_bytes_written = 0;
  /// Flushes that ended with the completion counter's atomic add (COMPL_PTR != 0; not in flush_rmw_groups or
  /// flush_bytes_*).
  std::uint64_t completion_adds = 0;
  std::uint64_t clears = 0;               ///< CTRL writes with CLEAR set (each sweeps the counter memory in the RTL)
  std::uint64_t flush_ps = 0;             ///< total flush duration (from the FLUSH write, drain wait included)
  std::uint64_t flush_drain_wait_ps = 0;  ///< time FLUSH waited for the input pipeline to drain (RTL S_DRAIN)
  std::uint64_t counter_entries_used_peak = 0;  ///< max over time of sum(TILES of enabled regions)
  std::uint64_t mmio_reads = 0, mmio_writes = 0, mmio_errors = 0;
  /// Writes observed with an earlier time than one observed before (the temporally decoupled SMs reach the
  /// L2 slice in call order, not time order), and the sum of how much earlier (ps). The pipeline model
  /// serves arrivals in call order, so such a write is charged as back-pressure that a time-ordered
  /// arrival would not see: these bound that model error.
  std::uint64_t arrivals_out_of_order = 0, arrivals_out_of_order_ps = 0;
};

class SparsityMonitor : public sc_core::sc_module {
 public:
  tlm_utils::simple_target_socket<SparsityMonitor> mmio;
  tlm_utils::simple_initiator_socket<SparsityMonitor> mem;

  SC_HAS_PROCESS(SparsityMonitor);
  SparsityMonitor(sc_core::sc_module_name name, const MonitorConfig& cfg);

  /// The L2 slice's write-path hook: one write request (addr, len bytes of data) accepted at absolute
  /// simulated time `when`. Never blocks and never fails; requests outside every region are only counted
  /// in lines_seen.
  void observe_write(std::uint64_t addr, const std::uint8_t* data, std::uint32_t len, const sc_core::sc_time& when);

  /// Observers (co-simulation, tracing): called for every request seen by observe_write (before it is
  /// processed, also while disabled), and when a flush completes.
  using LineObserver = std::function<void(std::uint32_t slice, std::uint64_t addr, const std::uint8_t* data,
                                          std::uint32_t len, const sc_core::sc_time& when)>;
  using FlushObserver = std::function<void(std::uint32_t slice, std::uint64_t cycles, const sc_core::sc_time& done)>;
  void add_line_observer(LineObserver fn) { line_observers_.push_back(std::move(fn)); }
  void add_flush_observer(FlushObserver fn) { flush_observers_.push_back(std::move(fn)); }

  const MonitorConfig& config() const { return cfg_; }
  const MonitorStats& stats() const { return stats_; }
  /// When the accept stage took the latest request (sc_time; 0 before any). The RTL lockstep times the
  /// counting of a request stream up to here, as it times the RTL's: up to the last request's acceptance
  /// (busy_ps also holds the last request until the one ahead of it starts counting, one request's counting
  /// cost more: 58 against the RTL's 36 cycles for a 6-request layer of 1 x 1 tiles).
  sc_core::sc_time last_accept() const { return last_accept_; }
  MonitorStats& stats() { return stats_; }
  const UnitClock& clock() const { return clock_; }
  bool flush_busy() const { return flush_busy_; }
  /// CTRL.ENABLE is set: write requests are being counted (an observer can tell the counted ones apart).
  bool enabled() const { return (ctrl_ & (1u << regmap::monitor::CTRL_ENABLE_BIT)) != 0; }
  /// Notified when a flush completes.
  const sc_core::sc_event& flush_done_event() const { return flush_done_ev_; }
  /// Absolute time the last flush completed.
  sc_core::sc_time last_flush_done() const { return last_flush_done_; }
  /// Counter-memory entry (for tests and scoreboards).
  std::uint32_t counter(std::uint32_t entry) const { return counters_.at(entry); }

 private:
  struct Region {
    std::uint32_t cfg = 0, tile = 0, base_lo = 0, base_hi = 0, rows = 0, cols = 0, pitch = 0, cnt_offset = 0,
                  ct_lo = 0, ct_hi = 0, matched = 0;
    // Derived while enabled.
    bool en = false;
    unsigned eb = 4;
    regmap::ElemType dtype = regmap::ElemType::F32;
    std::uint64_t base = 0, size = 0, ct_base = 0, tiles = 0, tpr = 0;
    std::uint32_t tr = 1, tc = 1;
  };

  void b_transport_mmio(tlm::tlm_generic_payload& p, sc_core::sc_time& delay);
  unsigned transport_dbg_mmio(tlm::tlm_generic_payload& p);
  regmap::MmioError reg_read(std::uint32_t off, std::uint32_t& v) const;
  regmap::MmioError reg_write(std::uint32_t off, std::uint32_t v, const sc_core::sc_time& when);
  regmap::MmioError region_write(unsigned r, std::uint32_t reg, std::uint32_t v);
  bool region_validate(const Region& g, unsigned self) const;
  static void region_derive(Region& g);
  std::uint64_t tiles_of(const Region& g) const;
  /// Counts one request into region g; returns its counting-stage cycles (>= 1, see observe_write).
  std::uint64_t count_line(Region& g, std::uint64_t addr, const std::uint8_t* data, std::uint32_t len);
  void clear_all();
  void update_occupancy();
  void flush_thread();
  /// One atomic add of `words` u32 addends at `addr` (inside one 32 B group), issued at `issue`; `done` = its
  /// completion. `count_table`: a count-table group (counted in flush_rmw_groups / flush_bytes_*), else the
  /// completion counter.
  void rmw_group(std::uint64_t addr, const std::uint32_t* add, unsigned words, sc_core::sc_time issue,
                 sc_core::sc_time& done, bool count_table = true);

  MonitorConfig cfg_;
  UnitClock clock_;
  MonitorStats stats_;
  std::vector<std::uint32_t> counters_;
  std::array<Region, regmap::monitor::kNumRegions> regions_{};
  std::uint32_t ctrl_ = 0, sample_shift_ = 0, lines_seen_ = 0, lines_matched_ = 0, lines_sampled_ = 0,
                flush_cycles_ = 0;
  std::uint64_t sample_ctr_ = 0;
  std::uint64_t compl_ptr_ = 0;  ///< COMPL_PTR (regmap monitor::COMPL_PTR_LO/HI; 0: no completion add)
  MmioErrorLatch err_;
  bool flush_busy_ = false, flush_done_ = false;
  std::uint32_t flush_mask_ = 0;
  sc_core::sc_time flush_start_, last_flush_done_, input_free_;
  sc_core::sc_time latest_arrival_;                 ///< latest `when` observed (arrivals_out_of_order)
  sc_core::sc_time count_free_, last_count_start_, last_accept_;  ///< counting stage free; start of the last counted request
  sc_core::sc_event flush_start_ev_, flush_done_ev_;
  std::vector<LineObserver> line_observers_;
  std::vector<FlushObserver> flush_observers_;
};

}  // namespace spartan::hw
