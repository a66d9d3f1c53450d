// Pin-level tests of the Verilated compaction engine (rtl/src/compaction_engine.v): the header table and the
// payload bytes it writes must equal spartan::format::compact() of the same matrix (s = 0, exact counts from
// the reference), on seeded random matrices with -0.0, NaN, denormals, all-zero and all-dense tiles, F32/F16/
// BF16, ELL/BITMAP, random tile sizes and thresholds, with random back-pressure on rd_ready, rd_resp_valid
// and wr_ready and random response latencies; reset in the middle of a job (count read, fetch, emit passes)
// followed by the same job.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include <verilated.h>

#ifdef SPARTAN_ENGINE_TB1
#include "Vcompaction_engine_tb1.h"
using Vengine = Vcompaction_engine_tb1;  // TILE_BUFFERS = 1 (sequential)
#define ENGINE_SUITE EngineRtlTb1
#else
#include "Vcompaction_engine.h"
using Vengine = Vcompaction_engine;      // the default build (pipelined, TILE_BUFFERS = 4)
#define ENGINE_SUITE EngineRtl
#endif
#pragma GCC diagnostic pop

#include "spartan/format/tile_format.h"
#include "spartan/hw/regmap.h"

namespace {

int g_size_rule_fired = 0;  // run_case: cases in which D_CFG.SIZE_RULE made at least one tile DENSE
std::uint64_t g_last_cycles = 0;  // run_case: bench cycles of the last fault-free job (setup MMIO included)

namespace fmt = spartan::format;
namespace rm = spartan::hw::regmap;

struct Mem {
  std::map<std::uint64_t, std::uint8_t> b;
  void write(std::uint64_t a, const void* p, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) b[a + i] = static_cast<const std::uint8_t*>(p)[i];
  }
  std::uint8_t at(std::uint64_t a) const {
    auto it = b.find(a);
    return it == b.end() ? 0 : it->second;
  }
  bool written(std::uint64_t a) const { return b.count(a) != 0; }
};

class Bench {
 public:
  explicit Bench(std::uint64_t seed, unsigned stall_pct) : rng_(seed), stall_(stall_pct) {
    top_ = std::make_unique<Vengine>(&ctx_, "engine");
    top_->rst = 1;
    for (int i = 0; i < 4; ++i) tick();
    top_->rst = 0;
  }
  ~Bench() {
    top_->final();
#if defined(SPARTAN_RTL_COVERAGE)
    // Coverage build: each model instance writes its own coverage file (merged by coverage_report.cpp).
    if (const char* dir = std::getenv("SPARTAN_RTL_COVERAGE_DIR")) {
      static unsigned n = 0;
      const std::string path = std::string(dir) + "/engine_" + std::to_string(n++) + ".dat";
      ctx_.coveragep()->write(path.c_str());
    }
#endif
  }
  Mem mem;
  std::uint64_t cycles = 0;
  std::uint64_t fail_read_line = ~0ull;  ///< a read of this line gets rd_resp_err
  unsigned fail_writes = 0;              ///< this many write responses get wr_resp_err
  std::uint64_t fail_write_line = ~0ull; ///< a write to this line gets wr_resp_err (and stores nothing)

