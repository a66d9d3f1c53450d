#include <gtest/gtest.h>

#include <cstdlib>
#include <regex>

#include "spartan/common/atomic_file.h"
#include "spartan/common/error.h"
#include "spartan/hw/gpu_config.h"

using namespace spartan::hw;

namespace {
std::string preset_text(const std::string& name) { return spartan::read_file(resolve_gpu_preset(name)); }

// Replaces the first line `  key: value` (any indent) with the given value; "" deletes the line.
std::string with(std::string text, const std::string& key, const std::string& value) {
  std::regex re("(\\n\\s*)" + key + ":[^\\n]*");
  std::smatch m;
  if (!std::regex_search(text, m, re)) ADD_FAILURE() << "no key " << key;
  std::string repl = value.empty() ? "" : m[1].str() + key + ": " + value;
  return text.replace(m.position(0), m.length(0), repl);
}

void expect_config_error(const std::string& text, const std::string& key, const std::string& fragment) {
  try {
    parse_gpu_config(text, "test.yaml");
    ADD_FAILURE() << "no error for " << key;
  } catch (const spartan::ConfigError& e) {
    EXPECT_EQ(e.key(), key) << e.what();
    EXPECT_EQ(e.file(), "test.yaml");
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    EXPECT_EQ(e.exit_code(), 2);
  }
}
}  // namespace

TEST(GpuConfig, AllPresetsLoad) {
  auto names = list_gpu_presets();
  EXPECT_GE(names.size(), 1u);
  for (auto& n : names) {
    GpuConfig c = load_gpu_config(n);
    EXPECT_EQ(c.name, n);
    EXPECT_GT(c.die_area_mm2, 0);
    EXPECT_GT(c.peak_dram_bytes_per_s(), 0);
  }
}

TEST(GpuConfig, V100FollowsAccelSim) {
  GpuConfig c = load_gpu_config("v100");
  EXPECT_EQ(c.sm.count, 80u);
  EXPECT_EQ(c.l2.slices, 64u);
  EXPECT_EQ(c.l2.size_bytes(), 6u << 20);
  EXPECT_EQ(c.dram.timing.tRCD, 12u);
  EXPECT_EQ(c.dram.timing.tRC, 40u);
  EXPECT_NEAR(c.peak_dram_bytes_per_s(), 870.4e9, 1e6);
  EXPECT_DOUBLE_EQ(c.clocks.l2_mhz, 1447);
  // A path works as well as a name.
  GpuConfig p = load_gpu_config(resolve_gpu_preset("v100"));
  EXPECT_EQ(p.l2.size_bytes(), c.l2.size_bytes());
}

TEST(GpuConfig, RejectsUnknownAndMissingKeys) {
  std::string v = preset_text("v100");
  expect_config_error(with(v, "ways", "24\n  wayz: 3"), "l2.wayz", "unknown key");
  expect_config_error(with(v, "tRCD", ""), "dram.timing.tRCD", "missing required key");
  expect_config_error(with(v, "die_area_mm2", ""), "die_area_mm2", "missing required key");
  expect_config_error(with(v, "ways", "many"), "l2.ways", "expected a non-negative integer");
  expect_config_error(v + "\nbogus: 1\n", "bogus", "unknown key");
}

// Fourteenth-session review (a newcomer adding a preset): `ways: 024` was read as octal 20; a misspelt
// required key was reported only as missing; five DRAM timings silently took V100 cycle counts when left out.
TEST(GpuConfig, LeadingZerosMisspeltKeysAndTimingsWithoutDefaults) {
  std::string v = preset_text("v100");
  expect_config_error(with(v, "ways", "024"), "l2.ways", "leading zero");
  EXPECT_EQ(parse_gpu_config(with(v, "ways", "0x18"), "test.yaml").l2.slice.ways, 24u);  // hexadecimal is read
  std::string t = v;
  t.replace(t.find("hit_latency_cycles:"), 19, "hit_latency:");
  expect_config_error(t, "l2.hit_latency_cycles", "the file has 'l2.hit_latency': misspelt?");
  expect_config_error(with(v, "tRCD", ""), "dram.timing.tRCD", "missing required key");  // tRC, tRP: no hint
  try {
    parse_gpu_config(with(v, "tRCD", ""), "test.yaml");
  } catch (const spartan::ConfigError& e) {
    EXPECT_EQ(std::string(e.what()).find("misspelt"), std::string::npos) << e.what();
  }
  for (const char* k : {"tRTP", "tWTR", "tRTW", "tFAW", "tREFI", "tRFC"})
    expect_config_error(with(v, k, ""), std::string("dram.timing.") + k, "missing required key");
  // tRFC may be left out when refresh is off; a lone 0 is not a leading zero.
  EXPECT_EQ(parse_gpu_config(with(with(v, "tREFI", "0"), "tRFC", ""), "test.yaml").dram.timing.tRFC, 0u);
}

