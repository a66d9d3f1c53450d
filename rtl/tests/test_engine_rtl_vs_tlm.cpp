// Lockstep scoreboard of the compaction engine (rtl/cosim/engine_lockstep.cpp): seeded random jobs run on
// the TLM CompactionEngine and on the Verilated RTL with the same memory latencies; every header/payload
// byte must match (0 mismatches) and the job cycles of the TLM timing rule must be within +-5 % of the RTL's
// (docs/hw-units.md "Calibration from the RTL"). Jobs: F32/F16/BF16, ELL/BITMAP, 8..256-row/-column tiles,
// unaligned row pitches, all-zero / dense / sparse row bands, exact and sampled (s = 1) counts, two memory
// latencies (20 and 300 cycles, the latter beyond the 256-read window); both builds of the engine (tile_buffers
// 1 = sequential, 4 = pipelined).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <systemc>

#include "spartan/format/tile_format.h"
#include "spartan/hw/compaction_engine.h"
#include "spartan/hw/regmap.h"
#include "spartan/rtl/engine_lockstep.h"
#include "spartan/rtl/engine_rtl.h"

extern "C" int sc_main(int, char**) { return 0; }

namespace {
using namespace spartan;
namespace fmt = spartan::format;
namespace rm = spartan::hw::regmap;

struct Job {
  rm::Descriptor d;
  std::map<std::uint64_t, std::uint8_t> mem;
};

std::uint32_t elem_bits(std::mt19937_64& g, bool f32, bool nz) {
  if (!nz) return (g() & 1) ? (f32 ? 0x80000000u : 0x8000u) : 0u;
  const unsigned pick = g() % 8;
  if (f32) {
    if (pick == 0) return 0x7FC00000u;
    if (pick == 1) return 0x00000001u;
    const std::uint32_t v = static_cast<std::uint32_t>(g());
    return (v & 0x7FFFFFFFu) == 0 ? 1u : v;
  }
  if (pick == 0) return 0x7E00u;
  const std::uint32_t v = static_cast<std::uint32_t>(g()) & 0xFFFFu;
  return (v & 0x7FFFu) == 0 ? 1u : v;
}

Job make_job(std::uint64_t seed) {
  std::mt19937_64 g(seed);
  Job j;
  const unsigned dt = g() % 3, eb = dt == 0 ? 4 : 2;
  const std::uint32_t dims[] = {8, 16, 32, 32, 64, 128, 256};
  std::uint32_t tr = dims[g() % 7], tc = dims[g() % 7];
  while (std::uint64_t(tr) * tc * eb > 16384) tr /= 2;
  const std::uint32_t rows = 16 + g() % 150, cols = 16 + g() % 300;
  const std::uint32_t pitch = cols * eb + eb * static_cast<std::uint32_t>(g() % 5);
  const bool bitmap = g() % 2;
  const double thr = (g() % 4 == 0) ? 0.5 : 2.0;
  const unsigned shift = (g() % 5 == 0) ? 1 : 0;
  std::vector<std::uint8_t> packed(std::size_t(rows) * cols * eb);
  const std::uint64_t SRC = 0x100000000ull + eb * (g() % 64);
  for (std::uint32_t r = 0; r < rows; ++r) {
    const unsigned band = (r / 8 + static_cast<unsigned>(seed)) % 5;
    const unsigned pct = band == 0 ? 0 : band == 1 ? 100 : band == 2 ? 5 : band == 3 ? 30 : 60;
    for (std::uint32_t c = 0; c < cols; ++c) {
      const std::uint32_t v = elem_bits(g, dt == 0, (g() % 100) < pct);
      std::memcpy(&packed[(std::size_t(r) * cols + c) * eb], &v, eb);
      for (unsigned b = 0; b < eb; ++b) j.mem[SRC + std::uint64_t(r) * pitch + c * eb + b] = std::uint8_t(v >> (8 * b));
    }
  }
  fmt::CompactOptions o;
  o.tile_rows = tr;
  o.tile_cols = tc;
  o.threshold = 2.0;
  o.elem = static_cast<fmt::ElemType>(dt);
  const auto ref = fmt::compact(packed.data(), rows, cols, cols, o);
  const std::uint64_t CT = 0x200000000ull + 4 * (g() % 32);
  for (std::size_t t = 0; t < ref.headers.size(); ++t) {
    const std::uint32_t c = ref.headers[t].nnz >> shift;
    for (unsigned b = 0; b < 4; ++b) j.mem[CT + 4 * t + b] = std::uint8_t(c >> (8 * b));
  }
  rm::Descriptor& d = j.d;
  d.src = SRC;
  d.rows = rows;
  d.cols = cols;
  d.row_pitch_bytes = pitch;
  d.dtype = static_cast<rm::ElemType>(dt);
  d.format = bitmap ? rm::engine::kFormatBitmap : rm::engine::kFormatEll;
  d.sample_shift = shift;
  d.tile_rows = tr;
  d.tile_cols = tc;
  d.threshold_q16 = static_cast<std::uint32_t>(thr * 65536.0);
  d.size_rule = seed % 2 == 0;  // 100 % bands with thr 2.0: tiles fetched, then written DENSE
  d.count_table = CT;
  d.header_base = 0x300000000ull + 16 * (g() % 8);
  d.out_base = 0x400000000ull;
  d.out_capacity_bytes = 1u << 26;
  d.tag = static_cast<std::uint32_t>(seed);
  return j;
}

// Both builds of the engine: tile_buffers 1 (sequential) and 4 (pipelined, the default), each at read latency
// 20 and 300 cycles.
struct Host : sc_core::sc_module {
  SC_HAS_PROCESS(Host);
  static rtl::EngineLockstepConfig cfg(unsigned rd_lat, unsigned wr_lat, unsigned tb) {
    rtl::EngineLockstepConfig c;
    c.read_latency_cycles = rd_lat;
    c.write_latency_cycles = wr_lat;
    c.tile_buffers = tb;
    return c;
  }
  static constexpr unsigned kTileBuffers[2] = {1, rtl::EngineRtl::kPipelinedTileBuffers};
  rtl::EngineLockstep fast1, slow1, fast2, slow2;
  std::vector<Job> jobs;
  // [tb index][job] fast, slow
  std::vector<rtl::EngineLockstepResult> res_fast[2], res_slow[2];
  explicit Host(sc_core::sc_module_name n)
      : sc_module(n), fast1("eng_fast1", cfg(20, 10, 1)), slow1("eng_slow1", cfg(300, 40, 1)),
        fast2("eng_fast2", cfg(20, 10, kTileBuffers[1])), slow2("eng_slow2", cfg(300, 40, kTileBuffers[1])) {
    SC_THREAD(run);
  }
  void run() {
    for (const Job& j : jobs) {
      auto rd = [&](std::uint64_t a, std::uint8_t* dst, std::size_t n) {
        for (std::size_t i = 0; i < n; ++i) {
          auto it = j.mem.find(a + i);
          dst[i] = it == j.mem.end() ? 0 : it->second;
        }
      };
      res_fast[0].push_back(fast1.run(j.d, rd));
      res_slow[0].push_back(slow1.run(j.d, rd));
      res_fast[1].push_back(fast2.run(j.d, rd));
      res_slow[1].push_back(slow2.run(j.d, rd));
    }
  }
};

TEST(EngineRtlVsTlm, BytesMatchAndCyclesWithin5Percent) {
  Host h("host");
  constexpr std::size_t kJobs = 28;
  for (std::uint64_t s = 1; s <= kJobs; ++s) h.jobs.push_back(make_job(s));
  // Then the first jobs again with a 1 KiB output buffer: OutOverflow. Both models must end the same way, and
  // the RTL must not write outside the header table and the output buffer (checked for every job).
  for (std::uint64_t s = 1; s <= 6; ++s) {
    Job j = make_job(s);
    j.d.out_capacity_bytes = 1024;
    h.jobs.push_back(std::move(j));
  }
  sc_core::sc_start();
  for (unsigned b = 0; b < 2; ++b) {
    unsigned overflows = 0;
    for (std::size_t i = kJobs; i < h.jobs.size(); ++i)
      for (const auto* r : {&h.res_fast[b][i], &h.res_slow[b][i]}) {
        EXPECT_EQ(r->mismatches(), 0u) << "overflow job " << i + 1 << ": status RTL " << r->rtl_status << " TLM " << r->tlm_status
                                       << ", out bytes " << r->rtl_out_bytes << " / " << r->tlm_out_bytes;
        EXPECT_EQ(r->stray_write_bytes, 0u) << "job " << i + 1;
        overflows += r->tlm_status == static_cast<std::uint32_t>(rm::engine::JobStatus::OutOverflow);
      }
    EXPECT_GT(overflows, 0u) << "tile_buffers " << Host::kTileBuffers[b] << ": no job overflowed its 1 KiB buffer";
    for (std::size_t i = 0; i < kJobs; ++i)
      EXPECT_EQ(h.res_fast[b][i].stray_write_bytes + h.res_slow[b][i].stray_write_bytes, 0u) << "job " << i + 1;
  }
  for (unsigned b = 0; b < 2; ++b) {
    h.res_fast[b].resize(kJobs);
    h.res_slow[b].resize(kJobs);
  }
  h.jobs.resize(kJobs);
  for (unsigned b = 0; b < 2; ++b) {
    const unsigned tb = Host::kTileBuffers[b];
    SCOPED_TRACE("tile_buffers " + std::to_string(tb));
    ASSERT_EQ(h.res_fast[b].size(), h.jobs.size());
    double max_dev = 0;
    std::uint64_t rtl_sum = 0, tlm_sum = 0;
    for (std::size_t i = 0; i < h.jobs.size(); ++i) {
      const auto& d = h.jobs[i].d;
      for (const auto* r : {&h.res_fast[b][i], &h.res_slow[b][i]}) {
        std::printf("tb %u job %2zu %3ux%3u tile %3ux%3u dt %u %-6s s%u lat %s: %7llu B compared, %llu mismatches, RTL %7llu vs TLM %7llu cycles (%+.2f %%)\n",
                    tb, i + 1, d.rows, d.cols, d.tile_rows, d.tile_cols, static_cast<unsigned>(d.dtype),
                    d.format == rm::engine::kFormatBitmap ? "bitmap" : "ell", d.sample_shift, r == &h.res_fast[b][i] ? "20" : "300",
                    static_cast<unsigned long long>(r->bytes_compared), static_cast<unsigned long long>(r->mismatches()),
                    static_cast<unsigned long long>(r->rtl_cycles), static_cast<unsigned long long>(r->tlm_cycles),
                    r->deviation_percent());
        EXPECT_EQ(r->mismatches(), 0u) << "job " << i + 1;
        EXPECT_EQ(r->tlm_status, 0u) << "job " << i + 1;
        EXPECT_GT(r->bytes_compared, 0u);
        EXPECT_LE(std::fabs(r->deviation_percent()), 5.0) << "job " << i + 1;
        max_dev = std::max(max_dev, std::fabs(r->deviation_percent()));
        rtl_sum += r->rtl_cycles;
        tlm_sum += r->tlm_cycles;
      }
    }
    std::printf("tile_buffers %u: max |cycle deviation| RTL vs TLM: %.2f %%; cycles of all jobs: RTL %llu, TLM %llu\n", tb,
                max_dev, static_cast<unsigned long long>(rtl_sum), static_cast<unsigned long long>(tlm_sum));
  }
  // The read window: never more than RD_OUTS line reads in flight at the pins, and at the 300-cycle latency the
  // pipelined build (several tiles fetched at once) must reach it, so that the bound is exercised.
  std::uint64_t max_pipe_slow = 0;
  for (unsigned b = 0; b < 2; ++b)
    for (std::size_t i = 0; i < h.jobs.size(); ++i) {
      EXPECT_LE(h.res_fast[b][i].rtl_max_reads_in_flight, rtl::EngineRtl::kReadsInFlight);
      EXPECT_LE(h.res_slow[b][i].rtl_max_reads_in_flight, rtl::EngineRtl::kReadsInFlight);
      if (b == 1) max_pipe_slow = std::max(max_pipe_slow, h.res_slow[b][i].rtl_max_reads_in_flight);
    }
  EXPECT_EQ(max_pipe_slow, rtl::EngineRtl::kReadsInFlight) << "no job filled the read window";
  // A compacted tile's latency (its fetch start to its header) cannot be shorter than one memory read; the
  // pipelined build measured it from the job FSM's decision and read ~60 cycles behind a 300-cycle memory.
  for (unsigned b = 0; b < 2; ++b)
    for (std::size_t i = 0; i < h.jobs.size(); ++i)
      for (const auto& [r, lat] : {std::pair{&h.res_fast[b][i], 20.0}, std::pair{&h.res_slow[b][i], 300.0}})
        if (r->rtl_tiles_compacted > 0) {
          EXPECT_GE(double(r->rtl_compacted_tile_cycles) / double(r->rtl_tiles_compacted), lat)
              << "tile_buffers " << Host::kTileBuffers[b] << " job " << i + 1;
        }
  // The TLM engine's default window is the RTL's.
  EXPECT_EQ(hw::EngineConfig{}.outstanding_reads, rtl::EngineRtl::kReadsInFlight);
  EXPECT_EQ(hw::EngineConfig{}.tile_buffers, rtl::EngineRtl::kPipelinedTileBuffers);
  // The pipelined engine must be faster in total than the sequential one (the point of the tile buffers).
  std::uint64_t seq = 0, pipe = 0;
  for (std::size_t i = 0; i < h.jobs.size(); ++i) {
    seq += h.res_fast[0][i].rtl_cycles + h.res_slow[0][i].rtl_cycles;
    pipe += h.res_fast[1][i].rtl_cycles + h.res_slow[1][i].rtl_cycles;
  }
  EXPECT_LT(pipe, seq);
}

TEST(EngineRtlVsTlm, OnlyTheBuiltTileBufferCountsExist) {
  EXPECT_THROW(rtl::EngineRtl(20, 10, 2), std::invalid_argument);  // the pre-2026-12-01 default: no longer built
  EXPECT_THROW(rtl::EngineRtl(20, 10, 3), std::invalid_argument);
  EXPECT_THROW(rtl::EngineRtl(20, 10, 0), std::invalid_argument);
}

// A descriptor the RTL refuses at SUBMIT (here: an F32 64 x 128 tile, 32 KiB, above the 16 KiB read buffer)
// returns at once with the MMIO error, instead of waiting max_cycles for a job that never starts; the
// largest tile that fits (64 x 64 F32 = kReadBufferBytes) runs to completion. Both builds.
TEST(EngineRtlVsTlm, RefusedSubmitReturnsAtOnceWithTheMmioError) {
  rm::Descriptor d;
  d.src = 0x10000000;
  d.rows = 128;
  d.cols = 256;
  d.row_pitch_bytes = 256 * 4;
  d.dtype = rm::ElemType::F32;
  d.format = rm::engine::kFormatEll;
  d.count_table = 0x20000000;  // all-zero memory: every tile is a zero tile
  d.header_base = 0x30000000;
  d.out_base = 0x40000000;
  d.out_capacity_bytes = 1u << 20;
  const auto zeros = [](std::uint64_t, std::uint8_t* dst) { std::memset(dst, 0, 128); };
  for (unsigned tb : {1u, rtl::EngineRtl::kPipelinedTileBuffers}) {
    rtl::EngineRtl eng(20, 10, tb);
    d.tile_rows = 64;
    d.tile_cols = 128;
    ASSERT_GT(std::uint64_t(d.tile_rows) * d.tile_cols * 4, rtl::EngineRtl::kReadBufferBytes);
    const auto bad = eng.run(d, zeros);
    EXPECT_EQ(bad.submit_error, static_cast<std::uint32_t>(rm::MmioError::BadValue)) << "tile_buffers " << tb;
    EXPECT_FALSE(bad.finished);
    EXPECT_LT(bad.rtl_cycles, 1000u);
    d.tile_cols = 64;
    ASSERT_EQ(std::uint64_t(d.tile_rows) * d.tile_cols * 4, rtl::EngineRtl::kReadBufferBytes);
    const auto ok = eng.run(d, zeros);
    EXPECT_EQ(ok.submit_error, 0u) << "tile_buffers " << tb;
    EXPECT_TRUE(ok.finished);
    EXPECT_EQ(ok.status, 0u);
  }
}

}  // namespace
