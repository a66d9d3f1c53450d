// The SystemC/TLM wrapper of the compaction-engine RTL (EngineRtlSc): descriptors programmed through its mmio
// target socket from an SC_THREAD, the RTL's line reads and writes served through its mem initiator socket by
// a hw::FlatMemory holding a seeded random F32 matrix (with -0.0, NaN, denormals, all-zero / all-non-zero /
// sparse row bands) and its exact per-tile count table. Checked: every header and payload byte equals
// spartan::format::compact(), LAST_STATUS ok, LAST_TAG / LAST_OUT_BYTES, LAST_CYCLES within +-5 % of the TLM
// CompactionEngine run on an identical FlatMemory (same latencies), and bad MMIO accesses answered with the
// TLM model's responses (and the same latched ERR_CODE). Job 1 is awaited by polling DONE_COUNT (the RTL
// lags behind simulated time between polls), job 2 with drain().
// One elaboration per process (SystemC), so this executable holds one scenario.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>

#include "spartan/format/tile_format.h"
#include "spartan/hw/compaction_engine.h"
#include "spartan/hw/flat_memory.h"
#include "spartan/hw/regmap.h"
#include "spartan/rtl/engine_rtl_sc.h"
#include "spartan/hw/payload.h"

extern "C" int sc_main(int, char**) { return 0; }

namespace {
using namespace spartan;
namespace fmt = spartan::format;
namespace rm = spartan::hw::regmap;
namespace eng = rm::engine;

constexpr double kClockMhz = 1000.0;
constexpr unsigned kReadLatencyCycles = 20, kWriteLatencyCycles = 10;
constexpr std::uint32_t kRows = 100, kCols = 150, kPitch = kCols * 4 + 8;
constexpr std::uint64_t kSrc = 0x100000040ull, kCt = 0x200000008ull, kHdr = 0x300000030ull, kOut = 0x400000000ull;
constexpr std::uint8_t kFill = 0xCD;  ///< output areas are pre-filled: bytes the engine does not write show

/// F32 element: +-0.0, or non-zero incl. NaN and denormals (zero = all bits but the sign clear).
std::uint32_t elem_bits(std::mt19937_64& g, bool nz) {
  if (!nz) return (g() & 1) ? 0x80000000u : 0u;
  const unsigned pick = g() % 8;
  if (pick == 0) return 0x7FC00000u;
  if (pick == 1) return 0x00000001u | static_cast<std::uint32_t>(g() & 0x80000000u);
  const std::uint32_t v = static_cast<std::uint32_t>(g());
  return (v & 0x7FFFFFFFu) == 0 ? 1u : v;
}

struct Matrix {
  std::vector<std::uint8_t> src;     ///< kRows x kPitch bytes as in memory (padding bytes non-zero)
  std::vector<std::uint32_t> packed; ///< kRows x kCols elements
};

Matrix make_matrix(std::uint64_t seed) {
  std::mt19937_64 g(seed);
  Matrix m;
  m.src.assign(std::size_t(kRows) * kPitch, 0xAB);
  m.packed.resize(std::size_t(kRows) * kCols);
  for (std::uint32_t r = 0; r < kRows; ++r) {
    const unsigned band = (r / 32) % 5;  // 32-row bands: whole tiles all-zero / all-non-zero / sparse
    const unsigned pct = band == 0 ? 0 : band == 1 ? 100 : band == 2 ? 5 : band == 3 ? 30 : 60;
    for (std::uint32_t c = 0; c < kCols; ++c) {
      const std::uint32_t v = elem_bits(g, (g() % 100) < pct);
      m.packed[std::size_t(r) * kCols + c] = v;
      std::memcpy(&m.src[std::size_t(r) * kPitch + 4 * c], &v, 4);
    }
  }
  return m;
}

/// Exact non-zero count per tile, row-major tile order (the monitor's count table with s = 0).
std::vector<std::uint32_t> tile_counts(const Matrix& m, std::uint32_t tr, std::uint32_t tc) {
  const std::uint32_t tiles_r = (kRows + tr - 1) / tr, tiles_c = (kCols + tc - 1) / tc;
  std::vector<std::uint32_t> n(std::size_t(tiles_r) * tiles_c, 0);
  for (std::uint32_t r = 0; r < kRows; ++r)
    for (std::uint32_t c = 0; c < kCols; ++c)
      n[std::size_t(r / tr) * tiles_c + c / tc] += (m.packed[std::size_t(r) * kCols + c] & 0x7FFFFFFFu) != 0;
  return n;
}

struct JobSpec {
  std::uint32_t tr, tc;
  bool bitmap;
  double threshold;
  bool use_drain;
  bool size_rule = false;  ///< D_CFG.SIZE_RULE (format::CompactOptions::dense_if_not_smaller)
};

struct Outcome {
  std::uint32_t tlm_status = ~0u, rtl_status = ~0u, rtl_tag = 0, rtl_out_bytes = 0, rtl_done = 0;
  std::uint32_t tlm_cycles = 0, rtl_cycles = 0;
  std::size_t header_mismatches = ~std::size_t(0), payload_mismatches = ~std::size_t(0);
  std::size_t header_bytes = 0, payload_bytes = 0;
  std::uint64_t rtl_bytes_written = 0;
  fmt::TileCounts kinds;
};

struct Host : sc_core::sc_module {
  tlm_utils::simple_initiator_socket<Host> to_tlm, to_rtl;
  rtl::EngineRtlSc* rtl = nullptr;
  hw::CompactionEngine* tlm = nullptr;
  hw::FlatMemory *mem_tlm = nullptr, *mem_rtl = nullptr;
  std::vector<JobSpec> specs;
  std::vector<Outcome> outcomes;
  // bad MMIO accesses: responses of the TLM model and of the RTL wrapper; ERR_CODE latched by each
  std::vector<std::pair<tlm::tlm_response_status, tlm::tlm_response_status>> bad;
  std::uint32_t tlm_err_code = 0, rtl_err_code = 0;
  struct FetchAccess {
    tlm::tlm_command cmd;
    std::uint32_t off, v;
  };
  struct FetchResult {
    tlm::tlm_response_status tlm, rtl;
    std::uint32_t tlm_v, rtl_v;
  };
  std::vector<FetchResult> fetch_regs;
  sc_core::sc_time mmio_delay;