TEST(GpuConfig, RejectsImpossibleGeometry) {
  std::string v = preset_text("v100");
  expect_config_error(with(with(v, "sets", "48"), "size_bytes", ""), "l2.sets", "not a power of two");
  expect_config_error(with(v, "banks_per_group", "0"), "dram.banks_per_group", "zero banks");
  expect_config_error(with(with(v, "sector_bytes", "48"), "size_bytes", ""), "l2.sector_bytes", "power of two");
  expect_config_error(with(with(v, "line_bytes", "16"), "size_bytes", ""), "l2.sector_bytes", "larger than the line size");
  expect_config_error(with(v, "size_bytes", "1234"), "l2.size_bytes", "!=");
  // The geometry is checked before the size cross-check (a newcomer's `sets: 96` read as a size mismatch).
  expect_config_error(with(v, "sets", "48"), "l2.sets", "not a power of two");
  // A tab in the indentation is named (yaml-cpp says only "end of map not found").
  expect_config_error(with(v, "ways", "24\n\tmshr_entries: 4"), "<yaml>", "tab");
  expect_config_error(with(v, "tRC", "20"), "dram.timing.tRC", "tRAS + tRP");
  expect_config_error(with(v, "tFAW", "2"), "dram.timing.tFAW", "0 (not modelled) or >= tRRD");  // tRRD 3
  EXPECT_EQ(parse_gpu_config(with(v, "tFAW", "0"), "test.yaml").dram.timing.tFAW, 0u);  // off, explicitly
  // 0-cycle slots made the ACT / column calendars 1 ps long and overrun silently (thirty-eighth session's review)
  expect_config_error(with(with(v, "tRRD", "0"), "tFAW", "0"), "dram.timing.tRRD", "must be >= 1 cycle");
  expect_config_error(with(with(v, "tCCDS", "0"), "tCCDL", "0"), "dram.timing.tCCDS", "must be >= 1 cycle");
  expect_config_error(with(v, "tCCDL", "0"), "dram.timing.tCCDL", "tCCDL must be >= tCCDS");
  // a row shorter than an L2 line cannot hold the line's bursts (the address map divided by 0 lines per row)
  expect_config_error(with(with(v, "row_bytes", "64"), "size_bytes", ""), "dram.row_bytes", "multiple of l2.line_bytes (128)");
  expect_config_error(with(v, "pseudo_channels", "3"), "dram.pseudo_channels", "divide the banks per channel (16)");
  expect_config_error(with(v, "pseudo_channels", "0"), "dram.pseudo_channels", "must be > 0");
  EXPECT_EQ(parse_gpu_config(with(v, "pseudo_channels", ""), "test.yaml").dram.pseudo_channels, 1u);  // optional
  expect_config_error(with(v, "tRFC", "3315"), "dram.timing.tRFC", "tRFC must be < tREFI");
  // V100 timings: a row cycle with a write is 3 + 40 + 2 + 12 + 2 + 1 + 10 + 3 + 2 + 3 + 12 = 90 cycles.
  expect_config_error(with(v, "tRFC", "3200"), "dram.timing.tREFI", "no room for a row cycle between refreshes");
  EXPECT_NO_THROW(parse_gpu_config(with(v, "tRFC", "3135"), "test.yaml"));  // 180 cycles left: enough
  expect_config_error(with(with(v, "slices", "63"), "size_bytes", ""), "l2.slices", "evenly");
  expect_config_error(with(v, "write_drain_bursts", "0"), "dram.write_drain_bursts", "must be > 0");
  expect_config_error("name: [unclosed", "<yaml>", "line");
  // Fuzz campaign: the 32-bit burst size bus_bytes*burst_length wrapped to 0 (65536 x 65536) and the row_bytes
  // check divided by zero; tBURST * data_rate wrapped too (2 x (2^31 + 1) = 2 accepted as burst_length 2).
  expect_config_error(with(with(v, "bus_bytes", "65536"), "burst_length", "65536"), "dram.burst_length", "<= 1 MiB");
  expect_config_error(with(with(v, "data_rate", "2147483649"), "tBURST", "2"), "dram.timing.tBURST", "burst_length / data_rate");
}

