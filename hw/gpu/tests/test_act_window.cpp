// ActWindow: the channel's ACT constraints (tRRD, tFAW) for bookings in any time order, against a brute-force
// reference; and the DramChannel using it (no SystemC needed).
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "spartan/hw/gpu/act_window.h"
#include "spartan/hw/gpu/dram_channel.h"

using namespace spartan::hw;
using namespace spartan::hw::gpu;

namespace {

// Whether an ACT at t keeps tRRD and tFAW against the booked ACTs `acts` (any order), by definition: every
// booked ACT at least tRRD away, and every five consecutive ACTs of the time-sorted list with t span >= tFAW.
bool valid(std::vector<ps_t> acts, ps_t t, ps_t trrd, ps_t tfaw) {
  for (ps_t a : acts)
    if ((a > t ? a - t : t - a) < trrd) return false;
  acts.push_back(t);
  std::sort(acts.begin(), acts.end());
  if (tfaw)
    for (std::size_t i = 0; i + 4 < acts.size(); ++i)
      if (acts[i + 4] - acts[i] < tfaw) return false;
  return true;
}

ps_t earliest_by_scan(const std::vector<ps_t>& acts, ps_t t, ps_t trrd, ps_t tfaw) {
  while (!valid(acts, t, trrd, tfaw)) ++t;
  return t;
}

}  // namespace

// Random peeks and bookings at times in any order: earliest() is the first valid time at or after the request
// (not only a valid one), for tRRD and tFAW alone and together.
TEST(ActWindow, EarliestIsTheFirstValidTimeForBookingsInAnyOrder) {
  struct Case {
    ps_t trrd, tfaw;
  };
  for (Case c : {Case{3, 13}, Case{3, 0}, Case{0, 13}, Case{4, 19}, Case{2, 20}, Case{5, 5}}) {
    std::mt19937_64 rng(42 + c.trrd * 100 + c.tfaw);
    ActWindow w(c.trrd, c.tfaw, ps_t(1) << 40);  // nothing forgotten in this test
    std::vector<ps_t> booked;
    std::size_t faw_bound = 0;
    for (int i = 0; i < 700; ++i) {
      // Mostly near the latest booking (a time-ordered stream with late arrivals), sometimes far back.
      const ps_t hi = booked.empty() ? 50 : *std::max_element(booked.begin(), booked.end()) + 10;
      const ps_t t = rng() % 4 == 0 ? rng() % (hi + 1) : hi > 40 ? hi - 40 + rng() % 41 : rng() % (hi + 1);
      const ps_t e = w.earliest(t);
      ASSERT_EQ(e, earliest_by_scan(booked, t, c.trrd, c.tfaw))
          << "tRRD " << c.trrd << " tFAW " << c.tfaw << " request " << t << " after " << booked.size() << " ACTs";
      if (rng() % 10 < 7) {
        const bool bound = w.add(e);
        // add() says tFAW bound it exactly when the fourth ACT before it is tFAW earlier.
        std::vector<ps_t> before;
        for (ps_t a : booked)
          if (a <= e) before.push_back(a);
        std::sort(before.begin(), before.end());
        const bool expect = c.tfaw && before.size() >= 4 && before[before.size() - 4] + c.tfaw == e;
        EXPECT_EQ(bound, expect) << "ACT at " << e;
        faw_bound += bound;
        booked.push_back(e);
      }
    }
    EXPECT_EQ(w.kept(), booked.size());
    // The whole booking keeps both constraints.
    std::sort(booked.begin(), booked.end());
    for (std::size_t i = 1; i < booked.size(); ++i) ASSERT_GE(booked[i] - booked[i - 1], c.trrd);
    if (c.tfaw) {
      for (std::size_t i = 0; i + 4 < booked.size(); ++i) {
        ASSERT_GE(booked[i + 4] - booked[i], c.tfaw);
      }
      if (c.tfaw > 4 * c.trrd) {
        EXPECT_GT(faw_bound, 0u) << "tFAW never bound: the test would not see it";
      }
    }
  }
}