  SC_HAS_PROCESS(Host);
  explicit Host(sc_core::sc_module_name n) : sc_module(n), to_tlm("to_tlm"), to_rtl("to_rtl") { SC_THREAD(run); }

  tlm::tlm_response_status reg(tlm_utils::simple_initiator_socket<Host>& s, tlm::tlm_command cmd, std::uint64_t off,
                               std::uint32_t& v, unsigned len = 4) {
    tlm::tlm_generic_payload p;
    spartan::hw::prepare_payload(p, cmd, off, reinterpret_cast<unsigned char*>(&v), len);
    sc_core::sc_time d = sc_core::SC_ZERO_TIME;
    s->b_transport(p, d);
    mmio_delay = d;
    sc_core::wait(d);
    return p.get_response_status();
  }
  std::uint32_t rd(tlm_utils::simple_initiator_socket<Host>& s, std::uint32_t off) {
    std::uint32_t v = 0;
    EXPECT_EQ(reg(s, tlm::TLM_READ_COMMAND, off, v), tlm::TLM_OK_RESPONSE) << std::hex << off;
    return v;
  }
  void wr(tlm_utils::simple_initiator_socket<Host>& s, std::uint32_t off, std::uint32_t v) {
    EXPECT_EQ(reg(s, tlm::TLM_WRITE_COMMAND, off, v), tlm::TLM_OK_RESPONSE) << std::hex << off;
  }
  void submit(tlm_utils::simple_initiator_socket<Host>& s, const rm::Descriptor& d) {
    const auto w = d.to_words();
    for (unsigned i = 0; i < eng::kDescWords; ++i) wr(s, eng::DESC_BASE + 4 * i, w[i]);
    wr(s, eng::SUBMIT, 1);
    wr(s, eng::CTRL, 1);
  }

