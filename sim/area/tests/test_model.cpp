// Scaling factors, GPU facts, cycle-count input and report arithmetic (no external tools needed).
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>

#include "spartan/area/flow.h"
#include "spartan/area/gpu.h"
#include "spartan/area/report.h"
#include "spartan/area/scaling.h"
#include "spartan/common/atomic_file.h"
#include "spartan/common/error.h"

using namespace spartan::area;

TEST(AreaScaling, StillmakerBaasFactors) {
  EXPECT_DOUBLE_EQ(tech_node(180).area_factor, 1.0);
  EXPECT_DOUBLE_EQ(tech_node(180).delay_factor, 1.0);
  EXPECT_DOUBLE_EQ(tech_node(45).area_factor, 1.0 / 19.0);
  EXPECT_DOUBLE_EQ(tech_node(16).area_factor, 1.0 / 99.0);
  EXPECT_DOUBLE_EQ(tech_node(7).area_factor, 1.0 / 320.0);
  // Delay: polynomial ratios at nominal supply; smaller nodes are faster along 180 > 45 > 16 > 7 > 5.
  double prev = 2.0;
  for (int nm : {180, 45, 16, 7, 5}) {
    const TechNode& n = tech_node(nm);
    EXPECT_LT(n.delay_factor, prev) << nm;
    EXPECT_GT(n.delay_factor, 0.0) << nm;
    prev = n.delay_factor;
  }
  EXPECT_NEAR(tech_node(45).delay_factor,
              stillmaker_delay_poly(45, 1.0) / stillmaker_delay_poly(180, 1.8), 1e-12);
  EXPECT_FALSE(tech_node(7).extrapolated);
  EXPECT_TRUE(tech_node(5).extrapolated);
  EXPECT_NEAR(tech_node(5).area_factor, tech_node(7).area_factor / 1.84, 1e-15);
  EXPECT_THROW(tech_node(3), spartan::InputError);
  EXPECT_THROW(stillmaker_delay_poly(5, 0.7), spartan::InputError);
}

TEST(AreaScaling, SramDensity) {
  EXPECT_DOUBLE_EQ(sram_area_um2(1024, 180), 1024 * 5.59 / kSramArrayEfficiency);
  EXPECT_DOUBLE_EQ(sram_area_um2(1024, 7), 1024 * 0.027 / kSramArrayEfficiency);
  EXPECT_FALSE(sram_bitcell_source(45).empty());
  EXPECT_THROW(sram_area_um2(1, 14), spartan::InputError);
  EXPECT_EQ(gpu_process_node_nm("12nm"), 16);
  EXPECT_EQ(gpu_process_node_nm("4N"), 5);
  EXPECT_EQ(gpu_process_node_nm("4"), 5);
  EXPECT_EQ(gpu_process_node_nm("7 nm"), 7);
  EXPECT_EQ(gpu_process_node_nm("3nm"), 0);
}

TEST(AreaGpu, PresetLookupAndNoBuiltinFallback) {
  // Issue 12: from any working directory, a name resolves to the simulator's preset (not a built-in table).
  const auto cwd = std::filesystem::current_path();
  std::filesystem::current_path(::testing::TempDir());
  const GpuInfo v = load_gpu("v100", "");
  const GpuInfo a = load_gpu("a100", "");
  std::filesystem::current_path(cwd);
  EXPECT_EQ(v.l2_slices, 64u);
  EXPECT_DOUBLE_EQ(v.l2_clock_mhz, 1447.0);
  EXPECT_DOUBLE_EQ(v.l2_slice_bytes_per_cycle, 32.0);  // l2.bytes_per_cycle: caps the monitor's throughput
  EXPECT_DOUBLE_EQ(v.die_area_mm2, 815.0);
  EXPECT_EQ(v.process_node_nm, 16);
  EXPECT_TRUE(v.engines_assumed);
  EXPECT_NE(v.source.find("v100.yaml"), std::string::npos) << v.source;
  EXPECT_EQ(a.l2_slices, 80u);
  EXPECT_NE(a.source.find("a100.yaml"), std::string::npos) << a.source;
  // A missing --gpu-config-dir is an error, never a silent fallback.
  try {
    load_gpu("v100", "/nonexistent");
    ADD_FAILURE() << "accepted a missing --gpu-config-dir";
  } catch (const spartan::ConfigError& e) {
    EXPECT_EQ(e.key(), "--gpu-config-dir") << e.what();
  }
  // A directory without the preset names the presets it has.
  try {
    load_gpu("h200", std::string(SPARTAN_AREA_DATA));
    ADD_FAILURE() << "accepted an unknown preset";
  } catch (const spartan::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("gpu_test"), std::string::npos) << e.what();
  }
  EXPECT_EQ(load_gpu("gpu_test", std::string(SPARTAN_AREA_DATA)).l2_slices, 4u);
  const GpuInfo t = load_gpu(std::string(SPARTAN_AREA_DATA) + "/gpu_test.yaml", "");
  EXPECT_EQ(t.name, "gpu_test");
  EXPECT_EQ(t.l2_slices, 4u);
  EXPECT_DOUBLE_EQ(t.l2_clock_mhz, 1447.0);
  EXPECT_DOUBLE_EQ(t.die_area_mm2, 100.0);
  EXPECT_EQ(t.engines, 1u);  // not a preset key: 1 unless --engines
  EXPECT_TRUE(t.engines_assumed);
  EXPECT_EQ(t.process_node_nm, 7);
  EXPECT_THROW(load_gpu("nosuchgpu", ""), spartan::ConfigError);
  EXPECT_THROW(load_gpu("/nonexistent/x.yaml", ""), spartan::ConfigError);
}