  void tick() {
    auto& t = *top_;
    // inputs for this cycle
    t.rd_ready = coin();
    t.wr_ready = coin();
    t.rd_resp_valid = 0;
    t.rd_resp_err = 0;
    if (!reads_.empty() && reads_.front().due <= cycles && coin()) {
      t.rd_resp_valid = 1;
      t.rd_resp_err = reads_.front().addr == fail_read_line;
      for (int w = 0; w < 32; ++w) {
        std::uint32_t v = 0;
        for (int k = 0; k < 4; ++k) v |= std::uint32_t(mem.at(reads_.front().addr + 4 * w + k)) << (8 * k);
        t.rd_resp_data[w] = v;
      }
    }
    t.wr_resp_valid = 0;
    t.wr_resp_err = 0;
    if (!wresp_.empty() && wresp_.front().due <= cycles) {
      t.wr_resp_valid = 1;
      if (fail_writes > 0) {
        t.wr_resp_err = 1;
        --fail_writes;
      }
      if (wresp_.front().err) t.wr_resp_err = 1;
      wresp_.pop_front();
    }
    t.eval();
    // sample handshakes
    const bool rd_fire = t.rd_valid && t.rd_ready;
    const std::uint64_t rd_a = t.rd_addr;
    const bool resp_fire = t.rd_resp_valid && t.rd_resp_ready;
    const bool wr_fire = t.wr_valid && t.wr_ready;
    if (wr_fire) {
      EXPECT_EQ(t.wr_addr % 128, 0u);
      const bool err = t.wr_addr == fail_write_line;
      for (int i = 0; i < 128 && !err; ++i)
        if ((t.wr_strb[i / 32] >> (i % 32)) & 1u) {
          const std::uint8_t v = static_cast<std::uint8_t>(t.wr_data[i / 4] >> (8 * (i % 4)));
          mem.b[t.wr_addr + i] = v;
        }
      wresp_.push_back({cycles + 3 + rng_() % 20, err});
    }
    t.clk = 1;
    t.eval();
    t.clk = 0;
    t.eval();
    if (resp_fire) reads_.pop_front();
    if (rd_fire) {
      EXPECT_EQ(rd_a % 128, 0u);
      reads_.push_back({rd_a, cycles + 2 + rng_() % 30});
    }
    ++cycles;
  }
  std::uint32_t mmio(bool we, std::uint32_t off, std::uint32_t v, unsigned* err = nullptr) {
    auto& t = *top_;
    t.mmio_valid = 1;
    t.mmio_we = we;
    t.mmio_addr = off;
    t.mmio_wdata = v;
    tick();
    t.mmio_valid = 0;
    EXPECT_TRUE(t.mmio_rvalid);
    if (err) *err = t.mmio_err;
    return t.mmio_rdata;
  }
  bool busy() const { return top_->busy; }
  /// Synchronous reset in the middle of anything; the memory system drops what was in flight.
  void reset() {
    top_->rst = 1;
    for (int i = 0; i < 4; ++i) tick();
    top_->rst = 0;
    reads_.clear();
    wresp_.clear();
  }

 private:
  bool coin() { return (rng_() % 100) >= stall_; }
  struct Rd {
    std::uint64_t addr, due;
  };
  VerilatedContext ctx_;
  std::unique_ptr<Vengine> top_;
  std::mt19937_64 rng_;
  unsigned stall_;
  std::deque<Rd> reads_;
  struct Wr {
    std::uint64_t due;
    bool err;
  };
  std::deque<Wr> wresp_;
};

std::uint32_t elem_bits(std::mt19937_64& g, unsigned dt, int kind) {
  // kind: 0 zero (+/-), 1 random non-zero incl. NaN/denormal
  const bool f32 = dt == 0;
  if (kind == 0) return (g() & 1) ? (f32 ? 0x80000000u : 0x8000u) : 0u;
  const unsigned pick = g() % 8;
  if (f32) {
    if (pick == 0) return 0x7FC00000u;                   // NaN
    if (pick == 1) return 0x00000001u | (g() & 0x80000000u);  // denormal
    std::uint32_t v = static_cast<std::uint32_t>(g());
    return (v & 0x7FFFFFFFu) == 0 ? 1u : v;
  }
  if (pick == 0) return 0x7E00u;
  if (pick == 1) return 0x0001u;
  std::uint32_t v = static_cast<std::uint32_t>(g()) & 0xFFFFu;
  return (v & 0x7FFFu) == 0 ? 1u : v;
}

