// bench-gemm: OpenBLAS sgemm vs the tile-sparse GEMM, side by side, single thread, on the GEMM shapes of
// real conv layers (shapes.cpp) at activation sparsity 0/50/70/90/97% (zeros drawn i.i.d. per element), laid
// out as spartan-train issues them (--layout train, the default) or as in Caffe (--layout caffe).
// Prints, per shape and sparsity, the medians over side-by-side repetitions (OpenBLAS, compact, kernel with the
// packed weights reused, kernel packing them; in a random order per repetition) of: OpenBLAS time, kernel time
// (pre-compacted operand), compact time, ratio kernel = time(OpenBLAS) / time(kernel) (what the targets
// refer to), ratio kernel+pack (the weights packed in the call, as spartan-train runs every call) and ratio
// compact+kernel+pack. Every row's tile-sparse results are checked against OpenBLAS outside the timed region
// (bench/verify.h: the fp32 bound on the timed inputs, exactly on integer-valued copies); a failed row is left out
// of the means and the targets, and the run exits 1. `--cache cold` evicts the caches before every timed call.
// `--calibrate` runs the threshold calibration. Results of this machine: docs/bench/gemm.md.
#include <cblas.h>
#include <omp.h>
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <boost/program_options.hpp>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <unistd.h>

#include "shapes.h"
#include "verify.h"
#include "spartan/common/aligned.h"
#include "spartan/common/atomic_file.h"
#include "spartan/common/cli.h"
#include "spartan/common/cli_checks.h"
#include "spartan/common/error.h"
#include "spartan/gemm/tile_sparse.h"
#ifdef SPARTAN_BENCH_HAVE_TRACE
#include "spartan/trace/metadata.h"
#include "spartan/trace/sptrace.h"
#endif

namespace po = boost::program_options;
using namespace spartan;
using namespace spartan::gemm;