// `--gpu /tmp` said "GPU preset file not found" where spartan-sim says it is a directory (new-user review).
TEST(AreaGpu, DirectoryIsNamedAsSuch) {
  try {
    load_gpu(std::filesystem::temp_directory_path().string(), "");
    ADD_FAILURE() << "a directory was accepted as a preset";
  } catch (const spartan::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("is a directory"), std::string::npos) << e.what();
  }
  try {
    load_gpu("/nonexistent/gpu.yaml", "");
    ADD_FAILURE() << "a missing preset was accepted";
  } catch (const spartan::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("not found"), std::string::npos) << e.what();
  }
}

TEST(AreaCycles, ParseAndReject) {
  const CycleCounts c = parse_cycle_counts(
      R"({"source":"x","units":{"m":{"tiles":10,"busy_cycles":40,"tile_latency_cycles":7}}})", "c.json");
  EXPECT_EQ(c.source, "x");
  EXPECT_DOUBLE_EQ(*c.units.at("m").busy_cycles, 40.0);
  EXPECT_FALSE(c.units.at("m").tile_bytes.has_value());
  EXPECT_THROW(parse_cycle_counts("{", "c.json"), spartan::FormatError);
  EXPECT_THROW(parse_cycle_counts(R"({"units":{"m":{"tiles":1e999}}})", "c.json"), spartan::FormatError);  // out_of_range
  EXPECT_THROW(parse_cycle_counts(R"({"units":{"m":{"tiles":1}}})", "c.json"), spartan::FormatError);
  EXPECT_THROW(parse_cycle_counts(R"({"units":{"m":{"tiles":1,"busy_cycles":0}}})", "c.json"), spartan::FormatError);
  EXPECT_THROW(parse_cycle_counts(R"({"units":{"m":{"tile_latency_cycles":"7"}}})", "c.json"), spartan::FormatError);
  EXPECT_THROW(parse_cycle_counts(R"({"x":1})", "c.json"), spartan::FormatError);
  // The GPU-model busy time (engine): needs tiles, must be > 0.
  const CycleCounts g = parse_cycle_counts(
      R"({"units":{"e":{"tiles":10,"busy_cycles":40,"gpu_model_busy_ns":125}}})", "c.json");
  EXPECT_DOUBLE_EQ(*g.units.at("e").gpu_model_busy_ns, 125.0);
  EXPECT_THROW(parse_cycle_counts(R"({"units":{"e":{"gpu_model_busy_ns":125}}})", "c.json"), spartan::FormatError);
  EXPECT_THROW(parse_cycle_counts(R"({"units":{"e":{"tiles":1,"busy_cycles":4,"gpu_model_busy_ns":0}}})", "c.json"),
               spartan::FormatError);
  // A misspelt field was ignored (the report said "not available"), a duplicate key kept its last value
  // (thirty-seventh session's review): both refused, naming the key.
  auto expect_error = [](const char* text, const char* needle) {
    try {
      parse_cycle_counts(text, "c.json");
      ADD_FAILURE() << "accepted: " << text;
    } catch (const spartan::FormatError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error(R"({"units":{"m":{"tiles":10,"busy_cycles":40,"tile_latency_cycle":7}}})", "units.m.tile_latency_cycle: unknown field");
  expect_error(R"({"units":{"m":{"tiles":10,"busy_cycles":40}},"units":{"n":{"tiles":1,"busy_cycles":1}}})", "units: key given twice");
  expect_error(R"({"units":{"m":{"tiles":10,"busy_cycles":40,"tiles":11}}})", "tiles: key given twice");
  // Unknown root keys and a source that is not a string were taken silently (forty-first session's review).
  expect_error(R"({"units":{},"extra":1})", "extra: unknown key");
  expect_error(R"({"units":{},"source":5})", "source: must be a string");
  expect_error(R"({"units":{},"build":"x"})", "build: must be an object");
  // What spartan-sim run --rtl writes (sim/src/cmd_rtl_ext.cpp): source, units and its build provenance.
  EXPECT_NO_THROW(parse_cycle_counts(R"({"source":"s","units":{"m":{"tiles":1,"busy_cycles":2}},)"
                                     R"("build":{"commit":"abc","dirty":false}})", "c.json"));
}

// 1e308 in every field gave exit 0 and inf, -nan and a 309-digit latency in area.md (new-user review): every
// field is a finite number up to 2^53, `tiles` a whole number, and the message names the field.
TEST(AreaCycles, AbsurdValuesAreRefused) {
  auto err = [](const std::string& unit) {
    try {
      parse_cycle_counts(R"({"units":{"tiny":)" + unit + "}}", "c.json");
    } catch (const spartan::FormatError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(err(R"({"busy_cycles":1e308,"tile_bytes":1e308,"tile_latency_cycles":1e308,"tiles":1e308})")
                .find("units.tiny.tiles: must be a number from 0 to 2^53"), std::string::npos);
  for (const char* f : {"tile_bytes", "tile_latency_cycles"}) {
    const std::string e = err(std::string(R"({"tiles":1,"busy_cycles":4,")") + f + R"(":1e16})");
    EXPECT_NE(e.find(std::string("units.tiny.") + f + ": must be a number from 0 to 2^53"), std::string::npos) << e;
  }
  EXPECT_NE(err(R"({"tiles":1,"busy_cycles":4,"gpu_model_busy_ns":1e300})").find("gpu_model_busy_ns"), std::string::npos);
  EXPECT_NE(err(R"({"tiles":2.5,"busy_cycles":4})").find("units.tiny.tiles: must be a whole number"), std::string::npos);
  EXPECT_EQ(err(R"({"tiles":2,"busy_cycles":4.5})"), "");  // spartan-sim's monitor cycles: simulated time / period
  EXPECT_NE(err(R"({"tiles":-1,"busy_cycles":4})").find("units.tiny.tiles"), std::string::npos);
  // At the bound and fractional means (latency, bytes per tile: what spartan-sim run --rtl writes) are fine.
  EXPECT_EQ(err(R"({"tiles":9007199254740992,"busy_cycles":9007199254740992,"tile_latency_cycles":165.2,"tile_bytes":4096.5})"), "");
}

TEST(AreaReport, Arithmetic) {
  UnitResult u;
  u.spec.name = "mon";
  u.spec.top = "mon";
  u.spec.role = UnitRole::kMonitor;
  u.stat.cells = 10;
  u.stat.chip_area_um2 = 10000.0;
  u.stat.has_area = true;
  MemoryInfo m;
  m.name = "tbl";
  m.width_bits = 32;
  m.depth_words = 64;
  m.read_ports = 1;
  m.write_ports = 1;  // sync_read false: an asynchronous read
  u.memories.push_back(m);
  u.logic_um2 = 6000.0;
  u.critical_path_ns = 4.0;
  u.fmax_mhz = 250.0;
  u.has_reg2reg = true;
  GpuInfo g;
  g.name = "g";
  g.die_area_mm2 = 100.0;
  g.process_node_nm = 7;
  g.l2_slices = 8;
  g.l2_clock_mhz = 1000.0;
  g.engines = 1;
  CycleCounts cyc;
  cyc.source = "test";
  cyc.units["mon"] = UnitCycles{100.0, 400.0, 6.0, 4096.0, std::nullopt};
  ReportOptions o;
  o.nodes_nm = {180, 7};
  const auto r = build_report({u}, g, cyc, o);
  const auto& ju = r["units"][0];
  EXPECT_EQ(ju["instances_per_gpu"].get<unsigned>(), 8u);
  EXPECT_TRUE(r["cycles_units_unused"].empty());
  {  // a cycle-file unit that matches no synthesised unit is named, not silently dropped
    CycleCounts typo = cyc;
    typo.units["sparsity_monitr"] = UnitCycles{1.0, 1.0, std::nullopt, std::nullopt, std::nullopt};
    const auto rt = build_report({u}, g, typo, o);
    ASSERT_EQ(rt["cycles_units_unused"].size(), 1u);
    EXPECT_EQ(rt["cycles_units_unused"][0].get<std::string>(), "sparsity_monitr");
    EXPECT_NE(render_markdown(rt).find("match no synthesised unit (ignored): sparsity_monitr."), std::string::npos);
  }
  // What the single-port pricing leaves out is reported (twelfth-session review).
  EXPECT_DOUBLE_EQ(ju["sram_bits_two_port"].get<double>(), 2048.0);
  EXPECT_DOUBLE_EQ(ju["sram_bits_async_read"].get<double>(), 2048.0);
  EXPECT_NE(render_markdown(r).find("2048 of their bits have separate read and write ports"), std::string::npos);
  EXPECT_NE(render_markdown(r).find("2048 are read asynchronously"), std::string::npos);
  EXPECT_DOUBLE_EQ(ju["area_180nm"]["logic_um2"].get<double>(), 6000.0);
  // Without a NAND2 reference no gate count; with one, logic area / its area.
  EXPECT_TRUE(ju["area_180nm"]["logic_kge"].is_null());
  EXPECT_TRUE(r["synthesis"]["gate_equivalent"].is_null());
  EXPECT_NE(render_markdown(r).find("logic kGE: not available"), std::string::npos);
  {
    ReportOptions og = o;
    og.nand2 = LibertyCell{"NAND2X1", 24.0};
    const auto rg = build_report({u}, g, cyc, og);
    EXPECT_DOUBLE_EQ(rg["units"][0]["area_180nm"]["logic_kge"].get<double>(), 6000.0 / 24.0 / 1000.0);
    EXPECT_EQ(rg["synthesis"]["gate_equivalent"]["cell"].get<std::string>(), "NAND2X1");
    const std::string mdg = render_markdown(rg);
    EXPECT_NE(mdg.find("| 6000 | 0.25 |"), std::string::npos) << mdg;  // logic um^2, then 250 GE = 0.25 kGE
    EXPECT_NE(mdg.find("1 GE = NAND2X1 (24 um^2)"), std::string::npos) << mdg;
  }
  const auto& n7 = ju["scaled"][1];
  ASSERT_EQ(n7["node_nm"].get<int>(), 7);
  const double logic7 = 6000.0 / 320.0, mem7 = 2048 * 0.027 / kSramArrayEfficiency;
  EXPECT_NEAR(n7["total_um2"].get<double>(), logic7 + mem7, 1e-9);
  EXPECT_NEAR(n7["per_gpu_mm2"].get<double>(), 8 * (logic7 + mem7) * 1e-6, 1e-15);
  EXPECT_NEAR(n7["share_of_die_percent"].get<double>(), 100.0 * 8 * (logic7 + mem7) * 1e-6 / 100.0, 1e-12);
  EXPECT_NEAR(n7["critical_path_ns"].get<double>(), 4.0 * tech_node(7).delay_factor, 1e-12);
  EXPECT_FALSE(ju["scaled"][0].contains("share_of_die_percent"));
  const auto& lat = ju["latency"];
  EXPECT_DOUBLE_EQ(lat["tile_latency_ns"].get<double>(), 6.0);
  EXPECT_DOUBLE_EQ(lat["tiles_per_s_per_gpu"].get<double>(), 0.25 * 1e9 * 8);
  EXPECT_DOUBLE_EQ(lat["gb_per_s_per_gpu"].get<double>(), 0.25 * 4096 * 8);
  EXPECT_FALSE(lat.contains("capped_at_l2_slice_port"));  // no slice port width known: not capped
  // fmax at 7 nm (4 ns x the delay factor: ~6.1 GHz) is above the L2 clock: the unit clock is the L2 clock.
  EXPECT_DOUBLE_EQ(lat["unit_clock_mhz"].get<double>(), 1000.0);
  EXPECT_DOUBLE_EQ(lat["gb_per_s_per_gpu_at_unit_clock"].get<double>(), lat["gb_per_s_per_gpu"].get<double>());
  // Review finding F6: a unit whose fmax at the GPU's node is below the L2 clock runs at its fmax.
  {
    UnitResult slow = u;
    slow.critical_path_ns = 40.0;
    const auto rs = build_report({slow}, g, cyc, o);
    const auto& ls = rs["units"][0]["latency"];
    const double clk = 1000.0 / (40.0 * tech_node(7).delay_factor);
    ASSERT_LT(clk, 1000.0);
    EXPECT_NEAR(ls["unit_clock_mhz"].get<double>(), clk, 1e-9);
    EXPECT_EQ(ls["unit_clock_node_nm"].get<int>(), 7);
    EXPECT_NEAR(ls["tiles_per_s_per_gpu_at_unit_clock"].get<double>(), 0.25 * clk * 1e6 * 8, 1e-3);
    EXPECT_NEAR(ls["gb_per_s_per_gpu_at_unit_clock"].get<double>(), 0.25 * 4096 * clk * 1e6 * 8 / 1e9, 1e-9);
    EXPECT_NEAR(ls["tile_latency_ns_at_unit_clock"].get<double>(), 6.0 * 1000.0 / clk, 1e-9);
    EXPECT_DOUBLE_EQ(ls["gb_per_s_per_gpu"].get<double>(), 0.25 * 4096 * 8);  // the L2-clock bound is kept
  }
  // Review finding F7: a monitor cannot count faster than its L2 slice's data port (here 64 B/cycle, below the
  // RTL's 1024 B/cycle): GB/s per GPU = slices x 64 B x 1 GHz.
  {
    GpuInfo gs = g;
    gs.l2_slice_bytes_per_cycle = 64.0;
    const auto rs = build_report({u}, gs, cyc, o);
    const auto& ls = rs["units"][0]["latency"];
    EXPECT_TRUE(ls["capped_at_l2_slice_port"].get<bool>());
    EXPECT_DOUBLE_EQ(ls["rtl_bytes_per_cycle"].get<double>(), 1024.0);
    EXPECT_DOUBLE_EQ(ls["gb_per_s_per_gpu"].get<double>(), 64.0 * 8);
    EXPECT_DOUBLE_EQ(ls["tiles_per_cycle"].get<double>(), 0.25);                  // the RTL's rate
    EXPECT_DOUBLE_EQ(ls["tiles_per_s_per_gpu"].get<double>(), 64.0 / 4096 * 1e9 * 8);  // capped like GB/s
    EXPECT_NE(render_markdown(rs).find("| 1.25e+08 (capped) | 512 (capped) |"), std::string::npos) << render_markdown(rs);
    // Above the RTL's rate the cap does not bind.
    gs.l2_slice_bytes_per_cycle = 2048.0;
    const auto rn = build_report({u}, gs, cyc, o);
    EXPECT_FALSE(rn["units"][0]["latency"]["capped_at_l2_slice_port"].get<bool>());
    EXPECT_DOUBLE_EQ(rn["units"][0]["latency"]["gb_per_s_per_gpu"].get<double>(), 0.25 * 4096 * 8);
  }
  // An engine with the GPU model's busy time: 100 tiles of 4096 B in 10 us = 1e7 tiles/s = 40.96 GB/s per
  // instance, independent of the L2 clock and never capped.
  {
    UnitResult e = u;
    e.spec.name = e.spec.top = "eng";
    e.spec.role = UnitRole::kEngine;
    CycleCounts ce;
    ce.units["eng"] = UnitCycles{100.0, 400.0, 6.0, 4096.0, 10000.0};
    GpuInfo ge = g;
    ge.engines = 2;
    ge.l2_slice_bytes_per_cycle = 64.0;
    const auto re = build_report({e}, ge, ce, o);
    const auto& le = re["units"][0]["latency"];
    EXPECT_FALSE(le.contains("capped_at_l2_slice_port"));
    EXPECT_DOUBLE_EQ(le["gb_per_s_per_gpu"].get<double>(), 0.25 * 4096 * 2);
    EXPECT_DOUBLE_EQ(le["gpu_model_tiles_per_s_per_gpu"].get<double>(), 2e7);
    EXPECT_NEAR(le["gpu_model_gb_per_s_per_gpu"].get<double>(), 2e7 * 4096 / 1e9, 1e-9);
    EXPECT_NE(render_markdown(re).find("| 81.92 |"), std::string::npos);
  }
  // The flip-flop model scales the synthesised memory area instead.
  o.memory_model = MemoryModel::kFlipFlops;
  const auto rf = build_report({u}, g, std::nullopt, o);
  EXPECT_NEAR(rf["units"][0]["scaled"][1]["total_um2"].get<double>(), 10000.0 / 320.0, 1e-9);
  EXPECT_FALSE(rf["units"][0]["latency"]["available"].get<bool>());
  const std::string md = render_markdown(rf);
  EXPECT_NE(md.find("not available"), std::string::npos);
  EXPECT_NE(md.find("| mon |"), std::string::npos);
  EXPECT_EQ(md.find("was synthesised with"), std::string::npos);  // RTL defaults: no warning
  // Parameter overrides (rtl/units.txt "params") are recorded and named in area.md (review finding F5).
  u.spec.parameters = {{"CAPACITY", "64"}, {"NREG", "2"}};
  const auto rp = build_report({u}, g, std::nullopt, o);
  EXPECT_EQ(rp["units"][0]["parameter_overrides"]["CAPACITY"], "64");
  EXPECT_NE(render_markdown(rp).find("**mon was synthesised with CAPACITY=64 NREG=2**"), std::string::npos);
  // Timed with its memories as black-box macros (no timing arcs): fmax, "meets L2 clock" and the unit clock are
  // upper bounds and say so (reliability finding 77); timed as flip-flops they are plain figures.
  EXPECT_TRUE(r["units"][0]["timing_180nm"]["memory_paths_timed"].get<bool>());
  EXPECT_EQ(render_markdown(r).find("<= "), std::string::npos);
  u.timed_with_macros = true;
  u.critical_path_ns = 0.4;  // fmax 2500 MHz at 180 nm: "meets" any L2 clock, but not established
  u.fmax_mhz = 2500.0;
  const auto rm = build_report({u}, g, cyc, o);
  EXPECT_FALSE(rm["units"][0]["timing_180nm"]["memory_paths_timed"].get<bool>());
  EXPECT_TRUE(rm["units"][0]["scaled"][1]["fmax_is_upper_bound"].get<bool>());
  EXPECT_TRUE(rm["units"][0]["latency"]["unit_clock_is_upper_bound"].get<bool>());
  const std::string mdm = render_markdown(rm);
  EXPECT_NE(mdm.find("| not established |"), std::string::npos) << mdm;
  EXPECT_EQ(mdm.find("| yes |"), std::string::npos) << mdm;
  EXPECT_NE(mdm.find("no path into or out of a memory is timed"), std::string::npos);
  EXPECT_NE(mdm.find("| <= 1000 |"), std::string::npos) << mdm;  // unit clock min(fmax, L2) = L2, an upper bound
}

TEST(AreaManifest, UnitsTxtAndYaml) {
  const std::string d = SPARTAN_AREA_DATA;
  const auto u = load_manifest(d + "/units_test.txt");
  ASSERT_EQ(u.size(), 2u);
  EXPECT_EQ(u[0].top, "popcount");
  EXPECT_EQ(u[0].role, UnitRole::kMonitor);
  EXPECT_EQ(u[0].parameters.at("W"), "8");
  ASSERT_EQ(u[1].files.size(), 2u);
  EXPECT_EQ(u[1].files[1], d + "/counter_table.v");
  EXPECT_EQ(u[1].role, UnitRole::kOther);
  EXPECT_EQ(u[1].count_override, 3u);
  EXPECT_EQ(u[1].parameters.at("CW"), "10");
  EXPECT_THROW(load_manifest(d + "/units_bad_file.txt"), spartan::ConfigError);
  EXPECT_THROW(load_manifest(d + "/units_bad_order.txt"), spartan::ConfigError);
  const auto y = load_manifest(d + "/manifest.yaml");
  ASSERT_EQ(y.size(), 3u);
  EXPECT_EQ(y[1].role, UnitRole::kEngine);
  EXPECT_EQ(y[2].count_override, 2u);
  EXPECT_THROW(load_manifest(d + "/nonexistent.yaml"), spartan::ConfigError);
}

namespace {
// Writes `text` as a manifest in a temporary directory ("data/" in it becomes the test data's directory) and
// returns the ConfigError message of load_manifest(), or "" when it was accepted. Any other exception fails
// the test.
std::string manifest_error(std::string text, const std::string& ext = ".yaml") {
  for (auto at = text.find("data/"); at != std::string::npos; at = text.find("data/", at + 1))
    text.replace(at, 5, std::string(SPARTAN_AREA_DATA) + "/"), at += std::string(SPARTAN_AREA_DATA).size();
  const std::string p =
      (std::filesystem::temp_directory_path() / ("spartan-area-manifest-" + std::to_string(::getpid()) + ext)).string();
  spartan::write_file_atomic(p, text);
  std::string msg;
  try {
    load_manifest(p);
  } catch (const spartan::ConfigError& e) {
    msg = e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not a ConfigError for '" << text << "': " << e.what();
    msg = "?";
  }
  std::remove(p.c_str());
  return msg;
}
}  // namespace

// A manifest of the wrong shape (a scalar, a list, /etc/passwd) crashed in yaml-cpp's operator[] with an
// "internal error", exit 1 (new-user review): every shape error is a ConfigError naming the key.
TEST(AreaManifest, ShapeErrorsNameTheKey) {
  const std::string ok = "{top: popcount, files: [data/popcount.v]}";
  EXPECT_EQ(manifest_error("units: [" + ok + "]"), "");
  EXPECT_NE(manifest_error("just a string").find("must be a map with a 'units' list"), std::string::npos);
  EXPECT_NE(manifest_error("").find("must be a map"), std::string::npos);
  EXPECT_NE(manifest_error("- 1\n- 2\n").find("must be a map"), std::string::npos);
  EXPECT_NE(manifest_error("root:x:0:0:root:/root:/bin/bash\n").find("must be a map"), std::string::npos);
  EXPECT_NE(manifest_error("units: 3").find("'units'"), std::string::npos);
  EXPECT_NE(manifest_error("units: {a: 1}").find("'units'"), std::string::npos);
  EXPECT_NE(manifest_error("units: [3]").find("'units[0]': must be a map"), std::string::npos);
  EXPECT_NE(manifest_error("units: [" + ok + ", [1]]").find("'units[1]': must be a map"), std::string::npos);
  EXPECT_NE(manifest_error("units: [{top: [a], files: [data/popcount.v]}]").find("'units[0].top': must be a string"),
            std::string::npos);
  EXPECT_NE(manifest_error("units: [{top: ~, files: [data/popcount.v]}]").find("'units[0].top'"), std::string::npos);
  EXPECT_NE(manifest_error("units: [{top: p, name: {a: 1}, files: [data/popcount.v]}]").find("'units[0].name'"),
            std::string::npos);
  EXPECT_NE(manifest_error("units: [{top: p, count: -1, files: [data/popcount.v]}]").find("'units[0].count'"),
            std::string::npos);
  EXPECT_NE(manifest_error("units: [{top: p, count: [1], files: [data/popcount.v]}]").find("'units[0].count'"),
            std::string::npos);
  EXPECT_NE(manifest_error("units: [{top: p, files: data/popcount.v}]").find("'units[0].files'"), std::string::npos);
  EXPECT_NE(manifest_error("units: [{top: p, files: [[data/popcount.v]]}]").find("'units[0].files'"), std::string::npos);
  EXPECT_NE(manifest_error("units: [{top: p, files: [data/popcount.v], parameters: [1]}]").find("'units[0].parameters'"),
            std::string::npos);
  EXPECT_NE(manifest_error("units: [{top: p, files: [data/popcount.v], parameters: {W: [1]}}]")
                .find("'units[0].parameters.W'"), std::string::npos);
  EXPECT_NE(manifest_error("? [a]\n: 1\n").find("must be a string"), std::string::npos);  // a key that is a list
}

// Unknown keys were accepted silently (a misspelt `paramters:` synthesised the defaults), while the presets and
// units.txt refuse them: refused at the root and in a unit, naming the key (JSON manifests too).
TEST(AreaManifest, UnknownKeysAreRefused) {
  EXPECT_NE(manifest_error(R"({"units": [{"top": "popcount", "files": ["data/popcount.v"]}], "bogus": 1})", ".json")
                .find("key 'bogus': unknown key"), std::string::npos);
  EXPECT_NE(manifest_error("units: [{top: popcount, files: [data/popcount.v], paramters: {W: 8}}]")
                .find("key 'units[0].paramters': unknown key"), std::string::npos);
}

// Two units of the same name shared a work directory (with -j 2 a race, a confusing rename error; with -j 1
// area.md listed the unit twice): refused up front, in YAML/JSON and units.txt manifests (new-user review).
TEST(AreaManifest, DuplicateAndBadUnitNames) {
  const std::string u = "{top: popcount, files: [data/popcount.v]}";
  EXPECT_NE(manifest_error("units: [" + u + ", " + u + "]").find("duplicate unit name 'popcount'"), std::string::npos);
  EXPECT_NE(manifest_error("units: [{name: t, top: popcount, files: [data/popcount.v]}, "
                           "{name: t, top: fifo, files: [data/fifo.v]}]")
                .find("key 'units[1].name': duplicate unit name 't'"), std::string::npos);
  EXPECT_EQ(manifest_error("units: [{name: a, top: popcount, files: [data/popcount.v]}, "
                           "{name: b, top: popcount, files: [data/popcount.v]}]"), "");
  EXPECT_NE(manifest_error("top popcount\n  data/popcount.v\ntop popcount\n  data/popcount.v\n", ".txt")
                .find("key 'line 3': duplicate unit name 'popcount'"), std::string::npos);
  // The name names the work directory and netlists/<name>.v: no path, nothing hidden.
  for (const char* bad : {"../x", "a/b", ".", "..", ".hidden", "''", "'a b'", "'a;b'", "'a\"b'"})
    EXPECT_NE(manifest_error(std::string("units: [{name: ") + bad + ", top: popcount, files: [data/popcount.v]}]")
                  .find("not a plain file name"), std::string::npos) << bad;
}

// The clock goes into the Yosys and OpenSTA scripts: a Verilog port name only; naming it marks it as given.
TEST(AreaManifest, ClockIsAPortName) {
  EXPECT_NE(manifest_error("units: [{top: popcount, files: [data/popcount.v], clock: 'a b'}]")
                .find("key 'units[0].clock': 'a b' is not a Verilog port name"), std::string::npos);
  EXPECT_NE(manifest_error("units: [{top: popcount, files: [data/popcount.v], clock: 'clk]'}]").find("units[0].clock"),
            std::string::npos);
  const std::string p = (std::filesystem::temp_directory_path() / ("spartan-area-clk-" + std::to_string(::getpid()) + ".yaml")).string();
  spartan::write_file_atomic(p, "units: [{top: popcount, files: [" + std::string(SPARTAN_AREA_DATA) +
                                    "/popcount.v], clock: ck}, {top: fifo, files: [" + SPARTAN_AREA_DATA + "/fifo.v]}]");
  const auto u = load_manifest(p);
  std::remove(p.c_str());
  ASSERT_EQ(u.size(), 2u);
  EXPECT_EQ(u[0].clock, "ck");
  EXPECT_TRUE(u[0].clock_given);
  EXPECT_EQ(u[1].clock, "clk");  // the default: a virtual clock when the top has no such port
  EXPECT_FALSE(u[1].clock_given);
}

// Forty-first session's review: a manifest parameter value went into the Yosys script unchecked (a newline then
// "!touch FILE" ran a shell command, exit 0), as did the top; units.txt counts wrapped; a directory as the manifest
// was an internal error; yaml-cpp dropped the second of two equal keys without a word.
TEST(AreaManifest, ScriptWordsAreChecked) {
  const std::string f = "files: [data/popcount.v]";
  auto unit = [&](const std::string& extra) { return "units: [{top: popcount, " + f + extra + "}]"; };
  // (Yosys 0.23's chparam decodes no sign, fraction or exponent: -1, +3, 1.5 and 1e1 failed inside Yosys.)
  for (const char* bad : {R"("16\n!touch /tmp/x")", R"("16; !touch x")", "'16 top2'", "'1 # c'", "'16;'", "abc", "''",
                          "'\"a\"b\"'", "-1", "'+3'", "1.5", "1e1", "'\"a$b\"'", "'\"[x]\"'"})
    EXPECT_NE(manifest_error(unit(std::string(", parameters: {W: ") + bad + "}")).find("is not a Verilog constant"),
              std::string::npos) << bad;
  for (const char* good : {"16", "8'hFF", "\"'d5\"", "4'sb1010", "8'shFB", "1_000", "'\"abc def\"'"})
    EXPECT_EQ(manifest_error(unit(std::string(", parameters: {W: ") + good + "}")), "") << good;
  EXPECT_NE(manifest_error(unit(", parameters: {'W x': 4}")).find("is not a Verilog identifier"), std::string::npos);
  EXPECT_NE(manifest_error("units: [{top: 'popcount; x', " + f + "}]").find("'units[0].top': 'popcount; x' is not a Verilog module name"),
            std::string::npos);
  // '$' is legal in Verilog names but a Tcl substitution in the OpenSTA script (clock c$tcl_version became c8.6).
  EXPECT_NE(manifest_error("units: [{top: 'm$x', " + f + "}]").find("is not a Verilog module name"), std::string::npos);
  EXPECT_NE(manifest_error("units: [{top: popcount, clock: 'c$tcl_version', " + f + "}]").find("is not a Verilog port name"),
            std::string::npos);
  // count: decimal digits (yaml-cpp took 0x10 and "+5"), leading zeros allowed.
  for (const char* c : {"0x10", "'+5'", "-1", "4294967296", "1e2", "5.0"})
    EXPECT_NE(manifest_error(unit(std::string(", count: ") + c)).find("0 to 4294967295"), std::string::npos) << c;
  EXPECT_EQ(manifest_error(unit(", count: 00000000005")), "");
  EXPECT_NE(manifest_error("units: [{top: popcount, " + f + "}]\nunits: [{top: fifo, " + f + "}]\n").find("key given twice"),
            std::string::npos);
  EXPECT_NE(manifest_error("units: [{top: popcount, top: fifo, " + f + "}]").find("'units[0].top': key given twice"),
            std::string::npos);
  EXPECT_NE(manifest_error(unit(", parameters: {W: 4, W: 8}")).find("'units[0].parameters.W': key given twice"),
            std::string::npos);
  EXPECT_NE(manifest_error("units: [{top: popcount, files: [data/]}]").find("not a regular file"), std::string::npos);
  // units.txt: the same checks, and counts up to 2^32 - 1 (99999999999 became 1215752191; more: "internal error").
  EXPECT_NE(manifest_error("top popcount\n  data/popcount.v\n  params W=16;x\n", ".txt").find("is not a Verilog constant"),
            std::string::npos);
  EXPECT_NE(manifest_error("top popcount\n  data/popcount.v\n  params W=4 W=8\n", ".txt").find("given twice"), std::string::npos);
  EXPECT_NE(manifest_error("top pop;count\n  data/popcount.v\n", ".txt").find("is not a Verilog module name"), std::string::npos);
  for (const char* n : {"99999999999", "4294967296", "99999999999999999999999"})
    EXPECT_NE(manifest_error(std::string("top popcount\n  data/popcount.v\n  count ") + n + "\n", ".txt").find("0 to 4294967295"),
              std::string::npos) << n;
  EXPECT_EQ(manifest_error("top popcount\n  data/popcount.v\n  count 4294967295\n", ".txt"), "");
  EXPECT_EQ(manifest_error("top popcount\n  data/popcount.v\n  count 00000000005\n", ".txt"), "");
  // A directory given as the manifest (any extension).
  for (const std::string& d : {std::filesystem::temp_directory_path().string(), std::string(SPARTAN_AREA_DATA)}) {
    try {
      load_manifest(d);
      ADD_FAILURE() << d << " accepted";
    } catch (const spartan::ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("is a directory"), std::string::npos) << e.what();
    }
  }
  // A source path the scripts cannot carry (a '"' or a newline in it).
  const std::filesystem::path odd = std::filesystem::temp_directory_path() / ("spartan-area-q\"" + std::to_string(::getpid()) + ".v");
  spartan::write_file_atomic(odd.string(), "module m; endmodule\n");
  EXPECT_NE(manifest_error("units: [{top: m, files: ['" + odd.string() + "']}]").find("cannot carry"), std::string::npos);
  std::remove(odd.c_str());
  EXPECT_TRUE(is_verilog_identifier("a_b1"));
  EXPECT_FALSE(is_verilog_identifier("a$b"));
  EXPECT_FALSE(is_verilog_identifier("1a"));
  for (const char* bad : {"/tmp/a{b", "/tmp/a$(touch x)b", "/tmp/a[b]", "/tmp/a'b", "/tmp/a`b`", "/tmp/a\nb", "/tmp/a;b"})
    EXPECT_THROW(check_script_path(bad, "x", true), spartan::InputError) << bad;
  EXPECT_THROW(check_script_path("/tmp/a b/c", "x"), spartan::InputError);  // TMPDIR, liberty: Yosys tee -o keeps quotes
  EXPECT_NO_THROW(check_script_path("/tmp/a b/c", "x", true));               // a source: read_verilog takes it quoted
  EXPECT_NO_THROW(check_script_path("/home/u/x-1.2/src_a/f+g,h=i@j%k~l:m.v", "x"));
  // Without a manifest, every Verilog file of --rtl-dir is read: its name is checked too (a name with a newline
  // and a Yosys '!' line ran a shell command).
  const std::filesystem::path rd = std::filesystem::temp_directory_path() / ("spartan-area-rtl-" + std::to_string(::getpid()));
  std::filesystem::create_directories(rd);
  spartan::write_file_atomic((rd / "ok.v").string(), "module sparsity_monitor; endmodule\n");
  EXPECT_EQ(default_units(rd.string())[0].files[0], (rd / "ok.v").string());
  spartan::write_file_atomic((rd / "e.v\n!touch x\n#.v").string(), "// comment\n");
  EXPECT_THROW(default_units(rd.string()), spartan::InputError);
  std::filesystem::remove_all(rd);
}

TEST(AreaMemories, SramEligibility) {
  MemoryInfo table{"t", 32, 64, 6, 1, 1, true};
  EXPECT_TRUE(table.sram());
  MemoryInfo regs{"r", 64, 2, 1, 3, 3, false};  // a 2-entry register bank with 3 write ports
  EXPECT_FALSE(regs.sram());
  MemoryInfo shallow{"s", 16, 8, 3, 1, 1, false};
  EXPECT_FALSE(shallow.sram());
}

TEST(AreaGpu, ReadsTheSimulatorPresetsStrictly) {
  // The real presets (sim/configs/gpu) through the simulator's loader.
  const std::string presets = std::string(SPARTAN_AREA_DATA) + "/../../../configs/gpu";
  const GpuInfo g = load_gpu("v100", presets);
  EXPECT_EQ(g.source, presets + "/v100.yaml");
  EXPECT_DOUBLE_EQ(g.die_area_mm2, 815.0);
  EXPECT_EQ(g.process_node_nm, 16);  // 12 nm FFN is tabulated with the 16 nm figures
  EXPECT_EQ(g.l2_slices, 64u);
  EXPECT_DOUBLE_EQ(g.l2_clock_mhz, 1447.0);
  // An unknown key, as in `spartan-sim --gpu`, is an error naming the key.
  const std::string text = spartan::read_file(std::string(SPARTAN_AREA_DATA) + "/gpu_test.yaml");
  const std::string bad = ::testing::TempDir() + "area_bad_preset_" + std::to_string(::getpid()) + ".yaml";
  spartan::write_file_atomic(bad, text + "frobnicate: 1\n");
  try {
    load_gpu(bad, "");
    ADD_FAILURE() << "unknown preset key accepted";
  } catch (const spartan::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("frobnicate"), std::string::npos) << e.what();
  }
  // A process node with no scaled figures is an error naming node_nm (it silently gave no share of die and
  // no unit clock; reliability finding 77).
  std::string eight = text;
  const auto at = eight.find("node_nm:");
  ASSERT_NE(at, std::string::npos);
  eight.replace(at, eight.find('\n', at) - at, "node_nm: 8");
  spartan::write_file_atomic(bad, eight);
  try {
    load_gpu(bad, "");
    ADD_FAILURE() << "node_nm 8 accepted";
  } catch (const spartan::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("node_nm"), std::string::npos) << e.what();
  }
  std::remove(bad.c_str());
}
