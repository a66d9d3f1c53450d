// SortedQueue and IssueQueue against MinHeap: the same sequence of tops for random, near-sorted and tied
// streams.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <utility>

#include "spartan/hw/gpu/busy_intervals.h"
#include "spartan/hw/gpu/min_heap.h"
#include "spartan/hw/gpu/sorted_queue.h"

using spartan::hw::gpu::MinHeap;
using spartan::hw::gpu::SortedQueue;

namespace {

// Fills both queues with `n` values, then does `ops` replace_top / pop / push steps, comparing every top.
// `jitter` = spread of the values put in around a rising clock (0: ascending; large: random order).
void compare(std::uint32_t seed, std::size_t n, std::uint64_t jitter, std::size_t ops) {
  std::mt19937_64 rng(seed);
  MinHeap<std::uint64_t> h;
  SortedQueue<std::uint64_t> q;
  std::uint64_t clock = 1000;
  auto next = [&] {
    clock += rng() % 8;
    return clock + (jitter ? rng() % jitter : 0);
  };
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t v = next();
    h.push(v), q.push(v);
    ASSERT_EQ(h.size(), q.size());
    ASSERT_EQ(h.top(), q.top());
  }
  for (std::size_t k = 0; k < ops; ++k) {
    const std::uint64_t r = rng() % 16;
    if (r == 0 && !h.empty()) {
      h.pop(), q.pop();
    } else if (r == 1 || h.empty()) {
      const std::uint64_t v = next();
      h.push(v), q.push(v);
    } else {
      const std::uint64_t v = r == 2 ? h.top() : next();  // ties with the top too
      h.replace_top(v), q.replace_top(v);
    }
    ASSERT_EQ(h.size(), q.size()) << "step " << k;
    if (!h.empty()) {
      ASSERT_EQ(h.top(), q.top()) << "step " << k;
      if (k % 64 == 0) {  // back(): the largest element (L2Slice::flush waits for the last write-back)
        MinHeap<std::uint64_t> c = h;
        std::uint64_t mx = 0;
        while (!c.empty()) mx = std::max(mx, c.top()), c.pop();
        ASSERT_EQ(q.back(), mx) << "step " << k;
      }
    }
  }
  while (!h.empty()) {
    ASSERT_EQ(h.top(), q.top());
    h.pop(), q.pop();
  }
  EXPECT_TRUE(q.empty());
}

}  // namespace

TEST(SortedQueue, MatchesMinHeapAscending) { compare(1, 192, 0, 100000); }
TEST(SortedQueue, MatchesMinHeapNearSorted) { compare(2, 64, 40, 100000); }
TEST(SortedQueue, MatchesMinHeapRandom) { compare(3, 100, 1u << 30, 100000); }
TEST(SortedQueue, MatchesMinHeapTiesAndGrowth) { compare(4, 3, 2, 100000); }

TEST(SortedQueue, PairsOrderLikeMinHeap) {
  std::mt19937 rng(5);
  MinHeap<std::pair<std::uint64_t, std::uint32_t>> h;
  SortedQueue<std::pair<std::uint64_t, std::uint32_t>> q;
  for (std::uint32_t i = 0; i < 80; ++i) {
    const std::uint64_t v = rng() % 50;
    h.push({v, i}), q.push({v, i});
  }
  for (int k = 0; k < 20000; ++k) {
    ASSERT_EQ(h.top(), q.top());
    const auto t = h.top();
    const std::pair<std::uint64_t, std::uint32_t> x{t.first + rng() % 20, t.second};
    h.replace_top(x), q.replace_top(x);
  }
}

