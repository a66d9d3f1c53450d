// Calibration microbenchmarks as tests, on the real presets (V100: the Accel-Sim QV100 geometry; R9 Nano).
// Tolerances are what the model must show: streaming read 85-95% of peak on V100, no bandwidth above
// peak, hit rate non-increasing with the working set, the L2 knee within +-10% of the L2 size.
#include <filesystem>
#include <gtest/gtest.h>

#include "child.h"
#include "spartan/hw/gpu/microbench.h"
#include "spartan/hw/gpu_config.h"

using namespace spartan::hw;
using namespace spartan::hw::gpu;
using nlohmann::json;

namespace {
json bench(const char* preset, bool stream, bool chase, bool sweep) {
  return run_in_child([=] {
    auto g = GpuSystem::from_preset(preset);
    MicrobenchOptions o;
    o.stream = stream, o.chase = chase, o.sweep = sweep;
    o.stream_l2_multiple = 4;  // 24 MiB streams on V100 (scaled down from the command's 8x for test time)
    o.sweep_fractions = {0.5, 0.8, 0.9, 0.95, 1.05, 1.1, 1.25, 1.5};
    o.sweep_passes = 1;
    o.chase_steps = 512;
    auto r = run_microbench(*g, o);
    json j = r.to_json();
    j["hit_latency_param"] = g->config().l2.slice.hit_latency_cycles;
    return j;
  });
}

void check_sweep(const json& r) {
  double prev = 1.0;
  for (auto& p : r["l2_sweep"]) {
    double h = p["hit_rate"];
    EXPECT_LE(h, prev + 0.02) << p.dump();  // monotone non-increasing (2% noise allowance)
    prev = h;
  }
  EXPECT_GT(r["l2_sweep"].front()["hit_rate"].get<double>(), 0.95);
  EXPECT_LT(r["l2_sweep"].back()["hit_rate"].get<double>(), 0.2);
  EXPECT_NEAR(r["l2_knee_over_size"].get<double>(), 1.0, 0.10) << r["l2_knee_bytes"];
}
}  // namespace

TEST(Microbench, V100StreamingBandwidthAndLatency) {
  json r = bench("v100", true, true, false);
  // Provenance: the preset file loaded, as an absolute path (a copied preset keeps its source's name).
  const std::string file = r["gpu_file"].get<std::string>();
  EXPECT_TRUE(std::filesystem::path(file).is_absolute()) << file;
  EXPECT_EQ(std::filesystem::path(file).filename(), "v100.yaml") << file;
  EXPECT_FALSE(r.contains("l2_sweep")) << "the sweep did not run";
  EXPECT_FALSE(r.contains("l2_knee_bytes")) << "the sweep did not run";
  ASSERT_EQ(r["bandwidth"].size(), 4u);
  for (auto& b : r["bandwidth"]) {
    EXPECT_LE(b["fraction_of_peak"].get<double>(), 1.0) << b.dump();
    if (b["kernel"] != "random_read") {
      EXPECT_GT(b["fraction_of_peak"].get<double>(), 0.3) << b.dump();
    }
  }
  double read = r["bandwidth"][0]["fraction_of_peak"];
  EXPECT_GE(read, 0.85);
  EXPECT_LE(read, 0.95);
  double l2 = r["latency"]["l2_hit_core_cycles"], dram = r["latency"]["dram_core_cycles"];
  EXPECT_GE(l2, r["hit_latency_param"].get<double>());  // the pipeline latency plus the crossbar
  EXPECT_LT(l2, 1.5 * r["hit_latency_param"].get<double>());
  EXPECT_GT(dram, l2 + 50);
}

TEST(Microbench, V100L2FootprintKneeAtL2Size) {
  json r = bench("v100", false, false, true);
  // Only the sweep ran: no bandwidth or latency entries (not zeros standing for results).
  EXPECT_FALSE(r.contains("bandwidth")) << r.dump();
  EXPECT_FALSE(r.contains("latency")) << r.dump();
  EXPECT_EQ(r["l2_size_bytes"], 6u << 20);
  check_sweep(r);
}

TEST(Microbench, R9NanoL2FootprintKneeAtL2Size) {
  json r = bench("r9nano", false, false, true);
  EXPECT_EQ(r["l2_size_bytes"], 2u << 20);
  check_sweep(r);
}

