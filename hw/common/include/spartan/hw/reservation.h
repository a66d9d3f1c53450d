// Bandwidth reservation of a shared resource (a crossbar port, a bus) in a loosely-timed model.
//
// A plain "busy until" register is exact only when requests arrive in time order; in a temporally
// decoupled model they do not (a response computed for t + 1 us may be reserved before one for t + 10 ns),
// and a single register would then make the early request queue behind the late one. BandwidthCalendar
// keeps the capacity per time bin over a sliding horizon instead: a transfer of n bytes arriving at t
// takes free capacity from bin(t) onward and finishes where its last byte fits, so out-of-order
// reservations see the contention that really exists at their own time. Bins are `bin_cycles` cycles
// wide (granularity of the queueing delay); requests older than the horizon are charged at its start.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "spartan/hw/clock.h"

namespace spartan::hw {

class BandwidthCalendar {
 public:
  /// `bytes_per_cycle` of capacity in `clk`; bins of `bin_cycles`; horizon of `bins` bins (power of two).
  BandwidthCalendar(const ClockDomain& clk, std::uint32_t bytes_per_cycle, std::uint32_t bin_cycles = 4,
                    std::uint32_t bins = 1u << 14)
      : bin_ps_(std::max<ps_t>(1, clk.cycles_to_ps(bin_cycles))),
        cap_(std::uint64_t(bytes_per_cycle) * bin_cycles),
        used_(bins, 0),
        mask_(bins - 1) {}

  /// Reserves `bytes` starting no earlier than `t`; returns the time the transfer completes.
  ps_t reserve(ps_t t, std::uint64_t bytes) {
    std::uint64_t bin = t / bin_ps_;
    if (bin < full_until_) bin = full_until_;  // every bin before the watermark is full
    if (bin >= base_ + used_.size() / 2) slide(bin);
    ps_t end = t + bin_ps_ * bytes / cap_;  // never faster than the port's rate
    while (bytes) {
      if (bin >= base_ + used_.size()) slide(bin);
      std::uint32_t& u = used_[bin & mask_];
      std::uint64_t take = std::min<std::uint64_t>(bytes, cap_ - u);
      if (take) {
        u += std::uint32_t(take);
        bytes -= take;
        ps_t bin_start = bin * bin_ps_;
        end = std::max(end, bin_start + bin_ps_ * u / cap_);
      }
      if (bin == full_until_ && used_[bin & mask_] >= cap_) ++full_until_;
      ++bin;
    }
    return end;
  }

 private:
  void slide(std::uint64_t bin) {  // keep `bin` in the upper half of the horizon
    std::uint64_t nb = bin - used_.size() / 2;
    for (std::uint64_t b = base_; b < std::min(nb, base_ + used_.size()); ++b) used_[b & mask_] = 0;
    if (nb >= base_ + used_.size()) std::fill(used_.begin(), used_.end(), 0);
    base_ = nb;
    if (full_until_ < base_) full_until_ = base_;
  }
  ps_t bin_ps_;
  std::uint64_t cap_;
  std::vector<std::uint32_t> used_;
  std::uint64_t mask_, base_ = 0, full_until_ = 0;
};

}  // namespace spartan::hw

namespace spartan::hw {

/// Unit-capacity slots of a command/data resource (a DRAM data bus: one burst per tBURST; ACTs of a
/// channel: one per tRRD). Like BandwidthCalendar, correct for out-of-time-order reservations: a slot is
/// granted in the first bin at or after t with free capacity. Full bins are skipped through forward
/// "next possibly free" links with path compression (union-find), so a long backlog costs O(1) amortised.
/// Bins are `slot_ps` wide with `per_slot` units each; the horizon is `bins` slots (power of two); older
/// requests are charged at its start.
class SlotCalendar {
 public:
  SlotCalendar(ps_t slot_ps, std::uint32_t per_slot = 1, std::uint32_t bins = 1u << 15)
      : slot_ps_(std::max<ps_t>(1, slot_ps)), per_(per_slot), used_(bins, 0), next_(bins), mask_(bins - 1) {
    for (std::uint64_t b = 0; b < bins; ++b) next_[b] = b;
  }

  /// Takes one unit in the first slot at or after `t`; returns the slot's start time (>= t).
  ps_t reserve(ps_t t) {
    std::uint64_t bin = find(t / slot_ps_);
    if (++used_[bin & mask_] >= per_) next_[bin & mask_] = bin + 1;
    return std::max<ps_t>(t, bin * slot_ps_);
  }
  /// Marks every slot that starts in [from, to) as taken (e.g. a refresh window on a bus).
  void block(ps_t from, ps_t to) {
    for (std::uint64_t bin = (from + slot_ps_ - 1) / slot_ps_; bin * slot_ps_ < to; ++bin) {
      if (bin < base_) continue;
      if (bin >= base_ + used_.size() / 2) slide(bin);
      used_[bin & mask_] = std::uint16_t(per_);
      next_[bin & mask_] = bin + 1;
    }
  }

 private:
  // First bin >= `bin` with a free unit (sliding the horizon as needed).
  std::uint64_t find(std::uint64_t bin) {
    if (bin < base_) bin = base_;
    if (bin >= base_ + used_.size() / 2) slide(bin);
    std::uint64_t root = bin;
    while (used_[root & mask_] >= per_) {
      std::uint64_t nx = next_[root & mask_];
      if (nx >= base_ + used_.size()) {
        slide(nx);
        bin = root = std::max(nx, base_);
        continue;
      }
      root = nx;
    }
    while (bin < root && bin >= base_) {  // path compression
      std::uint64_t nx = next_[bin & mask_];
      next_[bin & mask_] = root;
      if (nx <= bin) break;
      bin = nx;
    }
    return root;
  }
  void slide(std::uint64_t bin) {  // keep `bin` in the upper half of the horizon
    std::uint64_t nb = bin - used_.size() / 2;
    if (nb <= base_) return;
    std::uint64_t stop = std::min(nb, base_ + used_.size());
    for (std::uint64_t b = base_; b < stop; ++b) {
      used_[b & mask_] = 0;
      next_[b & mask_] = b + used_.size();  // the slot's new absolute bin
    }
    if (nb >= base_ + used_.size())
      for (std::uint64_t b = nb; b < nb + used_.size(); ++b) used_[b & mask_] = 0, next_[b & mask_] = b;
    base_ = nb;
  }
  ps_t slot_ps_;
  std::uint32_t per_;
  std::vector<std::uint16_t> used_;
  std::vector<std::uint64_t> next_;
  std::uint64_t mask_, base_ = 0;
};

}  // namespace spartan::hw
