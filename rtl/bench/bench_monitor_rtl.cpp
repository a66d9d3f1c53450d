// Benchmark: RTL co-simulation speed (cycles per second of wall time) of the Verilated sparsity monitor while
// it counts a whole activation layer written line by line and flushes it, then of the Verilated compaction
// engine compacting the same layer from the monitor's counts (ELL, threshold --threshold), and of both.
//
//   spartan-rtl-bench [--trace FILE [--tensor it0/L1/act]] [--rows R --cols C --density D] [--tile 32x32]
//                     [--threshold 0.5]
//
// With --trace, the layer's `act` tensor (F32/F16/BF16) is viewed as spartan-sim run does: rank 2 [N, K]
// as N x K, rank >= 3 as rows = shape[0] * shape[1] (N*C) x cols = the remaining dims (H*W). Without it, a
// synthetic ReLU-like matrix (non-zeros with probability D, zeros as +0.0/-0.0) is used and the output
// says so. Prints cycles, wall time, cycles/s, cycles per write request and the check against exact counts.
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "spartan/common/cli.h"
#include "spartan/common/cli_checks.h"
#include "spartan/format/tile_format.h"
#include "spartan/common/error.h"
#include "spartan/hw/regmap.h"
#include "spartan/rtl/engine_rtl.h"
#include "spartan/rtl/monitor_rtl.h"
#include "spartan/trace/sptrace.h"

