// Timing of one HBM/GDDR channel (pure C++, no SystemC): banks in bank groups with an open-row policy,
// one data bus, JEDEC timing constraints, all-bank refresh. Each burst reserves its bank and the bus, so
// conflicts and contention change the timing.
//
// Out-of-time-order requests (temporal decoupling). Requests reach the channel in CALL order, which under
// a tlm_quantumkeeper is not time order: a posted write-back or an SM that ran ahead may be timed before a
// request that is earlier in simulated time. Each bank therefore keeps a time-ordered ROW HISTORY: the
// last `kRowHistory` row-open intervals (ACT time, row, earliest possible PRE given tRAS and the column
// commands already served in it, the refresh that closes it). A burst arriving at t is judged against the
// row state AT t, not against the bank's latest call. Walking the intervals from the one open at t:
//   - row hit: an interval of the burst's row whose PRE (next ACT - tRP, or the refresh) comes after t:
//     a first-ready scheduler had the request queued while that row was open and serves it before the
//     PRE. Its column takes the first free bank-group/bus slot at or after max(t, ACT + tRCD), never
//     after the refresh that closes the row; the interval's earliest PRE moves out by tRTP (read) or
//     WL + tBURST + tWR (write);
//   - otherwise a new interval, inserted in the first gap that holds it with every bank constraint: PRE
//     of the row open there (not before its earliest PRE), tRP, ACT (tRC after the bank's previous ACT,
//     tRRD and tFAW on the ACT calendars of the bank's pseudo-channel, outside refresh), tRCD, the column,
//     and its own earliest PRE + tRP and tRC before the next interval's ACT (if that interval has the same
//     row, its ACT moves earlier instead: one ACT, no PRE). After the last interval it always fits: for
//     requests in time order this is exactly an open-page bank state machine.
// Approximation: committed intervals never move (their bursts' times were already returned). A hit whose
// column slot (bus contention) lands after its row's recorded PRE is still served in that row; a real
// FR-FCFS controller (Rixner et al., ISCA 2000; the default in DRAMSim3 and Ramulator) would have
// delayed that PRE and the next ACT by its burst. Counted in `late_row_hits`. The interval semantics
// follow the JEDEC HBM2 bank state machine (JESD235: ACT -> RD/WR after tRCD, PRE after tRAS and
// tRTP / tWR, ACT after tRP and tRC). Requests older than the bank's oldest kept interval (history
// overflow) are charged from that interval's ACT (counted in `history_clamps`).
// Speed shortcut: a gap whose earliest ACT already falls at or after the next interval's ACT (or less than
// tRC before it, when the rows differ) is passed over without peeking the ACT and column calendars. The
// outcome is the same except that a skipped peek can no longer slide a calendar's horizon; that matters
// only for a later request more than half a horizon older than the skipped peek (never seen: every
// reference output of docs/bench/gpu.md is identical), so it is exact in practice, not provably. Two more:
// a gap is passed over once its ACT peek lands at or after the next interval's ACT (the refresh fit checks
// after it only move the ACT later; they peek the column calendars, so this one has the same horizon
// caveat: a review found a stream, arrivals 15-30 us out of order plus requests 5-65 us old, where a
// bank-group calendar's skipped slide changed one column by a tCCD_L slot, as the shortcut above does in
// such streams), and without the peek when the bank's last such failed peek showed the ACT calendar taken
// from the gap's earliest ACT to at least the next interval's (BankHead::act_full_lo/hi): exact, since the
// calendar only fills up and its horizon start only rises.
//
// Shared resources (data bus, ACT rate, four-activate window, per-bank-group column rate) are slot calendars
// (reservation.h), correct for out-of-order reservations. The ACT constraints apply per pseudo-channel
// (DramConfig::pseudo_channels; bank k belongs to pseudo-channel k % pseudo_channels, JESD235 "counted per
// pseudo channel"): tRRD as one ACT per tRRD bin, tFAW as at most four ACTs per tFAW bin. Fixed bins keep the
// rates over a window right but let two ACTs in adjacent bins be closer than tRRD (and up to eight ACTs fall in
// one tFAW span across a bin boundary); an exact two-sided spacing was tried (thirty-sixth session) and made
// ACTs much later than an in-order controller would, because requests reach the channel out of time order and a
// late one only fits where two booked ACTs are 2 x tRRD apart (docs/gpu-model.md, "Four-activate window").
// Constraints modelled (JESD235 names, DRAM cycles): tRCD, tRP, tRAS, tRC, CL, WL, tCCD_L/tCCD_S, tRRD, tFAW,
// tWR, tRTP, tBURST, tREFI/tRFC (all-bank refresh, staggered per channel; rows close at refresh, and every
// bank is precharged tRP before it: a column whose tRTP / write recovery, or an ACT whose tRAS, would not end
// tRP before the REF waits for the refresh's end), and the bus
// turnarounds tRTW/tWTR (+ CL) under a write-drain policy: posted writes wait in the controller's write queue and are drained in episodes of `write_drain_bursts`
// (watermark-based write mode as in Ramulator, Kim et al. CAL 2015, and DRAMSim3; Stuecheli et al., ISCA
// 2010), so one read->write + write->read turnaround is paid per episode while reads are also served,
// none in a pure write or read stream. This is an amortised cost: the episode's writes keep their own
// (time-ordered) bus slots. Not modelled: power-down, per-bank refresh, tRRD_S / tRRD_L.
#pragma once
#include <algorithm>
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
  std::uint64_t faw_delayed_acts = 0;           ///< ACT bookings the four-activate window moved later (bin full)
  std::uint64_t late_row_hits = 0;              ///< row hits whose data left after the row's recorded PRE
  std::uint64_t history_clamps = 0;             ///< bursts older than their bank's kept row history
  std::uint64_t bus_busy_ps = 0;                ///< data-bus occupancy (utilisation = busy / elapsed)
  LatencyHistogram read_latency_ps;             ///< arrival at the controller -> last data beat
  void register_with(StatsGroup& g) const;
};

