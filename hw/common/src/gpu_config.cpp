#include "spartan/hw/gpu_config.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <utility>

#include "spartan/common/atomic_file.h"
#include "spartan/common/error.h"
#include "spartan/hw/config_reader.h"

#ifndef SPARTAN_GPU_CONFIG_DIR
#define SPARTAN_GPU_CONFIG_DIR "sim/configs/gpu"
#endif

namespace fs = std::filesystem;

namespace spartan::hw {
namespace {

std::string preset_dir() {
  if (const char* env = std::getenv("SPARTAN_GPU_CONFIG_DIR"); env && *env) return env;
  return SPARTAN_GPU_CONFIG_DIR;
}

bool is_pow2(std::uint64_t v) { return v && !(v & (v - 1)); }

// Sane ranges checked by validate_gpu_config (documented in docs/gpu-model.md).
constexpr double kMinClockMhz = 1, kMaxClockMhz = 100000;
constexpr std::uint32_t kMaxCount = 65536;  // SMs, L2 slices, DRAM channels
// Latencies and DRAM timings in their clock's cycles: a million cycles is a millisecond at 1 GHz, far beyond
// any real GPU; larger values overflowed the picosecond arithmetic (review finding 86: 2^32 - 1 crossbar cycles
// at 1 MHz made a DRAM miss faster than an L2 hit).
constexpr std::uint32_t kMaxCycles = 1000000;
constexpr long double kMinL2Bytes = 256.0L, kMaxL2Bytes = 16.0L * 1024 * 1024 * 1024;

void read_timing(ConfigMap m, DramTiming& t) {
  t.tRCD = m.u32("tRCD");
  t.tRP = m.u32("tRP");
  t.tRAS = m.u32("tRAS");
  t.tRC = m.u32("tRC");
  t.CL = m.u32("CL");
  t.WL = m.u32("WL");
  t.tCCDL = m.u32("tCCDL");
  t.tCCDS = m.u32("tCCDS");
  t.tRRD = m.u32("tRRD");
  t.tFAW = m.u32("tFAW");
  t.tWR = m.u32("tWR");
  t.tRTP = m.u32("tRTP");
  t.tWTR = m.u32("tWTR");
  t.tRTW = m.u32("tRTW");
  t.tBURST = m.u32("tBURST");
  t.tREFI = m.u32("tREFI");
  t.tRFC = t.tREFI ? m.u32("tRFC") : m.u32("tRFC", 0);  // required unless refresh is off (tREFI: 0)
  m.finish();
}

}  // namespace

std::string resolve_gpu_preset(const std::string& s, const std::string& option) {
  bool is_path = s.find('/') != std::string::npos || (s.size() > 5 && s.substr(s.size() - 5) == ".yaml") ||
                 (s.size() > 4 && s.substr(s.size() - 4) == ".yml");
  if (is_path) {
    if (!fs::is_regular_file(s))
      throw spartan::ConfigError(s, option, fs::is_directory(s) ? "is a directory, expected a GPU config (YAML) file"
                                                                 : "no such GPU config file");
    return s;
  }
  fs::path p = fs::path(preset_dir()) / (s + ".yaml");
  if (!fs::is_directory(preset_dir()))  // "(known: )" said nothing about why
    throw spartan::ConfigError(preset_dir(), option,
                               std::string("the GPU preset directory does not exist (") +
                                   (std::getenv("SPARTAN_GPU_CONFIG_DIR") && *std::getenv("SPARTAN_GPU_CONFIG_DIR")
                                        ? "$SPARTAN_GPU_CONFIG_DIR"
                                        : "the source tree's sim/configs/gpu") +
                                   "); give " + option + " a YAML path or set SPARTAN_GPU_CONFIG_DIR");
  if (!fs::is_regular_file(p)) {
    std::string known;
    for (auto& n : list_gpu_presets()) known += (known.empty() ? "" : ", ") + n;
    throw spartan::ConfigError(p.string(), option, "unknown GPU preset '" + s + "' (known: " + known + ")");
  }
  return p.string();
}

std::vector<std::string> list_gpu_presets() {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto& e : fs::directory_iterator(preset_dir(), ec))
    if (e.path().extension() == ".yaml") out.push_back(e.path().stem().string());
  std::sort(out.begin(), out.end());
  return out;
}

