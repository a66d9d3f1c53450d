// Bandwidth reservation of a shared resource (a crossbar port, a bus) in a loosely-timed model.
//
// A plain "busy until" register is exact only when requests arrive in time order; in a temporally
// decoupled model they do not (a response computed for t + 1 us may be reserved before one for t + 10 ns),
// and a single register would then make the early request queue behind the late one. BandwidthCalendar
// keeps the capacity per time bin over a sliding horizon instead: a transfer of n bytes arriving at t
// takes free capacity from bin(t) onward and finishes where its last byte fits, so out-of-order
// reservations see the contention that really exists at their own time. Bins are `bin_cycles` cycles
// wide (granularity of the queueing delay); requests older than the horizon are charged at its start.
//
// Layout (both calendars): one 12-byte entry per bin in a ring, holding the bin's use, a forward link
// for full bins and the ring lap the entry belongs to. An entry of an older lap reads as empty, so
// moving the horizon costs no clearing pass over old bins (they are reset lazily when next touched),
// and a reservation touches one cache line per bin. Results are identical to clearing eagerly.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "spartan/hw/clock.h"

namespace spartan::hw {

namespace detail {
/// One bin of a calendar ring: `lap` = absolute bin >> log2(ring size) it belongs to (an entry of another
/// lap is empty), `used` units taken, `dist` (full bins only) = distance to a later bin such that every
/// bin in between is full.
struct CalendarBin {
  std::uint32_t lap = 0, used = 0, dist = 1;
};
inline unsigned log2_exact(std::uint64_t v) { return unsigned(__builtin_ctzll(v)); }
}  // namespace detail

class BandwidthCalendar {
 public:
  /// `bytes_per_cycle` of capacity in `clk`; bins of `bin_cycles`; horizon of `bins` bins (power of two).
  BandwidthCalendar(const ClockDomain& clk, std::uint32_t bytes_per_cycle, std::uint32_t bin_cycles = 4,
                    std::uint32_t bins = 1u << 14)
      : bin_ps_(std::max<ps_t>(1, clk.cycles_to_ps(bin_cycles))),
        cap_(std::uint64_t(bytes_per_cycle) * bin_cycles),
        ring_(bins),
        size_(bins),
        mask_(bins - 1),
        shift_(detail::log2_exact(bins)) {}

  /// Reserves `bytes` starting no earlier than `t`; returns the time the transfer completes.
  /// Full bins are skipped through forward links (path-compressed), so a long backlog costs O(1)
  /// amortised; the result is the same as walking the bins one by one.
  ps_t reserve(ps_t t, std::uint64_t bytes) {
    std::uint64_t bin = t / bin_ps_;
    if (bin < full_until_) bin = full_until_;  // every bin before the watermark is full
    if (bin >= base_ + size_ / 2) slide(bin);
    ps_t end = t + bin_ps_ * bytes / cap_;  // never faster than the port's rate
    while (bytes) {
      if (bin >= base_ + size_) slide(bin);
      detail::CalendarBin& e = at(bin);
      if (e.used >= cap_) {  // full: jump to the first bin with free capacity (or the horizon's end)
        std::uint64_t nx = skip_full(bin);
        if (bin == full_until_) full_until_ = nx;
        bin = nx;
        continue;
      }
      std::uint64_t take = std::min<std::uint64_t>(bytes, cap_ - e.used);
      e.used += std::uint32_t(take);
      bytes -= take;
      ps_t bin_start = bin * bin_ps_;
      end = std::max(end, bin_start + bin_ps_ * e.used / cap_);
      if (e.used >= cap_) {
        e.dist = 1;
        if (bin == full_until_) ++full_until_;
      }
      ++bin;
    }
    return end;
  }