  void bad_accesses() {
    struct Bad {
      tlm::tlm_command cmd;
      std::uint64_t off;
      unsigned len;
    };
    // ReadOnly (first: latched by both), Misaligned, Unmapped, BadSize, beyond the window, BadValue SUBMIT
    const Bad cases[] = {{tlm::TLM_WRITE_COMMAND, eng::ID, 4},        {tlm::TLM_READ_COMMAND, 0x006, 4},
                         {tlm::TLM_READ_COMMAND, 0x200, 4},           {tlm::TLM_READ_COMMAND, eng::STATUS, 2},
                         {tlm::TLM_READ_COMMAND, 0x1000, 4},          {tlm::TLM_WRITE_COMMAND, eng::SUBMIT, 4}};
    for (const Bad& b : cases) {
      std::uint32_t v1 = 1, v2 = 1;  // SUBMIT of the reset (all-zero) staged descriptor: BadValue
      const auto a = reg(to_tlm, b.cmd, b.off, v1, b.len);
      const auto r = reg(to_rtl, b.cmd, b.off, v2, b.len);
      bad.emplace_back(a, r);
    }
    tlm_err_code = rd(to_tlm, eng::ERR_CODE);
    rtl_err_code = rd(to_rtl, eng::ERR_CODE);
    wr(to_tlm, eng::ERR_CODE, 0);
    wr(to_rtl, eng::ERR_CODE, 0);
    // The FETCH registers (regmap engine::FETCH), through both: read-back widths, a FETCH that does not address
    // this engine (ENGINE_INDEX 1 >= N = 1: ignored, even with a misaligned DESC_PTR), one refused for the
    // misaligned DESC_PTR (BadValue latched at FETCH), the unmapped word after FETCH, STATUS.
    const FetchAccess seq[] = {{tlm::TLM_WRITE_COMMAND, eng::ENGINE_INDEX, 0x10001}, {tlm::TLM_READ_COMMAND, eng::ENGINE_INDEX, 0},
                               {tlm::TLM_WRITE_COMMAND, eng::DESC_PTR_LO, 0x1020},   {tlm::TLM_WRITE_COMMAND, eng::DESC_PTR_HI, 7},
                               {tlm::TLM_READ_COMMAND, eng::DESC_PTR_LO, 0},         {tlm::TLM_READ_COMMAND, eng::DESC_PTR_HI, 0},
                               {tlm::TLM_WRITE_COMMAND, eng::FETCH, 1},              {tlm::TLM_READ_COMMAND, eng::STATUS, 0},
                               {tlm::TLM_WRITE_COMMAND, eng::FETCH, 2},              {tlm::TLM_READ_COMMAND, eng::ERR_CODE, 0},
                               {tlm::TLM_READ_COMMAND, eng::FETCH, 0},               {tlm::TLM_READ_COMMAND, 0x03C, 0}};
    for (const FetchAccess& f : seq) {
      std::uint32_t v1 = f.v, v2 = f.v;
      const auto a = reg(to_tlm, f.cmd, f.off, v1);
      const auto r = reg(to_rtl, f.cmd, f.off, v2);
      fetch_regs.push_back({a, r, v1, v2});
    }
    for (auto* s : {&to_tlm, &to_rtl}) {
      wr(*s, eng::ERR_CODE, 0);
      wr(*s, eng::ENGINE_INDEX, 0);
      wr(*s, eng::DESC_PTR_LO, 0);
      wr(*s, eng::DESC_PTR_HI, 0);
    }
  }

