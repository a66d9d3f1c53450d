// RTL sparsity monitor vs the spec reference (monitor_reference.h): register map and errors, directed
// corner cases (-0.0, NaN, Inf, denormals, all-zero / all-non-zero lines, requests straddling tiles, rows
// and regions, overlapping regions, sampling), seeded constrained-random traffic, back-pressure on every
// ready signal, and reset in the middle of a job.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <random>
#include <sstream>
#include <vector>

#include "monitor_reference.h"
#include "spartan/hw/regmap.h"
#include "spartan/rtl/monitor_rtl.h"

namespace {
using namespace spartan::rtl;
using namespace spartan::rtl::test;
namespace rm = spartan::hw::regmap;
namespace mon = spartan::hw::regmap::monitor;

struct Bench {
  std::map<std::uint64_t, std::uint32_t> mem;  // u32 words of the count tables
  std::uint32_t mem_latency = 3;
  std::uint64_t adds = 0;
  std::vector<AtomicAdd32B> log;               // every atomic add, in issue order
  MonitorRtl rtl;
  RefMonitor ref;
  explicit Bench(MonitorRtlConfig cfg = {})
      : rtl(cfg, [this](const AtomicAdd32B& a) {
          EXPECT_EQ(a.addr % 32, 0u);
          for (unsigned i = 0; i < 8; ++i)
            if (a.mask & (1u << i)) mem[a.addr + 4 * i] += a.words[i];
          ++adds;
          log.push_back(a);
          return mem_latency;
        }) {}

