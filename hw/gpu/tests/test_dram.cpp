// DRAM channel timing: row hit vs miss vs conflict, bank-group spacing, tRRD, refresh (no SystemC needed).
#include <gtest/gtest.h>

#include "spartan/hw/gpu/dram_channel.h"

using namespace spartan::hw;
using namespace spartan::hw::gpu;

namespace {
DramConfig v100_like(bool refresh) {
  DramConfig d;  // defaults are the V100/Accel-Sim HBM2 figures
  d.channels = 1;
  if (!refresh) d.timing.tREFI = 0;
  return d;
}
const ClockDomain kClk{"dram", 850};
ps_t cyc(double c) { return kClk.cycles_to_ps(c); }
}  // namespace

TEST(DramChannel, RowHitMissConflictLatencies) {
  DramConfig d = v100_like(false);
  const auto& t = d.timing;
  DramChannel ch(d, kClk, 0, 1);
  DramChannel::RowResult r;
  DramAddress a{0, 0, 0, 7, 0};
  // Closed bank: ACT, tRCD, then CL and the burst.
  ps_t miss = ch.burst(0, a, false, &r);
  EXPECT_EQ(r, DramChannel::RowResult::Miss);
  EXPECT_EQ(miss, cyc(t.tRCD) + cyc(t.CL) + cyc(t.tBURST));
  // Same row, much later: only CL + burst.
  ps_t t1 = 1'000'000;
  a.column = 3;
  ps_t hit = ch.burst(t1, a, false, &r) - t1;
  EXPECT_EQ(r, DramChannel::RowResult::Hit);
  EXPECT_EQ(hit, cyc(t.CL) + cyc(t.tBURST));
  // Other row, same bank: precharge + activate first.
  ps_t t2 = 2'000'000;
  a.row = 8;
  ps_t conflict = ch.burst(t2, a, false, &r) - t2;
  EXPECT_EQ(r, DramChannel::RowResult::Conflict);
  EXPECT_EQ(conflict, cyc(t.tRP) + cyc(t.tRCD) + cyc(t.CL) + cyc(t.tBURST));
  EXPECT_LT(hit, miss);
  EXPECT_LT(miss, conflict);
  EXPECT_EQ(ch.stats().row_hits, 1u);
  EXPECT_EQ(ch.stats().row_misses, 1u);
  EXPECT_EQ(ch.stats().row_conflicts, 1u);
  EXPECT_EQ(ch.stats().activates, 2u);
  EXPECT_EQ(ch.stats().precharges, 1u);
}

TEST(DramChannel, ConflictRespectsTrasAfterActivate) {
  DramConfig d = v100_like(false);
  DramChannel ch(d, kClk, 0, 1);
  DramAddress a{0, 0, 0, 1, 0};
  ch.burst(0, a, false);
  a.row = 2;  // immediately: PRE must wait for tRAS after the first ACT, then tRP, and tRC between ACTs
  ps_t end = ch.burst(0, a, false);
  const auto& t = d.timing;
  ps_t act2 = std::max(cyc(t.tRAS) + cyc(t.tRP), cyc(t.tRC));
  EXPECT_EQ(end, act2 + cyc(t.tRCD) + cyc(t.CL) + cyc(t.tBURST));
}

TEST(DramChannel, BankGroupsInterleaveAtTccdSAndSameGroupAtTccdL) {
  DramConfig d = v100_like(false);
  DramChannel ch(d, kClk, 0, 1);
  // Open rows in bank group 0 and 1 first.
  ch.burst(0, {0, 0, 0, 1, 0}, false);
  ch.burst(0, {0, 1, 0, 1, 0}, false);
  ps_t t0 = 1176ull * 2353;  // on the bus-slot and bank-group-slot grids (1 and 2 cycles at 850 MHz)
  ps_t a = ch.burst(t0, {0, 0, 0, 1, 1}, false);
  ps_t b = ch.burst(t0, {0, 1, 0, 1, 1}, false);  // other bank group: next bus slot
  ps_t c = ch.burst(t0, {0, 0, 0, 1, 2}, false);  // same group as a: tCCD_L after a
  EXPECT_NEAR(double(b - a), double(cyc(d.timing.tCCDS)), 10.0);
  EXPECT_GE(c - a, cyc(d.timing.tCCDL));
}

TEST(DramChannel, ActivatesAreSpacedByTrrd) {
  DramConfig d = v100_like(false);
  DramChannel ch(d, kClk, 0, 1);
  ps_t a = ch.burst(0, {0, 0, 0, 1, 0}, false);
  ps_t b = ch.burst(0, {0, 0, 1, 1, 0}, false);  // other bank, same time: its ACT waits tRRD
  EXPECT_GE(b - a, cyc(d.timing.tRRD));
}

TEST(DramChannel, RefreshDelaysCommandsAndClosesRows) {
  DramConfig d = v100_like(true);
  DramChannel ch(d, kClk, 0, 1);  // channel 0: refresh windows start at multiples of tREFI
  ps_t refi = cyc(d.timing.tREFI), rfc = cyc(d.timing.tRFC);
  ch.burst(refi - 100'000, {0, 0, 0, 1, 0}, false);  // opens row 1 before the refresh
  DramChannel::RowResult r;
  ps_t end = ch.burst(refi + 1000, {0, 0, 0, 1, 1}, false, &r);  // inside the refresh window
  EXPECT_GE(end, refi + rfc);
  EXPECT_EQ(r, DramChannel::RowResult::Miss);  // refresh closed the row
  EXPECT_GE(ch.stats().refresh_stalls, 1u);
}

TEST(DramChannel, WriteThenReadPaysTurnaround) {
  DramConfig d = v100_like(false);
  d.timing.tWTR = 8;  // make the turnaround visible beside CL
  ps_t after[2];
  for (int wr = 0; wr < 2; ++wr) {
    DramChannel ch(d, kClk, 0, 1);
    ch.burst(0, {0, 0, 0, 1, 0}, false);
    ch.burst(0, {0, 1, 0, 1, 0}, false);
    ps_t t0 = 1176ull * 2353;
    ch.burst(t0, {0, 1, 0, 1, 1}, wr == 1);          // a read or a write in bank group 1
    after[wr] = ch.burst(t0, {0, 0, 0, 1, 1}, false) - t0;  // then a read in bank group 0
  }
  EXPECT_GE(after[1], after[0] + cyc(d.timing.tWTR) - cyc(1));
}