  void run() {
    bad_accesses();
    const Matrix m = make_matrix(2021);
    std::uint32_t done_tlm = 0, done_rtl = 0;
    for (std::size_t k = 0; k < specs.size(); ++k) {
      const JobSpec& js = specs[k];
      Outcome o;
      // reference bytes
      fmt::CompactOptions opt;
      opt.tile_rows = js.tr;
      opt.tile_cols = js.tc;
      opt.threshold = js.threshold;
      opt.sparse_format = js.bitmap ? fmt::TileFormat::Bitmap : fmt::TileFormat::Ell;
      opt.elem = fmt::ElemType::F32;
      opt.dense_if_not_smaller = js.size_rule;
      const fmt::TiledMatrix ref = fmt::compact(m.packed.data(), kRows, kCols, kCols, opt);
      const std::vector<std::uint8_t> hb = ref.header_bytes();
      o.kinds = fmt::count_tiles(ref);
      const std::vector<std::uint32_t> counts = tile_counts(m, js.tr, js.tc);
      EXPECT_EQ(counts.size(), ref.headers.size());
      for (std::size_t t = 0; t < counts.size() && t < ref.headers.size(); ++t)
        EXPECT_EQ(counts[t], ref.headers[t].nnz) << "tile " << t;
      // identical memories: matrix, count table, pre-filled output areas
      const std::vector<std::uint8_t> fill_h(hb.size() + 128, kFill), fill_p(ref.payload.size() + 128, kFill);
      for (hw::FlatMemory* mem : {mem_tlm, mem_rtl}) {
        mem->write_bytes(kSrc, m.src.data(), m.src.size());
        mem->write_bytes(kCt, counts.data(), 4 * counts.size());
        mem->write_bytes(kHdr, fill_h.data(), fill_h.size());
        mem->write_bytes(kOut, fill_p.data(), fill_p.size());
      }
      rm::Descriptor d;
      d.src = kSrc;
      d.rows = kRows;
      d.cols = kCols;
      d.row_pitch_bytes = kPitch;
      d.dtype = rm::ElemType::F32;
      d.format = js.bitmap ? eng::kFormatBitmap : eng::kFormatEll;
      d.tile_rows = js.tr;
      d.tile_cols = js.tc;
      d.threshold_q16 = static_cast<std::uint32_t>(js.threshold * 65536.0);
      d.size_rule = js.size_rule;
      d.count_table = kCt;
      d.header_base = kHdr;
      d.out_base = kOut;
      d.out_capacity_bytes = 1u << 24;
      d.tag = 0x5A00u + static_cast<std::uint32_t>(k);

      // TLM model
      submit(to_tlm, d);
      while (rd(to_tlm, eng::DONE_COUNT) == done_tlm && !tlm->idle())
        sc_core::wait(rtl->period() * 1000.0, tlm->job_done_event());
      EXPECT_EQ(rd(to_tlm, eng::DONE_COUNT), ++done_tlm);
      o.tlm_status = rd(to_tlm, eng::LAST_STATUS);
      o.tlm_cycles = rd(to_tlm, eng::LAST_CYCLES);

      // RTL through the transactors
      const std::uint64_t bytes0 = rtl->stats().bytes_written;
      submit(to_rtl, d);
      if (js.use_drain) {
        const sc_core::sc_time idle_at = rtl->drain(sc_core::sc_time_stamp());
        sc_core::wait(idle_at - sc_core::sc_time_stamp());
        o.rtl_done = rd(to_rtl, eng::DONE_COUNT);
      } else {
        // poll DONE_COUNT every 250 cycles (between polls the RTL is not clocked: it catches up at the next one)
        std::uint64_t polls = 0;
        while ((o.rtl_done = rd(to_rtl, eng::DONE_COUNT)) == done_rtl && ++polls < 100000)
          sc_core::wait(rtl->period() * 250.0);
      }
      EXPECT_EQ(o.rtl_done, done_rtl + 1) << "job " << k << ": RTL did not finish";
      done_rtl = o.rtl_done;
      o.rtl_status = rd(to_rtl, eng::LAST_STATUS);
      o.rtl_tag = rd(to_rtl, eng::LAST_TAG);
      o.rtl_out_bytes = rd(to_rtl, eng::LAST_OUT_BYTES);
      o.rtl_cycles = rd(to_rtl, eng::LAST_CYCLES);
      o.rtl_bytes_written = rtl->stats().bytes_written - bytes0;

      // bytes (header table + payload, plus one line beyond each: must be left untouched)
      std::vector<std::uint8_t> got(hb.size() + 128);
      mem_rtl->read_bytes(kHdr, got.data(), got.size());
      o.header_bytes = hb.size();
      o.header_mismatches = 0;
      for (std::size_t i = 0; i < got.size(); ++i) o.header_mismatches += got[i] != (i < hb.size() ? hb[i] : kFill);
      got.assign(ref.payload.size() + 128, 0);
      mem_rtl->read_bytes(kOut, got.data(), got.size());
      o.payload_bytes = ref.payload.size();
      o.payload_mismatches = 0;
      for (std::size_t i = 0; i < got.size(); ++i)
        o.payload_mismatches += got[i] != (i < ref.payload.size() ? ref.payload[i] : kFill);
      outcomes.push_back(o);
      wr(to_tlm, eng::CTRL, 0);
      wr(to_rtl, eng::CTRL, 0);
    }
    sc_core::sc_stop();
  }
};

TEST(EngineRtlSc, TlmTransactorsMatchCompactAndTheTlmEngine) {
  ::setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);
  hw::FlatMemoryConfig mc;
  mc.read_latency = sc_core::sc_time(1.0e6 / kClockMhz * kReadLatencyCycles, sc_core::SC_PS);
  mc.write_latency = sc_core::sc_time(1.0e6 / kClockMhz * kWriteLatencyCycles, sc_core::SC_PS);
  hw::EngineConfig ec;
  ec.clock_mhz = kClockMhz;
  rtl::EngineRtlScConfig rc;
  rc.clock_mhz = kClockMhz;