// More buffering must never cost bandwidth: a deeper L2 write-back buffer or more outstanding lines per SM
// leave the streams at least as fast (within 2 %: the schedules differ, so the figures are not identical).
// This failed before the DRAM banks kept a time-ordered row history (256 write-back entries took the V100
// write stream from 76 % to 31 % of peak).
namespace {
std::vector<double> stream_fractions(std::uint32_t writeback_entries, std::uint32_t outstanding_lines) {
  json r = run_in_child([=] {
    GpuConfig c = load_gpu_config("v100");
    c.l2.slice.writeback_entries = writeback_entries;
    c.sm.max_outstanding_lines = outstanding_lines;
    GpuSystem g(c);
    MicrobenchOptions o;
    o.chase = o.sweep = false;
    o.stream_l2_multiple = 4;
    return run_microbench(g, o).to_json();
  });
  std::vector<double> f;
  for (auto& b : r["bandwidth"]) f.push_back(b["fraction_of_peak"].get<double>());
  return f;
}
}  // namespace

TEST(Microbench, V100DeeperBuffersNeverLowerBandwidth) {
  constexpr double kTolerance = 0.02;  // relative
  auto base = stream_fractions(32, 64);  // the preset
  ASSERT_EQ(base.size(), 4u);             // stream_read, stream_write, copy, random_read
  for (auto [wb, mol] : {std::pair{128u, 64u}, {32u, 128u}}) {
    auto deeper = stream_fractions(wb, mol);
    ASSERT_EQ(deeper.size(), 4u);
    for (std::size_t k = 0; k < 4; ++k)
      EXPECT_GE(deeper[k], base[k] * (1 - kTolerance))
          << "kernel " << k << " writeback_entries " << wb << " max_outstanding_lines " << mol;
  }
  // The preset reaches realistic write and copy bandwidth (V100 STREAM: ~85-90 % of peak).
  EXPECT_GE(base[1], 0.80);
  EXPECT_GE(base[2], 0.75);
}

// Random sector reads over 64 x the L2 open a DRAM row nearly every time, so the ACT rate bounds them: at most
// min(1 / tRRD, 4 / tFAW, banks per pseudo-channel / tRC) ACTs per DRAM cycle and pseudo-channel, one sector each.
// The model must not beat that bound and, with the presets' requests in flight, comes near it (v100: 85 % with this
// test's 2^16 reads, 90 % with the command's 2^18); and tFAW, the tightest of the three in both presets, must
// cost bandwidth (v100 10 %, r9nano 25 %).
namespace {
struct RandomRead {
  double bytes_per_s, act_bound_bytes_per_s;
};
RandomRead random_read(const char* preset, bool faw) {
  json r = run_in_child([=] {
    GpuConfig c = load_gpu_config(preset);
    if (!faw) c.dram.timing.tFAW = 0;
    GpuSystem g(c);
    MicrobenchOptions o;
    o.chase = o.sweep = false;
    o.stream_l2_multiple = 0.5;  // the 16 MiB minimum: the streams are not what this test is about
    o.random_requests = 1u << 16;
    json j = run_microbench(g, o).to_json();
    const auto& t = c.dram.timing;
    const double pcs = c.dram.pseudo_channels;
    double acts_per_cycle = std::min(1.0 / t.tRRD, double(c.dram.banks()) / pcs / t.tRC);  // per pseudo-channel
    if (t.tFAW) acts_per_cycle = std::min(acts_per_cycle, 4.0 / t.tFAW);
    j["act_bound"] =
        double(c.dram.channels) * pcs * acts_per_cycle * c.clocks.dram_mhz * 1e6 * c.l2.slice.sector_bytes;
    return j;
  });
  for (auto& b : r["bandwidth"])
    if (b["kernel"] == "random_read") return {b["bytes_per_s"].get<double>(), r["act_bound"].get<double>()};
  ADD_FAILURE() << "no random_read in " << r.dump();
  return {0, 1};
}
}  // namespace

TEST(Microbench, RandomReadsAreBoundByTheActivateRate) {
  for (const char* preset : {"v100", "r9nano"}) {
    const RandomRead on = random_read(preset, true), off = random_read(preset, false);
    for (const RandomRead& x : {on, off}) {
      EXPECT_LE(x.bytes_per_s, 1.01 * x.act_bound_bytes_per_s) << preset;  // row or L2 hits: the 1 % slack
    }
    EXPECT_GE(on.bytes_per_s, 0.8 * on.act_bound_bytes_per_s) << preset;
    EXPECT_LT(on.bytes_per_s, 0.95 * off.bytes_per_s) << preset << ": tFAW did not slow random reads";
  }
}