namespace {

// --clock thread: CPU time of the calling thread (CLOCK_THREAD_CPUTIME_ID) instead of wall time. Every
// timed call is single-threaded in this thread (OpenBLAS with one thread, the engine with num_threads 1),
// so this excludes only the time the thread is descheduled by other processes on a loaded machine
// (it still includes their cache and memory-bandwidth interference).
bool g_thread_clock = false;
// --vector-cost: print the machine's gather costs and a kernel ns-per-vector column (gather_vector_ns).
bool g_vector_cost = false;

double now_s() {
  if (g_thread_clock) {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/// The kernel set OpenBLAS chose for this CPU (DYNAMIC_ARCH builds pick it at load time from CPUID;
/// the environment variable OPENBLAS_CORETYPE overrides the choice).
std::string openblas_core() {
  const char* n = openblas_get_corename();
  return n != nullptr ? std::string(n) : std::string("unknown");
}

/// A warning when the dense baseline runs narrower vectors than the CPU offers: OpenBLAS 0.3.21 (Debian 12)
/// does not know AMD Zen 4 / Zen 5 and runs its AVX2 "Haswell" kernels there, although its AVX-512 kernels
/// (core SkylakeX) run on those CPUs and were 1.3-1.95x faster (median 1.79x) on the Zen 5 benchmark host
/// (docs/bench/gemm.md, twenty-second session). Ratios against such a baseline overstate the sparse gain.
std::string baseline_isa_note(const std::string& core) {
#if defined(__x86_64__) || defined(__i386__)
  std::string lc = core;
  for (char& ch : lc) ch = char(std::tolower(static_cast<unsigned char>(ch)));
  const bool blas_avx512 = lc.find("skylakex") != std::string::npos || lc.find("cooperlake") != std::string::npos ||
                           lc.find("sapphire") != std::string::npos;
  if (__builtin_cpu_supports("avx512f") && !blas_avx512)
    return "this CPU has AVX-512 but OpenBLAS runs its '" + core +
           "' kernels; OPENBLAS_CORETYPE=SkylakeX selects its AVX-512 kernels (a faster dense baseline, lower ratios)";
#else
  (void)core;
#endif
  return "";
}

/// The q-quantile of v (0 <= q <= 1), linearly interpolated between the order statistics; 0 for an empty v.
double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const double pos = q * double(v.size() - 1);
  const std::size_t lo = std::size_t(pos), hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (pos - double(lo)) * (v[hi] - v[lo]);
}

double median(std::vector<double> v) { return percentile(std::move(v), 0.5); }

/// --vector-cost: this core's cost of the row gathers' inner step, in ns per 16-float vector: one vector loaded
/// from a random row of a `kib` KiB buffer and FMA'd into one of 16 accumulators (rows of 16 vectors = 1 KiB, as
/// the wide gather's 256-float panels; 100k rows from a fixed LCG, best of 7 passes, steady clock). A 32 KiB
/// buffer (L1) gives the FMA and load-port floor; a 512 KiB one (in L2, not in L1) the L2 -> L1 transfer floor,
/// which a row gather (or scatter) pays for every non-zero and 16 output floats whenever the operand whose rows
/// it reads (or updates) does not fit L1. 0 on a CPU without AVX-512F.
#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx512f"))) double gather_vector_ns_avx512(int kib) {
  constexpr int kNV = 16, kRows = 100000;
  const std::size_t n_rows = std::size_t(kib) * 1024 / (kNV * 64);
  AlignedVector<float> d(n_rows * kNV * 16);
  for (std::size_t i = 0; i < d.size(); ++i) d[i] = 1e-3f * float(i % 7);
  std::vector<std::uint32_t> ix(kRows);
  std::uint32_t x = 12345;
  for (auto& v : ix) x = x * 1103515245u + 12345u, v = std::uint32_t((x >> 8) % n_rows);
  double best = 1e30;
  float sink = 0;
  for (int pass = 0; pass < 7; ++pass) {
    __m512 acc[kNV];
#pragma GCC unroll 16
    for (int i = 0; i < kNV; ++i) acc[i] = _mm512_setzero_ps();
    const __m512 v = _mm512_set1_ps(1.0001f);
    const auto t0 = std::chrono::steady_clock::now();
    for (std::uint32_t r : ix) {
      const float* row = d.data() + std::size_t(r) * kNV * 16;
#pragma GCC unroll 16
      for (int i = 0; i < kNV; ++i) acc[i] = _mm512_fmadd_ps(v, _mm512_load_ps(row + 16 * i), acc[i]);
    }
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    alignas(64) float lanes[16];
    for (int i = 0; i < kNV; ++i) {
      _mm512_store_ps(lanes, acc[i]);
      sink += lanes[0];
    }
  }
  if (!(sink == sink)) std::printf(" ");  // keeps the sums (never NaN)
  return best * 1e9 / (double(kRows) * kNV);
}
double gather_vector_ns(int kib) { return __builtin_cpu_supports("avx512f") ? gather_vector_ns_avx512(kib) : 0.0; }
#else
double gather_vector_ns(int) { return 0.0; }
#endif

/// Cost of one measured interval's clock reads, taken off every interval: the median of 31 empty intervals
/// (two reads back to back). Reading the thread CPU clock is a system call, 1.28 us per read on the benchmark
/// VM (2026-12-03; steady_clock: 28 ns), and one such cost lands in every interval: up to ~20 % of the 6-10 us
/// vgg-s kernels, on both sides of a ratio, if it were left in (docs/bench/gemm.md, twenty-third session).
double clock_overhead_s() {
  std::vector<double> d;
  for (int i = 0; i < 31; ++i) {
    const double t0 = now_s();
    d.push_back(now_s() - t0);
  }
  std::sort(d.begin(), d.end());
  return d[d.size() / 2];
}

/// --cache cold: before every timed call, a read of one word per 64-byte line of a --flush-mib buffer (default
/// 256 MiB: eight times a Zen 5 CCD's 32 MiB L3, the cache one core of the benchmark host shares), so that the call
/// finds its operands in memory, not in any cache (the bound opposite to the warm default, where repetitions on
/// the same buffers find them cached wherever they fit). Clean lines only: the flush leaves no dirty data for the
/// call to write back. Not sized from sysconf(_SC_LEVEL3_CACHE_SIZE): on the benchmark VM it reports 508 MiB, the
/// L3 of the whole host socket rather than of the core's CCD (a 2 GiB flush per call; the header prints it).
bool g_cold = false;
std::vector<std::uint64_t> g_flush_words;
volatile std::uint64_t g_flush_sink = 0;

long reported_l3_bytes() {
#ifdef _SC_LEVEL3_CACHE_SIZE
  return sysconf(_SC_LEVEL3_CACHE_SIZE);
#else
  return 0;
#endif
}

void flush_caches() {
  std::uint64_t s = 0;
  for (std::size_t i = 0; i < g_flush_words.size(); i += 8) s += g_flush_words[i];
  g_flush_sink = s;
}

/// Side-by-side timing of one shape: every repetition runs OpenBLAS, compact, the tile-sparse kernel with the
/// packed weights reused and the kernel packing them (on that repetition's compacted operand) back to back, so
/// that all four see the same machine load, in an order drawn at random for each repetition (a fixed seed per
/// row: reproducible), so that no function always runs right after the same other one (a call that follows one
/// reading the same operands finds them warmer: `kernel` right after `kernel_pack` ran up to 1.3x faster on
/// identical work, forty-second session; a rotation of one fixed cycle would have kept that neighbour 3 times in 4).
/// Each interval has the clock's own cost (clock_overhead_s) taken off. Times and ratios are medians over the
/// repetitions (after one warm-up); ratio_kernel is the median of the per-repetition time(OpenBLAS) /
/// time(kernel), ratio_total that of time(OpenBLAS) / (time(compact) + time(kernel_pack)); ratio_kernel_p25 and
/// _p75 are the quartiles of the per-repetition ratio_kernel (its spread on this machine).
struct Timing {
  double blas_s = 0, compact_s = 0, kernel_s = 0, kernel_pack_s = 0, ratio_kernel = 0, ratio_kernel_pack = 0,
         ratio_total = 0, ratio_kernel_p25 = 0, ratio_kernel_p75 = 0;
  int reps = 0;
};
/// `kernel` may reuse a dense operand packed by an earlier call (GemmCall::dense_version); `kernel_pack`
/// is the same call packing the dense operand itself (dense_version 0). ratio_kernel_pack =
/// time(OpenBLAS) / time(kernel_pack); ratio_total uses kernel_pack: time(OpenBLAS) / (time(compact) +
/// time(kernel_pack)), the cost of a call that starts from the dense activation and unpacked weights.
///
/// Intervals of at least g_min_interval_s: a function whose call takes less is called n times back to back
/// within one interval (n from its median of three single-call times, at most kMaxCallsPerInterval) and the
/// interval divided by n, as Google Benchmark times its iterations. One call per interval of a few us was
/// biased: the thread CPU clock is a system call here, and the calls that follow one run slower (1-5 us more
/// per interval than the clock's own measured cost), which understated the vgg-s ratios by 6-22 % at 97 %
/// (docs/bench/gemm.md, thirtieth session). The default, 50 us, takes only such calls (the vgg-s GEMMs, 3-30
/// us); longer calls keep one per interval, so that a repeated call does not find its operands warmer than a
/// single one would (a 100-200 us kernel ran up to 20 % faster in pairs). g_min_interval_s 0: one call per
/// interval. With --cache cold every interval is one call after flush_caches() (outside the interval), and at
/// most kMaxColdReps repetitions are made (each flush reads --flush-mib, 256 MiB by default).
constexpr int kMaxCallsPerInterval = 10000;
constexpr int kMaxColdReps = 31;
double g_min_interval_s = 50e-6;

template <class B, class Cp, class K, class KP>
Timing time_side_by_side(B&& blas, Cp&& compact, K&& kernel, KP&& kernel_pack, double min_total_s, int min_reps,
                         int max_reps) {
  blas();
  compact();
  kernel();
  kernel_pack();
  kernel();
  const double overhead = clock_overhead_s();
  auto timed = [&](auto&& f, int n) {
    if (g_cold) flush_caches();
    const double t0 = now_s();
    for (int i = 0; i < n; ++i) f();
    return std::max((now_s() - t0 - overhead) / n, 1e-9);
  };
  auto calls_per_interval = [&](auto&& f) {
    if (g_cold) return 1;
    const double t1 = median({timed(f, 1), timed(f, 1), timed(f, 1)});
    if (!(g_min_interval_s > 0) || t1 >= g_min_interval_s) return 1;
    return int(std::min<double>(kMaxCallsPerInterval, std::ceil(g_min_interval_s / t1)));
  };
  const int nb = calls_per_interval(blas), nc = calls_per_interval(compact), np = calls_per_interval(kernel_pack);
  const int nk = calls_per_interval(kernel);
  if (g_cold) max_reps = std::min(max_reps, kMaxColdReps);
  std::vector<double> tb, tc, tk, tp, rk, rp, rt;
  double total = 0;
  std::mt19937 order_rng(12345);
  int order[4] = {0, 1, 2, 3};
  for (int i = 0; i < max_reps && (i < min_reps || total < min_total_s); ++i) {
    double db = 0, dc = 0, dp = 0, dk = 0;
    std::shuffle(order, order + 4, order_rng);
    for (int j = 0; j < 4; ++j) switch (order[j]) {
        case 0: db = timed(blas, nb); break;
        case 1: dc = timed(compact, nc); break;
        case 2: dp = timed(kernel_pack, np); break;
        default: dk = timed(kernel, nk); break;
      }
    tb.push_back(db), tc.push_back(dc), tk.push_back(dk), tp.push_back(dp);
    rk.push_back(db / dk), rp.push_back(db / dp), rt.push_back(db / (dc + dp));
    total += db * nb + dc * nc + dk * nk + dp * np;
  }
  Timing t;
  t.blas_s = median(tb), t.compact_s = median(tc), t.kernel_s = median(tk), t.kernel_pack_s = median(tp);
  t.ratio_kernel = median(rk), t.ratio_kernel_pack = median(rp), t.ratio_total = median(rt);
  t.ratio_kernel_p25 = percentile(rk, 0.25), t.ratio_kernel_p75 = percentile(rk, 0.75);
  t.reps = int(tb.size());
  return t;
}

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

/// --vector-cost column: kernel ns per non-zero and 16 output floats (nnz x ceil(Q / 16) vector FMAs, Q the output
/// width per non-zero: N for a sparse A, M for a sparse B); "-" when there are no non-zeros, DENSE tiles, or the
/// whole call went to one sgemm (the call-level guard).
std::string ns_per_vector(const TileSparseStats& st, int q, double kernel_s) {
  if (st.nnz == 0 || st.tiles_dense > 0 || st.full_dense) return "-";
  return fmt("%.2f", kernel_s * 1e9 / (double(st.nnz) * double((q + 15) / 16)));
}

/// One printed row: a shape at one sparsity (or one trace layer), its timing and its check.
struct Row {
  std::string name, pass, sparsity;  ///< sparsity: the nominal % of a random row, "trace" for a trace row
  long long M = 0, N = 0, K = 0;
  double zero_pct = 0;  ///< measured % of zeros of the sparse operand as the kernel reads it
  std::string tiles;    ///< zero/sparse/dense tile counts (+pf: payload prefetched), or "sgemm" when the whole
                        ///< call ran one sgemm
  Timing t;
  bench::Check ck;
  std::string verdict, ns_per_vec, note;
};

std::string table_header_md() {
  return std::string("| layer | pass | M | N | K | sparsity % | zeros % | tiles zero/sparse/dense (+pf: payload "
                     "prefetched) | OpenBLAS ms | kernel ms | "
                     "ratio kernel | ratio kernel p25-p75 | kernel+pack ms | ratio kernel+pack | compact ms | "
                     "ratio compact+kernel+pack | reps | result vs OpenBLAS | target (kernel) |") +
         (g_vector_cost ? " kernel ns per vector |" : "") +
         "\n|---|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|" +
         (g_vector_cost ? "---:|" : "") + "\n";
}

void print_header_stdout() {
  std::printf("%-18s %-10s %5s %6s %5s %5s %5s %13s %9s %9s %7s %9s %7s %9s %7s %4s %s%s\n", "layer", "pass", "M", "N",
              "K", "sp%", "zero%", "tiles z/s/d", "blas_ms", "kern_ms", "ratio", "kpack_ms", "r_kpack", "compact",
              "r_total", "reps", "target", g_vector_cost ? "  ns/vec" : "");
}

std::string check_text(const bench::Check& ck) { return bench::check_text(ck, {"kernel", "kernel+pack"}); }

void print_row(const Row& r, std::ostream& md) {
  const Timing& t = r.t;
  const std::string verdict = r.ck.ok() ? r.verdict : check_text(r.ck);
  std::printf("%-18s %-10s %5lld %6lld %5lld %5s %5.1f %13s %9.3f %9.3f %7.2f %9.3f %7.2f %9.3f %7.2f %4d %s%s%s",
              r.name.c_str(), r.pass.c_str(), r.M, r.N, r.K, r.sparsity.c_str(), r.zero_pct, r.tiles.c_str(),
              t.blas_s * 1e3, t.kernel_s * 1e3, t.ratio_kernel, t.kernel_pack_s * 1e3, t.ratio_kernel_pack,
              t.compact_s * 1e3, t.ratio_total, t.reps, verdict.c_str(), r.note.empty() ? "" : " ", r.note.c_str());
  if (g_vector_cost) std::printf("  %s", r.ns_per_vec.c_str());
  std::printf("\n");
  std::fflush(stdout);
  md << "| " << r.name << " | " << r.pass << " | " << r.M << " | " << r.N << " | " << r.K << " | " << r.sparsity
     << " | " << fmt("%.1f", r.zero_pct) << " | " << r.tiles << " | " << fmt("%.3f", t.blas_s * 1e3) << " | "
     << fmt("%.3f", t.kernel_s * 1e3) << " | " << fmt("%.2f", t.ratio_kernel) << " | "
     << fmt("%.2f", t.ratio_kernel_p25) << "-" << fmt("%.2f", t.ratio_kernel_p75) << " | "
     << fmt("%.3f", t.kernel_pack_s * 1e3) << " | " << fmt("%.2f", t.ratio_kernel_pack) << " | "
     << fmt("%.3f", t.compact_s * 1e3) << " | " << fmt("%.2f", t.ratio_total) << " | " << t.reps << " | "
     << check_text(r.ck) << " | " << verdict << (r.note.empty() ? "" : " " + r.note) << " |"
     << (g_vector_cost ? " " + r.ns_per_vec + " |" : "") << "\n";
}

/// Zero/sparse/dense tile counts of the last call, or "sgemm" when it ran one sgemm of the whole call (all tiles
/// DENSE or the call-level guard: then both sides of the ratio run the same OpenBLAS routine).
std::string tiles_text(const TileSparseStats& st) {
  if (st.full_dense) return "sgemm";
  // "+pf": the wide gather prefetched the payload (TileSparseStats::payload_prefetched).
  return std::to_string(st.tiles_zero) + "/" + std::to_string(st.tiles_sparse) + "/" + std::to_string(st.tiles_dense) +
         (st.payload_prefetched ? "+pf" : "");
}

template <class Floats>
double zero_percent(const Floats& v) {
  std::size_t zeros = 0;
  for (float x : v) zeros += format::is_zero(x);
  return v.empty() ? 0.0 : 100.0 * double(zeros) / double(v.size());
}

/// Both checks of a row (bench/verify.h), outside the timed region: check_bound on the timed inputs, with the
/// timed calls themselves (`engine` on the row's compacted operand `tm` reusing its kept pack; `engine_pack`
/// packing the weights), then check_exact on integer-valued copies with the same zero pattern, which each engine
/// compacts itself (`engine` packs the copy's weights under a version of their own, then runs again reusing that
/// pack, and its second result is checked).
bench::Check check_row(const GemmCall& c, TileSparseEngine& engine, TileSparseEngine& engine_pack,
                       const format::TiledMatrix& tm) {
  static std::uint64_t exact_version = std::uint64_t(1) << 62;  // never one of the timed weights' versions
  static std::uint32_t exact_seed = 99;
  bench::Check ck = bench::check_bound(
      c, [&](const GemmCall& v) { engine.run_compacted(v, tm, engine.compact_orientation(v)); },
      [&](const GemmCall& v) {
        GemmCall vp = v;
        vp.dense_version = 0;
        engine_pack.run_compacted(vp, tm, engine_pack.compact_orientation(vp));
      });
  bench::check_exact(
      ck, c, exact_seed++,
      [&](const GemmCall& v) {
        GemmCall w = v;
        w.dense_version = c.dense_version != 0 ? ++exact_version : 0;
        const format::TiledMatrix t = engine.compact_operand(w);
        const Orientation o = engine.compact_orientation(w);
        engine.run_compacted(w, t, o);
        engine.run_compacted(w, t, o);
      },
      [&](const GemmCall& v) {
        GemmCall w = v;
        w.dense_version = 0;
        const format::TiledMatrix t = engine_pack.compact_operand(w);
        engine_pack.run_compacted(w, t, engine_pack.compact_orientation(w));
      });
  return ck;
}

/// The targets, at the sparsities it names: >= 1 at 0-50 %, >= 3 at 90 %, >= 8 at 97 %; none elsewhere
/// (a 99 % or 100 % row is not scored against the 97 % target).
double target_for(double sparsity) {
  if (sparsity <= 0.5) return 1.0;
  if (std::fabs(sparsity - 0.9) < 1e-9) return 3.0;
  if (std::fabs(sparsity - 0.97) < 1e-9) return 8.0;
  return 0.0;
}

int run_calibrate(const TileSparseOptions& opt, std::ostream& md) {
  const Calibration cal = calibrate_threshold(opt);
  std::printf("threshold calibration (ResNet-18 conv3_x at batch 1 as spartan-train issues it: hw=784 cout=128 "
              "ckk=1152, sparse A; %ux%u tiles, %s, 1 thread; dense operand packed in every call)\n",
              opt.tile_rows, opt.tile_cols, opt.sparse_format == format::TileFormat::Ell ? "ELL" : "BITMAP");
  std::printf("%8s %12s %12s   %-15s %-15s %-15s\n", "density", "sparse_ms", "dense_ms", "fwd sp/dn",
              "bwd-data sp/dn", "bwd-wt sp/dn");
  md << "| density | sparse path ms (3 passes) | dense path ms (3 passes) | fwd sparse / dense | bwd-data sparse / "
        "dense | bwd-weight sparse / dense |\n|---:|---:|---:|---:|---:|---:|\n";
  for (std::size_t i = 0; i < cal.density.size(); ++i) {
    std::printf("%8.2f %12.3f %12.3f", cal.density[i], cal.sparse_s[i] * 1e3, cal.dense_s[i] * 1e3);
    md << "| " << cal.density[i] << " | " << fmt("%.3f", cal.sparse_s[i] * 1e3) << " | "
       << fmt("%.3f", cal.dense_s[i] * 1e3);
    for (std::size_t k = 0; k < 3; ++k) {
      const std::string v =
          fmt("%.3f", cal.pass_sparse_s[k][i] * 1e3) + " / " + fmt("%.3f", cal.pass_dense_s[k][i] * 1e3);
      std::printf("   %-15s", v.c_str());
      md << " | " << v;
    }
    std::printf("\n");
    md << " |\n";
  }
  std::printf("crossover per pass: fwd %.2f, bwd-data %.2f, bwd-weight %.2f\n", cal.pass_threshold[0],
              cal.pass_threshold[1], cal.pass_threshold[2]);
  std::printf("crossover threshold (three passes summed): %.2f\n", cal.threshold);
  md << "\nCrossover per pass: fwd " << cal.pass_threshold[0] << ", bwd-data " << cal.pass_threshold[1]
     << ", bwd-weight " << cal.pass_threshold[2] << ". Crossover threshold (three passes summed): **"
     << cal.threshold << "**\n";
  return 0;
}

#ifdef SPARTAN_BENCH_HAVE_TRACE
/// Forward GEMM of every conv/FC layer of a trace, with the layer's recorded activation (`act` of the last
/// iteration) as the sparse operand, laid out as the random rows' forward GEMM of `layout` (shapes.h):
/// col = im2col(act) [C*KH*KW x N_b*OH*OW] (docs/trace-format.md, 4.1) and random weights W [Cout x C*KH*KW];
/// train: Y^T = col^T W^T (op T T, sparse A = col); caffe: Y = W col (op N N, sparse B = col). The zeros %
/// column counts the im2col matrix, padding zeros included; the note gives the activation's own zeros and
/// says when the layer's input is not a ReLU output (the first layer reads the image). Returns the number of
/// layers measured; `checks_failed` counts the rows whose results failed a check, `sgemm_rows` those that ran
/// one sgemm of the whole call (verdict "= sgemm"; trace rows have no target).
int run_trace(const std::string& path, bench::Layout layout, TileSparseEngine& engine, TileSparseEngine& engine_pack,
              double min_time, std::ostream& md, int& checks_failed, int& sgemm_rows) {
  trace::TraceReader r(path);
  const std::vector<trace::LayerInfo> layers = trace::read_layers(r);
  if (layers.empty()) throw InputError(path + ": no 'layers' metadata (not a spartan-train trace?)");
  std::map<std::int64_t, std::string> act;  // layer -> tensor name of its last-iteration activation
  for (const auto& k : r.keys())
    if (k.kind == "act") act[k.layer] = k.name();
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1, 1);
  int measured = 0;
  const bool train = layout == bench::Layout::Train;
  for (std::size_t li = 0; li < layers.size(); ++li) {
    const trace::LayerInfo& L = layers[li];
    const auto it = act.find(L.index);
    if (it == act.end() || (L.type != "conv" && L.type != "fc") || L.input.empty()) continue;
    const std::vector<float> x = r.to_f32(it->second);
    const trace::Im2colGeometry& g = L.im2col;
    const std::int64_t batch = L.input[0], HW = L.fwd.M, Cout = L.fwd.N, CKK = L.fwd.K;
    if (HW != batch * g.OH * g.OW || CKK != g.C * g.KH * g.KW || std::int64_t(x.size()) != batch * g.C * g.H * g.W)
      throw InputError(path + ": layer " + std::to_string(L.index) + ": act / im2col / gemm shapes disagree");
    // col [CKK x HW]: column (b, oy, ox), row (c, kh, kw); zero where the window reads padding.
    AlignedVector<float> col(std::size_t(CKK) * HW, 0.0f), W(std::size_t(Cout) * CKK), C(std::size_t(HW) * Cout);
    for (std::int64_t b = 0; b < batch; ++b)
      for (std::int64_t oy = 0; oy < g.OH; ++oy)
        for (std::int64_t ox = 0; ox < g.OW; ++ox) {
          const std::int64_t p = (b * g.OH + oy) * g.OW + ox;
          for (std::int64_t c = 0; c < g.C; ++c)
            for (std::int64_t kh = 0; kh < g.KH; ++kh)
              for (std::int64_t kw = 0; kw < g.KW; ++kw) {
                const std::int64_t iy = oy * g.stride - g.pad + kh, ix = ox * g.stride - g.pad + kw;
                if (iy >= 0 && iy < g.H && ix >= 0 && ix < g.W)
                  col[std::size_t((c * g.KH + kh) * g.KW + kw) * HW + p] =
                      x[std::size_t(((b * g.C + c) * g.H + iy) * g.W + ix)];
              }
        }
    for (auto& v : W) v = u(rng);
    const int M = int(train ? HW : Cout), N = int(train ? Cout : HW), K = int(CKK);
    GemmCall c = train ? GemmCall{Op::T, Op::T, M, N, K, 1.0f, 0.0f, col.data(), M, W.data(), K, C.data(), N,
                                  SparseOperand::A}
                       : GemmCall{Op::N, Op::N, M, N, K, 1.0f, 0.0f, W.data(), K, col.data(), N, C.data(), N,
                                  SparseOperand::B};
    GemmCall c_pack = c;
    c.dense_version = std::uint64_t(measured) + 1;  // the weights: fixed during the measurement
    format::TiledMatrix tm;
    const auto ta = c.op_a == Op::N ? CblasNoTrans : CblasTrans, tb = c.op_b == Op::N ? CblasNoTrans : CblasTrans;
    const Timing t = time_side_by_side(
        [&] { cblas_sgemm(CblasRowMajor, ta, tb, M, N, K, 1.0f, c.A, c.lda, c.B, c.ldb, 0.0f, C.data(), N); },
        [&] { tm = engine.compact_operand(c); }, [&] { engine.run_compacted(c, tm, engine.compact_orientation(c)); },
        [&] { engine_pack.run_compacted(c_pack, tm, engine_pack.compact_orientation(c_pack)); }, 3 * min_time, 7, 401);
    const TileSparseStats st = engine.last_stats();
    Row row;
    row.ck = check_row(c, engine, engine_pack, tm);
    checks_failed += !row.ck.ok();
    row.name = "trace:" + L.name, row.pass = "fwd", row.sparsity = "trace";
    row.M = M, row.N = N, row.K = K, row.zero_pct = zero_percent(col), row.tiles = tiles_text(st), row.t = t;
    row.verdict = st.full_dense ? "= sgemm" : "-";
    sgemm_rows += st.full_dense;
    row.note = "(act " + fmt("%.1f", zero_percent(x)) + " % zero";
    if (li == 0)
      row.note += "; the input image, not a ReLU output";
    else if (!layers[li - 1].relu_after)
      row.note += "; not after a ReLU";
    row.note += ")";
    row.ns_per_vec = ns_per_vector(st, train ? N : M, t.kernel_s);
    print_row(row, md);
    ++measured;
  }
  if (measured == 0) throw InputError(path + ": no conv/FC layer with an 'act' tensor");
  return measured;
}
#endif

}  // namespace