// reset_after > 0: the job is first started and the engine reset after that many cycles (mid-job); the
// registers must be back at their reset values, then the same job runs to completion and is checked.
// fault: 0 none; 1 output capacity below the payload (OutOverflow, LAST_STATUS 1); 2 a read of the source gets
// rd_resp_err; 3 the first write response carries wr_resp_err (both BusError, LAST_STATUS 2). The job must end
// with that status (no hang), and a second, fault-free job must then run byte-exact.
void run_case(std::uint64_t seed, unsigned stall_pct, std::uint64_t reset_after = 0, int fault = 0) {
  std::mt19937_64 g(seed);
  const unsigned dt = g() % 3, eb = dt == 0 ? 4 : 2;
  const std::uint32_t rows = 1 + g() % 40, cols = 1 + g() % 70;
  const std::uint32_t dims[] = {1, 2, 4, 8, 16, 32, 64};
  const std::uint32_t tr = dims[g() % 6], tc = dims[g() % 7];
  const std::uint32_t pitch = cols * eb + eb * static_cast<std::uint32_t>(g() % 3);
  const bool bitmap = g() % 2;
  // mostly thresholds that leave sparse tiles (2.0: every tile sparse; 0.0: every tile DENSE)
  const double thr_choices[] = {0.5, 0.25, 1.0, 2.0, 0.75, 2.0, 0.5, 0.0};
  const double thr = thr_choices[g() % 8];
  // matrix with per-row-band density: all-zero bands, dense bands, sparse bands
  std::vector<std::uint8_t> m(std::size_t(rows) * pitch, 0xAB);  // padding bytes non-zero
  std::vector<std::uint8_t> packed(std::size_t(rows) * cols * eb);
  for (std::uint32_t r = 0; r < rows; ++r) {
    const unsigned band = (r / std::max<std::uint32_t>(1, tr)) % 4;
    const unsigned pct = band == 0 ? 0 : band == 1 ? 100 : band == 2 ? 10 : 35;
    for (std::uint32_t c = 0; c < cols; ++c) {
      const std::uint32_t v = elem_bits(g, dt, (g() % 100) < pct ? 1 : 0);
      std::memcpy(&m[std::size_t(r) * pitch + c * eb], &v, eb);
      std::memcpy(&packed[(std::size_t(r) * cols + c) * eb], &v, eb);
    }
  }
  fmt::CompactOptions o;
  o.tile_rows = tr;
  o.tile_cols = tc;
  o.threshold = thr;
  o.sparse_format = bitmap ? fmt::TileFormat::Bitmap : fmt::TileFormat::Ell;
  o.elem = static_cast<fmt::ElemType>(dt);
  // D_CFG.SIZE_RULE in two of three random cases (the 100 % bands trigger it); off for the reset and fault
  // cases, whose seeds were chosen for their compacted tiles and job lengths without it
  const bool size_rule = seed % 3 != 0 && reset_after == 0 && fault == 0;
  o.dense_if_not_smaller = size_rule;
  const auto ref = fmt::compact(packed.data(), rows, cols, cols, o);
  if (size_rule) {  // count the cases where the rule made tiles DENSE (the tests below require some)
    fmt::CompactOptions off = o;
    off.dense_if_not_smaller = false;
    if (fmt::count_tiles(ref).dense > fmt::count_tiles(fmt::compact(packed.data(), rows, cols, cols, off)).dense)
      ++g_size_rule_fired;
  }
  const std::size_t tiles = ref.headers.size();

  Bench b(seed * 7 + 1, stall_pct);
  const std::uint64_t SRC = 0x100000040ull + 64 * (g() % 2), CT = 0x200000000ull + 4 * (g() % 32),
                      HDR = 0x300000000ull + 16 * (g() % 8), OUT = 0x400000000ull;
  b.mem.write(SRC, m.data(), m.size());
  for (std::size_t t = 0; t < tiles; ++t) b.mem.write(CT + 4 * t, &ref.headers[t].nnz, 4);
  rm::Descriptor d;
  d.src = SRC;
  d.rows = rows;
  d.cols = cols;
  d.row_pitch_bytes = pitch;
  d.dtype = static_cast<rm::ElemType>(dt);
  d.format = bitmap ? rm::engine::kFormatBitmap : rm::engine::kFormatEll;
  d.tile_rows = tr;
  d.tile_cols = tc;
  d.threshold_q16 = static_cast<std::uint32_t>(thr * 65536.0);
  d.size_rule = size_rule;
  d.count_table = CT;
  d.header_base = HDR;
  d.out_base = OUT;
  d.out_capacity_bytes = 1u << 24;
  d.tag = static_cast<std::uint32_t>(seed);
  const auto w = d.to_words();
  unsigned err = 0;
  if (reset_after > 0) {
    for (unsigned i = 0; i < 16; ++i) b.mmio(true, rm::engine::DESC_BASE + 4 * i, w[i]);
    b.mmio(true, rm::engine::SUBMIT, 1, &err);
    ASSERT_EQ(err, 0u);
    b.mmio(true, rm::engine::CTRL, 1);
    for (std::uint64_t c = 0; c < reset_after; ++c) b.tick();
    ASSERT_TRUE(b.busy()) << "seed " << seed << ": the job should still be running when reset";
    b.reset();
    EXPECT_FALSE(b.busy());
    EXPECT_EQ(b.mmio(false, rm::engine::STATUS, 0), 0x4u);  // idle, queue empty
    EXPECT_EQ(b.mmio(false, rm::engine::DONE_COUNT, 0), 0u);
    EXPECT_EQ(b.mmio(false, rm::engine::CTRL, 0), 0u);
    EXPECT_EQ(b.mmio(false, rm::engine::DESC_BASE, 0), 0u);
    for (std::uint64_t c = 0; c < 50; ++c) b.tick();
    EXPECT_FALSE(b.busy()) << "the engine restarted a job after reset";
  }
  if (fault > 0) {
    rm::Descriptor fd = d;
    if (fault == 1) fd.out_capacity_bytes = static_cast<std::uint32_t>(ref.payload.size() / 2 / 16 * 16);  // SUBMIT: a multiple of 16
    if (fault == 2) b.fail_read_line = (SRC + pitch * (rows / 2)) / 128 * 128;
    if (fault == 3) b.fail_writes = 1;
    const auto fw = fd.to_words();
    for (unsigned i = 0; i < 16; ++i) b.mmio(true, rm::engine::DESC_BASE + 4 * i, fw[i]);
    b.mmio(true, rm::engine::SUBMIT, 1, &err);
    ASSERT_EQ(err, 0u);
    b.mmio(true, rm::engine::CTRL, 1);
    std::uint64_t g2 = 0;
    while (b.mmio(false, rm::engine::DONE_COUNT, 0) == 0 && ++g2 < 4000000) {
    }
    ASSERT_LT(g2, 4000000u) << "seed " << seed << " fault " << fault << ": engine did not finish";
    EXPECT_EQ(b.mmio(false, rm::engine::LAST_STATUS, 0), fault == 1 ? 1u : 2u) << "seed " << seed << " fault " << fault;
    EXPECT_EQ(b.mmio(false, rm::engine::STATUS, 0) & 0x10u, 0x10u) << "STATUS.JOB_ERR";
    b.fail_read_line = ~0ull;
    b.fail_writes = 0;
    b.mmio(true, rm::engine::CTRL, 2);  // disable, clear DONE_COUNT
    for (std::uint64_t c = 0; c < 100; ++c) b.tick();
    b.mem.b.clear();
    b.mem.write(SRC, m.data(), m.size());
    for (std::size_t t = 0; t < tiles; ++t) b.mem.write(CT + 4 * t, &ref.headers[t].nnz, 4);
  }
  for (unsigned i = 0; i < 16; ++i) b.mmio(true, rm::engine::DESC_BASE + 4 * i, w[i]);
  b.mmio(true, rm::engine::SUBMIT, 1, &err);
  ASSERT_EQ(err, 0u) << "SUBMIT rejected";
  b.mmio(true, rm::engine::CTRL, 1);
  std::uint64_t guard = 0;
  while (b.mmio(false, rm::engine::DONE_COUNT, 0) == 0 && ++guard < 4000000) {
  }
  ASSERT_LT(guard, 4000000u) << "engine did not finish";
  EXPECT_EQ(b.mmio(false, rm::engine::LAST_STATUS, 0), 0u);
  EXPECT_EQ(b.mmio(false, rm::engine::LAST_TAG, 0), d.tag);
  EXPECT_EQ(b.mmio(false, rm::engine::LAST_OUT_BYTES, 0), ref.payload.size());
  const auto hb = ref.header_bytes();
  std::size_t bad_h = 0, bad_p = 0;
  for (std::size_t i = 0; i < hb.size(); ++i) bad_h += b.mem.at(HDR + i) != hb[i] || !b.mem.written(HDR + i);
  for (std::size_t i = 0; i < ref.payload.size(); ++i)
    bad_p += b.mem.at(OUT + i) != ref.payload[i] || !b.mem.written(OUT + i);
  EXPECT_FALSE(b.mem.written(OUT + ref.payload.size())) << "wrote past the payload";
  g_last_cycles = b.cycles;
  if (std::getenv("SPARTAN_ENGINE_TEST_VERBOSE"))
    std::printf("seed %llu: %ux%u tile %ux%u dt %u %s thr %.2f: %zu tiles, %zu payload bytes, %llu cycles\n",
                (unsigned long long)seed, rows, cols, tr, tc, dt, bitmap ? "bitmap" : "ell", thr, tiles, ref.payload.size(),
                (unsigned long long)b.cycles);
  EXPECT_EQ(bad_h, 0u) << "seed " << seed << " header bytes differ (" << rows << "x" << cols << " tile " << tr << "x"
                       << tc << " dt " << dt << (bitmap ? " bitmap" : " ell") << " thr " << thr << " size rule " << size_rule << ")";
  EXPECT_EQ(bad_p, 0u) << "seed " << seed << " payload bytes differ (" << rows << "x" << cols << " tile " << tr << "x"
                       << tc << " dt " << dt << (bitmap ? " bitmap" : " ell") << " thr " << thr << " size rule " << size_rule << ")";
}