  void ok(std::uint32_t off, std::uint32_t v) { ASSERT_EQ(rtl.mmio_write(off, v), 0u) << std::hex << off; }
  std::uint32_t rd(std::uint32_t off) {
    std::uint32_t v = 0;
    EXPECT_EQ(rtl.mmio_read(off, v), 0u) << std::hex << off;
    return v;
  }
  void program(unsigned r, const RefRegion& g) {
    ok(mon::region_reg(r, mon::R_TILE), g.tr | (g.tc << 16));
    ok(mon::region_reg(r, mon::R_BASE_LO), static_cast<std::uint32_t>(g.base));
    ok(mon::region_reg(r, mon::R_BASE_HI), static_cast<std::uint32_t>(g.base >> 32));
    ok(mon::region_reg(r, mon::R_ROWS), g.rows);
    ok(mon::region_reg(r, mon::R_COLS), g.cols);
    ok(mon::region_reg(r, mon::R_ROW_PITCH), g.pitch);
    ok(mon::region_reg(r, mon::R_CNT_OFFSET), g.cnt_offset);
    ok(mon::region_reg(r, mon::R_CT_BASE_LO), static_cast<std::uint32_t>(g.ct_base));
    ok(mon::region_reg(r, mon::R_CT_BASE_HI), static_cast<std::uint32_t>(g.ct_base >> 32));
    ok(mon::region_reg(r, mon::R_CFG), 1u | (g.dtype << mon::R_CFG_DTYPE_LSB));
    ref.regions[r] = g;
    ref.regions[r].en = true;
  }
  void enable(unsigned shift = 0) {
    ok(mon::SAMPLE_SHIFT, shift);
    ok(mon::CTRL, 1);
    ref.shift = shift;
  }
  void write(std::uint64_t addr, const std::uint8_t* data, std::uint32_t len) {
    rtl.write_request(addr, data, len);
    ref.write(addr, data, len);
  }
  void flush(std::uint32_t mask) {
    ok(mon::FLUSH, mask);
    rtl.run_until_idle();
  }
  // Count table of region r in memory vs the reference counters.
  void expect_table(unsigned r) {
    const auto& g = ref.regions[r];
    for (std::uint64_t t = 0; t < g.tiles(); ++t) {
      const std::uint64_t a = g.ct_base + 4 * t;
      const std::uint32_t got = mem.count(a) ? mem[a] : 0;
      ASSERT_EQ(got, ref.counters[g.cnt_offset + t]) << "region " << r << " tile " << t;
    }
  }
};

// Writes a rows x cols matrix (row pitch `pitch`) line by line, in `chunk`-byte requests.
void write_matrix(Bench& b, const RefRegion& g, const std::vector<std::uint8_t>& bytes, unsigned chunk) {
  const std::uint64_t size = g.size();
  std::uint64_t a = g.base;
  while (a < g.base + size) {
    const std::uint64_t line_end = (a & ~127ull) + 128;
    const std::uint64_t end = std::min({a + chunk, line_end, g.base + size});
    b.write(a, bytes.data() + (a - g.base), static_cast<std::uint32_t>(end - a));
    a = end;
  }
}

std::vector<std::uint8_t> random_matrix(std::mt19937_64& rng, const RefRegion& g, double density) {
  std::vector<std::uint8_t> m(g.size(), 0);
  std::uniform_real_distribution<double> u(0, 1);
  const unsigned eb = g.eb();
  for (std::uint64_t o = 0; o + eb <= m.size(); o += eb) {
    std::uint32_t v = 0;
    const double x = u(rng);
    if (x < density) v = static_cast<std::uint32_t>(rng()) | 1u;                  // non-zero
    else if (x < density + (1 - density) / 2) v = eb == 4 ? 0x80000000u : 0x8000u;  // -0.0
    std::memcpy(&m[o], &v, eb);
  }
  return m;
}

// Region 0 programmed with g, the monitor enabled, and a random matrix of that density written in 128 B lines.
void program_and_write(Bench& b, const RefRegion& g, std::mt19937_64& rng, double density) {
  b.program(0, g);
  b.enable();
  write_matrix(b, g, random_matrix(rng, g, density), 128);
}

TEST(MonitorRtl, RegisterMapAndErrors) {
  Bench b;
  EXPECT_EQ(b.rd(mon::ID), mon::kIdValue);
  EXPECT_EQ(b.rd(mon::CAPACITY), 8192u);
  EXPECT_EQ(b.rtl.mmio_write(mon::ID, 1), static_cast<std::uint32_t>(rm::MmioError::ReadOnly));
  std::uint32_t v = 0;
  EXPECT_EQ(b.rtl.mmio_read(0x002, v), static_cast<std::uint32_t>(rm::MmioError::Misaligned));
  EXPECT_EQ(b.rtl.mmio_read(0x038, v), static_cast<std::uint32_t>(rm::MmioError::Unmapped));  // the first hole after COMPL_PTR_HI
  EXPECT_EQ(b.rtl.mmio_read(mon::region_reg(0, 0x38), v), static_cast<std::uint32_t>(rm::MmioError::Unmapped));
  EXPECT_EQ(b.rtl.mmio_read(mon::region_reg(16, 0), v), static_cast<std::uint32_t>(rm::MmioError::Unmapped));
  // first error wins: ReadOnly at 0x000 (write)
  const std::uint32_t ec = b.rd(mon::ERR_CODE);
  EXPECT_EQ(ec & 0xFF, static_cast<std::uint32_t>(rm::MmioError::ReadOnly));
  EXPECT_EQ((ec >> 16) & 0xFFF, 0u);
  EXPECT_EQ(ec >> 31, 1u);
  EXPECT_EQ((b.rd(mon::STATUS) >> mon::STATUS_ERR_BIT) & 1, 1u);
  b.ok(mon::ERR_CODE, 0);
  EXPECT_EQ(b.rd(mon::ERR_CODE), 0u);
  // enabling an incomplete region is BadValue and changes nothing
  EXPECT_EQ(b.rtl.mmio_write(mon::region_reg(3, mon::R_CFG), 1), static_cast<std::uint32_t>(rm::MmioError::BadValue));
  EXPECT_EQ(b.rd(mon::region_reg(3, mon::R_CFG)), 0u);
  RefRegion g;
  g.rows = 40; g.cols = 33; g.pitch = 33 * 4; g.tr = 8; g.tc = 16; g.base = 0x100000; g.ct_base = 0x900000;
  b.program(3, g);
  EXPECT_EQ(b.rd(mon::region_reg(3, mon::R_TILES)), 5u * 3u);
  EXPECT_EQ(b.rd(mon::region_reg(3, mon::R_SIZE_LO)), 40u * 132u);
  EXPECT_EQ(b.rtl.mmio_write(mon::region_reg(3, mon::R_ROWS), 8), static_cast<std::uint32_t>(rm::MmioError::Busy));
  // CNT_OFFSET + TILES > CAPACITY is BadValue
  RefRegion h = g;
  h.cnt_offset = 8192 - 3;
  b.ok(mon::region_reg(4, mon::R_TILE), h.tr | (h.tc << 16));
  b.ok(mon::region_reg(4, mon::R_ROWS), h.rows);
  b.ok(mon::region_reg(4, mon::R_COLS), h.cols);
  b.ok(mon::region_reg(4, mon::R_ROW_PITCH), h.pitch);
  b.ok(mon::region_reg(4, mon::R_CNT_OFFSET), h.cnt_offset);
  EXPECT_EQ(b.rtl.mmio_write(mon::region_reg(4, mon::R_CFG), 1), static_cast<std::uint32_t>(rm::MmioError::BadValue));
  // DTYPE 3 is BadValue even when disabling
  EXPECT_EQ(b.rtl.mmio_write(mon::region_reg(4, mon::R_CFG), 3u << 4), static_cast<std::uint32_t>(rm::MmioError::BadValue));
}

TEST(MonitorRtl, SpecialValuesF32) {
  Bench b;
  RefRegion g;
  g.rows = 4; g.cols = 32; g.pitch = 128; g.tr = 2; g.tc = 16; g.base = 0x10000; g.ct_base = 0x80000;
  b.program(0, g);
  b.enable();
  const std::uint32_t vals[] = {0x00000000u, 0x80000000u, 0x7FC00000u, 0xFFC00001u, 0x7F800000u,
                                0x00000001u, 0x80000001u, 0x3F800000u};
  std::vector<std::uint8_t> line(128);
  for (unsigned i = 0; i < 32; ++i) std::memcpy(&line[4 * i], &vals[i % 8], 4);
  b.write(g.base, line.data(), 128);                       // mixed
  std::vector<std::uint8_t> zeros(128, 0), nz(128, 0x11);
  for (unsigned i = 0; i < 32; ++i) zeros[4 * i + 3] = (i & 1) ? 0x80 : 0;  // +0.0 / -0.0
  b.write(g.base + 128, zeros.data(), 128);                 // all zero
  b.write(g.base + 256, nz.data(), 128);                    // all non-zero
  b.flush(1);
  b.expect_table(0);
  EXPECT_EQ(b.mem[g.ct_base + 0], 12u);  // tile (0,0): 16 lanes of row 0, 6 of each 8 non-zero
  EXPECT_EQ(b.mem[g.ct_base + 8], 16u);  // tile (1,0): row 2 all non-zero
  EXPECT_EQ(b.rd(mon::LINES_SEEN), 3u);
  EXPECT_EQ((b.rd(mon::STATUS) >> mon::STATUS_FLUSH_DONE_BIT) & 1, 1u);
  EXPECT_GT(b.rd(mon::FLUSH_CYCLES), 0u);
}

TEST(MonitorRtl, HalfTypesAndStraddling) {
  for (unsigned dt : {1u, 2u}) {
    Bench b;
    std::mt19937_64 rng(7 + dt);
    RefRegion g;
    g.dtype = dt; g.rows = 37; g.cols = 75; g.pitch = 2 * 81; g.tr = 4; g.tc = 8;
    g.base = 0x20000 + 46; g.ct_base = 0x90004;  // base inside a line; table not 32 B aligned
    b.program(1, g);
    b.enable();
    const auto m = random_matrix(rng, g, 0.4);
    write_matrix(b, g, m, 128);
    b.flush(2);
    b.expect_table(1);
  }
}

TEST(MonitorRtl, OverlappingRegionsAndRegionBoundaries) {
  Bench b;
  std::mt19937_64 rng(11);
  RefRegion g0, g1;
  g0.rows = 16; g0.cols = 20; g0.pitch = 80; g0.tr = 4; g0.tc = 4; g0.base = 0x40000 + 40; g0.ct_base = 0xA0000;
  g1 = g0;  // overlapping, other tiling, F32 too
  g1.base = 0x40000 + 40 + 80 * 5; g1.rows = 20; g1.tr = 8; g1.tc = 32; g1.cnt_offset = 500; g1.ct_base = 0xB0000;
  b.program(0, g0);
  b.program(5, g1);
  b.enable();
  RefRegion span = g0;
  span.base = 0x40000; span.rows = 30; span.pitch = 80;
  const auto m = random_matrix(rng, span, 0.5);
  write_matrix(b, span, m, 32);  // 32 B sectors
  b.flush(0x21);
  b.expect_table(0);
  b.expect_table(5);
}

TEST(MonitorRtl, SamplingCountsOneOfTwoToTheS) {
  Bench b;
  std::mt19937_64 rng(3);
  RefRegion g;
  g.rows = 64; g.cols = 64; g.pitch = 256; g.base = 0x60000; g.ct_base = 0xC0000;
  b.program(2, g);
  b.enable(2);
  write_matrix(b, g, random_matrix(rng, g, 0.3), 128);
  b.flush(4);
  b.expect_table(2);
  EXPECT_EQ(b.rd(mon::LINES_MATCHED), b.ref.matched);
  EXPECT_EQ(b.rd(mon::LINES_SAMPLED), b.ref.sampled);
  EXPECT_EQ(b.rd(mon::region_reg(2, mon::R_MATCHED)), b.ref.matched);
}

TEST(MonitorRtl, ConstrainedRandomWithBackPressure) {
  for (std::uint64_t seed = 1; seed <= 6; ++seed) {
    MonitorRtlConfig cfg;
    cfg.seed = seed;
    cfg.flush_ready_stall_pct = 40;
    Bench b(cfg);
    b.mem_latency = static_cast<std::uint32_t>(seed % 4) * 5;
    std::mt19937_64 rng(seed * 977);
    const unsigned nreg = 1 + rng() % 3;
    std::vector<RefRegion> gs;
    std::uint32_t off = 0;
    std::ostringstream trace;
    for (unsigned r = 0; r < nreg; ++r) {
      RefRegion g;
      g.dtype = rng() % 3;
      g.rows = 1 + rng() % 70;
      g.cols = 1 + rng() % 90;
      g.pitch = g.cols * g.eb() + g.eb() * (rng() % 3) * 3;
      g.tr = 1u << (rng() % 6);
      g.tc = 1u << (rng() % 7);
      g.base = 0x100000 * (r + 1) + g.eb() * (rng() % 64);
      g.ct_base = 0x800000 + 0x10000 * r + 4 * (rng() % 16);
      g.cnt_offset = off;
      off += static_cast<std::uint32_t>(g.tiles());
      b.program(r, g);
      gs.push_back(g);
      trace << "seed " << seed << " region " << r << " dtype " << g.dtype << " rows " << g.rows << " cols "
            << g.cols << " pitch " << g.pitch << " tile " << g.tr << "x" << g.tc << " base 0x" << std::hex
            << g.base << std::dec << "; ";
    }
    SCOPED_TRACE(trace.str());
    b.enable(rng() % 2);
    for (unsigned r = 0; r < nreg; ++r) {
      const auto m = random_matrix(rng, gs[r], (rng() % 100) / 100.0);
      write_matrix(b, gs[r], m, 32u << (rng() % 3));
    }
    b.flush((1u << nreg) - 1);
    for (unsigned r = 0; r < nreg; ++r) b.expect_table(r);
    EXPECT_EQ(b.rd(mon::LINES_SEEN), b.ref.seen);
  }
}

TEST(MonitorRtl, MultiTileLinesBackPressureTheWriteStream) {
  Bench b;
  std::mt19937_64 rng(5);
  RefRegion g;
  g.dtype = 1; g.rows = 8; g.cols = 256; g.pitch = 512; g.tr = 1; g.tc = 1;  // 64 tiles per line
  g.base = 0x30000; g.ct_base = 0xD0000;
  b.program(0, g);
  b.enable();
  std::vector<std::uint8_t> m(g.size(), 0x33);
  write_matrix(b, g, m, 128);
  EXPECT_GT(b.rtl.stall_cycles(), 0u);  // s_ready went low while a line was split into 64 buckets
  b.flush(1);
  b.expect_table(0);
}

TEST(MonitorRtl, ResetInTheMiddleOfAJob) {
  Bench b;
  std::mt19937_64 rng(9);
  RefRegion g;
  g.rows = 32; g.cols = 64; g.pitch = 256; g.base = 0x50000; g.ct_base = 0xE0000; g.tr = 8; g.tc = 8;
  b.program(0, g);
  b.enable();
  const auto m = random_matrix(rng, g, 0.6);
  write_matrix(b, g, m, 128);
  b.ok(mon::FLUSH, 1);
  b.rtl.idle(5);          // flush running
  b.rtl.reset();          // reset mid-flush
  EXPECT_EQ(b.rd(mon::CTRL), 0u);
  EXPECT_EQ(b.rd(mon::region_reg(0, mon::R_CFG)), 0u);
  EXPECT_EQ(b.rd(mon::LINES_SEEN), 0u);
  // start over: counters must be zero after reset
  b.mem.clear();
  b.ref = RefMonitor{};
  b.program(0, g);
  b.enable();
  write_matrix(b, g, m, 64);
  b.flush(1);
  b.expect_table(0);
}

TEST(MonitorRtl, ClearZeroesCountersAndStatistics) {
  Bench b;
  std::mt19937_64 rng(12);
  RefRegion g;
  g.rows = 16; g.cols = 32; g.pitch = 128; g.base = 0x70000; g.ct_base = 0xF0000;
  program_and_write(b, g, rng, 0.5);
  b.ok(mon::CTRL, 0x3);  // ENABLE + CLEAR
  b.rtl.run_until_idle();
  b.ref.counters.assign(b.ref.counters.size(), 0);
  b.ref.seen = 0;
  EXPECT_EQ(b.rd(mon::LINES_SEEN), 0u);
  write_matrix(b, g, random_matrix(rng, g, 0.5), 128);
  b.flush(1);
  b.expect_table(0);
}


// A FLUSH written right after CTRL.CLEAR (the sweep takes CAPACITY cycles) must run after the sweep, on the
// cleared counters, and end with FLUSH_DONE (it used to be dropped, leaving STATUS at 0 for good).
TEST(MonitorRtl, FlushWrittenDuringTheClearSweepRunsAfterIt) {
  Bench b;
  std::mt19937_64 rng(21);
  RefRegion g;
  g.rows = 16; g.cols = 32; g.pitch = 128; g.tr = 8; g.tc = 8; g.base = 0x70000; g.ct_base = 0xF0000;
  program_and_write(b, g, rng, 0.5);
  b.ok(mon::CTRL, 0x3);  // ENABLE + CLEAR
  b.ok(mon::FLUSH, 1);   // while the CLEAR is pending / sweeping
  EXPECT_EQ(b.rd(mon::STATUS) & 1u, 1u) << "FLUSH_BUSY while the flush waits for the sweep";
  EXPECT_EQ(b.rtl.mmio_write(mon::FLUSH, 1), static_cast<std::uint32_t>(rm::MmioError::Busy));
  b.ok(mon::ERR_CODE, 0);
  b.rtl.run_until_idle();
  EXPECT_EQ(b.rd(mon::STATUS), 1u << mon::STATUS_FLUSH_DONE_BIT);
  EXPECT_GE(b.rd(mon::FLUSH_CYCLES), 8192u) << "FLUSH_CYCLES count the wait for the sweep";
  EXPECT_TRUE(b.mem.empty()) << "the flush ran before the CLEAR: it added the old counts";
  // the counters are live again afterwards
  b.ref.counters.assign(b.ref.counters.size(), 0);
  write_matrix(b, g, random_matrix(rng, g, 0.5), 128);
  b.flush(1);
  EXPECT_EQ(b.rd(mon::STATUS), 1u << mon::STATUS_FLUSH_DONE_BIT);
  b.expect_table(0);
}

// While a flush runs (it reads the region registers live), CTRL.CLEAR and every region register write are
// Busy and change nothing, as in the TLM model.
TEST(MonitorRtl, RegionAndClearWritesDuringAFlushAreBusy) {
  Bench b;
  b.mem_latency = 400;  // keeps the flush running across the accesses below
  std::mt19937_64 rng(22);
  RefRegion g;
  g.rows = 64; g.cols = 64; g.pitch = 256; g.tr = 8; g.tc = 8; g.base = 0x80000; g.ct_base = 0x100000;
  program_and_write(b, g, rng, 0.5);
  b.ok(mon::FLUSH, 1);
  ASSERT_EQ(b.rd(mon::STATUS) & 1u, 1u);
  const auto busy = static_cast<std::uint32_t>(rm::MmioError::Busy);
  EXPECT_EQ(b.rtl.mmio_write(mon::CTRL, 0x3), busy);
  EXPECT_EQ(b.rtl.mmio_write(mon::region_reg(0, mon::R_CFG), 0), busy);       // disable mid-flush
  EXPECT_EQ(b.rtl.mmio_write(mon::region_reg(7, mon::R_ROWS), 8), busy);      // a disabled region too
  EXPECT_EQ(b.rtl.mmio_write(mon::region_reg(7, mon::R_CFG), 1), busy);
  ASSERT_EQ(b.rd(mon::STATUS) & 1u, 1u) << "the flush ended before the checks: raise mem_latency";
  b.ok(mon::ERR_CODE, 0);
  b.rtl.run_until_idle();
  EXPECT_EQ(b.rd(mon::region_reg(0, mon::R_CFG)), 1u);
  EXPECT_EQ(b.rd(mon::region_reg(7, mon::R_ROWS)), 0u);
  EXPECT_EQ(b.rd(mon::CTRL), 1u);
  b.expect_table(0);
}

// COMPL_PTR (regmap.h): a flush ends with one atomic add of 1 to the u32 at COMPL_PTR (one word enabled), after
// every count-table add, and FLUSH_DONE waits for its completion (FLUSH_CYCLES grows with the memory latency by
// that one round trip); refused when misaligned (BadValue) and during a flush (Busy); 0 turns it off.
TEST(MonitorRtl, FlushCompletionCounter) {
  const std::uint64_t cp = 0x1009000A4ull;  // word 1 of its 32 B group, above 4 GiB
  const auto flush_cycles = [&](std::uint32_t latency, bool with_counter, std::uint32_t stall_pct) {
    MonitorRtlConfig cfg;
    cfg.flush_ready_stall_pct = stall_pct;
    Bench b(cfg);
    b.mem_latency = latency;
    EXPECT_EQ(b.rd(mon::COMPL_PTR_LO), 0u);
    EXPECT_EQ(b.rd(mon::COMPL_PTR_HI), 0u);
    EXPECT_EQ(b.rtl.mmio_write(mon::COMPL_PTR_LO, static_cast<std::uint32_t>(cp) | 2u),
              static_cast<std::uint32_t>(rm::MmioError::BadValue));
    EXPECT_EQ(b.rd(mon::COMPL_PTR_LO), 0u);
    EXPECT_EQ(b.rd(mon::ERR_CODE), (1u << 31) | (mon::COMPL_PTR_LO << 16) | static_cast<std::uint32_t>(rm::MmioError::BadValue));
    b.ok(mon::ERR_CODE, 0);
    if (with_counter) {
      b.ok(mon::COMPL_PTR_LO, static_cast<std::uint32_t>(cp));
      b.ok(mon::COMPL_PTR_HI, static_cast<std::uint32_t>(cp >> 32));
      EXPECT_EQ(b.rd(mon::COMPL_PTR_LO), static_cast<std::uint32_t>(cp));
      EXPECT_EQ(b.rd(mon::COMPL_PTR_HI), 1u);
    }
    std::mt19937_64 rng(41);
    RefRegion g;
    g.rows = 40; g.cols = 70; g.pitch = 280; g.tr = 8; g.tc = 16; g.base = 0x80000; g.ct_base = 0x100000;
    program_and_write(b, g, rng, 0.3);
    b.ok(mon::FLUSH, 1);
    if (with_counter && latency >= 100) {  // the flush is still running: COMPL_PTR is Busy
      const auto busy = static_cast<std::uint32_t>(rm::MmioError::Busy);
      EXPECT_EQ(b.rtl.mmio_write(mon::COMPL_PTR_LO, 0), busy);
      EXPECT_EQ(b.rtl.mmio_write(mon::COMPL_PTR_HI, 0), busy);
      // a misaligned value during a flush: BadValue (checked before Busy, the error table's order)
      EXPECT_EQ(b.rtl.mmio_write(mon::COMPL_PTR_LO, 2), static_cast<std::uint32_t>(rm::MmioError::BadValue));
      EXPECT_EQ(b.rd(mon::STATUS) & 1u, 1u) << "the flush ended before the checks";
      b.ok(mon::ERR_CODE, 0);
    }
    b.rtl.run_until_idle();
    b.expect_table(0);
    const std::uint32_t cycles = b.rd(mon::FLUSH_CYCLES);
    const std::uint64_t group = cp & ~31ull;
    std::uint64_t counter_adds = 0;
    for (std::size_t i = 0; i < b.log.size(); ++i) {
      if (b.log[i].addr != group) continue;
      ++counter_adds;
      EXPECT_EQ(i + 1, b.log.size()) << "the counter's add is not the flush's last";
      EXPECT_EQ(b.log[i].mask, 1u << 1);
      EXPECT_EQ(b.log[i].words[1], 1u);
    }
    EXPECT_EQ(counter_adds, with_counter ? 1u : 0u);
    EXPECT_EQ(b.mem[cp], with_counter ? 1u : 0u);
    EXPECT_EQ(b.mem.count(cp - 4) + b.mem.count(cp + 4), 0u);  // no other word of the group touched
    EXPECT_EQ(b.rd(mon::STATUS) & 3u, 2u);                       // FLUSH_DONE
    if (with_counter) {  // a second flush adds again
      b.ok(mon::FLUSH, 1);
      b.rtl.run_until_idle();
      EXPECT_EQ(b.mem[cp], 2u);
    }
    return cycles;
  };
  // Without back-pressure the counter adds one round trip: (latency + the issue cycle) more cycles.
  const std::uint32_t d5 = flush_cycles(5, true, 0) - flush_cycles(5, false, 0);
  const std::uint32_t d300 = flush_cycles(300, true, 0) - flush_cycles(300, false, 0);
  EXPECT_GT(d5, 5u);
  EXPECT_EQ(d300 - d5, 295u);
  // With m_ready stalled 40 % of the cycles the counter still comes last, once.
  flush_cycles(20, true, 40);
}

// Enabling a region whose counter range overlaps an enabled region's is BadValue; TILES reads 0 until both
// tile dimensions are valid (the TLM model's rules).
TEST(MonitorRtl, OverlappingCounterRangesAndTilesReadBack) {
  Bench b;
  RefRegion g;
  g.rows = 40; g.cols = 40; g.pitch = 160; g.tr = 8; g.tc = 8; g.base = 0x20000; g.ct_base = 0x30000;
  b.program(0, g);  // counters [0, 25)
  RefRegion h = g;
  h.base = 0x60000; h.ct_base = 0x70000; h.cnt_offset = 24;
  const auto bad = static_cast<std::uint32_t>(rm::MmioError::BadValue);
  b.ok(mon::region_reg(1, mon::R_TILE), h.tr | (h.tc << 16));
  b.ok(mon::region_reg(1, mon::R_ROWS), h.rows);
  b.ok(mon::region_reg(1, mon::R_COLS), h.cols);
  b.ok(mon::region_reg(1, mon::R_ROW_PITCH), h.pitch);
  b.ok(mon::region_reg(1, mon::R_CNT_OFFSET), h.cnt_offset);
  EXPECT_EQ(b.rtl.mmio_write(mon::region_reg(1, mon::R_CFG), 1), bad);
  EXPECT_EQ(b.rd(mon::region_reg(1, mon::R_CFG)), 0u);
  b.ok(mon::ERR_CODE, 0);
  b.ok(mon::region_reg(1, mon::R_CNT_OFFSET), 25);  // adjacent: allowed
  b.ok(mon::region_reg(1, mon::R_CFG), 1);
  // region 0 may be re-enabled over its own range
  b.ok(mon::region_reg(0, mon::R_CFG), 1);
  // TILES of a staged region
  EXPECT_EQ(b.rd(mon::region_reg(2, mon::R_TILES)), 0u);
  b.ok(mon::region_reg(2, mon::R_ROWS), 48);
  b.ok(mon::region_reg(2, mon::R_COLS), 40);
  b.ok(mon::region_reg(2, mon::R_TILE), 16u);  // TILE_COLS = 0
  EXPECT_EQ(b.rd(mon::region_reg(2, mon::R_TILES)), 0u);
  b.ok(mon::region_reg(2, mon::R_TILE), 24u | (8u << 16));  // TILE_ROWS = 24: not a power of two
  EXPECT_EQ(b.rd(mon::region_reg(2, mon::R_TILES)), 0u);
  b.ok(mon::region_reg(2, mon::R_TILE), 16u | (8u << 16));
  EXPECT_EQ(b.rd(mon::region_reg(2, mon::R_TILES)), 3u * 5u);
}

}  // namespace
