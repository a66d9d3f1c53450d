// CompactionEngine: register map and bad MMIO, descriptor validation, queue, and functional output:
// byte-identical to tile_format.h's compact() for exact counts, expand() == dense for every dtype, format
// and sampling shift, overflow handling.
#include <gtest/gtest.h>

#include <cstring>

#include "sc_test_util.h"
#include "spartan/format/tile_format.h"
#include "spartan/hw/compaction_engine.h"
#include "spartan/hw/flat_memory.h"
#include "unit_test_data.h"

namespace spartan::hw::test {
namespace {

using namespace regmap;
using namespace regmap::engine;
namespace fmt = spartan::format;

struct Bench {
  FlatMemory mem{"mem"};
  CompactionEngine eng;
  Driver drv{"drv", 1};
  explicit Bench(EngineConfig cfg = {}) : eng("eng", cfg) {
    drv.mmio[0]->bind(eng.mmio);
    eng.mem.bind(mem.socket);
    drv.mem.bind(mem.socket);
  }
  void run(std::function<void(Driver&)> body) {
    drv.body = std::move(body);
    sc_core::sc_start();
  }
};

tlm::tlm_response_status submit(Driver& d, const Descriptor& desc) {
  const auto w = desc.to_words();
  for (unsigned i = 0; i < kDescWords; ++i) d.wr(0, DESC_BASE + 4 * i, w[i]);
  return d.wr(0, SUBMIT, 1);
}

/// Polls STATUS until no descriptor fetch (FETCH) is in flight.
void wait_fetch(Driver& d) {
  for (int i = 0; i < 1000 && (d.rd(0, STATUS) & (1u << STATUS_FETCH_BUSY_BIT)); ++i)
    sc_core::wait(sc_core::sc_time(10, sc_core::SC_NS));
  EXPECT_EQ(d.rd(0, STATUS) & (1u << STATUS_FETCH_BUSY_BIT), 0u);
}

void wait_done(Driver& d, std::uint32_t n) {
  for (int i = 0; i < 1000000 && d.rd(0, DONE_COUNT) < n; ++i) sc_core::wait(sc_core::sc_time(50, sc_core::SC_NS));
  EXPECT_EQ(d.rd(0, DONE_COUNT), n);
}

Descriptor base_desc(const RawMatrix& m, std::uint32_t format, std::uint32_t tr = 32, std::uint32_t tc = 32) {
  Descriptor d;
  d.src = 0x1000000;
  d.rows = m.rows;
  d.cols = m.cols;
  d.row_pitch_bytes = m.pitch_bytes;
  d.dtype = m.dtype;
  d.format = format;
  d.tile_rows = tr;
  d.tile_cols = tc;
  d.threshold_q16 = 0x8000;
  d.count_table = 0x4000000;
  d.header_base = 0x5000000;
  d.out_base = 0x6000000;
  d.out_capacity_bytes = 1u << 24;
  d.tag = 0xC0FFEE;
  return d;
}

TEST(Engine, RegistersAndBadMmio) {
  SC_SCENARIO([] {
    EngineConfig cfg;
    cfg.queue_depth = 2;
    cfg.max_job_bytes = 1u << 20;
    Bench b(cfg);
    b.run([](Driver& d) {
      EXPECT_EQ(d.rd(0, ID), engine::kIdValue);
      EXPECT_EQ(d.rd(0, STATUS), 1u << STATUS_QUEUE_EMPTY_BIT);
      EXPECT_EQ(d.rd(0, QUEUE_DEPTH), 2u);
      for (unsigned i = 0; i < kDescWords; ++i) {
        EXPECT_EQ(d.rd(0, DESC_BASE + 4 * i), 0u);
        EXPECT_EQ(d.wr(0, DESC_BASE + 4 * i, 0x1000u + i), tlm::TLM_OK_RESPONSE);
        EXPECT_EQ(d.rd(0, DESC_BASE + 4 * i), 0x1000u + i);
      }
      for (std::uint32_t off : {ID, STATUS, QUEUE_DEPTH, DONE_COUNT, LAST_TAG, LAST_CYCLES, LAST_OUT_BYTES, LAST_STATUS})
        EXPECT_EQ(d.wr(0, off, 1), tlm::TLM_COMMAND_ERROR_RESPONSE) << off;
      EXPECT_EQ(d.rd(0, ERR_CODE) & 0xFF, static_cast<std::uint32_t>(MmioError::ReadOnly));
      d.wr(0, ERR_CODE, 0);
      unsigned char buf[8] = {};
      for (std::uint32_t off : {0x03Cu, 0x0FCu, 0x140u, 0xFFCu, 0x1000u}) {
        EXPECT_EQ(d.access(*d.mmio[0], tlm::TLM_READ_COMMAND, off, buf, 4), tlm::TLM_ADDRESS_ERROR_RESPONSE) << off;
      }
      EXPECT_EQ(d.access(*d.mmio[0], tlm::TLM_WRITE_COMMAND, 0x101, buf, 4), tlm::TLM_ADDRESS_ERROR_RESPONSE);
      EXPECT_EQ(d.access(*d.mmio[0], tlm::TLM_WRITE_COMMAND, 0x100, buf, 8), tlm::TLM_BURST_ERROR_RESPONSE);
      unsigned char be[4] = {0xFF, 0, 0, 0};
      EXPECT_EQ(d.access(*d.mmio[0], tlm::TLM_WRITE_COMMAND, 0x100, buf, 4, be, 4), tlm::TLM_BYTE_ENABLE_ERROR_RESPONSE);
      EXPECT_EQ(d.rd(0, ERR_CODE) & 0xFF, static_cast<std::uint32_t>(MmioError::Unmapped));
      d.wr(0, ERR_CODE, 0);
      // Invalid descriptors are BadValue and are not queued.
      RawMatrix m = make_matrix(ElemType::F32, 40, 40, 256, 0.5, 1);
      const Descriptor ok = base_desc(m, kFormatEll);
      auto bad = [&](Descriptor x) {
        EXPECT_EQ(submit(d, x), tlm::TLM_COMMAND_ERROR_RESPONSE);
        EXPECT_EQ(d.rd(0, ERR_CODE) & 0xFF, static_cast<std::uint32_t>(MmioError::BadValue));
        d.wr(0, ERR_CODE, 0);
      };
      Descriptor x = ok; x.rows = 0; bad(x);
      x = ok; x.format = 0; bad(x);                  // DENSE is not an output format
      x = ok; x.format = 3; bad(x);
      x = ok; x.tile_rows = 48; bad(x);
      x = ok; x.row_pitch_bytes = 100; bad(x);       // < cols * 4
      x = ok; x.row_pitch_bytes = 162; bad(x);       // not a multiple of 4
      x = ok; x.count_table += 2; bad(x);
      x = ok; x.tile_rows = 128; x.tile_cols = 64; bad(x);  // 32 KiB tile > read buffer
      x = ok; x.dtype = static_cast<ElemType>(3); bad(x);
      x = ok; x.rows = 4097; bad(x);                 // 4097 x 256 B > max_job_bytes (1 MiB)
      x = ok; x.out_capacity_bytes = 1000; bad(x);   // not a multiple of 16 (payload alignment)
      x = ok; x.out_capacity_bytes = 1024 + 8; bad(x);
      x = ok; x.count_table_pitch = static_cast<std::uint32_t>(tiles_per_row(ok.cols, ok.tile_cols)) - 1; bad(x);  // < tiles per row
      x = ok; x.count_table_pitch = kMaxCountTablePitch + 1;  // wider than CFG[31:13]: to_words() would make it 0
      EXPECT_FALSE(descriptor_valid(x));
      x.count_table_pitch = kMaxCountTablePitch;
      EXPECT_TRUE(descriptor_valid(x));
      EXPECT_EQ(d.rd(0, STATUS) & (1u << STATUS_QUEUE_EMPTY_BIT), 1u << STATUS_QUEUE_EMPTY_BIT);
      // Queue: with ENABLE = 0 jobs wait; the third SUBMIT of a 2-deep queue is QueueFull.
      EXPECT_EQ(submit(d, ok), tlm::TLM_OK_RESPONSE);
      EXPECT_EQ(submit(d, ok), tlm::TLM_OK_RESPONSE);
      EXPECT_EQ(d.rd(0, STATUS), (1u << STATUS_QUEUE_FULL_BIT) | (2u << STATUS_QCOUNT_LSB));
      EXPECT_EQ(submit(d, ok), tlm::TLM_COMMAND_ERROR_RESPONSE);
      EXPECT_EQ(d.rd(0, ERR_CODE) & 0xFF, static_cast<std::uint32_t>(MmioError::QueueFull));
      EXPECT_EQ(d.wr(0, CTRL, 1), tlm::TLM_OK_RESPONSE);
      wait_done(d, 2);
      EXPECT_EQ(d.rd(0, LAST_TAG), 0xC0FFEEu);
      EXPECT_EQ(d.rd(0, LAST_STATUS), 0u);
      EXPECT_GT(d.rd(0, LAST_CYCLES), 0u);
      EXPECT_EQ(d.wr(0, CTRL, 3), tlm::TLM_OK_RESPONSE);
      EXPECT_EQ(d.rd(0, DONE_COUNT), 0u);
    });
  });
}

/// Runs one job on `m` with counts computed exactly (or sampled-like: counts >> s) and returns the
/// engine's output as a TiledMatrix (source = m's bytes).
struct JobResult {
  fmt::TiledMatrix tm;
  std::vector<std::uint8_t> header_bytes;
  std::uint32_t status = 0, out_bytes = 0, cycles = 0;
};

/// `src_at` / `counts_at`: where m's bytes and the counts are written (default: desc.src, desc.count_table;
/// a job on a block of m names addresses inside them).
JobResult run_job(const RawMatrix& m, Descriptor desc, const std::vector<std::uint32_t>& counts,
                  std::uint32_t tile_buffers = EngineConfig{}.tile_buffers, std::uint64_t src_at = ~0ull,
                  std::uint64_t counts_at = ~0ull) {
  JobResult res;
  EngineConfig cfg;
  cfg.tile_buffers = tile_buffers;
  Bench b(cfg);
  b.mem.write_bytes(src_at != ~0ull ? src_at : desc.src, m.bytes.data(), m.bytes.size());
  b.mem.write_bytes(counts_at != ~0ull ? counts_at : desc.count_table, counts.data(), counts.size() * 4);
  b.run([&](Driver& d) {
    d.wr(0, CTRL, 1);
    EXPECT_EQ(submit(d, desc), tlm::TLM_OK_RESPONSE);
    wait_done(d, 1);
    res.status = d.rd(0, LAST_STATUS);
    res.out_bytes = d.rd(0, LAST_OUT_BYTES);
    res.cycles = d.rd(0, LAST_CYCLES);
  });
  const fmt::TileGrid g{desc.rows, desc.cols, desc.tile_rows, desc.tile_cols};
  res.tm.grid = g;
  res.tm.elem = static_cast<fmt::ElemType>(desc.dtype);
  res.tm.sparse_format = static_cast<fmt::TileFormat>(desc.format);
  res.header_bytes.resize(g.num_tiles() * fmt::kHeaderBytes);
  b.mem.read_bytes(desc.header_base, res.header_bytes.data(), res.header_bytes.size());
  for (std::size_t t = 0; t < g.num_tiles(); ++t) res.tm.headers.push_back(fmt::decode_header(&res.header_bytes[t * 16]));
  res.tm.payload.resize(res.out_bytes);
  b.mem.read_bytes(desc.out_base, res.tm.payload.data(), res.out_bytes);
  return res;
}

/// expand(engine output) equals the dense matrix bit for bit, except -0.0 in compacted tiles which the
/// format stores as +0.0 (tile_format.h).
void expect_expands_to(JobResult& r, const RawMatrix& m) {
  r.tm.source = m.bytes.data();
  r.tm.source_ld = m.pitch_bytes / m.eb();
  ASSERT_NO_THROW(fmt::validate(r.tm));
  std::vector<std::uint8_t> out(std::size_t(m.rows) * m.cols * m.eb());
  fmt::expand(r.tm, out.data(), m.cols);
  std::size_t diff = 0;
  for (std::uint32_t i = 0; i < m.rows; ++i)
    for (std::uint32_t j = 0; j < m.cols; ++j) {
      std::uint32_t got = 0;
      std::memcpy(&got, out.data() + (std::size_t(i) * m.cols + j) * m.eb(), m.eb());
      const std::uint32_t want = m.bits(i, j);
      if (got != want && !(got == 0 && !m.nonzero(i, j))) ++diff;
    }
  EXPECT_EQ(diff, 0u);
}

void functional(ElemType dt, std::uint32_t format, std::uint32_t tr, std::uint32_t tc, double density,
                std::uint32_t tile_buffers = EngineConfig{}.tile_buffers, bool size_rule = false) {
  SC_SCENARIO([=] {
    const unsigned eb = elem_bytes(dt);
    const std::uint32_t rows = 70, cols = 100;
    const RawMatrix m = make_matrix(dt, rows, cols, (cols * eb + 127) / 128 * 128, density, 21);
    Descriptor desc = base_desc(m, format, tr, tc);
    desc.size_rule = size_rule;
    const auto counts = reference_counts(m, tr, tc);
    JobResult r = run_job(m, desc, counts, tile_buffers);
    EXPECT_EQ(r.status, 0u);
    EXPECT_GT(r.cycles, 0u);
    // Byte-identical to the reference compaction of the same dense matrix.
    fmt::CompactOptions opt;
    opt.tile_rows = tr;
    opt.tile_cols = tc;
    opt.threshold = desc.threshold_q16 / 65536.0;
    opt.sparse_format = static_cast<fmt::TileFormat>(format);
    opt.elem = static_cast<fmt::ElemType>(dt);
    opt.dense_if_not_smaller = size_rule;
    const fmt::TiledMatrix ref = fmt::compact(m.bytes.data(), rows, cols, m.pitch_bytes / eb, opt);
    EXPECT_EQ(r.header_bytes, ref.header_bytes());
    EXPECT_EQ(r.tm.payload, ref.payload);
    const auto kinds = fmt::count_tiles(ref);
    EXPECT_GT(kinds.sparse, 0u);
    if (size_rule) {  // the case must exercise the rule: some tiles DENSE only because of it
      opt.dense_if_not_smaller = false;
      const auto without = fmt::count_tiles(fmt::compact(m.bytes.data(), rows, cols, m.pitch_bytes / eb, opt));
      EXPECT_GT(kinds.dense, without.dense);
    }
    expect_expands_to(r, m);
  });
}

// D_CFG.CT_PITCH: a job on a block of a matrix reads its counts out of the whole matrix's count table (as the
// replay's engines do with several engines, one monitor region per layer). 70 x 100 F32 in 16 x 16 tiles (5 x 7),
// the block = tile rows 1..3, tile columns 2..6 (rows 16..63, columns 32..99); tiles full, empty or at 30 % by
// position, so that a count read from the wrong entry changes the decision. The output must be byte-identical
// to compact() of the block, and (the check's own check) differ when the same job has no pitch.
void block_of_a_wider_table(std::uint32_t tile_buffers, bool use_pitch) {
  SC_SCENARIO([=] {
    RawMatrix m = make_matrix(ElemType::F32, 70, 100, 100 * 4, 0.3, 5);
    for (std::uint32_t r = 0; r < m.rows; ++r)
      for (std::uint32_t c = 0; c < m.cols; ++c) {
        const unsigned kind = (r / 16 + c / 16) % 3;
        const std::uint32_t one = 0x3F800000u, zero = 0;
        if (kind < 2) std::memcpy(m.bytes.data() + std::size_t(r) * m.pitch_bytes + 4 * c, kind == 0 ? &one : &zero, 4);
      }
    const auto counts = reference_counts(m, 16, 16);  // 5 x 7, row-major
    const std::uint32_t r0 = 16, c0 = 32, rows = 48, cols = 68;
    Descriptor desc = base_desc(m, kFormatEll, 16, 16);
    const std::uint64_t base = desc.src, ct = desc.count_table;
    desc.src = base + std::uint64_t(r0) * m.pitch_bytes + 4 * c0;
    desc.rows = rows;
    desc.cols = cols;
    desc.count_table = ct + 4 * (1 * 7 + 2);
    desc.count_table_pitch = use_pitch ? 7 : 0;  // 0: the block's own 5 tiles per row, i.e. the wrong entries
    JobResult r = run_job(m, desc, counts, tile_buffers, base, ct);
    EXPECT_EQ(r.status, 0u);
    fmt::CompactOptions opt;
    opt.tile_rows = opt.tile_cols = 16;
    opt.threshold = 0.5;
    const std::uint8_t* blk = m.bytes.data() + std::size_t(r0) * m.pitch_bytes + 4 * c0;
    const fmt::TiledMatrix ref = fmt::compact(blk, rows, cols, m.pitch_bytes / 4, opt);
    const auto kinds = fmt::count_tiles(ref);
    EXPECT_GT(kinds.dense, 0u);
    EXPECT_GT(kinds.sparse, 0u);
    EXPECT_GT(kinds.zero, 0u);
    if (use_pitch) {
      EXPECT_EQ(r.header_bytes, ref.header_bytes());
      EXPECT_EQ(r.tm.payload, ref.payload);
    } else {
      EXPECT_NE(r.header_bytes, ref.header_bytes());  // the check's own check: the pitch matters here
    }
  });
}
TEST(Engine, BlockReadsItsCountsFromAWiderTable) {
  block_of_a_wider_table(EngineConfig{}.tile_buffers, true);
  block_of_a_wider_table(EngineConfig{}.tile_buffers, false);
}
TEST(Engine, BlockReadsItsCountsFromAWiderTableSequential) {
  block_of_a_wider_table(1, true);
  block_of_a_wider_table(1, false);
}

// FETCH (regmap engine::FETCH): the engine reads its descriptor at DESC_PTR + 64 * ENGINE_INDEX and runs it as
// a SUBMITted one (same output bytes); the refusals at the write, in their order, and the two errors latched
// when the read completes (BadValue for a descriptor SUBMIT would refuse, DescFetch for a bus error).
void fetched_job(std::uint32_t tile_buffers) {
  SC_SCENARIO([=] {
    EngineConfig cfg;
    cfg.tile_buffers = tile_buffers;
    cfg.queue_depth = 1;
    Bench b(cfg);
    const RawMatrix m = make_matrix(ElemType::F32, 70, 100, 512, 0.3, 5);
    const Descriptor ok = base_desc(m, kFormatEll, 16, 32);
    const auto counts = reference_counts(m, 16, 32);
    b.mem.write_bytes(ok.src, m.bytes.data(), m.bytes.size());
    b.mem.write_bytes(ok.count_table, counts.data(), counts.size() * 4);
    // descriptor array at 0x7000000: [0] = garbage (not this engine's), [1] = ok (upper half of its line),
    // [2] = invalid (ROWS 0), at 0x7000100 [4] = ok in a line whose reads fail
    const std::uint64_t arr = 0x7000000;
    auto put = [&](unsigned i, const Descriptor& d) {
      const auto w = d.to_words();
      b.mem.write_bytes(arr + kDescBytes * i, w.data(), kDescBytes);
    };
    Descriptor junk = ok;
    junk.rows = 3;
    junk.tag = 1;
    put(0, junk);
    put(1, ok);
    Descriptor inval = ok;
    inval.rows = 0;
    put(2, inval);
    put(4, ok);
    b.mem.set_error_hook([](std::uint64_t a, std::uint32_t, bool w) { return !w && a >= 0x7000100 && a < 0x7000180; });
    b.run([&](Driver& d) {
      const std::uint32_t fetch_off = static_cast<std::uint32_t>(FETCH) << kErrOffsetLsb;
      EXPECT_EQ(d.wr(0, ENGINE_INDEX, 0x10001u), tlm::TLM_OK_RESPONSE);
      EXPECT_EQ(d.rd(0, ENGINE_INDEX), 1u);  // [15:0]
      EXPECT_EQ(d.wr(0, DESC_PTR_LO, static_cast<std::uint32_t>(arr) + 0x20), tlm::TLM_OK_RESPONSE);
      EXPECT_EQ(d.wr(0, DESC_PTR_HI, 0), tlm::TLM_OK_RESPONSE);
      EXPECT_EQ(d.rd(0, DESC_PTR_LO), static_cast<std::uint32_t>(arr) + 0x20);
      EXPECT_EQ(d.wr(0, FETCH, 1), tlm::TLM_OK_RESPONSE);  // N = 1: engine 1 is not addressed, even misaligned
      EXPECT_EQ(d.rd(0, STATUS) & (1u << STATUS_FETCH_BUSY_BIT), 0u);
      EXPECT_EQ(d.wr(0, FETCH, 2), tlm::TLM_COMMAND_ERROR_RESPONSE);  // DESC_PTR not 64-byte aligned
      EXPECT_EQ(d.rd(0, ERR_CODE), static_cast<std::uint32_t>(MmioError::BadValue) | fetch_off | (1u << kErrWriteBit));
      d.wr(0, ERR_CODE, 0);
      d.wr(0, DESC_PTR_LO, static_cast<std::uint32_t>(arr));
      EXPECT_EQ(d.rd(0, FETCH), 0u);
      const sc_core::sc_time t_fetch = sc_core::sc_time_stamp();
      EXPECT_EQ(d.wr(0, FETCH, 2), tlm::TLM_OK_RESPONSE);
      EXPECT_EQ(d.rd(0, STATUS) & (1u << STATUS_FETCH_BUSY_BIT), 1u << STATUS_FETCH_BUSY_BIT);
      EXPECT_EQ(d.wr(0, FETCH, 2), tlm::TLM_COMMAND_ERROR_RESPONSE);
      EXPECT_EQ(d.rd(0, ERR_CODE) & 0xFF, static_cast<std::uint32_t>(MmioError::Busy));
      d.wr(0, ERR_CODE, 0);
      EXPECT_EQ(d.wr(0, DESC_BASE, 5), tlm::TLM_COMMAND_ERROR_RESPONSE);  // the fetch loads DESC[]
      EXPECT_EQ(d.wr(0, SUBMIT, 1), tlm::TLM_COMMAND_ERROR_RESPONSE);
      d.wr(0, ERR_CODE, 0);
      wait_fetch(d);
      // queued with CTRL.ENABLE = 0; DESC[] holds the fetched descriptor
      EXPECT_EQ(d.rd(0, STATUS) & 0xFFFF, (1u << STATUS_QUEUE_FULL_BIT) | (1u << STATUS_QCOUNT_LSB));
      const auto w = ok.to_words();
      for (unsigned i = 0; i < kDescWords; ++i) EXPECT_EQ(d.rd(0, DESC_BASE + 4 * i), w[i]) << i;
      EXPECT_EQ(d.wr(0, FETCH, 2), tlm::TLM_COMMAND_ERROR_RESPONSE);  // the queue is full
      EXPECT_EQ(d.rd(0, ERR_CODE) & 0xFF, static_cast<std::uint32_t>(MmioError::QueueFull));
      d.wr(0, ERR_CODE, 0);
      d.wr(0, CTRL, 1);
      wait_done(d, 1);
      EXPECT_EQ(d.rd(0, LAST_TAG), ok.tag);
      EXPECT_EQ(d.rd(0, LAST_STATUS), 0u);
      ASSERT_EQ(b.eng.jobs().size(), 1u);
      // the job entered the queue after the descriptor's line read (FlatMemory: 200 ns)
      EXPECT_GE(b.eng.jobs()[0].submitted - t_fetch, sc_core::sc_time(200, sc_core::SC_NS));
      EXPECT_EQ(b.eng.stats().descriptor_fetches, 1u);
      // an invalid descriptor in memory: loaded into DESC[], not queued, BadValue latched at FETCH
      d.wr(0, ENGINE_INDEX, 2);
      EXPECT_EQ(d.wr(0, FETCH, 3), tlm::TLM_OK_RESPONSE);
      wait_fetch(d);
      EXPECT_EQ(d.rd(0, ERR_CODE), static_cast<std::uint32_t>(MmioError::BadValue) | fetch_off | (1u << kErrWriteBit));
      EXPECT_EQ(d.rd(0, DESC_BASE + 4 * D_ROWS), 0u);
      EXPECT_EQ(d.rd(0, STATUS) & (1u << STATUS_QUEUE_EMPTY_BIT), 1u << STATUS_QUEUE_EMPTY_BIT);
      d.wr(0, ERR_CODE, 0);
      // a bus error on the descriptor's line: DescFetch latched, DESC[] unchanged, nothing queued
      d.wr(0, ENGINE_INDEX, 4);
      EXPECT_EQ(d.wr(0, FETCH, 5), tlm::TLM_OK_RESPONSE);
      wait_fetch(d);
      EXPECT_EQ(d.rd(0, ERR_CODE), static_cast<std::uint32_t>(MmioError::DescFetch) | fetch_off | (1u << kErrWriteBit));
      EXPECT_EQ(d.rd(0, DESC_BASE + 4 * D_ROWS), 0u);
      EXPECT_EQ(b.eng.stats().descriptor_fetch_errors, 2u);
      sc_core::wait(sc_core::sc_time(1, sc_core::SC_US));
      EXPECT_EQ(d.rd(0, DONE_COUNT), 1u);
    });
    // the fetched job's output is the reference compaction's
    fmt::CompactOptions opt;
    opt.tile_rows = 16;
    opt.tile_cols = 32;
    opt.threshold = ok.threshold_q16 / 65536.0;
    opt.dense_if_not_smaller = ok.size_rule;
    const fmt::TiledMatrix ref = fmt::compact(m.bytes.data(), m.rows, m.cols, m.pitch_bytes / 4, opt);
    std::vector<std::uint8_t> hdr(ref.header_bytes().size()), pay(ref.payload.size());
    b.mem.read_bytes(ok.header_base, hdr.data(), hdr.size());
    b.mem.read_bytes(ok.out_base, pay.data(), pay.size());
    EXPECT_EQ(hdr, ref.header_bytes());
    EXPECT_EQ(pay, ref.payload);
    EXPECT_GT(fmt::count_tiles(ref).sparse, 0u);
  });
}
// L2 lines shorter than the 64-byte descriptor (a preset may have 16-32 B lines; the GPU model refuses a request
// crossing a line, review of the FETCH change): the descriptor is read line by line. The memory here refuses
// any access crossing a 32 B line, as the L2 would.
TEST(Engine, FetchReadsADescriptorOverShortLines) {
  SC_SCENARIO([] {
    EngineConfig cfg;
    cfg.line_bytes = 32;
    Bench b(cfg);
    b.mem.set_error_hook([](std::uint64_t a, std::uint32_t n, bool) { return a % 32 + n > 32; });
    const RawMatrix m = make_matrix(ElemType::F32, 40, 40, 256, 0.3, 3);
    const Descriptor ok = base_desc(m, kFormatEll, 16, 16);
    const auto counts = reference_counts(m, 16, 16);
    b.mem.write_bytes(ok.src, m.bytes.data(), m.bytes.size());
    b.mem.write_bytes(ok.count_table, counts.data(), counts.size() * 4);
    const auto w = ok.to_words();
    b.mem.write_bytes(0x7000040, w.data(), kDescBytes);
    b.run([&](Driver& d) {
      d.wr(0, CTRL, 1);
      d.wr(0, DESC_PTR_LO, 0x7000000);
      d.wr(0, ENGINE_INDEX, 1);
      EXPECT_EQ(d.wr(0, FETCH, 2), tlm::TLM_OK_RESPONSE);
      wait_done(d, 1);
      EXPECT_EQ(d.rd(0, ERR_CODE), 0u);
      EXPECT_EQ(d.rd(0, LAST_STATUS), 0u);
      EXPECT_EQ(d.rd(0, LAST_TAG), ok.tag);
    });
    EXPECT_EQ(b.eng.stats().descriptor_fetches, 1u);
    EXPECT_EQ(b.eng.stats().descriptor_fetch_errors, 0u);
  });
}
TEST(Engine, FetchesItsDescriptorFromMemory) { fetched_job(EngineConfig{}.tile_buffers); }
TEST(Engine, FetchesItsDescriptorFromMemorySequential) { fetched_job(1); }

// Completion record (regmap engine::COMPL_PTR): COMPL_PTR is RW, a low word not 32-byte aligned is refused
// (BadValue, unchanged); a job that starts with COMPL_PTR != 0 ends with {TAG, STATUS, OUT_BYTES, CYCLES} at
// COMPL_PTR + 32 * ENGINE_INDEX (the values as at its start), DONE_COUNT changing only after that write's
// response; LAST_CYCLES is the job's cycles without the record; a failing record write latches ComplWrite and
// leaves the job's status Ok; COMPL_PTR = 0 writes no record.
TEST(Engine, WritesACompletionRecord) {
  SC_SCENARIO([] {
    Bench b;
    const RawMatrix m = make_matrix(ElemType::F32, 70, 100, 512, 0.3, 7);
    const Descriptor ok = base_desc(m, kFormatEll, 16, 32);
    const auto counts = reference_counts(m, 16, 32);
    b.mem.write_bytes(ok.src, m.bytes.data(), m.bytes.size());
    b.mem.write_bytes(ok.count_table, counts.data(), counts.size() * 4);
    const std::uint64_t recs = 0x7100000;
    b.mem.set_error_hook([](std::uint64_t a, std::uint32_t, bool w) { return w && a >= 0x7200000 && a < 0x7200080; });
    const auto record = [&](std::uint64_t at) {
      std::array<std::uint32_t, kComplRecordBytes / 4> v{};
      b.mem.read_bytes(at, v.data(), sizeof v);
      return v;
    };
    std::uint64_t cycles_no_record = 0;
    b.run([&](Driver& d) {
      const std::uint32_t cp_off = static_cast<std::uint32_t>(COMPL_PTR_LO) << kErrOffsetLsb;
      EXPECT_EQ(d.rd(0, COMPL_PTR_LO), 0u);
      EXPECT_EQ(d.wr(0, COMPL_PTR_LO, static_cast<std::uint32_t>(recs) + 16), tlm::TLM_COMMAND_ERROR_RESPONSE);
      EXPECT_EQ(d.rd(0, ERR_CODE), static_cast<std::uint32_t>(MmioError::BadValue) | cp_off | (1u << kErrWriteBit));
      EXPECT_EQ(d.rd(0, COMPL_PTR_LO), 0u);
      d.wr(0, ERR_CODE, 0);
      d.wr(0, CTRL, 1);
      // COMPL_PTR = 0: no record, the reference cycles
      EXPECT_EQ(submit(d, ok), tlm::TLM_OK_RESPONSE);
      wait_done(d, 1);
      cycles_no_record = d.rd(0, LAST_CYCLES);
      EXPECT_EQ(b.eng.stats().completion_records, 0u);
      // engine index 3: the record at COMPL_PTR + 96
      EXPECT_EQ(d.wr(0, COMPL_PTR_LO, static_cast<std::uint32_t>(recs)), tlm::TLM_OK_RESPONSE);
      EXPECT_EQ(d.wr(0, COMPL_PTR_HI, 0), tlm::TLM_OK_RESPONSE);
      EXPECT_EQ(d.rd(0, COMPL_PTR_LO), static_cast<std::uint32_t>(recs));
      d.wr(0, ENGINE_INDEX, 3);
      Descriptor second = ok;
      second.tag = 0xC0FFEE;
      EXPECT_EQ(submit(d, second), tlm::TLM_OK_RESPONSE);
      // the record is in memory before DONE_COUNT changes (FlatMemory stores a write when it is issued)
      sc_core::sc_time t_rec = sc_core::SC_ZERO_TIME;
      for (int i = 0; i < 100000 && d.rd(0, DONE_COUNT) < 2; ++i) {
        if (t_rec == sc_core::SC_ZERO_TIME && record(recs + 96)[C_TAG] != 0) t_rec = sc_core::sc_time_stamp();
        sc_core::wait(sc_core::sc_time(5, sc_core::SC_NS));
      }
      EXPECT_EQ(d.rd(0, DONE_COUNT), 2u);
      EXPECT_GT(t_rec, sc_core::SC_ZERO_TIME);
      EXPECT_GE(sc_core::sc_time_stamp() - t_rec, sc_core::sc_time(45, sc_core::SC_NS));  // the write's 50 ns
      const auto r = record(recs + 96);
      EXPECT_EQ(r[C_TAG], 0xC0FFEEu);
      EXPECT_EQ(r[C_STATUS], 0u);
      EXPECT_EQ(r[C_OUT_BYTES], d.rd(0, LAST_OUT_BYTES));
      EXPECT_EQ(r[C_CYCLES], d.rd(0, LAST_CYCLES));
      for (unsigned w = C_CYCLES + 1; w < kComplRecordBytes / 4; ++w) EXPECT_EQ(r[w], 0u) << w;  // reserved
      EXPECT_EQ(d.rd(0, LAST_CYCLES), cycles_no_record);  // the record is not in LAST_CYCLES
      EXPECT_EQ(record(recs)[C_TAG], 0u);                  // nothing at the other engines' slots
      EXPECT_EQ(d.rd(0, ERR_CODE), 0u);
      // a failing record write: ComplWrite latched at COMPL_PTR_LO, the job Ok
      d.wr(0, COMPL_PTR_LO, 0x7200000);
      EXPECT_EQ(submit(d, ok), tlm::TLM_OK_RESPONSE);
      wait_done(d, 3);
      EXPECT_EQ(d.rd(0, ERR_CODE), static_cast<std::uint32_t>(MmioError::ComplWrite) | cp_off | (1u << kErrWriteBit));
      EXPECT_EQ(d.rd(0, LAST_STATUS), 0u);
    });
    ASSERT_EQ(b.eng.jobs().size(), 3u);
    const EngineJob& j = b.eng.jobs()[1];
    EXPECT_EQ(j.completion_addr, recs + 96);
    EXPECT_FALSE(j.completion_error);
    EXPECT_TRUE(b.eng.jobs()[2].completion_error);
    EXPECT_EQ(b.eng.jobs()[0].completion_addr, 0u);
    // the record's write (FlatMemory: 50 ns) and one cycle (1 ns) after its response are in the job's busy time
    const sc_core::sc_time busy0 = b.eng.jobs()[0].finished - b.eng.jobs()[0].started;
    EXPECT_EQ(j.finished - j.started, busy0 + sc_core::sc_time(51, sc_core::SC_NS));
    EXPECT_EQ(b.eng.stats().completion_records, 2u);
    EXPECT_EQ(b.eng.stats().completion_record_errors, 1u);
  });
}

TEST(Engine, EllF32) { functional(ElemType::F32, kFormatEll, 32, 32, 0.3); }
TEST(Engine, BitmapF32) { functional(ElemType::F32, kFormatBitmap, 32, 32, 0.3); }
TEST(Engine, EllF16) { functional(ElemType::F16, kFormatEll, 32, 32, 0.4); }
TEST(Engine, BitmapF16) { functional(ElemType::F16, kFormatBitmap, 16, 64, 0.4); }
TEST(Engine, EllBF16) { functional(ElemType::BF16, kFormatEll, 8, 16, 0.45); }
TEST(Engine, BitmapBF16) { functional(ElemType::BF16, kFormatBitmap, 32, 32, 0.2); }
TEST(Engine, MixedDenseSparseZeroTiles) { functional(ElemType::F32, kFormatEll, 16, 16, 0.5); }
// The same bytes from the sequential engine (tile_buffers 1) and from other pipeline depths (the default is 4).
TEST(Engine, EllF32Sequential) { functional(ElemType::F32, kFormatEll, 32, 32, 0.3, 1); }
TEST(Engine, BitmapF16Sequential) { functional(ElemType::F16, kFormatBitmap, 16, 64, 0.4, 1); }
TEST(Engine, MixedTilesSequential) { functional(ElemType::F32, kFormatEll, 16, 16, 0.5, 1); }
// D_CFG.SIZE_RULE: 8 x 16 BF16 tiles at density 0.45 whose widest row makes ELL (1 + 2 B per slot) larger
// than the 256 dense bytes are fetched and then written DENSE; bytes as compact() with the size rule.
TEST(Engine, SizeRuleEllBF16) { functional(ElemType::BF16, kFormatEll, 8, 16, 0.45, EngineConfig{}.tile_buffers, true); }
TEST(Engine, SizeRuleEllBF16Sequential) { functional(ElemType::BF16, kFormatEll, 8, 16, 0.45, 1, true); }
TEST(Engine, MixedTilesTwoBuffers) { functional(ElemType::F32, kFormatEll, 16, 16, 0.5, 2); }
TEST(Engine, BitmapBF16ThreeBuffers) { functional(ElemType::BF16, kFormatBitmap, 8, 16, 0.2, 3); }

void sampled_counts(std::uint32_t tile_buffers) {
  SC_SCENARIO([=] {
    const RawMatrix m = make_matrix(ElemType::F32, 64, 96, 512, 0.2, 9);
    Descriptor desc = base_desc(m, kFormatBitmap);
    desc.sample_shift = 3;
    auto counts = reference_counts(m, 32, 32);
    for (auto& c : counts) c >>= 3;  // sampled-style estimates, several of them 0
    counts[0] = 1000;                // an over-estimate: tile 0 is marked DENSE without reading
    JobResult r = run_job(m, desc, counts, tile_buffers);
    EXPECT_EQ(r.status, 0u);
    EXPECT_EQ(r.tm.headers[0].fmt(), fmt::TileFormat::Dense);
    EXPECT_EQ(r.tm.headers[0].nnz, 1024u);  // clamp(estimate, 1, elements)
    expect_expands_to(r, m);
  });
}
TEST(Engine, SampledCountsStillExpandExactly) { sampled_counts(EngineConfig{}.tile_buffers); }
TEST(Engine, SampledCountsStillExpandExactlySequential) { sampled_counts(1); }

// An exact count (s = 0) above the tile's elements (the monitor counts an element written twice twice): the
// DENSE header's nnz is clamped to the elements, so that format::validate accepts the output (it refused
// "nnz larger than the tile" before; reliability finding 75).
void over_count(std::uint32_t tile_buffers) {
  SC_SCENARIO([=] {
    const RawMatrix m = make_matrix(ElemType::F32, 64, 96, 512, 0.2, 9);
    Descriptor desc = base_desc(m, kFormatEll);
    auto counts = reference_counts(m, 32, 32);
    counts[1] = 5000;  // 32 x 32 = 1024 elements
    JobResult r = run_job(m, desc, counts, tile_buffers);
    EXPECT_EQ(r.status, 0u);
    EXPECT_EQ(r.tm.headers[1].fmt(), fmt::TileFormat::Dense);
    EXPECT_EQ(r.tm.headers[1].nnz, 1024u);
    expect_expands_to(r, m);
  });
}
TEST(Engine, ExactCountAboveTheElementsIsClamped) { over_count(EngineConfig{}.tile_buffers); }
TEST(Engine, ExactCountAboveTheElementsIsClampedSequential) { over_count(1); }

TEST(Engine, ThresholdExtremes) {
  SC_SCENARIO([] {
    const RawMatrix m = make_matrix(ElemType::F32, 64, 64, 256, 0.5, 4);
    const auto counts = reference_counts(m, 32, 32);
    Descriptor desc = base_desc(m, kFormatEll);
    desc.threshold_q16 = 0;  // every tile DENSE: nothing read, empty payload
    JobResult r = run_job(m, desc, counts);
    for (const auto& h : r.tm.headers) EXPECT_EQ(h.fmt(), fmt::TileFormat::Dense);
    EXPECT_EQ(r.out_bytes, 0u);
    expect_expands_to(r, m);
  });
}

void overflow(std::uint32_t tile_buffers) {
  SC_SCENARIO([=] {
    const RawMatrix m = make_matrix(ElemType::F32, 64, 64, 256, 0.3, 4);
    const auto counts = reference_counts(m, 32, 32);
    Descriptor desc = base_desc(m, kFormatEll);
    desc.out_capacity_bytes = 64;
    JobResult r = run_job(m, desc, counts, tile_buffers);
    EXPECT_EQ(r.status, static_cast<std::uint32_t>(JobStatus::OutOverflow));
  });
}
TEST(Engine, OutputOverflowIsAJobError) { overflow(EngineConfig{}.tile_buffers); }
TEST(Engine, OutputOverflowIsAJobErrorSequential) { overflow(1); }

// SIZE_RULE and OUT_CAPACITY: a tile made DENSE by the rule takes no payload, so a payload area exactly as
// large as compact()'s with the rule is enough (the job ends Ok, bytes as compact()), while the same capacity
// overflows without the rule (the RTL's ovf uses the payload after the rule as well).
void size_rule_capacity(std::uint32_t tile_buffers, bool size_rule) {
  SC_SCENARIO([=] {
    const std::uint32_t rows = 70, cols = 100, tr = 8, tc = 16;
    const RawMatrix m = make_matrix(ElemType::BF16, rows, cols, 256, 0.45, 21);
    const auto counts = reference_counts(m, tr, tc);
    fmt::CompactOptions opt;
    opt.tile_rows = tr, opt.tile_cols = tc, opt.threshold = 0.5, opt.elem = fmt::ElemType::BF16;
    const fmt::TiledMatrix on = fmt::compact(m.bytes.data(), rows, cols, m.pitch_bytes / 2, opt);
    opt.dense_if_not_smaller = false;
    const fmt::TiledMatrix off = fmt::compact(m.bytes.data(), rows, cols, m.pitch_bytes / 2, opt);
    ASSERT_LT(on.payload.size(), off.payload.size());
    Descriptor desc = base_desc(m, kFormatEll, tr, tc);
    desc.out_capacity_bytes = static_cast<std::uint32_t>(on.payload.size());
    desc.size_rule = size_rule;
    JobResult r = run_job(m, desc, counts, tile_buffers);
    if (!size_rule) {
      EXPECT_EQ(r.status, static_cast<std::uint32_t>(JobStatus::OutOverflow));
      return;
    }
    EXPECT_EQ(r.status, static_cast<std::uint32_t>(JobStatus::Ok));
    EXPECT_EQ(r.header_bytes, on.header_bytes());
    EXPECT_EQ(r.tm.payload, on.payload);
  });
}
TEST(Engine, SizeRuleTilesTakeNoPayloadCapacity) {
  for (bool rule : {true, false}) size_rule_capacity(EngineConfig{}.tile_buffers, rule);
}
TEST(Engine, SizeRuleTilesTakeNoPayloadCapacitySequential) {
  for (bool rule : {true, false}) size_rule_capacity(1, rule);
}

}  // namespace
}  // namespace spartan::hw::test