class DramChannel {
 public:
  /// Row-open intervals kept per bank (the depth of out-of-order arrival the bank state resolves exactly).
  static constexpr std::uint32_t kRowHistory = 32;  // power of two (ring)

  DramChannel(const DramConfig& cfg, const ClockDomain& clk, std::uint32_t channel_index, std::uint32_t channels);

  enum class RowResult { Hit, Miss, Conflict };
  /// Hint: the host-cache line burst(.., a, ..) will read first (its bank's newest row interval).
  void prefetch(const DramAddress& a) const {
    const std::uint32_t k = a.flat_bank(banks_per_group_);
    const BankHead& h = heads_[k];
    __builtin_prefetch(&banks_[k].iv[(h.head + h.n - 1) & (kRowHistory - 1)]);
  }
  /// One burst to `a` arriving at `t_ps`; returns the time its last data beat is on the bus.
  ps_t burst(ps_t t_ps, const DramAddress& a, bool write, RowResult* result = nullptr);
  /// The bursts `a[0..n)`, all arriving at `t_ps`, in that order: the same as calling burst(t_ps, a[i],
  /// write) for i = 0..n-1 (same timing, state and stats), in one call (a line's sector bursts; the burst
  /// code is inlined into the loop; a burst to the row the previous one was served in tries that row first,
  /// exact under the gap shortcuts' caveat below). Returns the latest end of a data beat, or `t_ps` when n == 0.
  ps_t bursts(ps_t t_ps, const DramAddress* a, std::size_t n, bool write);
  /// An idle channel at `origin` (after a refresh that closed every row): the command and bus calendars
  /// count slots from `origin` (SlotCalendar::rebase) and no write-drain episode is open, so what follows
  /// is timed the same whatever ran before. Nothing may be scheduled at or after `origin`.
  void rebase(ps_t origin);
  /// For tests: false turns the gap shortcuts above off (every gap is peeked and checked in full). The
  /// results are the same either way unless requests arrive more than half a calendar horizon behind the
  /// newest peek (the caveat above; test DramChannel.GapShortcutsChangeNoResult).
  void set_gap_shortcuts(bool on) { shortcuts_ = on; }
  DramStats& stats() { return stats_; }
  const DramStats& stats() const { return stats_; }