namespace {
namespace mon = spartan::hw::regmap::monitor;

int run(int argc, char** argv) {
  std::string trace, tensor;
  std::uint32_t rows = 4096, cols = 256, tr = 32, tc = 32;
  double density = 0.5, threshold = 0.5;
  unsigned tile_buffers = spartan::rtl::EngineRtl::kPipelinedTileBuffers;
  namespace po = boost::program_options;
  std::string tile = "32x32";
  po::options_description opts(
      "spartan-rtl-bench: RTL co-simulation speed (cycles/s) of the Verilated sparsity monitor and compaction engine\n"
      "on one activation layer (a trace's act tensor or a synthetic ReLU-like matrix)\nOptions");
  opts.add_options()("help,h", "this help")("trace", po::value(&trace), "trace file (.sptrace); default: synthetic matrix")(
      "tensor", po::value(&tensor), "tensor of the trace (default: its first act tensor), e.g. it0/L1/act")(
      "rows", po::value(&rows)->default_value(rows), "synthetic matrix rows (1..2^20)")(
      "cols", po::value(&cols)->default_value(cols), "synthetic matrix columns (1..2^20)")(
      "density", po::value(&density)->default_value(density), "synthetic non-zero probability (0..1)")(
      "tile", po::value(&tile)->default_value(tile), "tile size RxC (powers of two from 1 to 256 each, the descriptor's TILE rule; the engine takes at most 16384 bytes per tile)")(
      "threshold", po::value(&threshold)->default_value(threshold), "compaction-engine density threshold (0..1)")(
      "tile-buffers", po::value(&tile_buffers)->default_value(tile_buffers),
      ("engine RTL build: 1 (sequential) or " + std::to_string(tile_buffers) + " (pipelined, the default)").c_str());
  po::variables_map vm;
  if (!spartan::parse_options_or_help(argc, argv, opts, vm)) return 0;
  {
    char extra = 0;
    if (std::sscanf(tile.c_str(), "%ux%u%c", &tr, &tc, &extra) != 2 || !spartan::hw::regmap::tile_dim_valid(tr) ||
        !spartan::hw::regmap::tile_dim_valid(tc))
      throw spartan::InputError("--tile wants RxC with powers of two from 1 to 256, got '" + tile + "'");
  }
  if (rows < 1 || cols < 1 || rows > (1u << 20) || cols > (1u << 20)) throw spartan::InputError("--rows and --cols must be in 1..1048576");
  if (!(density >= 0 && density <= 1)) throw spartan::InputError("--density must be in 0..1");
  if (!(threshold >= 0 && threshold <= 1)) throw spartan::InputError("--threshold must be in 0..1");
  if (!spartan::rtl::EngineRtl::has_build(tile_buffers))
    throw spartan::InputError("--tile-buffers must be 1 or " + std::to_string(spartan::rtl::EngineRtl::kPipelinedTileBuffers));
  std::vector<std::uint8_t> m;
  unsigned dtype = 0, eb = 4;
  std::string source;
  if (!trace.empty()) {
    spartan::trace::TraceReader r(trace);
    if (tensor.empty()) {
      for (const auto& k : r.keys())
        if (k.kind == "act") { tensor = k.name(); break; }
      if (tensor.empty()) throw spartan::InputError(trace + ": no act tensor");
    }
    const auto v = r.view(tensor);
    const auto& sh = v.info->shape;
    if (sh.size() < 2) throw spartan::InputError(tensor + ": needs >= 2 dims");
    // same matrix view as spartan-sim run: rank 2 [N, K]; rank >= 3: rows = d0*d1, cols = the rest
    rows = static_cast<std::uint32_t>(sh.size() == 2 ? sh[0] : sh[0] * sh[1]);
    cols = static_cast<std::uint32_t>(v.info->numel() / rows);
    switch (v.info->dtype) {
      case spartan::trace::DType::F32: dtype = 0; eb = 4; break;
      case spartan::trace::DType::F16: dtype = 1; eb = 2; break;
      case spartan::trace::DType::BF16: dtype = 2; eb = 2; break;
      default: throw spartan::InputError(tensor + ": act must be F32/F16/BF16");
    }
    m.assign(v.data, v.data + v.bytes);
    source = trace + " " + tensor;
  } else {
    m.resize(std::size_t(rows) * cols * 4);
    std::mt19937_64 rng(1);
    std::uniform_real_distribution<double> u(0, 1);
    for (std::size_t i = 0; i < m.size(); i += 4) {
      const double x = u(rng);
      const std::uint32_t bits = x < density ? 0x3F000000u + static_cast<std::uint32_t>(rng() & 0xFFFFF)
                                             : ((rng() & 1) ? 0x80000000u : 0u);
      std::memcpy(&m[i], &bits, 4);
    }
    source = "synthetic ReLU-like F32, density " + std::to_string(density);
  }
  const std::uint64_t pitch = std::uint64_t(cols) * eb, base = 0x10000000, ct = 0x20000000;
  if (std::uint64_t(tr) * tc * eb > spartan::rtl::EngineRtl::kReadBufferBytes)
    throw spartan::InputError("--tile " + tile + ": a tile of " + std::to_string(std::uint64_t(tr) * tc * eb) +
                              " bytes exceeds the RTL compaction engine's read buffer (" +
                              std::to_string(spartan::rtl::EngineRtl::kReadBufferBytes) + " bytes)");
  std::vector<std::uint32_t> table((std::uint64_t(rows + tr - 1) / tr) * ((cols + tc - 1) / tc), 0);
  if (table.size() > 8192) throw spartan::InputError("layer has more tiles than the monitor's 8192 counters");
  spartan::rtl::MonitorRtl rtl({}, [&](const spartan::rtl::AtomicAdd32B& a) {
    for (unsigned i = 0; i < 8; ++i)
      if (a.mask & (1u << i)) table[(a.addr + 4 * i - ct) / 4] += a.words[i];
    return 0u;
  });
  auto w = [&](std::uint32_t off, std::uint32_t v) {
    if (rtl.mmio_write(off, v) != 0) throw spartan::InputError("MMIO write refused at " + std::to_string(off));
  };
  w(mon::region_reg(0, mon::R_TILE), tr | (tc << 16));
  w(mon::region_reg(0, mon::R_BASE_LO), static_cast<std::uint32_t>(base));
  w(mon::region_reg(0, mon::R_ROWS), rows);
  w(mon::region_reg(0, mon::R_COLS), cols);
  w(mon::region_reg(0, mon::R_ROW_PITCH), static_cast<std::uint32_t>(pitch));
  w(mon::region_reg(0, mon::R_CT_BASE_LO), static_cast<std::uint32_t>(ct));
  w(mon::region_reg(0, mon::R_CFG), 1u | (dtype << 4));
  w(mon::CTRL, 1);
  const std::uint64_t c0 = rtl.cycle();
  std::uint64_t requests = 0;
  const auto t0 = std::chrono::steady_clock::now();
  const std::clock_t cpu0 = std::clock();
  for (std::uint64_t a = 0; a < m.size(); a += 128, ++requests)
    rtl.write_request(base + a, m.data() + a, static_cast<std::uint32_t>(std::min<std::uint64_t>(128, m.size() - a)));
  const std::uint64_t c1 = rtl.cycle();
  w(mon::FLUSH, 1);
  rtl.run_until_idle();
  const auto t1 = std::chrono::steady_clock::now();
  const double cpu_sec = double(std::clock() - cpu0) / CLOCKS_PER_SEC;
  const std::uint64_t cycles = rtl.cycle() - c0;
  const double sec = std::chrono::duration<double>(t1 - t0).count();
  // exact counts
  std::vector<std::uint32_t> ref(table.size(), 0);
  const std::uint64_t tpr = (cols + tc - 1) / tc;
  for (std::uint64_t e = 0; e < std::uint64_t(rows) * cols; ++e) {
    std::uint32_t bits = 0;
    std::memcpy(&bits, &m[e * eb], eb);
    if ((bits & (eb == 4 ? 0x7FFFFFFFu : 0x7FFFu)) == 0) continue;
    ++ref[(e / cols / tr) * tpr + (e % cols) / tc];
  }
  std::uint64_t mismatches = 0;
  for (std::size_t t = 0; t < ref.size(); ++t) mismatches += ref[t] != table[t];
  std::printf("source              : %s\n", source.c_str());
  std::printf("matrix              : %u x %u, tile %ux%u, %zu tiles\n", rows, cols, tr, tc, table.size());
  std::printf("write requests      : %llu (128 B lines)\n", (unsigned long long)requests);
  std::printf("RTL cycles          : %llu (counting %llu, flush %llu)\n", (unsigned long long)cycles,
              (unsigned long long)(c1 - c0), (unsigned long long)(rtl.cycle() - c1));
  std::printf("cycles per request  : %.3f\n", double(c1 - c0) / double(requests));
  std::printf("wall time           : %.3f s\n", sec);
  std::printf("RTL cycles / s      : %.0f wall, %.0f per CPU second   (target >= 200000)\n", double(cycles) / sec,
              cpu_sec > 0 ? double(cycles) / cpu_sec : 0.0);
  std::printf("count mismatches    : %llu of %zu tiles\n", (unsigned long long)mismatches, ref.size());

  // Engine: compact the same layer from the monitor's counts (reads served from the matrix, 20-cycle reads).
  namespace eng = spartan::hw::regmap::engine;
  spartan::hw::regmap::Descriptor d;
  const std::uint64_t hdr = 0x30000000, out = 0x40000000;
  d.src = base;
  d.rows = rows;
  d.cols = cols;
  d.row_pitch_bytes = static_cast<std::uint32_t>(pitch);
  d.dtype = static_cast<spartan::hw::regmap::ElemType>(dtype);
  d.format = eng::kFormatEll;
  d.tile_rows = tr;
  d.tile_cols = tc;
  d.threshold_q16 = static_cast<std::uint32_t>(threshold * 65536.0);
  d.size_rule = true;  // as spartan-sim run's default; compact() below applies the same rule
  d.count_table = ct;
  d.header_base = hdr;
  d.out_base = out;
  d.out_capacity_bytes = 1u << 30;
  spartan::rtl::EngineRtl engine(20, 10, tile_buffers);
  auto read_line = [&](std::uint64_t a, std::uint8_t* dst) {
    if (a >= base && a + 128 <= base + m.size()) {
      std::memcpy(dst, m.data() + (a - base), 128);
      return;
    }
    for (unsigned i = 0; i < 128; ++i) {
      const std::uint64_t x = a + i;
      std::uint8_t v = 0;
      if (x >= base && x < base + m.size()) v = m[x - base];
      else if (x >= ct && x < ct + 4 * table.size()) v = static_cast<std::uint8_t>(table[(x - ct) / 4] >> (8 * ((x - ct) % 4)));
      dst[i] = v;
    }
  };
  const auto e0 = std::chrono::steady_clock::now();
  const std::clock_t ecpu0 = std::clock();
  const auto er = engine.run(d, read_line);
  if (er.submit_error != 0)
    throw spartan::InputError("the RTL compaction engine refused the job (SUBMIT answered MMIO error " +
                              std::to_string(er.submit_error) + "): check --tile against hw::regmap::descriptor_valid");
  const double esec = std::chrono::duration<double>(std::chrono::steady_clock::now() - e0).count();
  const double ecpu = double(std::clock() - ecpu0) / CLOCKS_PER_SEC;
  // expected bytes: the format's own compact() (exact counts, same threshold)
  spartan::format::CompactOptions o;
  o.tile_rows = tr;
  o.tile_cols = tc;
  o.threshold = threshold;
  o.sparse_format = spartan::format::TileFormat::Ell;
  o.elem = static_cast<spartan::format::ElemType>(dtype);
  o.dense_if_not_smaller = d.size_rule;
  const auto refc = spartan::format::compact(m.data(), rows, cols, cols, o);
  const auto hb = refc.header_bytes();
  std::uint64_t ebad = (er.finished && er.status == 0 && er.out_bytes == refc.payload.size()) ? 0 : 1;
  const auto& wr = engine.written();
  auto at = [&](std::uint64_t a) { return wr.at(a); };
  for (std::size_t i = 0; i < hb.size(); ++i) ebad += at(hdr + i) != hb[i];
  for (std::size_t i = 0; i < refc.payload.size(); ++i) ebad += at(out + i) != refc.payload[i];
  std::size_t written_sparse = 0;  // "compacted" counts the tiles fetched for compaction, incl. those the size rule wrote DENSE
  for (const auto& h : refc.headers) written_sparse += h.fmt() != spartan::format::TileFormat::Dense && h.nnz > 0;
  std::printf("engine tiles        : %zu (%llu fetched for compaction, %zu written sparse ELL; threshold %.2f), payload %zu B\n",
              refc.headers.size(), (unsigned long long)er.tiles_compacted, written_sparse, threshold, refc.payload.size());
  std::printf("engine RTL cycles   : %llu (job %u; TILE_BUFFERS %u)\n", (unsigned long long)er.rtl_cycles, er.job_cycles,
              tile_buffers);
  std::printf("engine wall time    : %.3f s\n", esec);
  std::printf("engine cycles / s   : %.0f wall, %.0f per CPU second\n", double(er.rtl_cycles) / esec,
              ecpu > 0 ? double(er.rtl_cycles) / ecpu : 0.0);
  std::printf("engine byte mismatches: %llu\n", (unsigned long long)ebad);
  const double tc_all = double(cycles + er.rtl_cycles), ts_all = sec + esec, tcpu = cpu_sec + ecpu;
  std::printf("monitor + engine    : %.0f RTL cycles in %.3f s: %.0f cycles/s wall, %.0f per CPU second   (target >= 200000)\n",
              tc_all, ts_all, tc_all / ts_all, tcpu > 0 ? tc_all / tcpu : 0.0);
  return mismatches == 0 && ebad == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  return spartan::run_cli("spartan-rtl-bench", [&] { return run(argc, argv); });
}