  hw::CompactionEngine tlm_engine("tlm_engine", ec);
  hw::FlatMemory mem_tlm("mem_tlm", mc);
  rtl::EngineRtlSc rtl_engine("rtl_engine", rc);
  hw::FlatMemory mem_rtl("mem_rtl", mc);
  Host host("host");
  host.tlm = &tlm_engine;
  host.rtl = &rtl_engine;
  host.mem_tlm = &mem_tlm;
  host.mem_rtl = &mem_rtl;
  // the third: threshold 2.0 with SIZE_RULE, so its DENSE tiles are the ones ELL would have enlarged
  host.specs = {{32, 32, false, 0.5, false}, {16, 64, true, 0.75, true}, {32, 32, false, 2.0, false, true}};
  host.to_tlm.bind(tlm_engine.mmio);
  tlm_engine.mem.bind(mem_tlm.socket);
  host.to_rtl.bind(rtl_engine.mmio);
  rtl_engine.mem.bind(mem_rtl.socket);
  sc_core::sc_start();

  // bad MMIO accesses: the same TLM responses as the TLM model, and the same first error latched
  ASSERT_EQ(host.bad.size(), 6u);
  const tlm::tlm_response_status expected[] = {tlm::TLM_COMMAND_ERROR_RESPONSE, tlm::TLM_ADDRESS_ERROR_RESPONSE,
                                               tlm::TLM_ADDRESS_ERROR_RESPONSE, tlm::TLM_BURST_ERROR_RESPONSE,
                                               tlm::TLM_ADDRESS_ERROR_RESPONSE, tlm::TLM_COMMAND_ERROR_RESPONSE};
  for (std::size_t i = 0; i < host.bad.size(); ++i) {
    EXPECT_EQ(host.bad[i].first, expected[i]) << "bad access " << i << " (TLM model)";
    EXPECT_EQ(host.bad[i].second, host.bad[i].first) << "bad access " << i << " (RTL wrapper vs TLM model)";
  }
  EXPECT_EQ(host.rtl_err_code, host.tlm_err_code);
  EXPECT_EQ(host.tlm_err_code & 0xFFu, static_cast<std::uint32_t>(rm::MmioError::ReadOnly));
  EXPECT_EQ(host.mmio_delay, rtl_engine.period() * 2.0) << "MMIO = 2 unit cycles, as the TLM model";
  ASSERT_EQ(host.fetch_regs.size(), 12u);
  for (std::size_t i = 0; i < host.fetch_regs.size(); ++i) {
    const auto& f = host.fetch_regs[i];
    EXPECT_EQ(f.rtl, f.tlm) << "FETCH access " << i;
    EXPECT_EQ(f.rtl_v, f.tlm_v) << "FETCH access " << i;
    const bool refused = i == 8 || i == 11;
    EXPECT_EQ(f.tlm, refused ? (i == 8 ? tlm::TLM_COMMAND_ERROR_RESPONSE : tlm::TLM_ADDRESS_ERROR_RESPONSE) : tlm::TLM_OK_RESPONSE)
        << "FETCH access " << i;
  }
  EXPECT_EQ(host.fetch_regs[1].tlm_v, 1u);         // ENGINE_INDEX[15:0]
  EXPECT_EQ(host.fetch_regs[4].tlm_v, 0x1020u);
  EXPECT_EQ(host.fetch_regs[5].tlm_v, 7u);
  EXPECT_EQ(host.fetch_regs[7].tlm_v, 0x4u);       // STATUS: queue empty, no fetch in flight
  EXPECT_EQ(host.fetch_regs[9].tlm_v, static_cast<std::uint32_t>(rm::MmioError::BadValue) | (eng::FETCH << rm::kErrOffsetLsb) |
                                          (1u << rm::kErrWriteBit));

