// CPU tile-sparse GEMM engine (design and loop structure: sw/gemm/README.md).
//
// The call is viewed as Out[P x Q] += S[P x R] * D[R x Q] with S the logical sparse operand:
//   sparse A: P = M, R = K, Q = N, Out = C,   S = op(A),   D = op(B)
//   sparse B: P = N, R = K, Q = M, Out = C^T, S = op(B)^T, D = op(A)^T
// S is the stored (compacted) matrix or its transpose. A "band" is the set of tiles covering one tile
// range of P (a tile row of the stored matrix, or a tile column when S is its transpose).
//  - DENSE tiles: maximal runs of adjacent DENSE tiles along R in a band become one sgemm on the
//    original operands (in place, no copy); consecutive bands with identical runs share one call.
//  - ELL/BITMAP tiles: the non-zeros are gathered into a row list over P (Entry = {r, alpha*v}) and the
//    gather micro-kernel accumulates Out rows from rows of D (vectorised along Q).
//  - Call-level guard: overall density >= guard_fraction x threshold -> one sgemm of the whole call.
#include <cblas.h>
#include <omp.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

#include <algorithm>
#include <cmath>
#include <cassert>
#include <chrono>
#include <cstdint>
#include <cstring>

#include "compact_fast.h"
#include "cpu_kernels.h"
#include "row_lists.h"
#include "spartan/common/error.h"
#include "spartan/gemm/tile_sparse.h"