// Issue 12: impossible values and repeated keys were accepted (dram_mhz: 1e-9 made a DRAM miss as fast as
// an L2 hit; `ways: 24` then `ways: 16` silently kept 24).
TEST(GpuConfig, RejectsOutOfRangeValuesAndDuplicateKeys) {
  std::string v = preset_text("v100");
  expect_config_error(with(v, "dram_mhz", "1e-9"), "clocks.dram_mhz", "sane range");
  expect_config_error(with(v, "core_mhz", "1e300"), "clocks.core_mhz", "sane range");
  expect_config_error(with(v, "l2_mhz", "0.5"), "clocks.l2_mhz", "sane range");
  expect_config_error(with(v, "crossbar_mhz", "200000"), "clocks.crossbar_mhz", "sane range");
  expect_config_error(with(v, "size_bytes", "0"), "l2.size_bytes", "!=");
  expect_config_error(with(with(v, "sets", "1048576"), "size_bytes", ""), "l2.size_bytes", "sane range");
  expect_config_error(with(v, "quantum_ns", "1e9"), "simulation.quantum_ns", "<= 1e6");
  expect_config_error(with(v, "ways", "24\n  ways: 16"), "l2.ways", "duplicate key");
  expect_config_error(with(v, "tRCD", "12\n    tRCD: 14"), "dram.timing.tRCD", "duplicate key");
  expect_config_error(v + "\nname: again\n", "name", "duplicate key");
  expect_config_error(v + "\nl2:\n  ways: 2\n", "l2", "duplicate key");
  // Sixteenth-session review: a header of 2^32 - 16 bytes wrapped the 32-bit message size to a free message, and
  // 10^9 MSHRs or write-back entries were allocated per slice before failing with a bare "out of memory".
  expect_config_error(with(v, "header_bytes", "4294967280"), "crossbar.header_bytes", "at most 4096");
  expect_config_error(with(v, "port_bytes_per_cycle", "100000"), "crossbar.port_bytes_per_cycle", "at most 4096");
  expect_config_error(with(v, "mshr_entries", "1000000000"), "l2.mshr_entries", "1..65536");
  expect_config_error(with(v, "mshr_entries", "65537"), "l2.mshr_entries", "1..65536");
  expect_config_error(with(v, "ways", "24\n  writeback_entries: 1000000000"), "l2.writeback_entries", "1..65536");
  expect_config_error(with(v, "max_outstanding_lines", "2000000"), "sm.max_outstanding_lines", "1..1048576");
  // Review finding 86: latencies of 2^32 - 1 cycles overflowed the picosecond arithmetic (a DRAM miss faster
  // than an L2 hit); every latency and DRAM timing is at most 10^6 cycles.
  expect_config_error(with(v, "latency_cycles", "4294967295"), "crossbar.latency_cycles", "must be <= 1000000");
  expect_config_error(with(v, "hit_latency_cycles", "1000001"), "l2.hit_latency_cycles", "must be <= 1000000");
  expect_config_error(with(v, "controller_latency_cycles", "4294967295"), "dram.controller_latency_cycles",
                      "must be <= 1000000");
  expect_config_error(with(v, "tREFI", "2000000"), "dram.timing.tREFI", "must be <= 1000000");
  EXPECT_NO_THROW(parse_gpu_config(with(v, "controller_latency_cycles", "1000000"), "test.yaml"));
  EXPECT_NO_THROW(parse_gpu_config(with(with(with(v, "header_bytes", "4096"), "mshr_entries", "65536"),
                                        "max_outstanding_lines", "1048576"), "test.yaml"));
  // The limits themselves are accepted.
  EXPECT_NO_THROW(parse_gpu_config(with(with(with(with(v, "core_mhz", "100000"), "crossbar_mhz", "1"), "l2_mhz", "1"),
                                        "dram_mhz", "100000"), "test.yaml"));
}

TEST(GpuConfig, UnknownPresetNamesKnownOnes) {
  try {
    load_gpu_config("no_such_gpu");
    FAIL();
  } catch (const spartan::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("v100"), std::string::npos) << e.what();
  }
  EXPECT_THROW(load_gpu_config("/nonexistent/x.yaml"), spartan::ConfigError);
}

TEST(GpuConfig, MissingPresetDirectoryIsNamed) {
  // $SPARTAN_GPU_CONFIG_DIR pointing nowhere gave "unknown GPU preset 'v100' (known: )" (new-user review).
  const char* old = std::getenv("SPARTAN_GPU_CONFIG_DIR");
  const std::string saved = old ? old : "";
  ::setenv("SPARTAN_GPU_CONFIG_DIR", "/nonexistent-spartan-presets", 1);
  try {
    resolve_gpu_preset("v100");
    ADD_FAILURE() << "a missing preset directory was accepted";
  } catch (const spartan::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-spartan-presets"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("does not exist ($SPARTAN_GPU_CONFIG_DIR)"), std::string::npos) << e.what();
  }
  if (old) ::setenv("SPARTAN_GPU_CONFIG_DIR", saved.c_str(), 1);
  else ::unsetenv("SPARTAN_GPU_CONFIG_DIR");
  EXPECT_NO_THROW(resolve_gpu_preset("v100"));
}