// ACTs further back than the horizon are forgotten; a request before one of them then starts after its reach
// (conservative), and never violates the constraints against what is kept.
TEST(ActWindow, ForgottenActsClampOldRequestsConservatively) {
  ActWindow w(3, 13, 1000);
  for (ps_t t : {0, 3, 6, 9}) w.add(w.earliest(t));
  EXPECT_EQ(w.earliest(10), 13u);  // tFAW: the fifth ACT 13 after the first
  w.add(5000);                     // the first four are now more than 1000 behind
  EXPECT_EQ(w.kept(), 1u);
  EXPECT_EQ(w.earliest(0), 9u + 13u);  // after the last forgotten ACT's reach (max(tRRD, tFAW))
  EXPECT_EQ(w.earliest(4998), 5003u);  // tRRD against the kept ACT at 5000
  w.clear(7000);
  EXPECT_EQ(w.kept(), 0u);
  EXPECT_EQ(w.earliest(0), 7000u);  // nothing before the origin
}

namespace {
DramConfig faw_config(std::uint32_t tfaw) {
  DramConfig d;  // the V100/Accel-Sim HBM2 figures (tRRD 3), refresh off
  d.channels = 1;
  d.timing.tREFI = 0;
  d.timing.tFAW = tfaw;
  return d;
}
const ClockDomain kClk{"dram", 850};
}  // namespace

// Eight row misses to eight banks at once: without tFAW the ACTs go out tRRD apart; with it the fifth waits
// until tFAW after the first, and the channel counts it.
TEST(DramChannel, FourActivateWindowDelaysTheFifthActivate) {
  auto run = [](std::uint32_t tfaw, std::vector<ps_t>* ends) {
    DramConfig d = faw_config(tfaw);
    DramChannel ch(d, kClk, 0, 1);
    for (std::uint32_t k = 0; k < 8; ++k)
      ends->push_back(ch.burst(0, {0, k % 4, k / 4, 1, 0}, false));  // a different bank each
    return ch.stats();
  };
  std::vector<ps_t> off, on;
  const DramStats s_off = run(0, &off), s_on = run(20, &on);
  EXPECT_EQ(s_off.activates, 8u);
  EXPECT_EQ(s_on.activates, 8u);
  EXPECT_EQ(s_off.faw_limited_acts, 0u);
  EXPECT_EQ(s_on.faw_limited_acts, 4u);  // ACTs 5-8, each 20 cycles after the fourth before it
  // Data = ACT + tRCD + CL + burst here (every burst to its own bank, bank groups alternating), so the ends are
  // spaced like the ACTs.
  EXPECT_EQ(off[4] - off[0], 4 * kClk.cycles_to_ps(3));
  EXPECT_EQ(on[4] - on[0], kClk.cycles_to_ps(20));
  EXPECT_EQ(on[3] - on[0], 3 * kClk.cycles_to_ps(3));  // the first four are not delayed
  EXPECT_EQ(on[7] - on[3], kClk.cycles_to_ps(20));
}

// A request that reaches the channel late (temporal decoupling) is checked against ACTs booked after it in time:
// four ACTs at 100-109 cycles leave no room for an ACT at 95 (five within 20 cycles), so it goes after them.
TEST(DramChannel, LateRequestRespectsTheWindowOfLaterActivates) {
  DramConfig d = faw_config(20);
  DramChannel ch(d, kClk, 0, 1);
  const ps_t c = kClk.cycles_to_ps(1);
  for (std::uint32_t k = 0; k < 4; ++k) ch.burst(kClk.cycles_to_ps(100 + 3 * k), {0, k, 0, 1, 0}, false);
  const ps_t end = ch.burst(kClk.cycles_to_ps(95), {0, 0, 1, 1, 0}, false);
  const ps_t act = end - kClk.cycles_to_ps(d.timing.tRCD + d.timing.CL + d.timing.tBURST);
  EXPECT_GE(act, kClk.cycles_to_ps(100 + 20)) << "ACT at " << double(act) / double(c) << " cycles";
  EXPECT_EQ(ch.stats().faw_limited_acts, 1u);
}