TEST(ENGINE_SUITE, MatchesCompactOnRandomMatrices) {
  g_size_rule_fired = 0;
  for (std::uint64_t s = 1; s <= 40; ++s) run_case(s, 0);
  EXPECT_GT(g_size_rule_fired, 0) << "no case exercised D_CFG.SIZE_RULE";
}

TEST(ENGINE_SUITE, MatchesCompactUnderBackPressure) {
  g_size_rule_fired = 0;
  for (std::uint64_t s = 101; s <= 124; ++s) run_case(s, 40);
  EXPECT_GT(g_size_rule_fired, 0) << "no case exercised D_CFG.SIZE_RULE";
}

TEST(ENGINE_SUITE, ResetInTheMiddleOfAJob) {
  // jobs of ~400-3500 cycles with compacted tiles (seeds 31 BITMAP, 19 / 16 / 6 ELL), reset at several points
  // (count read, tile fetch, emit passes: fractions of the job's own cycle count, measured by a first run,
  // so that the points stay inside the job whatever the pipeline depth), then the same job again
  for (std::uint64_t s : {31u, 19u, 16u, 6u}) {
    g_last_cycles = 0;
    run_case(s, 0);
    const std::uint64_t cycles = g_last_cycles;
    ASSERT_GT(cycles, 0u) << "seed " << s << ": the measuring run did not complete";
    for (double f : {0.0, 0.05, 0.2, 0.45, 0.7})
      run_case(s, 0, std::max<std::uint64_t>(5, static_cast<std::uint64_t>(f * double(cycles))));
  }
}