  ASSERT_EQ(host.outcomes.size(), host.specs.size());
  for (std::size_t k = 0; k < host.outcomes.size(); ++k) {
    const Outcome& o = host.outcomes[k];
    const double dev = o.tlm_cycles ? 100.0 * (double(o.rtl_cycles) - double(o.tlm_cycles)) / double(o.tlm_cycles) : 0.0;
    std::printf("job %zu (tile %ux%u %s, %s): tiles zero/sparse/dense %zu/%zu/%zu, %zu header + %zu payload bytes, "
                "%zu + %zu mismatches; LAST_CYCLES RTL %u vs TLM %u (%+.2f %%)\n",
                k, host.specs[k].tr, host.specs[k].tc, host.specs[k].bitmap ? "bitmap" : "ell",
                host.specs[k].use_drain ? "drain()" : "polled DONE_COUNT", o.kinds.zero, o.kinds.sparse, o.kinds.dense,
                o.header_bytes, o.payload_bytes, o.header_mismatches, o.payload_mismatches, o.rtl_cycles,
                o.tlm_cycles, dev);
    EXPECT_GT(o.kinds.zero, 0u);
    EXPECT_GT(o.kinds.sparse, 0u);
    EXPECT_GT(o.kinds.dense, 0u);
    EXPECT_GT(o.payload_bytes, 0u);
    EXPECT_EQ(o.header_mismatches, 0u) << "job " << k;
    EXPECT_EQ(o.payload_mismatches, 0u) << "job " << k;
    EXPECT_EQ(o.rtl_bytes_written, o.header_bytes + o.payload_bytes) << "job " << k << ": bytes written through mem";
    EXPECT_EQ(o.rtl_status, static_cast<std::uint32_t>(eng::JobStatus::Ok));
    EXPECT_EQ(o.tlm_status, static_cast<std::uint32_t>(eng::JobStatus::Ok));
    EXPECT_EQ(o.rtl_tag, 0x5A00u + k);
    EXPECT_EQ(o.rtl_out_bytes, o.payload_bytes);
    EXPECT_GT(o.tlm_cycles, 0u);
    EXPECT_LE(std::fabs(dev), 5.0) << "job " << k;
  }
  EXPECT_GT(rtl_engine.stats().line_reads, 0u);
  EXPECT_EQ(rtl_engine.stats().bus_errors, 0u);
  EXPECT_FALSE(rtl_engine.busy());
}

}  // namespace