 private:
  /// One row-open interval of a bank: [act, PRE) with PRE >= min_pre, and PRE <= closes (refresh).
  struct RowInterval {
    ps_t act;      ///< ACT command time
    ps_t min_pre;  ///< earliest PRE: act + tRAS and every served column's tRTP / write recovery
    ps_t closes;   ///< start of the refresh window that closes the row (~0: no refresh)
    std::uint32_t row;
  };
  /// A bank's row history: a ring of up to kRowHistory intervals sorted by ACT (logical 0 = oldest). The
  /// ring position and count live apart (BankHead, a compact array that stays in the host cache), so a
  /// burst in time order touches one line of the ring: the newest interval.
  struct BankHead {
    std::uint32_t head = 0;  ///< ring index of the oldest interval
    std::uint16_t n = 0;     ///< intervals kept
    bool dropped = false;    ///< older intervals were dropped (requests before the oldest are clamped)
    /// A stretch [lo, hi) of the bank's pseudo-channel ACT calendars found without a free slot outside refresh
    /// (a gap check's peek_act(lo) returned hi): it stays so (the calendars only fill up), so a later gap check
    /// of this bank whose earliest ACT lies in it and whose next interval opens by `hi` cannot fit and needs no
    /// peek. Cleared by rebase() (the calendars are emptied).
    ps_t act_full_lo = 0, act_full_hi = 0;
  };
  struct Bank {
    RowInterval iv[kRowHistory];
  };
  static RowInterval& at(Bank& b, const BankHead& h, int j) {
    return b.iv[(h.head + std::uint32_t(j)) & (kRowHistory - 1)];
  }
  /// Inserts `x` at logical position `pos` (0..n); when full, the oldest interval is dropped first (or `x`
  /// itself when it would be the oldest). Returns the logical position `x` now has (-1: dropped).
  static int insert(Bank& b, BankHead& h, int pos, const RowInterval& x) {
    if (h.n == kRowHistory) {
      h.dropped = true;
      if (pos == 0) return -1;
      h.head = (h.head + 1) & (kRowHistory - 1);
      --h.n;
      --pos;
    }
    for (int j = int(h.n); j > pos; --j) at(b, h, j) = at(b, h, j - 1);
    at(b, h, pos) = x;
    ++h.n;
    return pos;
  }
  struct Column {
    ps_t cmd, data;  ///< column command time and the start of its data on the bus
  };