int main(int argc, char** argv) {
  return run_cli("bench-gemm", [&]() -> int {
    po::options_description desc("bench-gemm options");
    std::string tile = std::to_string(kGemmTileRows) + "x" + std::to_string(kGemmTileCols), fmt_name = "ell", md_path, filter;
    std::string sparsities = "0,0.5,0.7,0.9,0.97";
    double threshold = kCalibratedThreshold, min_time = 0.2, min_interval_us = 50;
    int flush_mib = 256;
    double guard_fraction = TileSparseOptions{}.guard_fraction;
    int batch = 1, seed = 1, gather_slice_kib = 0;
    bool all_passes = false, calibrate = false, quick = false;
    std::string trace_path, pass_filter, clock_name = "wall", cache_name = "warm", isa_name = "auto", layout_name = "train", tk_name = "auto";
    std::string payload_prefetch_name = "on";
    const std::string guard_help = "whole-call guard: one sgemm of the whole call at operand density >= this x "
                                   "threshold (default: TileSparseOptions::guard_fraction, " +
                                   fmt("%.2f", guard_fraction) + ")";
    const std::string tile_help = "tile size RxC (default: the engine default, " + tile + ")";
    desc.add_options()("help,h", "this help")("tile", po::value(&tile), tile_help.c_str())(
        "format", po::value(&fmt_name), "sparse tile format: ell | bitmap")(
        "threshold", po::value(&threshold), "density threshold (default: calibrated constant)")(
        "guard-fraction", po::value(&guard_fraction), guard_help.c_str())(
        "sparsity", po::value(&sparsities), "comma-separated sparsities (default 0,0.5,0.7,0.9,0.97)")(
        "batch", po::value(&batch),
        "batch size (default 1): multiplies the output pixels HW, i.e. M (fwd, bwd-data) or K (bwd-weight) in the "
        "train layout, N (fwd, bwd-data) or K (bwd-weight) in the caffe layout")(
        "all-passes", po::bool_switch(&all_passes), "also backward-data and backward-weight GEMMs")(
        "filter", po::value(&filter), "only shapes whose name contains this")(
        "pass", po::value(&pass_filter), "only this pass: fwd | bwd-data | bwd-weight")(
        "min-time", po::value(&min_time),
        "each row repeats until its timed calls add up to 3x this many seconds (default 0.2; the four timed "
        "functions together), at least 7 and at most 401 repetitions (31 with --cache cold)")(
        "min-interval-us", po::value(&min_interval_us),
        "shortest timed interval in us (default 50): a call shorter than this is repeated back to back within "
        "one clock interval and the interval divided by the count (as Google Benchmark does); 0: one call per "
        "interval")(
        "quick", po::bool_switch(&quick), "the first layer of each network, and ResNet-18 conv3_x")("seed", po::value(&seed), "RNG seed")(
        "md", po::value(&md_path), "also write the table as Markdown to this file (atomic)")(
        "calibrate", po::bool_switch(&calibrate), "run the density-threshold calibration instead")(
        "clock", po::value(&clock_name),
        "wall (default) | thread: CPU time of this thread, which leaves out the time other processes run on this "
        "core (not their cache and memory-bandwidth interference)")(
        "cache", po::value(&cache_name),
        "warm (default): repetitions on the same buffers, operands cached wherever they fit | cold: before every "
        "timed call, read --flush-mib of other data, so that operands come from memory")(
        "flush-mib", po::value(&flush_mib),
        "--cache cold: MiB read before every timed call (default 256; make it several times the last-level cache "
        "one core uses)")(
        "isa", po::value(&isa_name),
        "tile-sparse kernels: auto (default) | avx512 (the scatter kernel, the wide direct row gathers, the 16x16 "
        "transposed store and, with AVX-512 BW/VL, the vectorised compaction; the list gather and the streamed C^T "
        "store stay AVX2) | avx2 | portable; "
        "the OpenBLAS baseline's kernels are chosen by OPENBLAS_CORETYPE")(
        "layout", po::value(&layout_name),
        "train (default): the GEMMs as spartan-train issues them, Y and dY one row per output pixel, sparse operand A "
        "(fwd Y^T = col^T W^T, bwd-data dcol^T = dY^T W, bwd-weight dW^T = col dY^T) | caffe: Y = W col, one row per "
        "output channel, sparse operand B (sw/gemm/bench/shapes.h)")(
        "gather-slice-kib", po::value(&gather_slice_kib),
        "the row gather's D slice per R block in KiB (TileSparseOptions::gather_slice_bytes); 0 (default): from "
        "this CPU's L2 size")(
        "payload-prefetch", po::value(&payload_prefetch_name),
        "on (default): the AVX-512 wide gather prefetches the next band's ELL payload while it gathers a band (payloads "
        "larger than L1d) | "
        "off: never (TileSparseOptions::payload_prefetch)")(
        "transposed-kernel", po::value(&tk_name),
        "kernel when the sparse operand is read transposed (TileSparseOptions::transposed_kernel): auto (default) | "
        "scatter | gather | row-gather (the train layout's forward: compact op(A) = col^T, then the wide row gather "
        "in R blocks; its compaction reads col transposed, see the compact column)")(
        "trace", po::value(&trace_path), "also: forward GEMMs with the real activations of this .sptrace")(
        "vector-cost", po::bool_switch(&g_vector_cost),
        "also print this core's cost of one 16-float vector gathered from L1 and from L2 (ns), and per row the "
        "kernel's ns per non-zero and 16 output floats (ns/vec), to compare against them");
    po::variables_map vm;
    // The tools' one parser: an empty value, a positional argument or "-1" for an unsigned option is refused
    // (bench-gemm took `--md ''` as "no Markdown" and ignored a positional argument; second review, fortieth session).
    if (!spartan::parse_options_or_help(argc, argv, desc, vm)) return 0;
    TileSparseOptions opt;
    const format::TileSize ts = format::parse_tile_size(tile, "--tile");  // RxC, sides 1..65535, nothing else
    opt.tile_rows = ts.rows, opt.tile_cols = ts.cols;
    if (fmt_name == "ell")
      opt.sparse_format = format::TileFormat::Ell;
    else if (fmt_name == "bitmap")
      opt.sparse_format = format::TileFormat::Bitmap;
    else
      throw InputError("--format must be ell or bitmap");
    if (batch < 1) throw InputError("--batch must be >= 1");
    if (seed < 0) throw InputError("--seed must be a non-negative integer, got " + std::to_string(seed));
    if (layout_name != "train" && layout_name != "caffe")
      throw InputError("--layout must be train or caffe, got '" + layout_name + "'");
    const bench::Layout layout = layout_name == "train" ? bench::Layout::Train : bench::Layout::Caffe;
    if (clock_name != "wall" && clock_name != "thread") throw InputError("--clock must be wall or thread");
    if (cache_name != "warm" && cache_name != "cold")
      throw InputError("--cache must be warm or cold, got '" + cache_name + "'");
    if (flush_mib < 1 || flush_mib > 65536) throw InputError("--flush-mib must be 1..65536, got " + std::to_string(flush_mib));
    if (vm.count("flush-mib") > 0 && cache_name != "cold") throw InputError("--flush-mib applies to --cache cold only");
    if (calibrate && cache_name != "warm") throw InputError("--cache applies to the table, not to --calibrate");
    if (!pass_filter.empty() && pass_filter != "fwd" && pass_filter != "bwd-data" && pass_filter != "bwd-weight")
      throw InputError("--pass must be fwd, bwd-data or bwd-weight, got '" + pass_filter + "'");
    if (!(min_time > 0) || !std::isfinite(min_time)) throw InputError("--min-time must be a positive number of seconds");
    if (!(min_interval_us >= 0) || !(min_interval_us <= 1e6))
      throw InputError("--min-interval-us must be a number of microseconds in [0, 1e6]");
    g_min_interval_s = min_interval_us * 1e-6;
    if (!md_path.empty()) check_output_file("--md", md_path);  // before minutes of measurement, not after
    spartan::check_outputs_not_inputs({{"--md", md_path}}, {{"--trace", trace_path}});
    g_thread_clock = clock_name == "thread";
    g_cold = cache_name == "cold";
    if (isa_name == "auto")
      opt.isa = Isa::Auto;
    else if (isa_name == "avx512")
      opt.isa = Isa::Avx512;
    else if (isa_name == "avx2")
      opt.isa = Isa::Avx2;
    else if (isa_name == "portable")
      opt.isa = Isa::Portable;
    else
      throw InputError("--isa must be auto, avx512, avx2 or portable, got '" + isa_name + "'");
    if (tk_name == "auto")
      opt.transposed_kernel = TransposedKernel::Auto;
    else if (tk_name == "scatter")
      opt.transposed_kernel = TransposedKernel::Scatter;
    else if (tk_name == "gather")
      opt.transposed_kernel = TransposedKernel::Gather;
    else if (tk_name == "row-gather")
      opt.transposed_kernel = TransposedKernel::RowGather;
    else
      throw InputError("--transposed-kernel must be auto, scatter, gather or row-gather, got '" + tk_name + "'");
    if (!(threshold >= 0) || !std::isfinite(threshold))
      throw InputError("--threshold must be a finite density >= 0, got " + std::to_string(threshold));
    opt.threshold = threshold;
    if (!(guard_fraction >= 0) || !std::isfinite(guard_fraction))
      throw InputError("--guard-fraction must be a finite number >= 0, got " + std::to_string(guard_fraction));
    opt.guard_fraction = guard_fraction;
    if (gather_slice_kib < 0 || std::size_t(gather_slice_kib) > (kMaxGatherSliceBytes >> 10))
      throw InputError("--gather-slice-kib must be 0 (from the L2 size) or 1.." + std::to_string(kMaxGatherSliceBytes >> 10) +
                       ", got " + std::to_string(gather_slice_kib));
    opt.gather_slice_bytes = std::size_t(gather_slice_kib) << 10;
    if (payload_prefetch_name != "on" && payload_prefetch_name != "off")
      throw InputError("--payload-prefetch must be on or off, got '" + payload_prefetch_name + "'");
    opt.payload_prefetch = payload_prefetch_name == "on";
    opt.num_threads = 1;
    openblas_set_num_threads(1);
    omp_set_num_threads(1);
    std::vector<double> sp;
    {
      std::istringstream ss(sparsities);
      std::string tok;
      while (std::getline(ss, tok, ',')) {
        std::size_t used = 0;
        double v = -1;
        try {
          v = std::stod(tok, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used != tok.size() || !(v >= 0 && v <= 1)) throw InputError("--sparsity: '" + tok + "' is not in [0, 1]");
        sp.push_back(v);
      }
      if (sp.empty()) throw InputError("--sparsity: empty list");
    }
    std::ostringstream md;
    if (calibrate) {
      run_calibrate(opt, md);
      if (!md_path.empty()) write_file_atomic(md_path, md.str());
      return 0;
    }
    // `engine` keeps the packed weights between calls (GemmCall::dense_version); `engine_pack` gets
    // dense_version 0 and packs them in every call. Two engines, so that neither evicts the other's pack.
    TileSparseEngine engine(opt), engine_pack(opt);
    const std::string blas_core = openblas_core();
    if (g_cold) g_flush_words.assign((std::size_t(flush_mib) << 20) / sizeof(std::uint64_t), 1);
    const long l3 = reported_l3_bytes();
    const std::string intervals =
        g_cold ? "cold caches: one call per timed interval, each after reading " + std::to_string(flush_mib) +
                     " MiB of other data (the OS reports an L3 of " +
                     (l3 > 0 ? std::to_string(l3 >> 20) + " MiB" : std::string("unknown size")) + ")"
        : g_min_interval_s > 0 ? "warm caches, timed intervals >= " + fmt("%.0f", min_interval_us) +
                                     " us (shorter calls repeated within one)"
                               : "warm caches, one call per timed interval";
    std::printf("bench-gemm: single thread, tiles %ux%u, sparse format %s, threshold %.2f (whole-call guard at %.2f), "
                "isa %s, batch %d, %s clock, %s, layout %s, gather slice %zu KiB, transposed kernel %s, "
                "payload prefetch %s (+pf in the tiles column: the row prefetched it), OpenBLAS core %s\n",
                opt.tile_rows, opt.tile_cols, fmt_name.c_str(), opt.threshold, opt.guard_fraction * opt.threshold,
                engine.isa_name().c_str(), batch,
                g_thread_clock ? "thread CPU-time" : "wall", intervals.c_str(), layout_name.c_str(),
                engine.gather_slice_bytes() >> 10, tk_name.c_str(), payload_prefetch_name.c_str(), blas_core.c_str());
    const std::string inputs =
        "random rows: dense operand uniform in [-1, 1]; sparse operand zero with probability sp% per element, "
        "independently (no spatial or channel clustering), else uniform in [-1, 1]; zero% is the measured fraction. "
        "Every row's results are checked against OpenBLAS outside the timed region: within the fp32 bound 8 K 2^-24 "
        "sum |a b| on these inputs, and exactly on integer-valued copies with the same zero pattern";
    std::printf("%s\n", inputs.c_str());
    md << "OpenBLAS core: " << blas_core << "; tile-sparse ISA: " << engine.isa_name() << "; tiles " << opt.tile_rows
       << "x" << opt.tile_cols << " " << fmt_name << ", threshold " << opt.threshold << "; batch " << batch
       << "; layout: " << layout_name << "; gather slice: " << (engine.gather_slice_bytes() >> 10)
       << " KiB; transposed kernel: " << tk_name << "; payload prefetch: " << payload_prefetch_name
       << " (+pf in the tiles column: the row prefetched it); " << (g_thread_clock ? "thread CPU-time" : "wall")
       << " clock; "
       << intervals << ".\n\n" << inputs << ".\n\n";
    if (const std::string note = baseline_isa_note(blas_core); !note.empty()) {
      std::printf("note: %s\n", note.c_str());
      md << "Note: " << note << "\n\n";
    }
    if (g_vector_cost) {
      const double l1 = gather_vector_ns(32), l2 = gather_vector_ns(512);
      if (l1 > 0) {
        std::printf("vector cost: %.2f ns (L1, 32 KiB) / %.2f ns (L2, 512 KiB) per 16-float vector loaded from a random "
                    "1 KiB row and FMA'd (16 accumulators)\n", l1, l2);
        md << "Vector cost (16-float vector from a random 1 KiB row, FMA'd into 16 accumulators): " << fmt("%.2f", l1)
           << " ns from L1 (32 KiB), " << fmt("%.2f", l2) << " ns from L2 (512 KiB).\n\n";
      } else {
        std::printf("vector cost: n/a (no AVX-512F)\n");
      }
    }
    print_header_stdout();
    md << table_header_md();
    int checks_failed = 0, trace_rows = 0, trace_sgemm_rows = 0;
    if (!trace_path.empty()) {
#ifdef SPARTAN_BENCH_HAVE_TRACE
      trace_rows = run_trace(trace_path, layout, engine, engine_pack, min_time, md, checks_failed, trace_sgemm_rows);
#else
      throw InputError("--trace: this build has no trace library");
#endif
    }
    std::vector<bench::ConvShape> layers = bench::conv_layers();
    if (quick) {
      std::vector<bench::ConvShape> q;
      std::map<std::string, int> seen;
      for (const auto& l : layers)
        if (seen[l.net]++ == 0 || l.layer == "conv3_x") q.push_back(l);
      layers = q;
    }
    // The shapes --filter and --pass select; none would measure nothing and exit 0.
    std::vector<bench::GemmShape> shapes;
    for (const auto& s : bench::gemm_shapes(layers, batch, all_passes, layout))
      if ((filter.empty() || s.name.find(filter) != std::string::npos) &&
          (pass_filter.empty() || pass_filter == bench::pass_name(s.pass)))
        shapes.push_back(s);
    if (shapes.empty() && trace_path.empty())
      throw InputError("--filter '" + filter + "'" + (pass_filter.empty() ? "" : " with --pass " + pass_filter) +
                       " selects no GEMM shape" + (all_passes || pass_filter.empty() ? "" : " (add --all-passes?)"));
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-1, 1);
    std::uniform_real_distribution<double> p(0, 1);
    std::map<double, std::vector<double>> ratios, ratios_pack, ratios_total;
    // Rows with a target: met / measured among those that ran the tile-sparse kernels; the rows the call-level
    // guard (or all-DENSE tiles) sent to one sgemm run the baseline's own routine, and are counted apart.
    int met = 0, with_target = 0, guard_rows = 0;
    double guard_min = 1e300, guard_max = 0;
    std::uint64_t versions = 0;
    for (const auto& s : shapes) {
      const int ar = s.op_a == Op::N ? s.M : s.K, ac = s.op_a == Op::N ? s.K : s.M;
      const int br = s.op_b == Op::N ? s.K : s.N, bc = s.op_b == Op::N ? s.N : s.K;
      // 64-byte aligned, as spartan-train's tensors, parameters and GEMM buffers (spartan/common/aligned.h).
      AlignedVector<float> A(std::size_t(ar) * ac), B(std::size_t(br) * bc), C(std::size_t(s.M) * s.N);
      AlignedVector<float>& dense = s.sparse == SparseOperand::A ? B : A;
      AlignedVector<float>& sparse = s.sparse == SparseOperand::A ? A : B;
      for (auto& v : dense) v = u(rng);
      const std::uint64_t weights_version = ++versions;
      for (double sparsity : sp) {
        for (auto& v : sparse) v = p(rng) < sparsity ? 0.0f : u(rng);
        GemmCall c{s.op_a, s.op_b, s.M, s.N, s.K, 1.0f, 0.0f, A.data(), ac, B.data(), bc, C.data(), s.N, s.sparse};
        const GemmCall c_pack = c;
        // Forward and backward-data: the dense operand is the weights, fixed within a training step (one
        // version per weight array here); backward-weight: the dense operand dY changes every call, never reused.
        if (s.pass != bench::Pass::BwdWeight) c.dense_version = weights_version;
        format::TiledMatrix tm;
        const Timing t = time_side_by_side(
            [&] {
              cblas_sgemm(CblasRowMajor, s.op_a == Op::N ? CblasNoTrans : CblasTrans,
                          s.op_b == Op::N ? CblasNoTrans : CblasTrans, s.M, s.N, s.K, 1.0f, A.data(), ac, B.data(), bc,
                          0.0f, C.data(), s.N);
            },
            [&] { tm = engine.compact_operand(c); }, [&] { engine.run_compacted(c, tm, engine.compact_orientation(c)); },
            [&] { engine_pack.run_compacted(c_pack, tm, engine_pack.compact_orientation(c_pack)); }, 3 * min_time, 7, 401);
        const TileSparseStats st = engine.last_stats();
        Row row;
        row.ck = check_row(c, engine, engine_pack, tm);
        checks_failed += !row.ck.ok();
        const double ratio = t.ratio_kernel, tgt = target_for(sparsity);
        // A row whose results are wrong measures nothing: left out of the means and the target count.
        if (row.ck.ok()) {
          ratios[sparsity].push_back(ratio);
          ratios_total[sparsity].push_back(t.ratio_total);
          ratios_pack[sparsity].push_back(t.ratio_kernel_pack);
        }
        row.verdict = "-";
        if (row.ck.ok() && st.full_dense) {
          ++guard_rows, guard_min = std::min(guard_min, ratio), guard_max = std::max(guard_max, ratio);
          row.verdict = "= sgemm";
        } else if (row.ck.ok() && tgt > 0) {
          ++with_target;
          met += ratio >= tgt;
          row.verdict = (ratio >= tgt ? ">=" : "<") + fmt("%.0f", tgt) + (ratio >= tgt ? " ok" : " MISS");
        }
        row.name = s.name, row.pass = bench::pass_name(s.pass), row.sparsity = fmt("%.0f", sparsity * 100);
        row.M = s.M, row.N = s.N, row.K = s.K, row.zero_pct = zero_percent(sparse), row.tiles = tiles_text(st);
        row.t = t;
        row.ns_per_vec = ns_per_vector(st, s.sparse == SparseOperand::A ? s.N : s.M, t.kernel_s);
        print_row(row, md);
      }
    }
    auto geo = [](const std::vector<double>& v) {
      double lg = 0;
      for (double r : v) lg += std::log(r);
      return std::exp(lg / double(v.size()));
    };
    if (!ratios.empty()) {
      std::printf("\ngeometric-mean ratio per sparsity (kernel | kernel+pack | compact+kernel+pack):");
      md << "\n| sparsity % | geo-mean ratio kernel | min | max | geo-mean ratio kernel+pack | geo-mean ratio "
            "compact+kernel+pack | min | max |\n"
            "|---:|---:|---:|---:|---:|---:|---:|---:|\n";
    }
    for (const auto& [sv, v] : ratios) {
      const std::vector<double>& w = ratios_total[sv];
      const std::vector<double>& kp = ratios_pack[sv];
      std::printf("  %.0f%%: %.2f | %.2f | %.2f", sv * 100, geo(v), geo(kp), geo(w));
      md << "| " << fmt("%.0f", sv * 100) << " | " << fmt("%.2f", geo(v)) << " | "
         << fmt("%.2f", *std::min_element(v.begin(), v.end())) << " | "
         << fmt("%.2f", *std::max_element(v.begin(), v.end())) << " | " << fmt("%.2f", geo(kp)) << " | "
         << fmt("%.2f", geo(w)) << " | "
         << fmt("%.2f", *std::min_element(w.begin(), w.end())) << " | "
         << fmt("%.2f", *std::max_element(w.begin(), w.end())) << " |\n";
    }
    std::string summary = "targets met: " + std::to_string(met) + " of " + std::to_string(with_target) +
                          " measurements that ran the tile-sparse kernels";
    if (guard_rows > 0)
      summary += "; " + std::to_string(guard_rows) +
                 " ran one sgemm of the whole call (the call-level guard, or all tiles DENSE: the baseline's own "
                 "routine, ratio " + fmt("%.2f", guard_min) + "-" + fmt("%.2f", guard_max) + ", i.e. 1 up to noise)";
    if (trace_rows > 0)
      summary += "; trace rows (no target): " + std::to_string(trace_sgemm_rows) + " of " + std::to_string(trace_rows) +
                 " ran one sgemm of the whole call";
    std::printf("\n%s\n", summary.c_str());
    summary[0] = 'T';
    md << "\n" << summary << ".\n";
    const std::string checked =
        checks_failed == 0
            ? "every row's tile-sparse results (kernel and kernel+pack) agree with OpenBLAS within the fp32 bound "
              "8 K 2^-24 sum |a b|, and exactly on integer-valued inputs with the same zero pattern"
            : std::to_string(checks_failed) +
                  " rows' tile-sparse results differ from OpenBLAS (WRONG above; left out of the means and the target "
                  "count): their times measure a wrong result";
    std::printf("check: %s\n", checked.c_str());
    md << "\nCheck: " << checked << ".\n";
    if (!md_path.empty()) write_file_atomic(md_path, md.str());
    return checks_failed == 0 ? 0 : 1;
  });
}