GpuConfig load_gpu_config(const std::string& name_or_path, const std::string& option) {
  std::string file = resolve_gpu_preset(name_or_path, option);
  std::string text;
  try {
    text = spartan::read_file(file);
  } catch (const spartan::Error& e) {
    throw spartan::ConfigError(file, option, e.what());
  }
  GpuConfig c = parse_gpu_config(text, file);
  // Recorded in the tools' outputs (stats.json gpu.file, microbench gpu_file): absolute, so that two copies of a
  // preset that keep its name can be told apart.
  c.file = fs::absolute(file).lexically_normal().string();
  return c;
}

GpuConfig parse_gpu_config(const std::string& text, const std::string& file) {
  GpuConfig c;
  c.file = file;
  ConfigMap root(parse_yaml(text, file), file, "");
  c.name = root.str("name");
  root.str("source", "");  // free text naming the sources (documentation only)
  c.die_area_mm2 = root.f64("die_area_mm2");
  c.node_nm = root.f64("node_nm");
  {
    auto m = root.child("clocks");
    c.clocks.core_mhz = m.f64("core_mhz");
    c.clocks.crossbar_mhz = m.f64("crossbar_mhz", c.clocks.core_mhz);
    c.clocks.l2_mhz = m.f64("l2_mhz");
    c.clocks.dram_mhz = m.f64("dram_mhz");
    m.finish();
    for (auto [k, v] : {std::pair{"core_mhz", c.clocks.core_mhz}, {"crossbar_mhz", c.clocks.crossbar_mhz},
                        {"l2_mhz", c.clocks.l2_mhz}, {"dram_mhz", c.clocks.dram_mhz}})
      if (!(v > 0)) m.fail(k, "clock must be > 0 MHz");
  }
  {
    auto m = root.child("sm");
    c.sm.count = m.u32("count");
    c.sm.max_outstanding_lines = m.u32("max_outstanding_lines", c.sm.max_outstanding_lines);
    c.sm.issue_interval_cycles = m.u32("issue_interval_cycles", c.sm.issue_interval_cycles);
    m.finish();
    if (c.sm.count == 0) m.fail("count", "must be > 0");
    if (c.sm.max_outstanding_lines == 0 || c.sm.max_outstanding_lines > (1u << 20))
      m.fail("max_outstanding_lines", "must be 1..1048576");
    if (c.sm.issue_interval_cycles == 0) m.fail("issue_interval_cycles", "must be >= 1 (core cycles between two requests of one SM)");
  }
  {
    auto m = root.child("crossbar");
    c.crossbar.latency_cycles = m.u32("latency_cycles");
    c.crossbar.port_bytes_per_cycle = m.u32("port_bytes_per_cycle");
    c.crossbar.header_bytes = m.u32("header_bytes", c.crossbar.header_bytes);
    m.finish();
    if (c.crossbar.port_bytes_per_cycle == 0) m.fail("port_bytes_per_cycle", "must be > 0");
    // Upper bounds: message sizes (header + payload, rounded to flits) are 32-bit sums; a header of 2^32 - 16
    // bytes wrapped to a free message (fresh-eyes review, sixteenth session).
    if (c.crossbar.port_bytes_per_cycle > 4096) m.fail("port_bytes_per_cycle", "must be at most 4096 bytes per cycle");
    if (c.crossbar.header_bytes > 4096) m.fail("header_bytes", "must be at most 4096 bytes (a message header)");
  }
  {
    auto m = root.child("l2");
    c.l2.slices = m.u32("slices");
    c.l2.interleave_bytes = m.u32("interleave_bytes");
    c.l2.hash = m.str("hash", c.l2.hash);
    auto& s = c.l2.slice;
    s.sets = m.u32("sets");
    s.ways = m.u32("ways");
    s.line_bytes = m.u32("line_bytes");
    s.sector_bytes = m.u32("sector_bytes");
    s.hit_latency_cycles = m.u32("hit_latency_cycles");
    s.bytes_per_cycle = m.u32("bytes_per_cycle");
    s.mshr_entries = m.u32("mshr_entries");
    s.writeback_entries = m.u32("writeback_entries", s.writeback_entries);
    // Optional cross-check, made by validate_gpu_config after the geometry; an explicit 0 is a mismatch too.
    if (m.has("size_bytes")) c.l2.declared_size_bytes = m.u64("size_bytes");
    m.finish();
  }
  {
    auto m = root.child("dram");
    auto& d = c.dram;
    d.kind = m.str("kind");
    d.channels = m.u32("channels");
    d.bank_groups = m.u32("bank_groups");
    d.banks_per_group = m.u32("banks_per_group");
    d.bus_bytes = m.u32("bus_bytes");
    d.burst_length = m.u32("burst_length");
    d.data_rate = m.u32("data_rate");
    d.row_bytes = m.u32("row_bytes");
    d.controller_latency_cycles = m.u32("controller_latency_cycles");
    d.capacity_bytes = m.u64("capacity_bytes", 0);
    d.write_drain_bursts = m.u32("write_drain_bursts", d.write_drain_bursts);
    if (d.write_drain_bursts == 0) m.fail("write_drain_bursts", "must be > 0");
    d.pseudo_channels = m.u32("pseudo_channels", d.pseudo_channels);
    read_timing(m.child("timing"), d.timing);
    m.finish();
  }
  if (root.has("simulation")) {
    auto m = root.child("simulation");
    c.simulation.quantum_ns = m.f64("quantum_ns", c.simulation.quantum_ns);
    m.finish();
  }
  root.finish();
  validate_gpu_config(c);
  return c;
}

