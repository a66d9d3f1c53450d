// The calendars of reservation.h (bitmap words, lazy lap reset, linked full words, division without a
// divide) against a plain reference: the first version of the same classes, which walks bins one by one
// and clears old bins eagerly. Random out-of-time-order request streams with small horizons (so that the
// horizon slides and the ring laps many times) must give identical results, reservation by reservation.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <utility>
#include <vector>

#include "spartan/hw/reservation.h"

using namespace spartan::hw;

namespace ref {
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
    if (bin < base_) return t + bin_ps_ * bytes / cap_;  // older than the horizon: the port's rate, no booking
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
}  // namespace ref

namespace {

struct Case {
  double mhz;
  std::uint32_t bytes_per_cycle, bin_cycles, bins;
};

TEST(CrossbarCalendar, BandwidthCalendarMatchesReference) {
  const Case cases[] = {{1447, 32, 8, 64}, {1447, 32, 8, 2048}, {1000, 16, 4, 128}, {850, 64, 2, 256}, {1593, 24, 3, 64}};
  for (const auto& c : cases) {
    ClockDomain clk{"x", c.mhz};
    BandwidthCalendar fast(clk, c.bytes_per_cycle, c.bin_cycles, c.bins);
    ref::BandwidthCalendar slow(clk, c.bytes_per_cycle, c.bin_cycles, c.bins);
    std::mt19937_64 rng(c.bins * 7 + c.bin_cycles);
    const ps_t bin_ps = clk.cycles_to_ps(c.bin_cycles);
    const std::uint64_t cap = std::uint64_t(c.bytes_per_cycle) * c.bin_cycles;
    ps_t now = 0;
    for (int i = 0; i < 200000; ++i) {
      // Mostly near "now", some far behind (older than the horizon) or ahead; time drifts forward
      // at a little under the port's rate so that backlogs build up and drain.
      ps_t t = now;
      switch (rng() % 8) {
        case 0: t = now > bin_ps * c.bins ? now - rng() % (bin_ps * c.bins) : rng() % (now + 1); break;
        case 1: t = now + rng() % (bin_ps * c.bins); break;
        case 2: t = now + rng() % (bin_ps * c.bins / 2); break;
        default: t = now > 50 * bin_ps ? now - rng() % (50 * bin_ps) : now; break;
      }
      std::uint64_t bytes = 1 + rng() % (3 * cap);
      if (rng() % 16 == 0) bytes = 0;
      if (rng() % 32 == 0) bytes = rng() % (200 * cap);  // long transfers: runs of full words ahead
      // The fast calendar counts whole flits (bytes_per_cycle bytes): the reference gets the size rounded up.
      const std::uint64_t flit_bytes = (bytes + c.bytes_per_cycle - 1) / c.bytes_per_cycle * c.bytes_per_cycle;
      ASSERT_EQ(fast.reserve(t, bytes), slow.reserve(t, flit_bytes)) << "case bins=" << c.bins << " op " << i;
      // Phases of overload (backlog past half the horizon: the watermark moves the horizon) and of
      // light load (holes and islands of full words left behind future reservations).
      now += (i / 5000) % 2 ? bin_ps * (rng() % 3) / 2 : bin_ps * (rng() % 2) / 8;
    }
  }
}

// A transfer occupies whole flits: 1..32 B on a 32 B/cycle port take one cycle, 33 B two; reserve_flits(n)
// is reserve(n flits' bytes). Bins hold at most 15 cycles (4-bit counts) and the horizon is a power of two.
TEST(CrossbarCalendar, TransfersTakeWholeFlits) {
  ClockDomain clk{"x", 1000};  // 1 ns cycles
  BandwidthCalendar a(clk, 32, 8, 256), b(clk, 32, 8, 256);
  EXPECT_EQ(a.reserve(0, 1), ps_t(1000));
  EXPECT_EQ(a.reserve(0, 32), ps_t(2000));   // the second flit of bin 0
  EXPECT_EQ(a.reserve(0, 33), ps_t(4000));   // two more
  EXPECT_EQ(b.reserve_flits(0, 1), ps_t(1000));
  EXPECT_EQ(b.reserve_flits(0, 1), ps_t(2000));
  EXPECT_EQ(b.reserve_flits(0, 2), ps_t(4000));
  EXPECT_EQ(a.reserve(0, 0), ps_t(0));       // nothing to move
  EXPECT_EQ(a.reserve(0, 8 * 32), ps_t(12000));  // fills bin 0 (4 flits left), then 4 flits of bin 1
  EXPECT_THROW(BandwidthCalendar(clk, 32, 16, 256), std::invalid_argument);
  EXPECT_THROW(BandwidthCalendar(clk, 32, 0, 256), std::invalid_argument);
  EXPECT_THROW(BandwidthCalendar(clk, 0, 8, 256), std::invalid_argument);
  EXPECT_THROW(BandwidthCalendar(clk, 32, 8, 100), std::invalid_argument);
  EXPECT_NO_THROW(BandwidthCalendar(clk, 32, 15, 2));
}

// Calendars are values: a copy (std::vector<SlotCalendar>(n, proto), as a DRAM channel's bank groups are
// made) books into its own ring; the original and other copies keep what they had.
TEST(DramCalendar, CopiesAreIndependent) {
  SlotCalendar proto(1000, 1, 256);
  proto.reserve(0);
  std::vector<SlotCalendar> cals(3, proto);
  EXPECT_EQ(cals[0].reserve(0), ps_t(1000));  // slot 0 was taken before the copy
  EXPECT_EQ(cals[0].reserve(0), ps_t(2000));
  EXPECT_EQ(cals[1].reserve(0), ps_t(1000));  // not slot 2: cals[0]'s booking is its own
  EXPECT_EQ(proto.reserve(0), ps_t(1000));
  SlotCalendar assigned(5000, 1, 256);
  assigned = cals[0];
  EXPECT_EQ(assigned.reserve(0), ps_t(3000));
  EXPECT_EQ(cals[0].reserve(0), ps_t(3000));
  // A moved-from calendar can be copied (into another moved-from one) and assigned a new value.
  SlotCalendar moved = std::move(cals[1]);
  EXPECT_EQ(moved.reserve(0), ps_t(2000));
  SlotCalendar copy_of_moved_from(cals[1]);
  copy_of_moved_from = proto;
  EXPECT_EQ(copy_of_moved_from.reserve(0), ps_t(2000));
  EXPECT_THROW(SlotCalendar(1000, 1, 100), std::invalid_argument);  // the horizon is a power of two
}

// A request older than the horizon (a later reservation slid it) is timed at the port's rate from its own time
// and counted; it is not charged at the horizon's start (which put an L2 hit behind a whole hot-spot backlog).
TEST(CrossbarCalendar, RequestOlderThanTheHorizonIsNotChargedAtItsStart) {
  ClockDomain clk{"x", 1000};  // 1 ns cycles
  BandwidthCalendar bw(clk, 32, 8, 256);  // 8 ns bins, a 2048 ns horizon (its start trails the latest by half)
  std::uint64_t owner = 0;
  bw.count_stale_in(&owner);
  EXPECT_EQ(bw.reserve(0, 64), ps_t(2000));                 // 64 B at 32 B/ns
  EXPECT_EQ(owner, 0u);
  const ps_t far = 100000000;                               // 100 us later: the horizon slides there
  EXPECT_EQ(bw.reserve(far, 32), far + 1000);
  EXPECT_EQ(bw.reserve(5000, 128), ps_t(5000 + 4000));      // old: its own time + 4 ns (was ~99 us)
  EXPECT_EQ(owner, 1u);
  EXPECT_EQ(bw.reserve(far, 32), far + 2000);               // the recent bookings are kept
  EXPECT_EQ(owner, 1u);
}

TEST(DramCalendar, SlotCalendarMatchesReference) {
  const std::uint32_t pers[] = {1, 1, 3};
  const std::uint32_t bins_list[] = {64, 1024, 128};
  const ps_t slot_list[] = {1176, 3529, 1000};
  for (int k = 0; k < 3; ++k) {
    SlotCalendar fast(slot_list[k], pers[k], bins_list[k]);
    ref::SlotCalendar slow(slot_list[k], pers[k], bins_list[k]);
    const ps_t slot = slot_list[k];
    const std::uint64_t bins = bins_list[k];
    std::mt19937_64 rng(100 + k);
    ps_t now = 0;
    for (int i = 0; i < 200000; ++i) {
      if (rng() % 64 == 0) {  // a refresh-like window
        ps_t from = now + rng() % (slot * 20), to = from + rng() % (slot * 40);
        fast.block(from, to);
        slow.block(from, to);
        continue;
      }
      ps_t t = now;
      switch (rng() % 8) {
        case 0: t = now > slot * bins ? now - rng() % (slot * bins) : rng() % (now + 1); break;
        case 1: t = now + rng() % (slot * bins); break;
        default: t = now > 30 * slot ? now - rng() % (30 * slot) : now; break;
      }
      const ps_t expect = slow.reserve(t);
      // A peek grants what a reservation at the same time would (and its search hint must not change
      // what later reservations get).
      if (rng() % 2) {
        ASSERT_EQ(fast.peek(t), expect) << "case " << k << " op " << i;
      }
      ASSERT_EQ(fast.reserve(t), expect) << "case " << k << " op " << i;
      now += slot * (rng() % 4) / (2 * pers[k]);
    }
  }
}

// peek_slot() + take() books exactly what reserve() of the slot's time books, horizon included (a diff
// review's case: a search that finds a bin in the horizon's upper half does not move the horizon; reserve()
// of that bin does, and a later request far behind is then charged at the horizon's new start). Random
// out-of-order requests on a small horizon, one calendar booking with reserve(peek(t)), the other with
// peek_slot(t) + take(), and a third with the same plus touch() before a repeated peek: all grant the same.
TEST(DramCalendar, PeekSlotTakeEqualsReserveOfTheSlot) {
  {  // the reviewer's case: bins 0..63 full but 20, then 36 bookings from 21 on, then a request at 20
    SlotCalendar a(1, 1, 128), b(1, 1, 128);
    for (ps_t t = 0; t < 64; ++t)
      if (t != 20) a.reserve(t), b.reserve(t);
    for (int i = 0; i < 36; ++i) {
      a.reserve(a.peek(21));
      b.take(b.peek_slot(21));
    }
    EXPECT_EQ(a.reserve(20), b.reserve(20));
  }
  std::mt19937_64 rng(3);
  for (std::uint32_t per : {1u, 2u}) {
    SlotCalendar a(700, per, 256), b(700, per, 256), c(700, per, 256);
    ps_t front = 0;
    for (int i = 0; i < 20000; ++i) {
      front += rng() % 1500;
      const ps_t t = front > 400000 && rng() % 4 == 0 ? front - rng() % 400000 : front;  // some far behind
      const ps_t ga = a.reserve(a.peek(t));
      const SlotCalendar::Slot sb = b.peek_slot(t);
      b.take(sb);
      const SlotCalendar::Slot sc = c.peek_slot(t);
      c.touch(sc);  // a repeated peek of the same slot, skipped
      c.take(sc);
      ASSERT_EQ(ga, sb.start) << i;
      ASSERT_EQ(ga, sc.start) << i;
    }
  }
}

TEST(DramCalendar, ExactDivisionMatchesDivide) {
  std::mt19937_64 rng(5);
  for (std::uint64_t d : std::vector<std::uint64_t>{1, 2, 3, 7, 80, 160, 691, 1176, 5529, 1024, 1000003,
                                                    (1ull << 32) + 1, 3ull << 40, ~0ull, ~0ull - 1}) {
    detail::ExactDiv div(d);
    for (int i = 0; i < 100000; ++i) {
      std::uint64_t x = rng() >> (rng() % 64);
      ASSERT_EQ(div.div(x), x / d) << x << " / " << d;
      ASSERT_EQ(div.mod(x), x % d) << x << " % " << d;
    }
    for (std::uint64_t x : std::vector<std::uint64_t>{0, d - 1, d, d + 1, (1ull << 52) - 1, 1ull << 52, ~0ull,
                                                      div.lim, div.lim + 1, div.lim - 1, ~0ull / d * d - 1}) {
      ASSERT_EQ(div.div(x), x / d) << x << " / " << d;
      ASSERT_EQ(div.mod(x), x % d) << x << " % " << d;
    }
  }
}

}  // namespace

