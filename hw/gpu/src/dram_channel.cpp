#include "spartan/hw/gpu/dram_channel.h"

#include <algorithm>

namespace spartan::hw::gpu {

void DramStats::register_with(StatsGroup& g) const {
  g.counter("reads", reads).counter("writes", writes).counter("read_bytes", read_bytes)
      .counter("write_bytes", write_bytes)
      .counter("row_hits", row_hits, "column commands to an already open row")
      .counter("row_misses", row_misses, "column commands needing an ACT to a closed bank")
      .counter("row_conflicts", row_conflicts, "column commands needing PRE+ACT (other row open)")
      .counter("activates", activates).counter("precharges", precharges)
      .counter("refresh_stalls", refresh_stalls, "commands delayed by an all-bank refresh")
      .counter("faw_delayed_acts", faw_delayed_acts, "ACT bookings the four-activate window (tFAW) moved later")
      .counter("late_row_hits", late_row_hits, "row hits served after their row's recorded PRE (FR-FCFS)")
      .counter("history_clamps", history_clamps, "bursts older than their bank's kept row history")
      .counter("bus_busy_ps", bus_busy_ps)
      .histogram("read_latency", read_latency_ps, "ps", "controller arrival -> last data beat");
}

namespace {
// Bins of the tFAW calendar: at least 2^13, and a horizon at least as long as the tRRD calendar's 2^15 bins (a
// second review: with tFAW = tRRD, 2^13 bins reached back 4x less, and a request 20 us late was clamped).
std::uint32_t faw_bins(std::uint32_t trrd, std::uint32_t tfaw) {
  std::uint32_t bins = 1u << 13;
  while (bins < (1u << 15) && std::uint64_t(bins) * tfaw < (std::uint64_t(1) << 15) * trrd) bins <<= 1;
  return bins;
}
}  // namespace

DramChannel::DramChannel(const DramConfig& c, const ClockDomain& clk, std::uint32_t ch, std::uint32_t channels)
    : banks_per_group_(c.banks_per_group),
      write_drain_bursts_(c.write_drain_bursts),
      banks_(c.banks()),
      heads_(c.banks()),
      bg_cols_(c.bank_groups, SlotCalendar(clk.cycles_to_ps(c.timing.tCCDL), 1, 1u << 13)),
      bg_last_(c.bank_groups, 0),
      bus_(clk.cycles_to_ps(std::max(c.timing.tBURST, c.timing.tCCDS))),  // column-to-column across bank groups
      pseudo_channels_(std::max<std::uint32_t>(1, c.pseudo_channels)),
      acts_(pseudo_channels_, SlotCalendar(clk.cycles_to_ps(c.timing.tRRD))),
      faws_(c.timing.tFAW ? pseudo_channels_ : 0,
            SlotCalendar(clk.cycles_to_ps(c.timing.tFAW), 4, faw_bins(c.timing.tRRD, c.timing.tFAW))) {
  const auto& t = c.timing;
  auto ps = [&](std::uint32_t cyc) { return clk.cycles_to_ps(cyc); };
  tRCD_ = ps(t.tRCD), tRP_ = ps(t.tRP), tRAS_ = ps(t.tRAS), tRC_ = ps(t.tRC), CL_ = ps(t.CL), WL_ = ps(t.WL);
  tCCDL_ = ps(t.tCCDL), tCCDS_ = ps(t.tCCDS), tRRD_ = ps(t.tRRD), tWR_ = ps(t.tWR), tRTP_ = ps(t.tRTP);
  tWTR_ = ps(t.tWTR), tRTW_ = ps(t.tRTW), tBURST_ = ps(t.tBURST), tREFI_ = ps(t.tREFI), tRFC_ = ps(t.tRFC);
  // The turnaround as whole bus slots, from the cycle sum (a sum of separately rounded ps values could round up).
  const std::uint32_t slot_cycles = std::max(t.tBURST, t.tCCDS);
  turn_slots_ = (t.tRTW + t.tWTR + t.CL + slot_cycles - 1) / slot_cycles;
  bus_slot_ps_ = ps(slot_cycles);
  turn_ps_ = turn_slots_ * bus_slot_ps_;  // what the idle slots occupy
  // Refresh staggered evenly over the channels, so that they do not all refresh at once: a model assumption (the
  // controllers' refresh timing is not public); docs/gpu-model.md says what it costs a latency-bound requester.
  refresh_offset_ = tREFI_ ? tREFI_ - (tREFI_ * ch / std::max<std::uint32_t>(channels, 1)) % tREFI_ : 0;
  if (!tREFI_) open_len_ = ~ps_t(0);  // no refresh: after_refresh(t) == t for every t
}

void DramChannel::rebase(ps_t origin) {
  bus_.rebase(origin);
  for (auto& a : acts_) a.rebase(origin);
  for (auto& f : faws_) f.rebase(origin);
  for (auto& c : bg_cols_) c.rebase(origin);
  drain_left_ = 0;
  reads_since_drain_ = 0;
  for (auto& h : heads_) h.act_full_lo = h.act_full_hi = 0;
}

DramChannel::ActSlot DramChannel::peek_act(ps_t t, std::uint32_t pc) {
  SlotCalendar& rrd = acts_[pc];
  bool moved = false;
  for (;;) {
    SlotCalendar::Slot a = rrd.peek_slot(after_refresh(t));  // tRRD
    while (after_refresh(a.start) != a.start) a = rrd.peek_slot(after_refresh(a.start));
    if (faws_.empty()) return {a, {}, false};
    const SlotCalendar::Slot f = faws_[pc].peek_slot(a.start);  // at most four per tFAW bin
    if (f.start == a.start) {
      // The last peeks of both calendars are the slots to take (take() needs no other peek since); the tRRD
      // one was found at a.start, where the loop ends.
      return {a, f, moved};
    }
    moved = true;
    t = f.start;
  }
}

// The first data start ds such that the command at ds - lat is at or after `from`, outside refresh, on a free
// slot of bank group bg's tCCD_L calendar, with the bus slot at ds free (nothing is reserved): both slots, so
// that commit_column can take them without searching again. Shared by peek_column and commit_column so that
// both find the same slots.
[[gnu::always_inline]] inline DramChannel::DataSlot DramChannel::free_data_slot(ps_t from, std::uint32_t bg, ps_t lat) {
  SlotCalendar& cols = bg_cols_[bg];
  SlotCalendar::Slot c = cols.peek_slot(after_refresh(from));
  for (;;) {
    SlotCalendar::Slot d = bus_.peek_slot(c.start + lat);
    while (after_refresh(d.start - lat) != d.start - lat)  // no command in refresh
      d = bus_.peek_slot(after_refresh(d.start - lat) + lat);
    // The command slot c was found free by the peek that gave it (only the bus was searched since): a data
    // slot exactly `lat` after it needs no second search of the bank group, only the peek's effect on its
    // horizon (touch), so that the calendar ends as the old repeated peek left it.
    if (d.start - lat == c.start) {
      cols.touch(c);
      return {c, d};
    }
    c = cols.peek_slot(d.start - lat);
    if (c.start == d.start - lat) return {c, d};
  }
}

// free_data_slot for the first write of a drain episode (a turnaround): the data slot must directly follow
// `idle` free bus slots (the idle bus of the turnaround), which start no earlier than the first possible data
// time (command at or after `from` on a free tCCD_L slot, + lat); *idle_from is set to the first of them.
// Nothing is reserved; commit_column_after_turnaround takes the same slots.
DramChannel::DataSlot DramChannel::free_data_slot_after_idle(ps_t from, std::uint32_t bg, ps_t lat, std::uint32_t idle,
                                                             ps_t* idle_from) {
  SlotCalendar& cols = bg_cols_[bg];
  ps_t lo = cols.peek_slot(after_refresh(from)).start + lat;  // the idle run starts at or after this
  for (;;) {
    // The first run of idle + 1 free bus slots (idle, then the data) starting at or after lo.
    ps_t x = bus_.peek_slot(lo).start;
    for (std::uint32_t k = 1; k <= idle;) {
      const ps_t want = x + k * bus_slot_ps_, got = bus_.peek_slot(want).start;
      if (got == want) {
        ++k;
      } else {
        x = got, k = 1;  // slot taken: the run restarts at the next free one
      }
    }
    const ps_t data = x + idle * bus_slot_ps_, cmd = data - lat;
    const ps_t cmd_ok = after_refresh(cmd);  // no command in refresh
    if (cmd_ok == cmd) {
      const SlotCalendar::Slot c = cols.peek_slot(cmd);
      if (c.start == cmd) {
        *idle_from = x;
        return {c, bus_.peek_slot(data)};
      }
      lo = std::max(x + bus_slot_ps_, c.start + lat > idle * bus_slot_ps_ ? c.start + lat - idle * bus_slot_ps_ : 0);
    } else {
      lo = std::max(x + bus_slot_ps_, cmd_ok + lat > idle * bus_slot_ps_ ? cmd_ok + lat - idle * bus_slot_ps_ : 0);
    }
  }
}

DramChannel::Column DramChannel::peek_column(ps_t ready, std::uint32_t bg, bool write) {
  const ps_t lat = write ? WL_ : CL_;
  ps_t idle_from;
  const ps_t ds = turnaround(write) ? free_data_slot_after_idle(ready, bg, lat, turn_slots_, &idle_from).bus.start
                                    : free_data_slot(ready, bg, lat).bus.start;  // as commit_column
  return {ds - lat, ds};
}

[[gnu::always_inline]] inline DramChannel::Column DramChannel::book_column(const DataSlot& s, std::uint32_t bg,
                                                                           ps_t lat) {
  const ps_t data_start = s.bus.start;
  bg_cols_[bg].take(s.cmd);  // == reserve(data_start - lat) and reserve(data_start), without searching again
  bus_.take(s.bus);
  bg_last_[bg] = std::max(bg_last_[bg], data_start - lat);
  bus_last_ = std::max(bus_last_, data_start);
  stats_.bus_busy_ps += tBURST_;
  return {data_start - lat, data_start};
}

// Inlined into burst() (two call sites): the call and register saves cost ~20 instructions per burst.
[[gnu::always_inline]] inline DramChannel::Column DramChannel::commit_column(ps_t ready, std::uint32_t bg, bool write) {
  const ps_t lat = write ? WL_ : CL_;
  // Bus turnaround of a write-drain episode (tRTW into write mode, tWTR + CL back to reads): turn_slots_ free bus
  // slots stay idle before the data (taken below).
  const std::uint32_t idle = turnaround(write) ? turn_slots_ : 0;
  if (write) {
    if (drain_left_ == 0) drain_left_ = write_drain_bursts_, reads_since_drain_ = 0;
    --drain_left_;
  } else {
    ++reads_since_drain_;
  }
  // The command time: the first at or after `ready` whose bank-group slot (tCCD_L) is free and whose data
  // slot on the bus (tCCD_S / tBURST) `lat` later is free, outside refresh. Both are reserved at that one
  // time. (Until 2026-12-02 the bank-group slot was taken at the earliest time and the bus could then move
  // the data later: the command actually used was not the one on the tCCD_L calendar, so commands to one bank
  // group came out one tBURST apart behind a busy bus; review of 2026-12-02.)
  if (__builtin_expect(idle != 0, 0)) return commit_column_after_turnaround(ready, bg, lat, idle);
  return book_column(free_data_slot(ready, bg, lat), bg, lat);
}

// The first write of a write-drain episode (rare, hence out of line: inlining it into burst() made GCC stop
// inlining the calendar calls of every burst, +3 % instructions).
[[gnu::noinline]] DramChannel::Column DramChannel::commit_column_after_turnaround(ps_t ready, std::uint32_t bg, ps_t lat,
                                                                                  std::uint32_t idle) {
  ps_t idle_from = 0;
  const Column k = book_column(free_data_slot_after_idle(ready, bg, lat, idle, &idle_from), bg, lat);
  // The idle slots: the `idle` free slots directly before the data slot (free_data_slot_after_idle found them).
  for (std::uint32_t i = 0; i < idle; ++i) bus_.reserve(idle_from + i * bus_slot_ps_);
  return k;
}

[[gnu::always_inline]] inline ps_t DramChannel::burst_inline(ps_t t, const DramAddress& a, bool write,
                                                             RowResult* result, int* served) {
  const std::uint32_t bank = a.flat_bank(banks_per_group_);
  Bank& b = banks_[bank];
  BankHead& h = heads_[bank];
  const std::uint32_t bg = a.bank_group;
  ps_t t0 = t;
  t = after_refresh(t);
  if (t != t0) ++stats_.refresh_stalls;
  const int n = int(h.n);
  int i = n - 1;  // the interval open (or last opened) at t: usually the newest
  if (i >= 0 && at(b, h, i).act > t) {
    if (h.dropped && t < at(b, h, 0).act) {
      t = at(b, h, 0).act;
      ++stats_.history_clamps;
    }
    while (i >= 0 && at(b, h, i).act > t) --i;
  }

  RowResult r;
  Column k;
  for (;;) {
    RowInterval* I = i >= 0 ? &at(b, h, i) : nullptr;
    RowInterval* J = i + 1 < n ? &at(b, h, i + 1) : nullptr;
    // Row hit in I: the request arrived (t) before I's row was precharged, so a first-ready scheduler had it
    // queued while the row was open and serves it before the PRE. Its column takes the first free
    // column/bus slot at or after max(t, ACT + tRCD), but not after the refresh that closes the row.
    if (I && I->row == a.row && t < I->closes) {
      const ps_t deadline = J && J->act < I->closes ? J->act - tRP_ : I->closes;
      const ps_t ready = std::max(t, I->act + tRCD_);
      if (t < deadline && column_before(ready, bg, write, I->closes)) {
        k = commit_column(ready, bg, write);
        const ps_t need = pre_after(k, write);
        if (need > deadline) ++stats_.late_row_hits;
        I->min_pre = std::max(I->min_pre, need);
        r = RowResult::Hit;
        if (served) *served = i;
        break;
      }
    }
    // A new interval in the gap after I: PRE of I (if open), tRP, ACT, tRCD, column.
    const ps_t tg = I ? std::max(t, I->act) : t;  // the gap starts no earlier than I's ACT
    bool open = I && tg < I->closes;
    ps_t act = tg;
    if (open) {
      ps_t pre = std::max(tg, I->min_pre);
      if (pre + tRP_ > I->closes) {
        open = false;  // the refresh closes I first (a PRE must end tRP before it)
        act = std::max(tg, I->closes);
      } else {
        act = pre + tRP_;
      }
    }
    if (I) act = std::max(act, I->act + tRC_);
    // The new interval must open before J's ACT (and, unless it merges into J's row, tRC before it), and
    // peek_act() only moves `act` later: when `act` already misses that, the gap cannot hold the burst, so
    // go on to J without peeking (see the header: exact in practice, not provably, because a skipped peek
    // could have slid a calendar's horizon).
    if (shortcuts_ && J && (act >= J->act || (J->row != a.row && act + tRC_ > J->act))) {
      ++i;
      continue;
    }
    // An ACT at or after J's cannot fit this gap, and the peek and the checks below only move `act` later:
    // when the ACT calendar is known to be taken from `act` to J's ACT (BankHead::act_full_lo/hi), or the peek
    // lands at or after J's ACT, go on to J as above (the same shortcut; it skips the peek, or the refresh fit
    // checks and their column peeks).
    if (shortcuts_ && J && act >= h.act_full_lo && J->act <= h.act_full_hi) {
      ++i;
      continue;
    }
    const std::uint32_t pc = bank % pseudo_channels_;
    ActSlot act_slot = peek_act(act, pc);
    if (shortcuts_ && J && act_slot.start() >= J->act) {
      h.act_full_lo = act, h.act_full_hi = act_slot.start();
      ++i;
      continue;
    }
    act = act_slot.start();
    ps_t closes = next_refresh(act);
    // The row must be precharged tRP before the refresh that closes it: tRAS after the ACT at the earliest, and
    // after its column (column_before). Otherwise the ACT moves after that refresh.
    while ((closes != ~ps_t(0) && act + tRAS_ + tRP_ > closes) || !column_before(act + tRCD_, bg, write, closes)) {
      act_slot = peek_act(closes, pc);
      act = act_slot.start();
      closes = next_refresh(act);
    }
    if (open && act >= I->closes) open = false;  // moved past the refresh, which closed I: a miss, no PRE
    bool merge = false, fits = !J;
    if (J && act < J->act) {
      const Column c = peek_column(act + tRCD_, bg, write);
      if (J->row == a.row && J->act < closes) {
        // Same row as the next interval: open it earlier instead (one ACT, no PRE in between).
        RowInterval* K = i + 2 < n ? &at(b, h, i + 2) : nullptr;
        const ps_t deadline = K && K->act < J->closes ? K->act - tRP_ : J->closes;
        merge = fits = pre_after(c, write) <= deadline;
      } else {
        const ps_t min_pre = std::max(act + tRAS_, pre_after(c, write));
        fits = J->act >= act + tRC_ && (J->act >= closes || min_pre + tRP_ <= J->act);
      }
    }
    if (!fits) {  // try the next interval: a row hit there, or the gap after it
      ++i;
      continue;
    }
    take_act(act_slot, pc);  // the slots peek_act found free at `act`
    k = commit_column(act + tRCD_, bg, write);
    r = open ? RowResult::Conflict : RowResult::Miss;
    // Precharges = intervals followed by another one before their refresh.
    const int had = I && J && J->act < I->closes;
    if (merge) {
      J->act = act;
      J->min_pre = std::max(J->min_pre, pre_after(k, write));
      // J's ACT moved earlier (no new ACT counted; its old slot stays taken on the ACT calendar).
      stats_.precharges += std::uint64_t(std::max(0, int(open) - had));
      if (served) *served = i + 1;
      break;
    }
    ++stats_.activates;
    stats_.precharges += std::uint64_t(std::max(0, int(open) + int(J && J->act < closes) - had));
    const int at_pos = insert(b, h, i + 1, RowInterval{act, std::max(act + tRAS_, pre_after(k, write)), closes, a.row});
    if (served) *served = at_pos;
    break;
  }
  if (r == RowResult::Hit) ++stats_.row_hits;
  else if (r == RowResult::Miss) ++stats_.row_misses;
  else ++stats_.row_conflicts;
  if (result) *result = r;
  return k.data + tBURST_;
}

ps_t DramChannel::burst(ps_t t, const DramAddress& a, bool write, RowResult* result) {
  return burst_inline(t, a, write, result, nullptr);
}

// The next burst of a line to the row its previous burst was just served in (same bank, same arrival time `t`):
// a row hit in that interval (logical index `served`) when the hit test of burst_inline passes there. burst_inline
// would reach the same interval and the same column: every interval and gap before it failed for the previous
// burst, and the calendars and bounds their tests read only fill up or rise since (the horizon caveat of the
// gap shortcuts aside: dram_channel.h). Not so after the first write of a drain episode: its turnaround's idle
// bus can fail a hit that the next write passes, so bursts() does not take this after one (a test stream found
// it). Returns false, changing nothing, when the test fails or the bank's history was clamped (then
// burst_inline decides). Out of line: inlined into bursts(), it made GCC stop inlining calendar and refresh helpers
// into the general path (write stream 4 % slower). Callgrind, bench_hw_gpu v100 2 (thirty-ninth session): the
// memory controllers' reads 366 -> 335 M instructions, writes 168 -> 166 M; every preset's stats identical.
[[gnu::noinline]] bool DramChannel::hit_in_served_row(ps_t t, const DramAddress& a, bool write, int served,
                                                                  ps_t* end) {
  const std::uint32_t bank = a.flat_bank(banks_per_group_);
  Bank& b = banks_[bank];
  BankHead& h = heads_[bank];
  const ps_t t0 = t;
  t = after_refresh(t);
  if (h.dropped && t < at(b, h, 0).act) return false;  // burst_inline clamps it
  RowInterval& I = at(b, h, served);
  if (I.row != a.row || t >= I.closes) return false;
  const int n = int(h.n);
  const RowInterval* J = served + 1 < n ? &at(b, h, served + 1) : nullptr;
  const ps_t deadline = J && J->act < I.closes ? J->act - tRP_ : I.closes;
  const ps_t ready = std::max(t, I.act + tRCD_);
  if (!(t < deadline) || !column_before(ready, a.bank_group, write, I.closes)) return false;
  if (t != t0) ++stats_.refresh_stalls;
  const Column k = commit_column(ready, a.bank_group, write);
  const ps_t need = pre_after(k, write);
  if (need > deadline) ++stats_.late_row_hits;
  I.min_pre = std::max(I.min_pre, need);
  ++stats_.row_hits;
  *end = k.data + tBURST_;
  return true;
}

ps_t DramChannel::bursts(ps_t t, const DramAddress* a, std::size_t n, bool write) {
  ps_t end = t;
  int served = -1;
  for (std::size_t i = 0; i < n; ++i) {
    ps_t e;
    if (served >= 0 && shortcuts_ && a[i].bank_group == a[i - 1].bank_group && a[i].bank == a[i - 1].bank &&
        a[i].row == a[i - 1].row && hit_in_served_row(t, a[i], write, served, &e)) {
      end = std::max(end, e);
      continue;
    }
    served = -1;
    const bool turned = turnaround(write) != 0;
    end = std::max(end, burst_inline(t, a[i], write, nullptr, &served));
    if (turned) served = -1;
  }
  return end;
}

}  // namespace spartan::hw::gpu