void validate_gpu_config(const GpuConfig& c) {
  auto fail = [&](const std::string& key, const std::string& what) {
    throw spartan::ConfigError(c.file, key, what);
  };
  // Sane ranges (docs/gpu-model.md, "Config errors"): values outside them are typos or unit mistakes
  // (e.g. dram_mhz: 1e-9 made a DRAM miss as fast as an L2 hit), never a real GPU.
  for (auto [k, v] : {std::pair{"clocks.core_mhz", c.clocks.core_mhz}, {"clocks.crossbar_mhz", c.clocks.crossbar_mhz},
                      {"clocks.l2_mhz", c.clocks.l2_mhz}, {"clocks.dram_mhz", c.clocks.dram_mhz}})
    if (!(v >= kMinClockMhz && v <= kMaxClockMhz))
      fail(k, "clock " + std::to_string(v) + " MHz outside the sane range [" + std::to_string(int(kMinClockMhz)) +
                  ", " + std::to_string(int(kMaxClockMhz)) + "] MHz");
  const auto& s = c.l2.slice;
  if (c.l2.slices == 0) fail("l2.slices", "must be > 0");
  if (!is_pow2(s.sets)) fail("l2.sets", "number of sets " + std::to_string(s.sets) + " is not a power of two");
  if (s.ways == 0 || s.ways > 65535) fail("l2.ways", "must be 1..65535 (the LRU order keeps ways as u16)");
  if (!is_pow2(s.sector_bytes)) fail("l2.sector_bytes", "must be a power of two");
  if (!is_pow2(s.line_bytes)) fail("l2.line_bytes", "must be a power of two");
  if (s.sector_bytes > s.line_bytes)  // (both powers of two: otherwise the line is a multiple of the sector)
    fail("l2.sector_bytes", "sector size " + std::to_string(s.sector_bytes) + " is larger than the line size " +
                                std::to_string(s.line_bytes));
  if (s.line_bytes / s.sector_bytes > 32) fail("l2.sector_bytes", "at most 32 sectors per line");
  if (s.bytes_per_cycle == 0) fail("l2.bytes_per_cycle", "must be > 0");
  // Upper bounds (each entry is allocated per slice at start-up; 10^9 tried to allocate ~8 GB per slice and ended
  // in a bare "out of memory"): real L2 slices have tens to hundreds.
  if (s.mshr_entries == 0 || s.mshr_entries > 65536) fail("l2.mshr_entries", "must be 1..65536 per slice");
  if (s.writeback_entries == 0 || s.writeback_entries > 65536)
    fail("l2.writeback_entries", "must be 1..65536 per slice");
  if (c.l2.interleave_bytes == 0 || c.l2.interleave_bytes % s.line_bytes)
    fail("l2.interleave_bytes", "must be a non-zero multiple of l2.line_bytes");
  if (c.l2.hash != "rotate_xor" && c.l2.hash != "modulo")
    fail("l2.hash", "unknown hash '" + c.l2.hash + "' (rotate_xor, modulo)");
  const auto& d = c.dram;
  if (d.channels == 0) fail("dram.channels", "must be > 0");
  if (c.l2.slices % d.channels)
    fail("l2.slices", std::to_string(c.l2.slices) + " slices cannot be split evenly over " +
                          std::to_string(d.channels) + " DRAM channels");
  if (d.bank_groups == 0) fail("dram.bank_groups", "must be > 0 (zero banks)");
  if (d.banks_per_group == 0) fail("dram.banks_per_group", "must be > 0 (zero banks)");
  // The address map XORs the bank with the row bits, a permutation only for a power-of-two bank count
  // (review of 2026-12-02: 3 banks per group mapped 21 760 of 131 072 bursts onto another burst's location).
  if (!is_pow2(d.banks_per_group)) fail("dram.banks_per_group", "must be a power of two (bank XOR row permutation)");
  if (std::uint64_t(d.bank_groups) * d.banks_per_group > 1024)
    fail("dram.bank_groups", "bank_groups x banks_per_group must be at most 1024 banks per channel");
  if (d.pseudo_channels == 0 || d.banks() % d.pseudo_channels)
    fail("dram.pseudo_channels", "must be > 0 and divide the banks per channel (" + std::to_string(d.banks()) + ")");
  if (d.bus_bytes == 0) fail("dram.bus_bytes", "must be > 0");
  if (d.burst_length == 0) fail("dram.burst_length", "must be > 0");
  if (d.data_rate == 0) fail("dram.data_rate", "must be > 0");
  // burst_bytes() is a 32-bit product: bus_bytes 65536 x burst_length 65536 wrapped to 0 and the row_bytes check
  // below divided by zero (SIGFPE; fuzz campaign). A row holds whole bursts and is at most 1 MiB, so a larger
  // burst is never valid; checked in 64 bits before any use of burst_bytes().
  if (std::uint64_t(d.bus_bytes) * d.burst_length > (1u << 20))
    fail("dram.burst_length", "burst size bus_bytes*burst_length = " +
                                  std::to_string(std::uint64_t(d.bus_bytes) * d.burst_length) + " bytes: must be <= 1 MiB");
  if (d.row_bytes == 0 || d.row_bytes % d.burst_bytes())
    fail("dram.row_bytes", "must be a non-zero multiple of the burst size (bus_bytes*burst_length)");
  if (s.sector_bytes % d.burst_bytes() && d.burst_bytes() % s.sector_bytes)
    fail("l2.sector_bytes", "sector size and DRAM burst size (" + std::to_string(d.burst_bytes()) +
                                ") must divide one another");
  const auto& t = d.timing;
  if (t.tBURST == 0) fail("dram.timing.tBURST", "must be > 0");
  if (std::uint64_t(t.tBURST) * d.data_rate != d.burst_length)  // 64 bits: 2 x (2^31 + 1) wrapped to 2
    fail("dram.timing.tBURST", "must equal burst_length / data_rate");
  if (t.tRC < t.tRAS + t.tRP) fail("dram.timing.tRC", "tRC must be >= tRAS + tRP");
  if (t.tRAS < t.tRCD) fail("dram.timing.tRAS", "tRAS must be >= tRCD");
  // The ACT and column calendars time one command per slot of these lengths: 0 would make them 1 ps slots
  // spanning a few ns, which older requests overran (clamped silently; thirty-eighth session's review: v100
  // copy 85 -> 63 % with tCCDL = tCCDS = 0). Accel-Sim's CCDL=0 (no bank groups) is tCCDL = tCCDS here.
  if (t.tRRD == 0) fail("dram.timing.tRRD", "must be >= 1 cycle (one ACT per cycle at most)");
  if (t.tCCDS == 0) fail("dram.timing.tCCDS", "must be >= 1 cycle (one column command per cycle at most)");
  if (t.tCCDL < t.tCCDS) fail("dram.timing.tCCDL", "tCCDL must be >= tCCDS (no bank-group penalty: tCCDL = tCCDS)");
  if (t.tFAW && t.tFAW < t.tRRD)
    fail("dram.timing.tFAW", "tFAW must be 0 (not modelled) or >= tRRD");
  if (t.tREFI && t.tRFC >= t.tREFI) fail("dram.timing.tRFC", "tRFC must be < tREFI");
  if (t.tREFI && t.tRFC < t.tREFI) {
    // Between two refreshes a row must be able to open, serve a column and close again before the next REF
    // (DramChannel moves a burst that does not fit to the next refresh interval: with no room it never would).
    const std::uint64_t cycle = std::uint64_t(t.tRRD) + t.tRC + t.tCCDL + t.CL + t.WL + t.tBURST + t.tWR + t.tRTP +
                                t.tRTW + t.tWTR + t.tRP;
    if (std::uint64_t(t.tREFI - t.tRFC) < 2 * cycle)
      fail("dram.timing.tREFI", "tREFI - tRFC = " + std::to_string(t.tREFI - t.tRFC) +
                                    " cycles leaves no room for a row cycle between refreshes (need >= " +
                                    std::to_string(2 * cycle) + ")");
  }
  if (c.simulation.quantum_ns <= 0) fail("simulation.quantum_ns", "must be > 0");
  if (c.die_area_mm2 <= 0) fail("die_area_mm2", "must be > 0");
  if (c.node_nm <= 0) fail("node_nm", "must be > 0");
  // Sizes and counts (after the structural checks above, so their messages come first).
  if (c.sm.count > kMaxCount) fail("sm.count", "more than " + std::to_string(kMaxCount) + " SMs");
  if (c.l2.slices > kMaxCount) fail("l2.slices", "more than " + std::to_string(kMaxCount) + " slices");
  if (c.dram.channels > kMaxCount) fail("dram.channels", "more than " + std::to_string(kMaxCount) + " channels");
  if (c.l2.slice.line_bytes < 16 || c.l2.slice.line_bytes > 4096)
    fail("l2.line_bytes", "must be in [16, 4096] bytes");
  if (c.l2.slice.sector_bytes < 4) fail("l2.sector_bytes", "must be >= 4 bytes");
  {
    const long double l2_bytes = static_cast<long double>(c.l2.slices) * c.l2.slice.sets * c.l2.slice.ways *
                                 c.l2.slice.line_bytes;
    if (l2_bytes < kMinL2Bytes || l2_bytes > kMaxL2Bytes)
      fail("l2.size_bytes", "L2 capacity slices*sets*ways*line_bytes = " + std::to_string(double(l2_bytes)) +
                                " bytes outside the sane range [256 B, 16 GiB]");
  }
  // After the geometry and its range (the product above is then below 16 GiB: no wrap-around here).
  if (c.l2.declared_size_bytes && *c.l2.declared_size_bytes != c.l2.size_bytes())
    fail("l2.size_bytes", std::to_string(*c.l2.declared_size_bytes) + " != slices*sets*ways*line_bytes = " +
                              std::to_string(c.l2.size_bytes()));
  if (c.dram.row_bytes > (1u << 20)) fail("dram.row_bytes", "must be <= 1 MiB");
  // The address map puts an L2 line's bursts in consecutive columns of one row (address_map.h): a row holds
  // whole lines (a row shorter than a line divided by zero lines per row).
  if (c.l2.slice.line_bytes > c.dram.burst_bytes() && c.dram.row_bytes % c.l2.slice.line_bytes)
    fail("dram.row_bytes", "must be a multiple of l2.line_bytes (" + std::to_string(c.l2.slice.line_bytes) +
                               "): a line's bursts lie in one DRAM row");
  {
    const auto& t = c.dram.timing;
    const std::pair<const char*, std::uint32_t> cycles[] = {
        {"sm.issue_interval_cycles", c.sm.issue_interval_cycles},
        {"crossbar.latency_cycles", c.crossbar.latency_cycles},
        {"l2.hit_latency_cycles", c.l2.slice.hit_latency_cycles},
        {"dram.controller_latency_cycles", c.dram.controller_latency_cycles},
        {"dram.timing.tRCD", t.tRCD}, {"dram.timing.tRP", t.tRP}, {"dram.timing.tRAS", t.tRAS},
        {"dram.timing.tRC", t.tRC}, {"dram.timing.CL", t.CL}, {"dram.timing.WL", t.WL},
        {"dram.timing.tCCDL", t.tCCDL}, {"dram.timing.tCCDS", t.tCCDS}, {"dram.timing.tRRD", t.tRRD},
        {"dram.timing.tFAW", t.tFAW},
        {"dram.timing.tWR", t.tWR}, {"dram.timing.tRTP", t.tRTP}, {"dram.timing.tWTR", t.tWTR},
        {"dram.timing.tRTW", t.tRTW}, {"dram.timing.tBURST", t.tBURST}, {"dram.timing.tREFI", t.tREFI},
        {"dram.timing.tRFC", t.tRFC}};
    for (const auto& [key, v] : cycles)
      if (v > kMaxCycles) fail(key, std::to_string(v) + " cycles: must be <= " + std::to_string(kMaxCycles));
  }
  if (c.simulation.quantum_ns > 1e6) fail("simulation.quantum_ns", "must be <= 1e6 ns (1 ms)");
}

}  // namespace spartan::hw