// rebase(origin) after use: the calendar then times requests exactly as a fresh calendar (origin 0) times
// the same requests shifted by -origin, whatever it held before (GpuSystem::align_to_refresh relies on it).
TEST(Calendars, RebaseEqualsAFreshCalendarShiftedToTheOrigin) {
  ClockDomain clk{"x", 1447};
  std::mt19937_64 rng(11);
  BandwidthCalendar bw(clk, 32, 8, 256);
  SlotCalendar slots(1176, 2, 512);
  for (int i = 0; i < 5000; ++i) {  // history: any load at any time
    const ps_t t = rng() % 50000000;
    bw.reserve(t, 1 + rng() % 500);
    slots.reserve(t);
  }
  for (ps_t origin : {ps_t(60000000), ps_t(60000000 + 777), ps_t(123456789)}) {
    bw.rebase(origin);
    slots.rebase(origin);
    BandwidthCalendar bw0(clk, 32, 8, 256);
    SlotCalendar slots0(1176, 2, 512);
    ps_t now = 0;
    for (int i = 0; i < 20000; ++i) {
      const ps_t t = now + rng() % 40000;
      const std::uint64_t bytes = 1 + rng() % 400;
      ASSERT_EQ(bw.reserve(origin + t, bytes), origin + bw0.reserve(t, bytes)) << "origin " << origin << " op " << i;
      if (rng() % 8 == 0) {
        const ps_t from = t + rng() % 5000, to = from + rng() % 20000;
        slots.block(origin + from, origin + to);
        slots0.block(from, to);
      }
      ASSERT_EQ(slots.peek(origin + t), origin + slots0.peek(t)) << "origin " << origin << " op " << i;
      ASSERT_EQ(slots.reserve(origin + t), origin + slots0.reserve(t)) << "origin " << origin << " op " << i;
      now += rng() % 3000;
    }
  }
}