  ps_t after_refresh(ps_t t) const {
    if (t - open_lo_ < open_len_) return t;  // outside refresh, in the refresh interval last looked up
    if (!tREFI_) return t;
    ps_t phase = refresh_phase(t);
    return phase < tRFC_ ? t + (tRFC_ - phase) : t;
  }
  /// Start of the first refresh window after `t` (~0 when refresh is off).
  ps_t next_refresh(ps_t t) const {
    if (!tREFI_) return ~ps_t(0);
    return t - refresh_phase(t) + tREFI_;
  }
  /// (t + refresh_offset_) % tREFI_ (tREFI_ > 0), remembering the refresh interval it lies in so that
  /// the common case (the same interval as the previous call) needs no division.
  ps_t refresh_phase(ps_t t) const {
    if (t >= ref_base_ && t - ref_base_ < tREFI_) return t - ref_base_;
    ps_t x = t + refresh_offset_, phase = x % tREFI_;
    ref_base_ = t - phase;  // may wrap below 0 for t < phase: then the test above fails and we recompute
    if (t < phase) ref_base_ = ~ps_t(0);
    open_lo_ = ref_base_ + tRFC_;  // [open_lo_, open_lo_ + open_len_): this interval's refresh-free part
    open_len_ = ref_base_ != ~ps_t(0) && tREFI_ > tRFC_ ? tREFI_ - tRFC_ : 0;
    return phase;
  }
  /// An ACT time and its slots on the tRRD and tFAW calendars of one pseudo-channel (not reserved).
  struct ActSlot {
    SlotCalendar::Slot rrd, faw;  ///< faw: unused when tFAW is 0
    bool faw_moved;               ///< the tFAW calendar moved the search later
    ps_t start() const { return rrd.start; }  ///< the ACT time (the tFAW slot starts there too)
  };
  /// Earliest ACT at or after `t` in pseudo-channel `pc` that tRRD, tFAW and refresh allow (not reserved).
  ActSlot peek_act(ps_t t, std::uint32_t pc);
  /// Books an ACT that peek_act(.., pc) returned, with no other peek on pc's ACT calendars since.
  void take_act(const ActSlot& s, std::uint32_t pc) {
    acts_[pc].take(s.rrd);
    if (!faws_.empty()) faws_[pc].take(s.faw);
    if (s.faw_moved) ++stats_.faw_delayed_acts;
  }
  /// Earliest column command at or after `ready` in bank group `bg` and its bus slot (not reserved).
  Column peek_column(ps_t ready, std::uint32_t bg, bool write);
  /// The slots of a column command: its tCCD_L slot (cmd.start = command time) and its data's bus slot.
  struct DataSlot {
    SlotCalendar::Slot cmd, bus;
  };
  /// The first column command at or after `from` (moved out of refresh) whose tCCD_L slot (bank group bg)
  /// and bus slot `lat` later are both free, outside refresh; nothing is reserved.
  DataSlot free_data_slot(ps_t from, std::uint32_t bg, ps_t lat);
  /// The same with the data slot directly after `idle` free bus slots (a turnaround's idle bus), which start
  /// at or after the first possible data time; *idle_from = the first idle slot. Nothing is reserved.
  DataSlot free_data_slot_after_idle(ps_t from, std::uint32_t bg, ps_t lat, std::uint32_t idle, ps_t* idle_from);
  /// Whether the column peek_column(ready, bg, write) would find lets its row close before the refresh at
  /// `closes` (~0: none): an all-bank REF needs every bank precharged (JESD235 / JESD79-4: PRE, then tRP, then
  /// REF), so the command must leave its tRTP (read) or WL + tBURST + tWR (write) and tRP before `closes`
  /// (a cheap bound from the last slots taken first; peeks only when the bound is inconclusive).
  bool column_before(ps_t ready, std::uint32_t bg, bool write, ps_t closes) {
    if (closes == ~ps_t(0)) return true;
    const ps_t need = tRP_ + (write ? WL_ + tBURST_ + tWR_ : tRTP_);  // command -> earliest REF
    if (closes <= need) return false;
    const ps_t limit = closes - need + 1;  // command < limit  <=>  command + need <= closes
    // Cheap bound first: every slot after the last one taken is free, so the column cannot come later than
    // this (and [ready, limit) holds no refresh window when ready lies in a row-open interval ending there).
    // The next free bus slot starts at most one bus slot (max(tBURST, tCCD_S)) after the latest data start, not
    // one tBURST: with tCCDS > tBURST the tBURST bound let a hit through up to tCCDS - tBURST too late (review of
    // 2026-12-07, DramChannel.RowHitBehindABusyWideBusSlotStillPrechargesBeforeRefresh).
    const ps_t lat = write ? WL_ : CL_;
    const ps_t bus_next = bus_last_ + bus_slot_ps_ > lat ? bus_last_ + bus_slot_ps_ - lat : 0;
    if (std::max({ready, bg_last_[bg] + tCCDL_, bus_next}) + turnaround(write) < limit) return true;
    return peek_column(ready, bg, write).cmd < limit;
  }
  /// burst() itself, always inlined into burst() and bursts(). *served (when given): the logical index of the
  /// row interval that served the burst (-1 when none is kept: a full history dropped it).
  ps_t burst_inline(ps_t t_ps, const DramAddress& a, bool write, RowResult* result, int* served);
  /// bursts()' shortcut for a line's next burst to the row interval `served` that served the previous one
  /// (same arrival, bank and row): a row hit there, as burst_inline would find, or false with nothing changed.
  bool hit_in_served_row(ps_t t_ps, const DramAddress& a, bool write, int served, ps_t* end);
  /// Reserves the column command and data slot peek_column(ready, bg) returned (plus a bus turnaround).
  Column commit_column(ps_t ready, std::uint32_t bg, bool write);
  /// commit_column for the first write of a drain episode: the data after `idle` free bus slots, taken idle.
  Column commit_column_after_turnaround(ps_t ready, std::uint32_t bg, ps_t lat, std::uint32_t idle);
  /// Takes the slots free_data_slot found for a column (command latency `lat`); returns its times.
  Column book_column(const DataSlot& s, std::uint32_t bg, ps_t lat);
  /// The PRE of a row cannot come before this after a column command at `c` with data at `d`.
  ps_t pre_after(const Column& c, bool write) const {
    return write ? c.data + tBURST_ + tWR_ : c.cmd + tRTP_;
  }
  /// Idle bus time a burst must leave before its data: one read->write + write->read turnaround at the
  /// first write of each write-drain episode, when reads were served since the previous episode began.
  /// Read->write: tRTW idle bus cycles (GPGPU-Sim's read-to-write command spacing CL + tBURST + 2 - WL leaves
  /// 2). Write->read: tWTR runs from the end of the write data to the next READ command, whose data come
  /// CL later (JESD235 / JESD79-4 tWTR; GPGPU-Sim's WL + tBURST + tCDLR command spacing), so the bus idles
  /// tWTR + CL.
  ps_t turnaround(bool write) const { return write && drain_left_ == 0 && reads_since_drain_ ? turn_ps_ : 0; }