TEST(ENGINE_SUITE, OverflowAndBusErrorsEndTheJob) {
  // jobs with compacted tiles (payload > 0): OutOverflow, a read error in the source, a write error
  for (std::uint64_t s : {31u, 19u, 16u, 6u})
    for (int fault = 1; fault <= 3; ++fault) run_case(s, 0, 0, fault);
  for (int fault = 1; fault <= 3; ++fault) run_case(19, 40, 0, fault);  // with back-pressure
}

// Completion record (regmap engine::COMPL_PTR) on the RTL alone, with back-pressure: the registers (reset 0,
// read-back of both halves, an unaligned low word refused as BadValue at offset COMPL_PTR_LO and not taken,
// 0x03C unmapped); a job's 32-byte record at COMPL_PTR + 32 * ENGINE_INDEX (TAG, STATUS, OUT_BYTES, LAST_CYCLES,
// zeros; nothing else of its line written); DONE_COUNT after it; a failing record write latches ComplWrite at
// offset COMPL_PTR_LO with the write bit and leaves the job Ok.
TEST(ENGINE_SUITE, CompletionRecord) {
  namespace e = rm::engine;
  Bench b(5, 30);
  unsigned err = 0;
  EXPECT_EQ(b.mmio(false, e::COMPL_PTR_LO, 0), 0u);
  EXPECT_EQ(b.mmio(false, e::COMPL_PTR_HI, 0), 0u);
  b.mmio(true, e::COMPL_PTR_LO, 0x7000010u, &err);
  EXPECT_EQ(err, static_cast<unsigned>(rm::MmioError::BadValue));
  EXPECT_EQ(b.mmio(false, e::ERR_CODE, 0), static_cast<std::uint32_t>(rm::MmioError::BadValue) |
                                             (e::COMPL_PTR_LO << rm::kErrOffsetLsb) | (1u << rm::kErrWriteBit));
  EXPECT_EQ(b.mmio(false, e::COMPL_PTR_LO, 0), 0u);
  b.mmio(true, e::ERR_CODE, 0);
  b.mmio(false, 0x03C, 0, &err);
  EXPECT_EQ(err, static_cast<unsigned>(rm::MmioError::Unmapped));
  b.mmio(true, e::ERR_CODE, 0);
  b.mmio(true, e::COMPL_PTR_LO, 0x7000000u, &err);
  EXPECT_EQ(err, 0u);
  b.mmio(true, e::COMPL_PTR_HI, 1u);
  EXPECT_EQ(b.mmio(false, e::COMPL_PTR_LO, 0), 0x7000000u);
  EXPECT_EQ(b.mmio(false, e::COMPL_PTR_HI, 0), 1u);
  b.mmio(true, e::ENGINE_INDEX, 5);  // slot 1 of the second line: 0x1_0700_00A0
  const std::uint64_t rec = 0x107000000ull + 5 * e::kComplRecordBytes;
  // an all-zero 64 x 64 F32 matrix, its count table all zero: four zero tiles, headers only
  rm::Descriptor d;
  d.src = 0x1000000;
  d.rows = d.cols = 64;
  d.row_pitch_bytes = 256;
  d.format = e::kFormatEll;
  d.tile_rows = d.tile_cols = 32;
  d.threshold_q16 = 0x8000;
  d.count_table = 0x2000000;
  d.header_base = 0x3000000;
  d.out_base = 0x4000000;
  d.out_capacity_bytes = 4096;
  const auto run = [&](std::uint32_t tag) {
    d.tag = tag;
    const auto w = d.to_words();
    for (unsigned i = 0; i < e::kDescWords; ++i) b.mmio(true, e::DESC_BASE + 4 * i, w[i]);
    const std::uint32_t done0 = b.mmio(false, e::DONE_COUNT, 0);
    b.mmio(true, e::SUBMIT, 1, &err);
    EXPECT_EQ(err, 0u);
    b.mmio(true, e::CTRL, 1);
    for (int i = 0; i < 20000 && b.mmio(false, e::DONE_COUNT, 0) == done0; ++i) b.tick();
    EXPECT_EQ(b.mmio(false, e::DONE_COUNT, 0), done0 + 1);
    EXPECT_FALSE(b.busy());
  };
  run(0xABCD0001u);
  const auto word = [&](std::uint64_t a) {
    std::uint32_t v = 0;
    for (int k = 0; k < 4; ++k) v |= std::uint32_t(b.mem.at(a + k)) << (8 * k);
    return v;
  };
  EXPECT_EQ(word(rec + 4 * e::C_TAG), 0xABCD0001u);
  EXPECT_EQ(word(rec + 4 * e::C_STATUS), 0u);
  EXPECT_EQ(word(rec + 4 * e::C_OUT_BYTES), b.mmio(false, e::LAST_OUT_BYTES, 0));
  EXPECT_EQ(word(rec + 4 * e::C_CYCLES), b.mmio(false, e::LAST_CYCLES, 0));
  EXPECT_GT(word(rec + 4 * e::C_CYCLES), 0u);
  for (unsigned i = 4 * (e::C_CYCLES + 1); i < e::kComplRecordBytes; ++i) EXPECT_TRUE(b.mem.written(rec + i)) << i;
  for (unsigned i = 4 * (e::C_CYCLES + 1); i < e::kComplRecordBytes; ++i) EXPECT_EQ(b.mem.at(rec + i), 0u) << i;
  for (std::uint64_t a = rec & ~std::uint64_t(127); a < (rec & ~std::uint64_t(127)) + 128; ++a)
    EXPECT_EQ(b.mem.written(a), a >= rec && a < rec + e::kComplRecordBytes) << a;
  EXPECT_EQ(b.mmio(false, e::ERR_CODE, 0), 0u);
  // the record's line fails: ComplWrite latched, the job Ok, DONE_COUNT counted
  b.fail_write_line = rec & ~std::uint64_t(127);
  run(0xABCD0002u);
  EXPECT_EQ(b.mmio(false, e::ERR_CODE, 0), static_cast<std::uint32_t>(rm::MmioError::ComplWrite) |
                                             (e::COMPL_PTR_LO << rm::kErrOffsetLsb) | (1u << rm::kErrWriteBit));
  EXPECT_EQ(b.mmio(false, e::LAST_STATUS, 0), 0u);
  EXPECT_EQ(b.mmio(false, e::LAST_TAG, 0), 0xABCD0002u);
  EXPECT_EQ(word(rec + 4 * e::C_TAG), 0xABCD0001u);  // the failed write stored nothing
}

