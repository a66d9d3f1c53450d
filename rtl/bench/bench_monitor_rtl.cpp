// Benchmark: RTL co-simulation speed of the Verilated sparsity monitor (cycles per second of wall time)
// while it counts a whole activation layer written line by line, then flushes it.
//
//   spartan-rtl-bench [--trace FILE [--tensor it0/L1/act]] [--rows R --cols C --density D] [--tile 32x32]
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

#include "spartan/common/cli.h"
#include "spartan/common/error.h"
#include "spartan/hw/regmap.h"
#include "spartan/rtl/monitor_rtl.h"
#include "spartan/trace/sptrace.h"

namespace {
namespace mon = spartan::hw::regmap::monitor;

int run(int argc, char** argv) {
  std::string trace, tensor;
  std::uint32_t rows = 4096, cols = 256, tr = 32, tc = 32;
  double density = 0.5;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw spartan::InputError("option " + a + " needs a value");
      return argv[++i];
    };
    if (a == "--trace") trace = next();
    else if (a == "--tensor") tensor = next();
    else if (a == "--rows") rows = static_cast<std::uint32_t>(std::stoul(next()));
    else if (a == "--cols") cols = static_cast<std::uint32_t>(std::stoul(next()));
    else if (a == "--density") density = std::stod(next());
    else if (a == "--tile") {
      const std::string v = next();
      if (std::sscanf(v.c_str(), "%ux%u", &tr, &tc) != 2) throw spartan::InputError("--tile wants RxC, got " + v);
    } else throw spartan::InputError("unknown option " + a);
  }
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
  return mismatches == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  return spartan::run_cli("spartan-rtl-bench", [&] { return run(argc, argv); });
}