  // Members in the order a burst reads them, the per-burst state and timing first, so that a channel's hot
  // part spans a few consecutive host cache lines (32 channels are visited in turn; twentieth session).
  mutable ps_t open_lo_ = 0, open_len_ = 0;  ///< the refresh-free part of the refresh interval last looked up
  mutable ps_t ref_base_ = ~ps_t(0);         ///< start of that refresh interval (~0: none)
  ps_t tRCD_, tRP_, tRAS_, tRC_, CL_, WL_, tCCDL_, tCCDS_, tRRD_, tWR_, tRTP_, tWTR_, tRTW_, tBURST_, tREFI_,
      tRFC_, refresh_offset_;
  ps_t bus_last_ = 0;                    ///< latest data slot taken or blocked on the bus
  std::uint64_t reads_since_drain_ = 0;  ///< reads served since the current episode began
  std::uint32_t drain_left_ = 0;         ///< writes left in the current write-drain episode
  std::uint32_t banks_per_group_;        ///< DramConfig::banks_per_group
  std::uint32_t write_drain_bursts_;     ///< DramConfig::write_drain_bursts
  std::uint32_t turn_slots_;  ///< tRTW + tWTR + CL in whole bus slots (max(tBURST, tCCD_S))
  ps_t turn_ps_;              ///< the same in ps
  ps_t bus_slot_ps_;          ///< one bus slot
  bool shortcuts_ = true;     ///< set_gap_shortcuts
  std::vector<Bank> banks_;
  std::vector<BankHead> heads_;
  std::vector<SlotCalendar> bg_cols_;  ///< per bank group: one column command per tCCD_L
  std::vector<ps_t> bg_last_;          ///< per bank group: latest column command taken
  SlotCalendar bus_;                   ///< data bus: one burst per max(tBURST, tCCD_S)
  std::uint32_t pseudo_channels_;      ///< DramConfig::pseudo_channels (ACT constraint domains)
  std::vector<SlotCalendar> acts_;     ///< per pseudo-channel: ACT commands, one per tRRD bin
  std::vector<SlotCalendar> faws_;     ///< per pseudo-channel: at most four ACTs per tFAW bin (empty: tFAW 0)
  DramStats stats_;
};

}  // namespace spartan::hw::gpu
