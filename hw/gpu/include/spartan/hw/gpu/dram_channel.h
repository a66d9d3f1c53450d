// Timing of one HBM/GDDR channel (pure C++, no SystemC): banks in bank groups with an open-row policy,
// one data bus, JEDEC timing constraints, all-bank refresh. Called with requests in arrival order; each
// burst reserves its bank and the bus ("busy until"), so conflicts and contention change the timing.
//
// Scheduling: requests are timed in call order (loosely timed), open-page policy, early activation (a
// request's ACT/PRE may issue as soon as it arrives, ahead of earlier requests' data, when its bank allows),
// and a first-ready approximation of FR-FCFS (Rixner et al., ISCA 2000): a request to one of the rows the
// bank's last 4 precharges closed, which arrived BEFORE that precharge, is served as a row hit (a
// first-ready scheduler with a deep enough queue would have issued it while the row was open). Shared resources (data bus, ACT rate, per bank
// group column rate) are slot calendars (reservation.h), so a burst whose bank must first be activated
// does not hold up row hits to other banks behind it: the bus takes whichever is ready first. Constraints modelled (JEDEC JESD235 names, DRAM cycles):
// tRCD, tRP, tRAS, tRC, CL, WL, tCCD_L/tCCD_S, tRRD, tWR, tRTP, tWTR, tRTW (bus turnaround), tBURST,
// tREFI/tRFC (all-bank refresh, staggered per channel; rows close at refresh). Not modelled: tFAW, power-down.
#pragma once
#include <cstdint>
#include <vector>

#include "spartan/hw/address_map.h"
#include "spartan/hw/gpu_config.h"
#include "spartan/hw/reservation.h"
#include "spartan/hw/stats.h"

namespace spartan::hw::gpu {

struct DramStats {
  std::uint64_t reads = 0, writes = 0;          ///< requests
  std::uint64_t read_bytes = 0, write_bytes = 0;
  std::uint64_t row_hits = 0, row_misses = 0, row_conflicts = 0;  ///< per burst (column command)
  std::uint64_t activates = 0, precharges = 0, refresh_stalls = 0;
  std::uint64_t bus_busy_ps = 0;                ///< data-bus occupancy (utilisation = busy / elapsed)
  LatencyHistogram read_latency_ps;             ///< arrival at the controller -> last data beat
  void register_with(StatsGroup& g) const;
};

class DramChannel {
 public:
  DramChannel(const DramConfig& cfg, const ClockDomain& clk, std::uint32_t channel_index, std::uint32_t channels);

  enum class RowResult { Hit, Miss, Conflict };
  /// One burst to `a` arriving at `t_ps`; returns the time its last data beat is on the bus.
  ps_t burst(ps_t t_ps, const DramAddress& a, bool write, RowResult* result = nullptr);
  DramStats& stats() { return stats_; }
  const DramStats& stats() const { return stats_; }

 private:
  // One cache line holds everything a burst reads (closed_at is read only when a closed row matches).
  struct alignas(64) Bank {
    bool open = false;
    bool ever_activated = false;
    std::uint32_t row = 0;
    /// Rows closed by the last 4 precharges and when (FR-FCFS approximation).
    std::uint32_t closed_row[4] = {};
    std::uint32_t closed_next = 0;
    std::uint64_t epoch = 0;  ///< refresh interval the row was opened in
    ps_t act = 0, last_read = 0, write_recovery = 0;
    ps_t closed_at[4] = {};
  };
  ps_t after_refresh(ps_t t) const {
    if (!tREFI_) return t;
    ps_t phase = refresh_phase(t);
    return phase < tRFC_ ? t + (tRFC_ - phase) : t;
  }
  static bool closed_recently(const Bank& b, std::uint32_t row, ps_t t);
  std::uint64_t epoch(ps_t t) const {
    if (!tREFI_) return 0;
    refresh_phase(t);
    return ref_epoch_;
  }
  /// (t + refresh_offset_) % tREFI_ (tREFI_ > 0), remembering the refresh interval it lies in so that
  /// the common case (the same interval as the previous call) needs no division.
  ps_t refresh_phase(ps_t t) const {
    if (t >= ref_base_ && t - ref_base_ < tREFI_) return t - ref_base_;
    ps_t x = t + refresh_offset_, phase = x % tREFI_;
    ref_base_ = t - phase;  // may wrap below 0 for t < phase: then the test above fails and we recompute
    ref_epoch_ = x / tREFI_;
    if (t < phase) ref_base_ = ~ps_t(0);
    return phase;
  }

  DramConfig cfg_;
  ps_t tRCD_, tRP_, tRAS_, tRC_, CL_, WL_, tCCDL_, tCCDS_, tRRD_, tWR_, tRTP_, tWTR_, tRTW_, tBURST_, tREFI_,
      tRFC_, refresh_offset_;
  std::vector<Bank> banks_;
  SlotCalendar bus_;                   ///< data bus: one burst per tBURST (covers tCCD_S when equal)
  SlotCalendar acts_;                  ///< ACT commands: one per tRRD
  std::vector<SlotCalendar> bg_cols_;  ///< per bank group: one column command per tCCD_L
  bool any_col_ = false, last_was_write_ = false;
  mutable ps_t ref_base_ = ~ps_t(0);  ///< start of the refresh interval last looked up (~0: none)
  mutable std::uint64_t ref_epoch_ = 0;  ///< its index
  DramStats stats_;
};

}  // namespace spartan::hw::gpu