namespace spartan::gemm {

using format::TileFormat;
using format::TiledMatrix;
using format::TileHeader;
using detail::band_slots;
using detail::build_cols;
using detail::build_rows;

namespace {
// The first 64-byte boundary (cache line) at or after p; the buffer must hold 15 floats to spare.
float* first_line(float* p) {
  return p + (16 - reinterpret_cast<std::uintptr_t>(p) / sizeof(float) % 16) % 16;
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Pulls rows [r0, r1) x [0, qn) of D (row stride ldd) into L2 in address order before the gather visits
// them in data-dependent order: a D slice that is not cached would otherwise be fetched from L3 / DRAM by
// random row accesses (latency-bound); this turns it into one sequential read the prefetchers can stream.
void prefetch_rows_l2(const float* D, std::size_t ldd, int r0, int r1, int qn) {
  const std::size_t row_bytes = std::size_t(qn) * sizeof(float);
  const char* base = reinterpret_cast<const char*>(D);
  if (ldd == std::size_t(qn)) {  // contiguous slice
    const char* p = base + std::size_t(r0) * row_bytes;
    for (std::size_t off = 0, n = std::size_t(r1 - r0) * row_bytes; off < n; off += 64) __builtin_prefetch(p + off, 0, 2);
    return;
  }
  for (int r = r0; r < r1; ++r) {
    const char* p = base + std::size_t(r) * ldd * sizeof(float);
    for (std::size_t off = 0; off < row_bytes; off += 64) __builtin_prefetch(p + off, 0, 2);
  }
}

// The work-sharing of one team() body: with several threads each loop is an OpenMP `omp for` of the team's
// region (ending in its implicit barrier); serial, it is a plain loop and no OpenMP construct runs
// at all, so that an engine of one thread may be called from anywhere: inside a caller's parallel region,
// active or not, or inside one of the caller's own work-sharing loops (where an orphaned `omp for` of ours
// would bind to the caller's team and share, or skip, its iterations). thread() indexes per-thread buffers.
class Team {
 public:
  explicit Team(bool serial) : serial_(serial) {}
  int thread() const { return serial_ ? 0 : omp_get_thread_num(); }
  template <class F>
  void for_static(long n, F&& f) const {
    if (serial_) {
      for (long i = 0; i < n; ++i) f(i);
      return;
    }
#pragma omp for schedule(static)
    for (long i = 0; i < n; ++i) f(i);
  }
  template <class F>
  void for_dynamic(long n, int chunk, F&& f) const {
    if (serial_) {
      for (long i = 0; i < n; ++i) f(i);
      return;
    }
#pragma omp for schedule(dynamic, chunk)
    for (long i = 0; i < n; ++i) f(i);
  }
  /// total += v, atomically in a team of several threads.
  void accumulate(double& total, double v) const {
    if (serial_) {
      total += v;
      return;
    }
#pragma omp atomic
    total += v;
  }

 private:
  bool serial_;
};

// Clears MXCSR.DAZ (denormals-are-zero, bit 6) on this thread for its scope and restores it after. The kernels'
// float tests for ELL padding and empty rows (v == 0.0f, _CMP_NEQ_UQ) are exact only with denormals taken as
// they are: with DAZ on (start-up code of -ffast-math / -Ofast programs sets it) a stored denormal activation
// compared equal to 0 and the kernels dropped the rest of its ELL row (fortieth session's review: C = 0 for an
// expected 10, every ISA). The format's own zero test is on the bits (format::is_zero).
class DenormalsAsIs {
 public:
#if defined(__x86_64__) || defined(__i386__)
  DenormalsAsIs() : saved_(_mm_getcsr()) {
    if (saved_ & kDaz) _mm_setcsr(saved_ & ~kDaz);
  }
  ~DenormalsAsIs() {  // sets DAZ again and nothing else: the exception flags the call raised stay (second review)
    if (saved_ & kDaz) _mm_setcsr(_mm_getcsr() | kDaz);
  }
  DenormalsAsIs(const DenormalsAsIs&) = delete;
  DenormalsAsIs& operator=(const DenormalsAsIs&) = delete;

 private:
  static constexpr unsigned kDaz = 0x40;
  unsigned saved_;
#endif
};

// Runs body(Team) on a team of nthreads OpenMP threads, or straight on the calling thread (Team serial) when
// nthreads is 1. Entering a parallel region costs libgomp futex system calls even for a team of one: 1.1-1.2 us
// per empty region in this project's KVM guest, 2.2-2.4 us with a work-sharing loop inside (900,000 futex calls
// for 600,000 one-thread regions under strace), a third of a vgg-s GEMM at 97 % sparsity (docs/bench/gemm.md,
// twenty-sixth session).
template <class Body>
void team(int nthreads, Body&& body) {
  if (nthreads <= 1) {
    body(Team(true));
    return;
  }
#pragma omp parallel num_threads(nthreads)
  {
    const DenormalsAsIs daz_off;  // each worker's own MXCSR (the calling thread's is cleared by run_compacted)
    body(Team(false));
  }
}

struct Stored {  // the stored sparse operand
  const float* ptr;
  int rows, cols, ld;
};

Stored stored_sparse(const GemmCall& c) {
  if (c.sparse == SparseOperand::A)
    return c.op_a == Op::N ? Stored{c.A, c.M, c.K, c.lda} : Stored{c.A, c.K, c.M, c.lda};
  return c.op_b == Op::N ? Stored{c.B, c.K, c.N, c.ldb} : Stored{c.B, c.N, c.K, c.ldb};
}

// Row-list entry positions (row_beg_ / row_end_, bounds_, build_cols' running counts) are u32; `entries`
// list slots (plus the kernels' slack) must fit, else they would wrap silently. A cheap check per call.
void check_entry_positions(std::size_t entries) {
  if (entries + detail::kEntrySlack > std::size_t(0xFFFFFFFFu))
    throw InputError("tile-sparse gemm: sparse operand too large: " + std::to_string(entries) +
                     " row-list slots exceed the 32-bit entry positions (use a smaller operand or more DENSE tiles)");
}

CBLAS_TRANSPOSE cb(Op o) { return o == Op::N ? CblasNoTrans : CblasTrans; }

void scale_c(const GemmCall& c) {
  if (c.beta == 1.0f) return;
  for (int i = 0; i < c.M; ++i) {
    float* row = c.C + std::size_t(i) * c.ldc;
    if (c.beta == 0.0f)
      std::fill(row, row + c.N, 0.0f);  // BLAS semantics: beta == 0 ignores NaN/Inf already in C
    else
      for (int j = 0; j < c.N; ++j) row[j] *= c.beta;
  }
}

}  // namespace

std::size_t default_gather_slice_bytes() {
  static const std::size_t bytes = [] {
    const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);  // 0 or -1 when unknown
    const std::size_t l2_bytes = l2 > 0 ? std::size_t(l2) : std::size_t(512) << 10;
    return std::max<std::size_t>(std::size_t(256) << 10, l2_bytes - std::min(l2_bytes, std::size_t(256) << 10));
  }();
  return bytes;
}

namespace {
// This CPU's L1 data cache in bytes (32 KiB when the OS does not say).
std::size_t l1d_bytes() {
  static const std::size_t bytes = [] {
    const long l1 = sysconf(_SC_LEVEL1_DCACHE_SIZE);  // 0 or -1 when unknown
    return l1 > 0 ? std::size_t(l1) : std::size_t(32) << 10;
  }();
  return bytes;
}
}  // namespace

void check_threshold_options(const TileSparseOptions& opt, const char* engine) {
  if (!(opt.threshold >= 0.0))
    throw InputError(std::string(engine) + ": threshold must be >= 0 (0: every tile DENSE; > 1: every non-zero tile " +
                     "sparse), got " + format_g(opt.threshold));
  if (!(opt.guard_fraction >= 0.0 && std::isfinite(opt.guard_fraction)))
    throw InputError(std::string(engine) + ": guard_fraction must be a finite number >= 0, got " +
                     format_g(opt.guard_fraction));
}

TileSparseEngine::TileSparseEngine(const TileSparseOptions& opt) : opt_(opt) {
  if (opt.tile_rows == 0 || opt.tile_cols == 0 || opt.tile_rows > format::kMaxTileSide ||
      opt.tile_cols > format::kMaxTileSide)
    throw InputError("tile-sparse gemm: tile size must be 1..65535 rows x 1..65535 columns, got " +
                     std::to_string(opt.tile_rows) + "x" + std::to_string(opt.tile_cols));
  if (opt.sparse_format != TileFormat::Ell && opt.sparse_format != TileFormat::Bitmap)
    throw InputError("tile-sparse gemm: sparse format must be ELL or BITMAP");
  const bool has = detail::cpu_has_avx2_fma(), has512 = has && detail::cpu_has_avx512();
  if (opt.isa == Isa::Avx2 && !has) throw InputError("tile-sparse gemm: AVX2/FMA requested but the CPU lacks it");
  if (opt.isa == Isa::Avx512 && !has512)
    throw InputError("tile-sparse gemm: AVX-512 requested but the CPU (or the OS) lacks AVX-512F");
  if (opt.gather_slice_bytes > kMaxGatherSliceBytes)
    throw InputError("tile-sparse gemm: gather_slice_bytes must be at most " + std::to_string(kMaxGatherSliceBytes >> 10) +
                     " KiB (0: from the L2 size), got " + std::to_string(opt.gather_slice_bytes));
  check_threshold_options(opt, "tile-sparse gemm");
  if (opt.num_threads < 0)
    throw InputError("tile-sparse gemm: num_threads must be >= 0 (0: the OpenMP default), got " +
                     std::to_string(opt.num_threads));
  avx512_ = opt.isa == Isa::Avx512 || (opt.isa == Isa::Auto && has512);
  avx2_ = avx512_ || opt.isa == Isa::Avx2 || (opt.isa == Isa::Auto && has);
}

std::size_t TileSparseEngine::gather_slice_bytes() const {
  constexpr std::size_t row_bytes = std::size_t(detail::kGatherQ) * sizeof(float);
  const std::size_t want = opt_.gather_slice_bytes > 0 ? opt_.gather_slice_bytes : default_gather_slice_bytes();
  return std::clamp<std::size_t>(want / row_bytes, 64, kMaxGatherSliceBytes / row_bytes) * row_bytes;
}

std::string TileSparseEngine::isa_name() const { return avx512_ ? "avx512" : avx2_ ? "avx2" : "portable"; }

Orientation TileSparseEngine::compact_orientation(const GemmCall& c) const {
  if (c.sparse != SparseOperand::A || c.op_a != Op::T) return Orientation::Stored;
  if (opt_.transposed_kernel == TransposedKernel::RowGather) return Orientation::Op;
  const bool rows = opt_.transposed_kernel == TransposedKernel::Auto && avx512_ &&
                    opt_.sparse_format == TileFormat::Ell && format::index_bytes(opt_.tile_cols) == 1 &&
                    c.N >= kRowGatherMinQ;
  return rows ? Orientation::Op : Orientation::Stored;
}

format::TiledMatrix TileSparseEngine::compact_operand(const GemmCall& c) const { return compact_impl(c, 2.0); }

format::TiledMatrix TileSparseEngine::compact_impl(const GemmCall& c, double skip_payload_density) const {
  const Stored st = stored_sparse(c);
  const format::CompactOptions o = compact_options(opt_);
  // The same tiles as format::compact() / compact_transposed(), from AVX-512 loops (compact_fast.h) on an AVX-512
  // engine.
  format::TiledMatrix m;
  if (compact_orientation(c) == Orientation::Op) {  // op(A) = A^T (M x K) of the stored K x M
    if (avx512_ && detail::compact_transposed_f32_avx512(st.ptr, std::uint32_t(st.rows), std::uint32_t(st.cols),
                                                         std::size_t(st.ld), o, m, skip_payload_density))
      return m;
    return format::compact_transposed(st.ptr, std::uint32_t(st.rows), std::uint32_t(st.cols), std::size_t(st.ld), o);
  }
  // Threads for operands of 2^18 elements or more (about 25 us of compaction here); below, one OpenMP region
  // would cost a noticeable part of the call (1-2 us, libgomp).
  const int nthreads = double(st.rows) * double(st.cols) < double(1 << 18) ? 1
                       : opt_.num_threads > 0                              ? opt_.num_threads
                                                                           : omp_get_max_threads();
  if (avx512_ && detail::compact_f32_avx512(st.ptr, std::uint32_t(st.rows), std::uint32_t(st.cols), std::size_t(st.ld),
                                            o, nthreads, m, skip_payload_density))
    return m;
  return format::compact(st.ptr, std::uint32_t(st.rows), std::uint32_t(st.cols), std::size_t(st.ld), o);
}

void TileSparseEngine::run(const GemmCall& c) {
  validate(c);
  if (c.sparse == SparseOperand::None || c.M == 0 || c.N == 0 || c.K == 0) {
    stats_ = TileSparseStats{};
    make_dense_engine()->run(c);
    return;
  }
  const double t0 = now_s();
  // The whole-call guard's test of run_compacted() (detail::density_at_least on the same numbers): an operand
  // that passes it is compacted for its tile counts only.
  const TiledMatrix s = compact_impl(c, opt_.whole_call_guard ? guard_density() : 2.0);
  const double t1 = now_s();
  run_compacted(c, s, compact_orientation(c));
  stats_.compact_s = t1 - t0;
  stats_.compact_headers_only = s.payload.empty() && stats_.tiles_sparse > 0;
}

void TileSparseEngine::run_compacted(const GemmCall& c, const TiledMatrix& s, Orientation o) {
  validate(c);
  const DenormalsAsIs daz_off;
  if (c.alpha != 0.0f && c.alpha != 1.0f && c.alpha != -1.0f && c.M > 0 && c.N > 0) {
    // alpha * (sum of products), as BLAS: the row lists and the scatter kernels fold alpha into each product's
    // sparse or dense factor, which can overflow, underflow or turn 0 * Inf into NaN where the scaled sum does
    // not (alpha 4: 2e38 * 0.25 gave Inf for 2e38; fortieth session's review). alpha 1 and -1 fold exactly
    // (training uses 1); other values run with alpha 1 into a scratch C and are scaled here.
    GemmCall u = c;
    u.alpha = 1.0f;
    u.beta = 0.0f;
    std::vector<float> t(std::size_t(c.M) * std::size_t(c.N));
    u.C = t.data();
    u.ldc = c.N;
    run_compacted(u, s, o);
    for (int i = 0; i < c.M; ++i) {
      float* ci = c.C + std::size_t(i) * std::size_t(c.ldc);
      const float* ti = t.data() + std::size_t(i) * std::size_t(c.N);
      if (c.beta == 0.0f)  // C is not read (BLAS): a NaN there does not survive
        for (int j = 0; j < c.N; ++j) ci[j] = c.alpha * ti[j];
      else
        for (int j = 0; j < c.N; ++j) ci[j] = c.alpha * ti[j] + c.beta * ci[j];
    }
    return;
  }
  if (c.sparse == SparseOperand::None) throw InputError("tile-sparse gemm: run_compacted needs a sparse operand");
  if (o == Orientation::Op && c.sparse == SparseOperand::B && c.op_b == Op::T)
    throw InputError("tile-sparse gemm: run_compacted: Orientation::Op is for a sparse A (or an op N sparse B)");
  // op_tiles: the tiles are of op(A) = A^T (M x K), so S is their stored matrix (no transpose).
  const bool op_tiles = o == Orientation::Op && c.sparse == SparseOperand::A && c.op_a == Op::T;
  const Stored st = op_tiles ? Stored{nullptr, c.M, c.K, 0} : stored_sparse(c);
  if (s.grid.rows != std::uint32_t(st.rows) || s.grid.cols != std::uint32_t(st.cols) ||
      s.elem != format::ElemType::F32)
    throw InputError("tile-sparse gemm: compacted operand does not match the call's sparse operand shape");
  // The tiles' own record of what was compacted (a square A fits either orientation's shape check):
  // compact_transposed() marks its tiles source_transposed, compact() points `source` at the matrix itself.
  if (s.source_transposed && !op_tiles)
    throw InputError("tile-sparse gemm: run_compacted: tiles of a transposed compaction need Orientation::Op "
                     "(pass compact_orientation(call))");
  if (op_tiles && !s.source_transposed && s.source == static_cast<const void*>(c.A))
    throw InputError("tile-sparse gemm: run_compacted: tiles of the stored A given as Orientation::Op "
                     "(pass compact_orientation(call))");
  if (s.grid.tile_rows == 0 || s.grid.tile_cols == 0 || s.grid.tile_rows > format::kMaxTileSide ||
      s.grid.tile_cols > format::kMaxTileSide || s.headers.size() != s.grid.num_tiles())
    throw InputError("tile-sparse gemm: compacted operand's tile grid is invalid (tile sides 1..65535, one header per tile)");
  const double t0 = now_s();
  stats_ = TileSparseStats{};
  const format::TileCounts tc = format::count_tiles(s);
  bool sparse_all_ell = true;  // every sparse (non-zero, not DENSE) tile is ELL
  bool payload_held = true;    // every sparse tile's payload starts inside the payload area (not headers only)
  for (const auto& h : s.headers) {
    stats_.nnz += h.nnz;
    const bool sparse = h.nnz != 0 && h.fmt() != TileFormat::Dense;
    sparse_all_ell &= !sparse || h.fmt() == TileFormat::Ell;
    payload_held &= !sparse || h.offset < s.payload.size();
  }
  stats_.tiles_zero = tc.zero;
  stats_.tiles_sparse = tc.sparse;
  stats_.tiles_dense = tc.dense;
  if (c.M == 0 || c.N == 0) return;
  if (c.alpha == 0.0f) {
    // BLAS semantics: with alpha 0 nothing is computed from A or B (0 * Inf or NaN in them must not reach
    // C); C = beta * C (beta 0: zeros, whatever C held). (run() has compacted the sparse operand by now,
    // for the tile statistics; its values are not used.)
    scale_c(c);
    stats_.compute_s = now_s() - t0;
    return;
  }
  const bool guard = opt_.whole_call_guard && detail::density_at_least(stats_.nnz, std::uint64_t(st.rows),
                                                                       std::uint64_t(st.cols), guard_density());
  if (c.K == 0 || (tc.sparse == 0 && tc.zero == 0) || guard) {
    // all DENSE, or dense enough overall (call-level guard), or nothing to sum: one sgemm
    stats_.full_dense = c.K > 0;
    stats_.dense_calls = 1;
    cblas_sgemm(CblasRowMajor, cb(c.op_a), cb(c.op_b), c.M, c.N, c.K, c.alpha, c.A, c.lda, c.B, c.ldb, c.beta, c.C,
                c.ldc);  // the call was validated above; M, N > 0
    stats_.compute_s = now_s() - t0;
    return;
  }
  // (run() passes the headers alone only for operands the guard above takes.)
  if (!payload_held)
    throw InputError("tile-sparse gemm: a sparse tile's payload offset lies outside the compacted operand's payload "
                     "(headers only?)");
  const bool sp_a = c.sparse == SparseOperand::A;
  // S is the stored matrix (bands = tile rows) or its transpose (bands = tile columns).
  const bool trans_s = op_tiles ? false : sp_a ? c.op_a == Op::T : c.op_b == Op::N;
  const format::TileGrid& g = s.grid;
  const std::uint32_t n_bands = trans_s ? g.tiles_c() : g.tiles_r();
  const std::uint32_t n_rt = trans_s ? g.tiles_r() : g.tiles_c();          // tiles along R
  const std::uint32_t p_tile = trans_s ? g.tile_cols : g.tile_rows;         // band height in P
  const std::uint32_t r_tile = trans_s ? g.tile_rows : g.tile_cols;         // tile extent along R
  const int P = sp_a ? c.M : c.N, R = c.K, Q = sp_a ? c.N : c.M;
  const std::uint32_t ntc = g.tiles_c();  // hoisted: TiledMatrix::header divides on every call
  auto hdr = [&](std::uint32_t band, std::uint32_t rt) -> const TileHeader& {
    return trans_s ? detail::hdr_at(s, ntc, rt, band) : detail::hdr_at(s, ntc, band, rt);
  };
  // S = stored rows, u8 ELL (the direct row gathers): the sparse tiles of bands [b0, b1), band by band in
  // column order, into refs (grown as needed, never shrunk); band b0 + i's are refs[roff[i] .. roff[i + 1]).
  // (Filled through local pointers: the lambda's captures are references, and push_back made the compiler
  // reload them for every tile: 30-40 cycles a band, a tenth of a vgg-s GEMM.)
  auto group_refs = [&](std::uint32_t b0, std::uint32_t b1, std::vector<detail::EllTileRef>& refs,
                        std::vector<std::size_t>& roff) {
    const std::uint32_t tc = g.tile_cols, nrt = n_rt, nb = b1 - b0;
    if (refs.size() < std::size_t(nb) * nrt) refs.resize(std::size_t(nb) * nrt);
    roff.resize(std::size_t(nb) + 1);
    detail::EllTileRef* out = refs.data();
    std::size_t* ro = roff.data();
    const TileHeader* headers = s.headers.data();
    const std::uint8_t* payload = s.payload.data();
    std::size_t n = 0;
    ro[0] = 0;
    for (std::uint32_t i = 0; i < nb; ++i) {
      const std::uint32_t rows_b = g.r_eff(b0 + i);
      const TileHeader* h = headers + std::size_t(b0 + i) * ntc;
      for (std::uint32_t tj = 0; tj < nrt; ++tj) {
        if (h[tj].nnz == 0 || h[tj].fmt() == TileFormat::Dense) continue;
        const std::uint8_t* pl = payload + h[tj].offset;
        out[n++] = {pl, reinterpret_cast<const float*>(pl + format::ell_values_offset(rows_b, h[tj].width, tc)),
                    h[tj].width, tj * tc};
      }
      ro[i + 1] = n;
    }
  };

  // ---- DENSE tiles: runs per band, identical consecutive bands merged, one sgemm per (group, run).
  struct DenseRun {
    int p0, p1, ra, rb;
  };
  std::vector<DenseRun> dense_runs;
  std::vector<std::pair<int, int>> runs, prev;
  int group_p0 = 0;
  auto flush = [&](int p0, int p1) {
    for (const auto& [ra, rb] : prev) dense_runs.push_back({p0, p1, ra, rb});
  };
  // (Without DENSE tiles there are no runs and the scan is skipped.)
  const bool any_sparse_band = tc.sparse > 0, all_ell = sparse_all_ell;
  for (std::uint32_t band = 0; band < n_bands && tc.dense > 0; ++band) {
    runs.clear();
    for (std::uint32_t rt = 0; rt < n_rt; ++rt) {
      const TileHeader& h = hdr(band, rt);
      if (h.nnz == 0 || h.fmt() != TileFormat::Dense) continue;
      const int ra = int(rt * r_tile), rb = int(std::min<std::int64_t>(R, std::int64_t(rt + 1) * r_tile));
      if (!runs.empty() && runs.back().second == ra)
        runs.back().second = rb;
      else
        runs.emplace_back(ra, rb);
    }
    const int p0 = int(band * p_tile);
    if (runs != prev) {
      flush(group_p0, p0);
      prev = runs;
      group_p0 = p0;
    }
  }
  flush(group_p0, P);
  // beta: applied once to C up front when sgemm runs accumulate into it (or for a general beta);
  // otherwise (beta 0 or 1) the sparse part applies it while it writes each C element once.
  const bool need_scale = !dense_runs.empty() || (c.beta != 0.0f && c.beta != 1.0f) || !any_sparse_band;
  if (need_scale) scale_c(c);
  const float beta_k = need_scale ? 1.0f : c.beta;
  for (const DenseRun& d : dense_runs) {
    const int kk = d.rb - d.ra, pp = d.p1 - d.p0, ra = d.ra, p0 = d.p0;
    if (sp_a) {  // C[p0:p1, :] += op(A)[p0:p1, ra:rb] * op(B)[ra:rb, :]
      const float* a = c.op_a == Op::N ? c.A + std::size_t(p0) * c.lda + ra : c.A + std::size_t(ra) * c.lda + p0;
      const float* b = c.op_b == Op::N ? c.B + std::size_t(ra) * c.ldb : c.B + ra;
      cblas_sgemm(CblasRowMajor, cb(c.op_a), cb(c.op_b), pp, c.N, kk, c.alpha, a, c.lda, b, c.ldb, 1.0f,
                  c.C + std::size_t(p0) * c.ldc, c.ldc);
    } else {  // C[:, p0:p1] += op(A)[:, ra:rb] * op(B)[ra:rb, p0:p1]
      const float* a = c.op_a == Op::N ? c.A + ra : c.A + std::size_t(ra) * c.lda;
      const float* b = c.op_b == Op::N ? c.B + std::size_t(ra) * c.ldb + p0 : c.B + std::size_t(p0) * c.ldb + ra;
      cblas_sgemm(CblasRowMajor, cb(c.op_a), cb(c.op_b), c.M, pp, kk, c.alpha, a, c.lda, b, c.ldb, 1.0f, c.C + p0,
                  c.ldc);
    }
  }
  stats_.dense_calls = dense_runs.size();
  stats_.row_gather = op_tiles && any_sparse_band;  // (rows of op(A)'s tiles, whichever rows kernel below)
  if (!any_sparse_band) {
    stats_.compute_s = now_s() - t0;
    return;
  }

  // Scratch vectors of the loops below (tile references, band offsets, group bounds, list cursors, the scatter's
  // band flags) are thread_local and kept across calls: allocated per call they were 0.6 us of a 4 us call
  // (vgg-s b2c2 backward-weight at 97 %, rdtsc probe, twenty-eighth session). Unlike the engine's buffers they
  // belong to each OS thread (OpenMP pool threads included), are shared by every engine the thread runs and
  // live as long as the thread; the largest holds 24 bytes per tile of the largest operand seen.
  // ---- Sparse tiles (loop structure: sw/gemm/README.md). D[r][q] must be contiguous along Q: it is the
  // dense operand as stored (op(B) = B for sparse A, op(A)^T = A for sparse B) or, otherwise, its
  // transpose packed once per call (8x8 AVX2 or 16x16 AVX-512 blocks, parallel).
  // Out = C^T much larger than the last-level cache, beta 0: chunks go to C with non-temporal stores
  // (whole lines; transpose_store_stream_avx2), which saves reading C's lines before writing them.
  constexpr double kStreamBytes = 32.0 * 1024 * 1024;
  const bool stream = avx2_ && !sp_a && beta_k == 0.0f && double(c.M) * double(c.ldc) * 4.0 >= kStreamBytes;
  stats_.out_streamed = stream;
  const detail::GatherFn gather = avx2_ ? detail::gather_avx2 : detail::gather_portable;
  const detail::TransposeStoreFn tstore = avx512_ ? detail::transpose_store_avx512
                                          : avx2_ ? detail::transpose_store_avx2
                                                  : detail::transpose_store_portable;
  // A call with little sparse work runs on the calling thread: waking the OpenMP pool (passive wait, as the tools
  // run) costs tens of microseconds, more than such a call takes alone. vgg-s batch 16, thirty-eighth session:
  // its tile-path fc GEMMs (e.g. 16 x 256 x 256 at density 0.24-0.27, 0.3 M multiply-adds) ran 0.07-0.69x the
  // sgemm on two threads, 0.53-3.9x with this rule (0.54-4.9x on one thread); its conv9-conv13 (144 x 64 x 576
  // at density 0.30, 1.6 M multiply-adds: 51 us on one thread, 77 us on two) 0.72-0.81x, with it 1.13-1.18x
  // (backward-weight 1.14-1.21 -> 1.66-1.85x). Below 2^22 multiply-adds (nnz x the dense operand's width, about
  // 130 us on one thread here) one thread.
  constexpr double kMinParallelFma = double(1 << 22);
  const int nthreads = double(stats_.nnz) * double(sp_a ? c.N : c.M) < kMinParallelFma ? 1
                       : opt_.num_threads > 0                                            ? opt_.num_threads
                                                                                         : omp_get_max_threads();
  const float* X = sp_a ? c.B : c.A;  // dense operand as stored
  const std::size_t ldx = std::size_t(sp_a ? c.ldb : c.lda);
  const bool trans_d = sp_a ? c.op_b == Op::T : c.op_a == Op::N;  // D = X^T
  // D is packed once per call into panels of kGatherQ columns ([R x kGatherQ] each, rows contiguous)
  // when it must be transposed, or when it spans several panels and its rows are reused enough (on
  // average >= kPackMinReuse non-zeros of S per row of D) to repay the copy: the gather visits D rows in
  // data-dependent order, and rows of a power-of-two-multiple stride (e.g. 512 or 4608 floats) fall into
  // a few cache sets and thrash L1/L2. Otherwise the operand is read in place.
  constexpr int QG = detail::kGatherQ;
  constexpr double kPackMinReuse = 16;
  const bool u8idx = format::index_bytes(g.tile_cols) == 1;
  // R blocks of the row gathers: D's slice of KB x kGatherQ floats stays in L2 while all rows of S use it.
  const int kb_max = int(gather_slice_bytes() / (QG * sizeof(float)));  // 64 .. 32768 rows
  const int KB = std::int64_t(R) * 4 <= std::int64_t(kb_max) * 5 ? R : kb_max;
  const int nkb = (R + KB - 1) / KB;
  // Direct row gather in wide panels (AVX-512; include/spartan/gemm/tile_sparse.h, kWideRowsMinReuse): C rows,
  // np panels of wide_q <= kWideGatherQ floats (a multiple of 16; the last panel shorter).
  int wide_q = 0, rg_tiles = 0;  // rg_tiles > 0: the wide gather in R blocks of this many whole tiles
  const int wide_np = (Q + detail::kWideGatherQ - 1) / detail::kWideGatherQ;
  const int wide_wq = std::min(detail::kWideGatherQ, ((Q + wide_np - 1) / wide_np + 15) / 16 * 16);
  // Stored rows of A (op N) with op(B) = B, where the wide gather may run.
  const bool stored_wide = avx512_ && sp_a && !trans_s && !trans_d && all_ell && u8idx && Q > kDirectRowsMaxQ &&
                           opt_.rows_kernel != RowsKernel::Lists;
  if (op_tiles && avx512_ && all_ell && u8idx && opt_.rows_kernel != RowsKernel::Lists) {
    // op(A)'s rows: the wide gather in R blocks of whole tiles whose panel rows fit one gather slice.
    wide_q = wide_wq;
  } else if (stored_wide && nkb == 1) {  // the direct path: one R block
    const double slice = 1.25 * double(gather_slice_bytes());
    const bool reused = double(R) * Q * sizeof(float) <= slice || double(stats_.nnz) >= kWideRowsMinReuse * R;
    if (double(R) * wide_wq * sizeof(float) <= slice && (reused || opt_.rows_kernel == RowsKernel::Direct))
      wide_q = wide_wq;
  }
  if (wide_q == 0 && stored_wide && double(stats_.nnz) >= kWideRowsMinReuse * R) {
    // Stored rows with several R blocks, or one panel's rows of B beyond 1.25 slices, but B's rows reused
    // (kWideRowsMinReuse): the wide gather in R blocks too (VGG-16 conv2_2 / conv3_2 backward-weight).
    wide_q = wide_wq;
  }
  // The R-blocked loop also takes a B of several wide panels (Q > wide_q): it goes panel by panel through all
  // bands, so that each panel of B comes from memory once, where the row-group loop below visits every panel
  // once per group of >= 64 rows (VGG-16 conv5_2 backward-data: 9.4 MB of W read four times). A panel within
  // 1.25 slices stays one R block there, as in the row-group loop (a second block would add into C again:
  // VGG-16 conv4_2 backward-weight, 9.4 MB of C, took 1.1x the time).
  const bool one_block = !op_tiles && nkb == 1 && double(R) * wide_q * sizeof(float) <= 1.25 * double(gather_slice_bytes());
  // The wide gather reads B in place when it is one panel of 64-byte aligned rows with the panel's width as their
  // stride, or several panels of 64-byte aligned rows whose stride is not a multiple of 4 KiB and which are reused
  // little (kWideInPlaceMaxReuse); otherwise from a packed copy (below).
  const bool rows_aligned = !trans_d && ldx % 16 == 0 && reinterpret_cast<std::uintptr_t>(X) % 64 == 0;
  const bool wide_in_place =
      wide_q > 0 && rows_aligned &&
      (wide_q >= Q ? ldx == std::size_t(wide_q)
                   : (ldx * sizeof(float)) % 4096 != 0 && double(stats_.nnz) < kWideInPlaceMaxReuse * R);
  if (wide_q > 0 && Q > wide_q && one_block) {
    rg_tiles = int(n_rt);
  } else if (wide_q > 0 && !one_block) {
    // R blocks of whole tiles whose panel rows, as the gather reads them (packed rows are wide_q + 16 floats:
    // LP below), fit the slice. Every block adds into the same panel of Out (P rows of wide_q floats); when that
    // panel is larger than half of the 256 KiB the default slice leaves of L2 but smaller than the slice, the
    // slice gives up the excess, so that the panel of Out stays in L2 beside the block's rows (VGG-16 conv2_2
    // backward-weight: a 576 KiB panel of dW^T beside a 768 KiB slice; docs/bench/gemm.md, forty-third session).
    // A larger panel of Out cannot stay in L2 anyway: the blocks stay as large (fewer passes over it).
    constexpr std::size_t kHalfReserve = std::size_t(128) << 10, kMinBlockBytes = std::size_t(128) << 10;
    const std::size_t out_panel = std::size_t(P) * std::size_t(std::min(wide_q, Q)) * sizeof(float);
    std::size_t budget = gather_slice_bytes();
    if (out_panel > kHalfReserve && out_panel < budget)
      budget = std::max(kMinBlockBytes, budget - std::min(budget, out_panel - kHalfReserve));
    const std::size_t row_bytes = std::size_t(wide_in_place ? wide_q : wide_q + 16) * sizeof(float);
    rg_tiles = int(std::max<std::size_t>(1, budget / (std::size_t(r_tile) * row_bytes)));
  }
  stats_.wide_panel_floats = wide_q;
  // Panel width of D: kGatherQ floats, or the wide gather's panel. Where the wide gather does not read B in
  // place (above) it gets a packed copy (64-byte aligned panels of R rows of wide_q + 16 floats): its 16-float
  // loads split across cache lines on a misaligned B (1.4-1.5x the kernel time), and rows of B with a
  // power-of-two stride map to few L2 sets (docs/bench/gemm.md, twenty-fourth session).
  const int PW = wide_q > 0 ? wide_q : QG;
  const PackKey key{X, R, Q, ldx, trans_d, c.dense_version, wide_q};  // wide_q: panel width and start differ
  const bool reuse = c.dense_version != 0 && pack_valid_ && pack_key_ == key;
  const bool pack = wide_q > 0 ? !wide_in_place
                               : reuse || trans_d || (Q > QG && double(stats_.nnz) >= kPackMinReuse * R);
  const int n_panels = (Q + PW - 1) / PW;
  const float* D = X;  // panel qb: D + qb * panel_stride, row stride ldd
  std::size_t ldd = ldx, panel_stride = std::size_t(PW);
  // pack_ holds 16 floats more than the panels. The wide gather's panels start at its first 64-byte
  // boundary; the 64-float panels keep the vector's own address, as before: aligning them too made the
  // forward scatter kernel slower on VGG-16 conv5_2 at 90 % sparsity in one A/B run (3.86 against 1.86 ms;
  // that row also varies from run to run without the change; cause not established), docs/bench/gemm.md.
  auto pack_base = [&] { return wide_q == 0 ? pack_.data() : first_line(pack_.data()); };
  // Row stride of the packed panels: PW floats, 16 more for the wide gather's panels (PW + 16 is not a multiple
  // of 128 floats: rows of a power-of-two stride fall into a few cache sets, e.g. a quarter of L1's for 1 KiB).
  const int LP = wide_q > 0 ? PW + 16 : PW;
  // Rows r0..r1 of the panel at column q0 (qn floats) of D, packed into dst (row r at dst + (r - r0) * LP)
  // by the team; the loop's barrier ends it. D transposed: blocks of 64 rows of X by 128 of its columns, so
  // that the panel rows a block writes (128 x 64 floats, 32 KiB) stay in L1 across its 8-row (AVX2) or 16-row
  // (AVX-512) passes (one transposed store per panel, up to 384 rows of X at once with a 1 KiB row stride, took
  // about 4x the 64-float panels' pack: bench-gemm, twenty-fifth session). Otherwise a copy of each row.
  auto pack_panel_rows = [&](const Team& tm, float* dst, int q0, int qn, int r0, int r1) {
    if (trans_d) {
      const long n_sb = (qn + QG - 1) / QG, n_r = (r1 - r0 + 127) / 128;
      tm.for_static(n_sb * n_r, [&](long t) {
        const int s0 = int(t / n_r) * QG, ra = r0 + int(t % n_r) * 128;
        tstore(X + std::size_t(q0 + s0) * ldx + ra, ldx, std::min(QG, qn - s0), std::min(128, r1 - ra),
               dst + std::size_t(ra - r0) * LP + s0, std::size_t(LP), 0.0f);
      });
    } else {
      tm.for_static(r1 - r0, [&](long i) {
        std::memcpy(dst + std::size_t(i) * LP, X + std::size_t(r0 + i) * ldx + q0, std::size_t(qn) * sizeof(float));
      });
    }
  };
  // The wide gather in R blocks with no pack to keep (GemmCall::dense_version 0, as spartan-train calls it): each
  // panel's rows of one R block are packed into block_pack_ (one gather slice, in L2) right before the bands
  // gather them, instead of packing all of D first (written to and read back from L3 or memory when D is larger
  // than L2: the forward's 9.4 MB weights of VGG-16 conv4_2 / conv5_2). The same values reach the same FMAs in
  // the same order: C is bit-identical to the whole pack's.
  const bool block_pack = pack && rg_tiles > 0 && c.dense_version == 0;
  // The wide gather prefetches the next band's ELL payload while it gathers a band, unless the payload fits L1
  // (where it stays from band to band and from call to call): the payload is read in blocks of a few KiB per band
  // that the hardware prefetchers did not run ahead of, from L3 or memory when it is larger than what L2 holds
  // beside the gather slice (VGG-16 conv2_2 forward at 97 % 2.6 -> 2.2 ms), from memory when the caches are cold.
  // Measured in docs/bench/gemm.md (forty-fourth session), where the choice of this rule is explained.
  const bool prefetch_payload = opt_.payload_prefetch && wide_q > 0 && s.payload.size() > l1d_bytes();
  stats_.payload_prefetched = prefetch_payload;
  if (pack && !reuse && !block_pack) {
    const double tp = now_s();
    pack_valid_ = false;
    pack_.resize(std::size_t(R) * LP * n_panels + 16);
    float* dst = pack_base();
    if (trans_d && wide_q == 0) {
      team(nthreads, [&](const Team& tm) {
        tm.for_static(n_panels, [&](long b) {
          const int q0 = int(b) * PW, qn = std::min(PW, Q - q0);
          tstore(X + std::size_t(q0) * ldx, ldx, qn, R, dst + std::size_t(b) * R * PW, std::size_t(PW), 0.0f);
        });
      });
    } else if (trans_d) {  // wide panels, one after the other
      team(nthreads, [&](const Team& tm) {
        for (int b = 0; b < n_panels; ++b)
          pack_panel_rows(tm, dst + std::size_t(b) * R * LP, b * PW, std::min(PW, Q - b * PW), 0, R);
      });
    } else {  // rows in parallel, all panels of a row at once (one loop, one barrier)
      team(nthreads, [&](const Team& tm) {
        tm.for_static(R, [&](long r) {
          for (int b = 0; b < n_panels; ++b) {
            const int q0 = b * PW, qn = std::min(PW, Q - q0);
            std::memcpy(dst + std::size_t(b) * R * LP + std::size_t(r) * LP, X + std::size_t(r) * ldx + q0,
                        std::size_t(qn) * sizeof(float));
          }
        });
      });
    }
    pack_key_ = key;
    pack_valid_ = true;
    stats_.pack_s = now_s() - tp;
  }
  if (pack && !block_pack) D = pack_base(), ldd = std::size_t(LP), panel_stride = std::size_t(R) * LP;
  if (block_pack) ldd = std::size_t(LP);
  stats_.dense_packed = pack;
  stats_.dense_pack_reused = reuse && pack;
  stats_.dense_block_packed = block_pack;
  const float alpha = c.alpha;
  const bool scatter_ok = opt_.transposed_kernel == TransposedKernel::Scatter ||
                          (opt_.transposed_kernel != TransposedKernel::Gather && Q <= kScatterMaxQ && R >= kScatterMinR);
  if (trans_s && all_ell && u8idx && scatter_ok) {
    assert(wide_q == 0);  // (the scatter kernel reads D in kGatherQ panels)
    // S = stored^T, u8 ELL tiles: outer products over the stored rows, no row lists. Per band (one tile
    // column of the stored matrix = p_tile rows of Out) and Q panel of kScatterQ columns, a per-thread
    // block O[p_tile x kScatterQ] accumulates alpha * v * D[r] for every stored non-zero (r, p) of the
    // band's sparse tiles, read straight from the tiles in storage order (D rows in ascending order); then
    // O goes to C (rows, sparse A) or C^T (transposed store, sparse B). Bands are taken in groups whose
    // blocks fit in L2 (kScatterGroupBytes), walked tile row by tile row across the group, so that each
    // D row is read from memory once per group instead of once per band.
    constexpr int QS = detail::kScatterQ;
    constexpr std::size_t kScatterGroupBytes = 192 * 1024;
    const int vw = avx512_ ? 16 : 8;  // floats per vector of the widest scatter kernel in use
    const int OS = std::min(QS, (Q + vw - 1) / vw * vw);  // row stride of the output blocks (narrow Q: compact)
    const std::size_t block = std::size_t(p_tile) * OS;
    const int G = int(std::max<std::size_t>(1, kScatterGroupBytes / (block * sizeof(float))));
    const long n_groups = (long(n_bands) + G - 1) / G;
    const detail::ScatterEllFn scatter_narrow = avx2_ ? detail::scatter_ell_u8_avx2 : detail::scatter_ell_u8_portable;
    // AVX-512 for a panel wider than one 8-float vector; panels of qn <= 8 keep the AVX2 kernel (same result
    // bit for bit; OS is a multiple of 8 either way). A microbenchmark of the two kernels on the same tiles,
    // idle host, three runs: AVX2 / AVX-512 time 0.83-0.92 at qn = 4 and 8, 0.99-1.07 at qn = 20 and 24,
    // 1.07-1.44 at qn = 12, 32, 40, 56, 60, 64 (docs/bench/gemm.md, twenty-second session).
    auto scatter_for = [&](int qn) { return avx512_ && qn > 8 ? detail::scatter_ell_u8_avx512 : scatter_narrow; };
    // (below) The kernel adds straight into C's rows for this panel width: one panel (Q <= kScatterQ) of C rows
    // close together. With C rows of 2 KiB (ResNet-18 conv5_x forward, Q = 512 in eight panels) a panel's 49
    // rows fell into 8 of L1's 64 sets and the forward at 90 % took 1.2x the block path's time.
    auto into_c_for = [&](int qn) {
      return avx512_ && sp_a && beta_k == 0.0f && Q <= QS && c.ldc <= 2 * QS &&
             scatter_for(qn) == detail::scatter_ell_u8_avx512 && qn % 16 == 0;
    };
    if (scatter_out_.size() < std::size_t(nthreads)) scatter_out_.resize(std::size_t(nthreads));
    stats_.scattered = true;
    stats_.scatter_into_c = into_c_for(std::min(QS, Q));
    team(nthreads, [&](const Team& tm) {
      std::vector<float>& buf = scatter_out_[std::size_t(tm.thread())];
      buf.resize(block * G + 16);
      float* O = first_line(buf.data());
      thread_local std::vector<char> has;  // (scratch kept across calls: above)
      has.assign(std::size_t(G), 0);
      tm.for_dynamic(n_groups, 1, [&](long gi) {
        const std::uint32_t b0 = std::uint32_t(gi) * std::uint32_t(G), b1 = std::min(n_bands, b0 + std::uint32_t(G));
        bool write = false;
        for (std::uint32_t b = b0; b < b1; ++b) {
          bool any = false;
          for (std::uint32_t rt = 0; rt < n_rt && !any; ++rt) {
            const TileHeader& h = detail::hdr_at(s, ntc, rt, b);
            any = h.nnz != 0 && h.fmt() != TileFormat::Dense;
          }
          has[b - b0] = any;
          write |= any || beta_k != 1.0f;  // beta 1: C already holds beta * C + the dense runs
        }
        if (!write) return;
        for (int q0 = 0; q0 < Q; q0 += QS) {
          const int qn = std::min(QS, Q - q0);
          const detail::ScatterEllFn scatter = scatter_for(qn);
          const float* dq = D + std::size_t(q0 / QG) * panel_stride + std::size_t(q0 % QG);
          // Out = C with beta 0 (and no DENSE tiles, whose sgemm runs set beta_k 1) and one panel of whole
          // 16-float vectors: the AVX-512 kernel adds straight into
          // C's rows, zeroed first, and the block's copy into C is saved (each element still receives its
          // FMAs in the same order from 0, so C is bit-identical). vgg-s b0c2 forward at 97 % (C 784 x 16):
          // the copy of its 784 16-float rows was 2.0 of the kernel's 6.5 us (docs/bench/gemm.md,
          // twenty-seventh session).
          const bool into_c = into_c_for(qn);
          auto out_block = [&](std::uint32_t b) {
            return into_c ? c.C + std::size_t(b) * p_tile * c.ldc + q0 : O + block * (b - b0);
          };
          const std::size_t ldo = into_c ? std::size_t(c.ldc) : std::size_t(OS);
          if (!into_c) {
            std::fill(O, O + block * (b1 - b0), 0.0f);
          } else if (c.ldc == qn) {  // the group's C rows are contiguous
            const int p0 = int(b0 * p_tile), p1 = std::min(P, int(b1 * p_tile));
            std::fill(c.C + std::size_t(p0) * c.ldc, c.C + std::size_t(p1) * c.ldc, 0.0f);
          } else {
            for (int p = int(b0 * p_tile), p1 = std::min(P, int(b1 * p_tile)); p < p1; ++p)
              std::fill(c.C + std::size_t(p) * c.ldc + q0, c.C + std::size_t(p) * c.ldc + q0 + qn, 0.0f);
          }
          for (std::uint32_t rt = 0; rt < n_rt; ++rt) {
            const std::uint32_t re = g.r_eff(rt);
            for (std::uint32_t b = b0; b < b1; ++b) {
              const TileHeader& h = detail::hdr_at(s, ntc, rt, b);
              if (h.nnz == 0 || h.fmt() == TileFormat::Dense) continue;
              const std::uint8_t* idx = s.tile_payload(h);
              const float* val =
                  reinterpret_cast<const float*>(idx + format::ell_values_offset(re, h.width, g.tile_cols));
              scatter(idx, val, re, h.width, alpha, dq + std::size_t(rt) * r_tile * ldd, ldd, qn, out_block(b), ldo);
            }
          }
          if (into_c) continue;
          for (std::uint32_t b = b0; b < b1; ++b) {
            if (!has[b - b0] && beta_k == 1.0f) continue;
            const int p0 = int(b * p_tile), rows = std::min(int(p_tile), P - p0);
            const float* Ob = O + block * (b - b0);
            if (sp_a) {  // Out = C: rows p0.. of C, columns q0..
              for (int p = 0; p < rows; ++p) {
                float* cr = c.C + std::size_t(p0 + p) * c.ldc + q0;
                const float* o = Ob + std::size_t(p) * OS;
                if (beta_k == 0.0f)
                  std::copy(o, o + qn, cr);
                else
                  for (int q = 0; q < qn; ++q) cr[q] += o[q];
              }
            } else if (stream) {
              for (int c0 = 0; c0 < rows; c0 += 64)
                detail::transpose_store_stream_avx2(Ob + std::size_t(c0) * OS, std::size_t(OS), std::min(64, rows - c0),
                                                    qn, c.C + std::size_t(q0) * c.ldc + p0 + c0, std::size_t(c.ldc));
            } else {
              tstore(Ob, std::size_t(OS), rows, qn, c.C + std::size_t(q0) * c.ldc + p0, std::size_t(c.ldc), beta_k);
            }
          }
        }
      });
    });
    stats_.compute_s = now_s() - t0;
    return;
  }
  if (rg_tiles > 0) {
    // S = op(A) (Orientation::Op) or the stored rows, u8 ELL: for each wide panel of op(B) and R block of
    // rg_tiles tile columns (the panel's rows of the block stay in L2), every band's tiles of the block are
    // gathered into its C rows: the first block writes C (beta 0) or adds to it, the later ones add.
    stats_.direct_rows = true;
    stats_.wide_r_blocked = true;
    // (The calling thread's scratch, shared with the team through these references: a thread_local named
    // inside the team's body would be each thread's own.)
    thread_local std::vector<detail::EllTileRef> tl_refs;
    thread_local std::vector<std::size_t> tl_roff;
    std::vector<detail::EllTileRef>& refs = tl_refs;  // per band in column order: base ascends
    std::vector<std::size_t>& roff = tl_roff;
    group_refs(0, n_bands, refs, roff);
    auto base_below = [](const detail::EllTileRef& t, std::uint32_t col) { return t.base < col; };
    const int n_rb = int((n_rt + std::uint32_t(rg_tiles) - 1) / std::uint32_t(rg_tiles));
    stats_.r_blocks = n_rb;
    const bool ow = beta_k == 0.0f;
    if (block_pack)
      block_pack_.resize(std::size_t(std::min<std::int64_t>(R, std::int64_t(rg_tiles) * r_tile)) * LP + 16);
    float* const blk = block_pack ? first_line(block_pack_.data()) : nullptr;
    double block_pack_s = 0;  // the calling thread's (team thread 0's) time in the blocks' packs
    // One team for all blocks; the barrier that ends each block's `omp for` orders the blocks' additions (and,
    // with block_pack, each block's pack before its gather and its gather before the next block's pack).
    team(nthreads, [&](const Team& tm) {
      for (int q0 = 0; q0 < Q; q0 += wide_q) {
        const int qn = std::min(wide_q, Q - q0);
        for (int rb = 0; rb < n_rb; ++rb) {
          const std::uint32_t tb0 = std::uint32_t(rb * rg_tiles), tb1 = std::min(n_rt, tb0 + std::uint32_t(rg_tiles));
          // The gather reads D row r at dp + r * ldd.
          const float* dp = D + std::size_t(q0 / wide_q) * panel_stride;
          if (block_pack) {  // the block's packed rows r0.. start at blk: dp is blk less r0 rows (as an address)
            const double tp = tm.thread() == 0 ? now_s() : 0.0;
            const std::uint32_t r0 = tb0 * r_tile;
            pack_panel_rows(tm, blk, q0, qn, int(r0), int(std::min<std::int64_t>(R, std::int64_t(tb1) * r_tile)));
            if (tm.thread() == 0) block_pack_s += now_s() - tp;
            dp = reinterpret_cast<const float*>(reinterpret_cast<std::uintptr_t>(blk) -
                                                std::uintptr_t(r0) * ldd * sizeof(float));
          }
          const bool write = rb == 0 && ow;  // rows without non-zeros in the block are written too
          tm.for_dynamic(long(n_bands), 16, [&](long b) {
            const detail::EllTileRef* first = refs.data() + roff[std::size_t(b)];
            const detail::EllTileRef* last = refs.data() + roff[std::size_t(b) + 1];
            const detail::EllTileRef* lo = std::lower_bound(first, last, tb0 * g.tile_cols, base_below);
            const detail::EllTileRef* hi = std::lower_bound(lo, last, tb1 * g.tile_cols, base_below);
            if (lo == hi && !write) return;
            // The next band's tiles of this block, whose payload the kernel prefetches while it gathers this one.
            const detail::EllTileRef *nlo = last, *nhi = last;
            if (prefetch_payload && std::size_t(b) + 1 < std::size_t(n_bands)) {
              const detail::EllTileRef* nlast = refs.data() + roff[std::size_t(b) + 2];
              nlo = std::lower_bound(last, nlast, tb0 * g.tile_cols, base_below);
              nhi = std::lower_bound(nlo, nlast, tb1 * g.tile_cols, base_below);
            }
            detail::gather_ell_u8_avx512(lo, int(hi - lo), int(g.r_eff(std::uint32_t(b))), alpha, dp, ldd,
                                         c.C + std::size_t(b) * p_tile * c.ldc + q0, std::size_t(c.ldc), qn, write,
                                         nlo, int(nhi - nlo),
                                         nhi > nlo ? int(g.r_eff(std::uint32_t(b) + 1)) : 0);
          });
        }
      }
    });
    if (block_pack) stats_.pack_s = block_pack_s;
    stats_.compute_s = now_s() - t0;
    return;
  }
  // R blocks of the gather (KB rows each, nkb of them: above).
  assert(wide_q == 0 || nkb == 1);
  constexpr int kSub = 64;
  // Rows of S per transposed store into C (Out = C^T): each C row is written in runs of this many floats
  // (TileSparseOptions::store_runs_min_bytes).
  const int piece_rows =
      double(c.M) * double(c.N) * sizeof(float) >= double(opt_.store_runs_min_bytes) ? kStoreRunRows : kSub;
  stats_.store_runs = !sp_a && !stream && piece_rows > kSub;
  static_assert(kMaxGatherSliceBytes / (detail::kGatherQ * sizeof(float)) * 5 / 4 * std::uint64_t(format::kMaxTileSide) +
                    detail::kEntrySlack <= 0xFFFFFFFFull,
                "one R block of the largest slice must keep a band's u32 entry positions from wrapping");
  stats_.r_blocks = nkb;
  const double tl = nkb > 1 ? now_s() : 0.0;  // lists_s of several R blocks (one block: per group, below)
  // The direct row gathers (one R block) read the tiles without row lists. With one thread, one panel of Q
  // and C rows as the output they take all bands as one group: the groups' sizes below serve the lists' L2
  // budget and the threads' shares, and the per-band slot counts they need were 0.2 us of a 4 us call (vgg-s).
  const bool direct = nkb == 1 && (wide_q > 0 || (!trans_s && all_ell && u8idx &&
                                                  (opt_.rows_kernel == RowsKernel::Direct ||
                                                   (opt_.rows_kernel == RowsKernel::Auto && Q <= kDirectRowsMaxQ))));
  const bool one_group = direct && sp_a && nthreads == 1 && (wide_q > 0 || Q <= QG);
  if (!one_group) {
    band_off_.assign(std::size_t(n_bands) + 1, 0);
    for (std::uint32_t b = 0; b < n_bands; ++b) band_off_[b + 1] = band_off_[b] + band_slots(s, b, trans_s, u8idx);
  }
  if (nkb == 1) {
    // One R block: build the row lists of a group of bands (>= kSub rows of S) into a per-thread buffer
    // that stays in L2 and gather them right away, all Q panels, instead of building every band's lists
    // first (one pass through a buffer of nnz entries that spills to L3 and is read back per panel).
    // Out = C^T goes through a per-thread kSub x kGatherQ buffer (L1) straight into C.
    // Groups: at least kSub rows of S; more bands while the group's list stays within kGroupEntries
    // (128 KiB), so that with short reductions (small R, e.g. backward-data) few groups share each pass
    // over D (a group visits all of D's panels). With several threads, at least two groups per thread.
    constexpr std::size_t kGroupEntries = 16384;
    const std::uint32_t min_bands = std::max<std::uint32_t>(1, std::uint32_t(kSub) / p_tile);
    const std::size_t budget =
        one_group ? 0
                  : std::min(kGroupEntries, std::max<std::size_t>(1, band_off_[n_bands] / (2 * std::size_t(nthreads))));
    thread_local std::vector<std::uint32_t> tl_gbounds;  // (a reference for the team: as tl_refs above)
    std::vector<std::uint32_t>& gbounds = tl_gbounds;
    gbounds.assign(1, 0);
    if (one_group) gbounds.push_back(n_bands);
    for (std::uint32_t b = one_group ? n_bands : 0; b < n_bands;) {
      std::uint32_t b1 = std::min(n_bands, b + min_bands);
      while (b1 < n_bands && band_off_[b1 + 1] - band_off_[b] <= budget) ++b1;
      gbounds.push_back(b1);
      b = b1;
    }
    const long n_groups = long(gbounds.size()) - 1;
    row_beg_.resize(std::size_t(P));
    row_end_.resize(std::size_t(P));
    if (group_ent_.size() < std::size_t(nthreads)) group_ent_.resize(std::size_t(nthreads));
    if (piece_buf_.size() < std::size_t(nthreads)) piece_buf_.resize(std::size_t(nthreads));
    const bool ow = !sp_a || beta_k == 0.0f;
    stats_.direct_rows = direct;
    // (Entry positions here are relative to a group's list: at most max(one band, kGroupEntries) slots, a band
    // at most p_tile * R <= 65535 * 40960 (one R block of at most 1.25 x 32768 rows: kMaxGatherSliceBytes) of
    // them, so they cannot wrap; check_entry_positions is for the several-R-block path below.)
    // Stored rows of one narrow panel (no AVX-512 kernel to match bit for bit): two accumulator sets.
    const bool pairs = !op_tiles && Q <= kDirectRowsMaxQ;
    stats_.gather_pairs = avx2_ && direct && wide_q == 0 && pairs;
    const detail::GatherEllFn gather_ell = !avx2_ ? detail::gather_ell_u8_portable
                                           : pairs ? detail::gather_ell_u8_avx2_pairs
                                                   : detail::gather_ell_u8_avx2;
    std::uint32_t *rb = row_beg_.data(), *re = row_end_.data();
    const std::size_t* off = band_off_.data();
    double lists_s = 0;
    team(nthreads, [&](const Team& tm) {
      std::vector<detail::Entry>& ent = group_ent_[std::size_t(tm.thread())];
      thread_local std::vector<std::size_t> cursor;
      thread_local std::vector<std::uint32_t> cnt;
      cursor.resize(n_rt);
      std::vector<float>& local = piece_buf_[std::size_t(tm.thread())];
      if (local.size() < (sp_a ? 0 : std::size_t(piece_rows) * QG)) local.resize(std::size_t(piece_rows) * QG);
      std::vector<float>& big = local;  // the direct row gather's C^T staging (the two paths never mix)
      thread_local std::vector<detail::EllTileRef> refs;
      thread_local std::vector<std::size_t> roff;
      std::uint32_t lo[kSub], hi[kSub];
      double thread_lists_s = 0;
      tm.for_dynamic(n_groups, 1, [&](long gi) {
        // (The clock is read only where lists are built: a read costs about 27 ns on this project's KVM host,
        // against a few us for the smallest direct calls, vgg-s at batch 1.)
        const std::uint32_t b0 = gbounds[std::size_t(gi)], b1 = gbounds[std::size_t(gi) + 1];
        const int p0 = int(b0 * p_tile), p1 = int(std::min<std::int64_t>(P, std::int64_t(b1) * p_tile));
        if (direct) {
          // S = stored rows, u8 ELL: the gather reads each band's tiles directly (no row lists).
          group_refs(b0, b1, refs, roff);
          if (!sp_a && big.size() < std::size_t(p1 - p0) * QG) big.resize(std::size_t(p1 - p0) * QG);
          if (wide_q > 0) {  // C rows, one pass over each ELL row per wide panel
            assert(Q <= wide_q);  // (several wide panels take the R-blocked loop above)
            for (int q0 = 0; q0 < Q; q0 += wide_q) {
              const int qn = std::min(wide_q, Q - q0);
              detail::gather_ell_u8_avx512_bands(refs.data(), roff.data(), int(b1 - b0), int(p_tile),
                                                 P - int(b0 * p_tile), alpha,
                                                 D + std::size_t(q0 / wide_q) * panel_stride, ldd,
                                                 c.C + std::size_t(b0) * p_tile * c.ldc + q0, std::size_t(c.ldc), qn, ow,
                                                 prefetch_payload);
            }
            return;
          }
          for (int q0 = 0; q0 < Q; q0 += QG) {
            const int qn = std::min(QG, Q - q0);
            const float* dp = D + std::size_t(q0 / QG) * panel_stride;
            for (std::uint32_t b = b0; b < b1; ++b) {
              const int pb = int(b * p_tile), nt = int(roff[b - b0 + 1] - roff[b - b0]);
              const detail::EllTileRef* tr = refs.data() + roff[b - b0];
              if (sp_a)
                gather_ell(tr, nt, int(g.r_eff(b)), alpha, dp, ldd, c.C + std::size_t(pb) * c.ldc + q0,
                           std::size_t(c.ldc), qn, ow);
              else
                gather_ell(tr, nt, int(g.r_eff(b)), alpha, dp, ldd, big.data() + std::size_t(pb - p0) * QG,
                           std::size_t(QG), qn, true);
            }
            if (!sp_a)
              for (int c0 = p0; c0 < p1; c0 += (stream ? kSub : piece_rows)) {
                const int rows = std::min(stream ? kSub : piece_rows, p1 - c0);
                const float* lb = big.data() + std::size_t(c0 - p0) * QG;
                if (stream)
                  detail::transpose_store_stream_avx2(lb, std::size_t(QG), rows, qn, c.C + std::size_t(q0) * c.ldc + c0,
                                                      std::size_t(c.ldc));
                else
                  tstore(lb, std::size_t(QG), rows, qn, c.C + std::size_t(q0) * c.ldc + c0, std::size_t(c.ldc), beta_k);
              }
          }
          return;
        }
        const double tg = now_s();
        const std::size_t need = off[b1] - off[b0] + detail::kEntrySlack;
        if (ent.size() < need) ent.resize(need);
        for (std::uint32_t b = b0; b < b1; ++b) {
          const std::size_t ne = off[b] - off[b0];
          if (off[b] == off[b + 1]) {
            const std::uint32_t q0 = b * p_tile, q1 = std::min(std::uint32_t(P), q0 + p_tile);
            std::fill(rb + q0, rb + q1, std::uint32_t(ne));
            std::fill(re + q0, re + q1, std::uint32_t(ne));
          } else if (trans_s) {
            build_cols(s, b, alpha, u8idx, ent.data(), ne, rb, re, cnt);
          } else {
            build_rows(s, b, alpha, u8idx, ent.data(), ne, rb, re, cursor);
          }
        }
        thread_lists_s += now_s() - tg;
        for (int q0 = 0; q0 < Q; q0 += QG) {
          const int qn = std::min(QG, Q - q0);
          const float* dp = D + std::size_t(q0 / QG) * panel_stride;
          if (sp_a) {
            for (int c0 = p0; c0 < p1; c0 += kSub) {
              const int rows = std::min(kSub, p1 - c0);
              for (int j = 0; j < rows; ++j) lo[j] = rb[c0 + j], hi[j] = re[c0 + j];
              gather(lo, hi, ent.data(), rows, dp, ldd, c.C + std::size_t(c0) * c.ldc + q0, std::size_t(c.ldc), qn, ow);
            }
            continue;
          }
          // Out = C^T: pieces of up to piece_rows rows of S gathered into `local` (L2), then stored
          // transposed, so that each C row receives a contiguous run of up to piece_rows floats.
          for (int pc0 = p0; pc0 < p1; pc0 += piece_rows) {
            const int pc1 = std::min(p1, pc0 + piece_rows);
            for (int c0 = pc0; c0 < pc1; c0 += kSub) {
              const int rows = std::min(kSub, pc1 - c0);
              for (int j = 0; j < rows; ++j) lo[j] = rb[c0 + j], hi[j] = re[c0 + j];
              gather(lo, hi, ent.data(), rows, dp, ldd, local.data() + std::size_t(c0 - pc0) * QG, std::size_t(QG), qn,
                     true);
            }
            if (stream)
              for (int c0 = pc0; c0 < pc1; c0 += kSub)
                detail::transpose_store_stream_avx2(local.data() + std::size_t(c0 - pc0) * QG, std::size_t(QG),
                                                    std::min(kSub, pc1 - c0), qn, c.C + std::size_t(q0) * c.ldc + c0,
                                                    std::size_t(c.ldc));
            else
              tstore(local.data(), std::size_t(QG), pc1 - pc0, qn, c.C + std::size_t(q0) * c.ldc + pc0,
                     std::size_t(c.ldc), beta_k);
          }
        }
      });
      tm.accumulate(lists_s, thread_lists_s);
    });
    stats_.lists_s = lists_s;
    stats_.compute_s = now_s() - t0;
    return;
  }
  // (1) Row lists of S, band by band (parallel), each band in its own region of ent_.
  check_entry_positions(band_off_[n_bands]);  // positions in the one list of all bands
  ent_.resize(band_off_[n_bands] + detail::kEntrySlack);
  row_beg_.assign(std::size_t(P), 0);
  row_end_.assign(std::size_t(P), 0);
  {
    detail::Entry* e = ent_.data();
    std::uint32_t *rb = row_beg_.data(), *re = row_end_.data();
    const std::size_t* off = band_off_.data();
    team(nthreads, [&](const Team& tm) {
      thread_local std::vector<std::size_t> cursor;
      thread_local std::vector<std::uint32_t> cnt;
      cursor.resize(n_rt);
      tm.for_dynamic(long(n_bands), 4, [&](long b) {
        if (off[b] == off[b + 1]) {  // no sparse tile: empty rows
          const std::uint32_t p0 = std::uint32_t(b) * p_tile, p1 = std::min(std::uint32_t(P), p0 + p_tile);
          std::fill(rb + p0, rb + p1, std::uint32_t(off[b]));
          std::fill(re + p0, re + p1, std::uint32_t(off[b]));
        } else if (trans_s) {
          build_cols(s, std::uint32_t(b), alpha, u8idx, e, off[b], rb, re, cnt);
        } else {
          build_rows(s, std::uint32_t(b), alpha, u8idx, e, off[b], rb, re, cursor);
        }
      });
    });
  }
  stats_.lists_s = now_s() - tl;
  // (2) Gather (several R blocks): for each block of kGatherQ along Q and block of KB along R (D's slice,
  // KB x kGatherQ floats, prefetched into L2), all rows of S in chunks of kSub: Out[p][q-block] += v *
  // D[r][q-block] with the output row block in registers. The output is C itself (sparse A) or, for C^T
  // (sparse B), a per-call buffer of P x kGatherQ stored transposed into C after the last R block.
  const int n_chunks = (P + kSub - 1) / kSub;
  const bool ow_first = !sp_a || beta_k == 0.0f;  // the first R block overwrites the output
  if (!sp_a) tmp_.resize(std::size_t(P) * QG);
  // bounds[p * (nkb + 1) + b]: first entry of row p with r >= b * KB (entries are sorted by r).
  bounds_.resize(std::size_t(P) * (nkb + 1));
  float* tmp = tmp_.data();
  std::uint32_t* bounds = bounds_.data();
  const std::uint32_t *rb = row_beg_.data(), *re = row_end_.data();
  const detail::Entry* ep = ent_.data();
  team(nthreads, [&](const Team& tm) {
    tm.for_static(P, [&](long p_i) {
      const int p = int(p_i);
      std::uint32_t* bp = bounds + std::size_t(p) * (nkb + 1);
      std::uint32_t k = rb[p];
      const std::uint32_t end = re[p];
      bp[0] = k;
      for (int b = 1; b < nkb; ++b) {
        const std::uint32_t k1 = std::uint32_t(b * KB);
        while (k < end && ep[k].r < k1) ++k;
        bp[b] = k;
      }
      bp[nkb] = end;
    });
    std::uint32_t lo[kSub], hi[kSub];
    for (int q0 = 0; q0 < Q; q0 += QG) {
      const int qn = std::min(QG, Q - q0);
      for (int b = 0; b < nkb; ++b) {
        const bool ow = b == 0 && ow_first;
        prefetch_rows_l2(D + std::size_t(q0 / QG) * panel_stride, ldd, b * KB, std::min(R, (b + 1) * KB),
                         ldd == std::size_t(QG) ? QG : qn);
        tm.for_dynamic(n_chunks, 4, [&](long ci_i) {
          const int ci = int(ci_i);
          const int p0 = ci * kSub, rows = std::min(kSub, P - p0);
          bool any = false;
          for (int j = 0; j < rows; ++j) {
            const std::uint32_t* bp = bounds + std::size_t(p0 + j) * (nkb + 1) + b;
            lo[j] = bp[0], hi[j] = bp[1];
            any |= bp[0] != bp[1];
          }
          if (!any && !ow) return;
          const float* dp = D + std::size_t(q0 / QG) * panel_stride;
          float* out = sp_a ? c.C + std::size_t(p0) * c.ldc + q0 : tmp + std::size_t(p0) * QG;
          gather(lo, hi, ep, rows, dp, ldd, out, sp_a ? std::size_t(c.ldc) : std::size_t(QG), qn, ow);
        });
      }
      if (!sp_a) {  // C[q0 + i][p] = tmp[p][i] (+ beta * C): pieces of P in parallel
        const int piece = stream ? kSub : piece_rows, n_pieces = (P + piece - 1) / piece;
        tm.for_static(n_pieces, [&](long ci_i) {
          const int ci = int(ci_i);
          const int p0 = ci * piece, rows = std::min(piece, P - p0);
          if (stream)
            detail::transpose_store_stream_avx2(tmp + std::size_t(p0) * QG, std::size_t(QG), rows, qn,
                                                c.C + std::size_t(q0) * c.ldc + p0, std::size_t(c.ldc));
          else
            tstore(tmp + std::size_t(p0) * QG, std::size_t(QG), rows, qn, c.C + std::size_t(q0) * c.ldc + p0,
                   std::size_t(c.ldc), beta_k);
        });
      }
    }
  });
  stats_.compute_s = now_s() - t0;
}

std::unique_ptr<TileSparseEngine> make_tile_sparse_engine(const TileSparseOptions& opt) {
  return std::make_unique<TileSparseEngine>(opt);
}

}  // namespace spartan::gemm