// IssueQueue (packed 64-bit keys) against a MinHeap of (time, index) pairs, the SmScheduler's use: each
// step replaces the top with the same index at a later time, or drops it. Times start near the packing
// limit in the second case, so the queue moves to pairs mid-stream.
namespace {
void compare_issue(std::uint32_t seed, std::uint32_t n, std::uint64_t t0, bool expect_spill) {
  std::mt19937_64 rng(seed);
  MinHeap<std::pair<std::uint64_t, std::uint32_t>> h;
  spartan::hw::gpu::IssueQueue q;
  q.reset(n);
  for (std::uint32_t i = 0; i < n; ++i) {
    const std::uint64_t t = t0 + rng() % 1000;
    h.push({t, i}), q.push(t, i);
  }
  for (int k = 0; k < 200000 && !h.empty(); ++k) {
    ASSERT_EQ(h.top(), q.top()) << "step " << k;
    const auto [t, i] = h.top();
    if (rng() % 2000 == 0) {
      h.pop(), q.pop();
    } else {
      const std::uint64_t tn = t + rng() % (rng() % 4 ? 3 : 5000);  // ties in time are frequent
      h.replace_top({tn, i}), q.replace_top(tn, i);
    }
  }
  EXPECT_EQ(q.spilled(), expect_spill);
  while (!h.empty()) {
    ASSERT_EQ(h.top(), q.top());
    h.pop(), q.pop();
  }
  EXPECT_TRUE(q.empty());
}
}  // namespace

TEST(IssueQueue, MatchesPairHeapPacked) { compare_issue(6, 80, 0, false); }
TEST(IssueQueue, MatchesPairHeapAcrossThePackingLimit) {
  compare_issue(7, 80, (std::uint64_t(1) << 57) - 200000, true);  // 80 SMs: 7 index bits, limit 2^57
}
TEST(IssueQueue, OneIndexAndPowersOfTwo) {
  compare_issue(8, 1, 0, false);
  compare_issue(9, 64, 0, false);
  compare_issue(10, 65, (std::uint64_t(1) << 57) - 1000, true);
}

// BusyIntervals (the L2 data array's bookings): requests in time order are timed exactly as by a busy-until
// register (also with a backlog deeper than the kept history); a request arriving after a later-in-time one
// takes the hole at its own time.
TEST(BusyIntervals, InTimeOrderItIsABusyUntilRegister) {
  std::mt19937_64 rng(5);
  spartan::hw::gpu::BusyIntervals<64> b;
  std::uint64_t t = 0, busy_until = 0;
  for (int i = 0; i < 100000; ++i) {
    t += rng() % 3000;  // non-decreasing arrivals, often inside the previous request's occupancy
    const std::uint64_t d = 500 + rng() % 2000;
    const std::uint64_t expect = std::max(t, busy_until);
    busy_until = expect + d;
    ASSERT_EQ(b.book(t, d), expect) << i;
  }
  EXPECT_EQ(b.latest_end(), busy_until);
}

TEST(BusyIntervals, AnEarlierRequestTakesTheHoleAtItsOwnTime) {
  spartan::hw::gpu::BusyIntervals<4> b;
  EXPECT_EQ(b.book(1000, 100), 1000u);   // [1000, 1100)
  EXPECT_EQ(b.book(5000, 100), 5000u);   // [5000, 5100): booked first by a thread running ahead
  EXPECT_EQ(b.book(2000, 100), 2000u);   // earlier, arrives later: its own time (a register said 5100)
  EXPECT_EQ(b.book(1050, 100), 1100u);   // overlaps [1000, 1100): right after it, in the hole before 2000
  EXPECT_EQ(b.book(1150, 900), 2100u);   // does not fit before 2000: after [2000, 2100)
  EXPECT_EQ(b.latest_end(), 5100u);
  // The history keeps 4: [1000, 1100) was dropped. A request before every kept interval is placed from the
  // oldest kept one on ([1100, 1200)), as by a busy-until register: the first hole after it.
  EXPECT_EQ(b.book(900, 100), 1200u);
  EXPECT_EQ(b.book(6000, 50), 6000u);    // time order again
  EXPECT_EQ(b.latest_end(), 6050u);
}
