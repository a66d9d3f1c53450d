#include <gtest/gtest.h>

#include "spartan/hw/stats.h"

using namespace spartan::hw;

TEST(LatencyHistogram, ExactBelowSixteenAndBoundedErrorAbove) {
  LatencyHistogram h;
  for (std::uint64_t v = 0; v < 16; ++v) EXPECT_EQ(LatencyHistogram::bucket_low(LatencyHistogram::index(v)), v);
  for (std::uint64_t v : {17ull, 100ull, 1000ull, 123456ull, 99999999ull}) {
    unsigned i = LatencyHistogram::index(v);
    EXPECT_LE(LatencyHistogram::bucket_low(i), v);
    EXPECT_GT(LatencyHistogram::bucket_low(i) + LatencyHistogram::bucket_width(i), v);
    EXPECT_LE(double(LatencyHistogram::bucket_width(i)) / double(v), 1.0 / 16 + 1e-12);
  }
}

TEST(LatencyHistogram, PercentilesOfUniformSamples) {
  LatencyHistogram h;
  for (std::uint64_t v = 1; v <= 10000; ++v) h.add(v);
  EXPECT_EQ(h.count(), 10000u);
  EXPECT_NEAR(h.mean(), 5000.5, 1e-9);
  EXPECT_NEAR(double(h.percentile(0.5)), 5000, 5000 * 0.07);
  EXPECT_NEAR(double(h.percentile(0.99)), 9900, 9900 * 0.07);
  EXPECT_EQ(h.max(), 10000u);
  EXPECT_EQ(h.min(), 1u);
  LatencyHistogram g;
  g.add(20000);
  h.merge(g);
  EXPECT_EQ(h.count(), 10001u);
  EXPECT_EQ(h.max(), 20000u);
}

TEST(StatsRegistry, ReadsByReferenceAndSumsTotalsPerKind) {
  struct S {
    std::uint64_t hits = 0, misses = 0;
    LatencyHistogram lat;
    Average occ;
  } a, b;
  StatsRegistry reg;
  reg.add_group("l2[0]", "l2_slice").counter("hits", a.hits).counter("misses", a.misses).histogram("latency", a.lat, "ps");
  reg.add_group("l2[1]", "l2_slice").counter("hits", b.hits).counter("misses", b.misses).histogram("latency", b.lat, "ps")
      .average("occupancy", b.occ).derived("hit_rate", [&] { return double(b.hits) / double(b.hits + b.misses); });
  a.hits = 3; a.misses = 1; b.hits = 5; b.misses = 5;  // changed AFTER registration: read at dump time
  a.lat.add(100); b.lat.add(300); b.occ.add(2); b.occ.add(4);
  auto j = reg.to_json();
  EXPECT_EQ(j["components"]["l2[0]"]["hits"], 3);
  EXPECT_EQ(j["components"]["l2[1]"]["hit_rate"], 0.5);
  EXPECT_EQ(j["components"]["l2[1]"]["occupancy"]["mean"], 3.0);
  EXPECT_EQ(j["totals"]["l2_slice"]["hits"], 8);
  EXPECT_EQ(j["totals"]["l2_slice"]["misses"], 6);
  EXPECT_EQ(j["totals"]["l2_slice"]["instances"], 2);
  EXPECT_EQ(j["totals"]["l2_slice"]["latency"]["count"], 2);
  EXPECT_EQ(reg.total("l2_slice", "hits"), 8u);
  EXPECT_THROW(reg.add_group("l2[0]", "l2_slice"), std::logic_error);
}