TEST(ENGINE_SUITE, RegistersAndBadSubmit) {
  Bench b(3, 0);
  unsigned err = 0;
  EXPECT_EQ(b.mmio(false, rm::engine::ID, 0), rm::engine::kIdValue);
  EXPECT_EQ(b.mmio(false, rm::engine::STATUS, 0), 0x4u);  // QUEUE_EMPTY
  b.mmio(true, rm::engine::SUBMIT, 1, &err);                // all-zero staged descriptor: invalid
  EXPECT_EQ(err, static_cast<unsigned>(rm::MmioError::BadValue));
  EXPECT_EQ(b.mmio(false, rm::engine::ERR_CODE, 0) & 0xFFu, static_cast<unsigned>(rm::MmioError::BadValue));
  b.mmio(true, rm::engine::ERR_CODE, 0);
  b.mmio(true, rm::engine::ID, 0, &err);
  EXPECT_EQ(err, static_cast<unsigned>(rm::MmioError::ReadOnly));
  b.mmio(false, 0x02A, 0, &err);
  EXPECT_EQ(err, static_cast<unsigned>(rm::MmioError::Misaligned));
  b.mmio(false, 0x200, 0, &err);
  EXPECT_EQ(err, static_cast<unsigned>(rm::MmioError::Unmapped));
}

}  // namespace