 private:
  detail::CalendarBin& at(std::uint64_t bin) {  // entry of `bin` (inside the horizon), reset if stale
    detail::CalendarBin& e = ring_[bin & mask_];
    std::uint32_t lap = std::uint32_t(bin >> shift_);
    if (e.lap != lap) e.lap = lap, e.used = 0;
    return e;
  }
  void slide(std::uint64_t bin) {  // keep `bin` in the upper half of the horizon (older bins drop out)
    base_ = bin - size_ / 2;
    if (full_until_ < base_) full_until_ = base_;
  }
  // First bin >= `bin` (full) that is not full, or the end of the horizon (base_ + bins).
  std::uint64_t skip_full(std::uint64_t bin) {
    const std::uint64_t lim = base_ + size_;
    std::uint64_t root = bin;
    while (root < lim) {
      const detail::CalendarBin& e = at(root);
      if (e.used < cap_) break;
      root += e.dist;
    }
    if (root > lim) root = lim;
    for (std::uint64_t b = bin; b < root;) {  // path compression: every bin on the way links to root
      detail::CalendarBin& e = ring_[b & mask_];
      std::uint64_t nx = b + e.dist;
      e.dist = std::uint32_t(root - b);
      b = nx;
    }
    return root;
  }
  ps_t bin_ps_;
  std::uint64_t cap_;
  std::vector<detail::CalendarBin> ring_;
  std::uint64_t size_, mask_;
  unsigned shift_;
  std::uint64_t base_ = 0, full_until_ = 0;
};

/// Unit-capacity slots of a command/data resource (a DRAM data bus: one burst per tBURST; ACTs of a
/// channel: one per tRRD). Like BandwidthCalendar, correct for out-of-time-order reservations: a slot is
/// granted in the first bin at or after t with free capacity. Full bins are skipped through forward
/// "next possibly free" links with path compression (union-find), so a long backlog costs O(1) amortised.
/// Bins are `slot_ps` wide with `per_slot` units each; the horizon is `bins` slots (power of two); older
/// requests are charged at its start.
class SlotCalendar {
 public:
  SlotCalendar(ps_t slot_ps, std::uint32_t per_slot = 1, std::uint32_t bins = 1u << 15)
      : slot_ps_(std::max<ps_t>(1, slot_ps)),
        per_(per_slot),
        ring_(bins),
        size_(bins),
        mask_(bins - 1),
        shift_(detail::log2_exact(bins)) {}

  /// Takes one unit in the first slot at or after `t`; returns the slot's start time (>= t).
  ps_t reserve(ps_t t) {
    std::uint64_t bin = find(t / slot_ps_);
    detail::CalendarBin& e = ring_[bin & mask_];  // find() left it current
    if (++e.used >= per_) e.dist = 1;
    return std::max<ps_t>(t, bin * slot_ps_);
  }
  /// Marks every slot that starts in [from, to) as taken (e.g. a refresh window on a bus).
  void block(ps_t from, ps_t to) {
    for (std::uint64_t bin = (from + slot_ps_ - 1) / slot_ps_; bin * slot_ps_ < to; ++bin) {
      if (bin < base_) continue;
      if (bin >= base_ + size_ / 2) slide(bin);
      detail::CalendarBin& e = at(bin);
      e.used = per_;
      e.dist = 1;
    }
  }

 private:
  detail::CalendarBin& at(std::uint64_t bin) {  // entry of `bin` (inside the horizon), reset if stale
    detail::CalendarBin& e = ring_[bin & mask_];
    std::uint32_t lap = std::uint32_t(bin >> shift_);
    if (e.lap != lap) e.lap = lap, e.used = 0;
    return e;
  }
  // First bin >= `bin` with a free unit (sliding the horizon as needed).
  std::uint64_t find(std::uint64_t bin) {
    if (bin < base_) bin = base_;
    if (bin >= base_ + size_ / 2) slide(bin);
    std::uint64_t root = bin;
    for (;;) {
      const detail::CalendarBin& e = at(root);
      if (e.used < per_) break;
      std::uint64_t nx = root + e.dist;
      if (nx >= base_ + size_) {
        slide(nx);
        bin = root = std::max(nx, base_);
        continue;
      }
      root = nx;
    }
    while (bin < root) {  // path compression (every bin on the path is full and current)
      detail::CalendarBin& e = ring_[bin & mask_];
      std::uint64_t nx = bin + e.dist;
      e.dist = std::uint32_t(root - bin);
      bin = nx;
    }
    return root;
  }
  void slide(std::uint64_t bin) {  // keep `bin` in the upper half of the horizon (older bins drop out)
    std::uint64_t nb = bin - size_ / 2;
    if (nb > base_) base_ = nb;
  }
  ps_t slot_ps_;
  std::uint32_t per_;
  std::vector<detail::CalendarBin> ring_;
  std::uint64_t size_, mask_;
  unsigned shift_;
  std::uint64_t base_ = 0;
};

}  // namespace spartan::hw
