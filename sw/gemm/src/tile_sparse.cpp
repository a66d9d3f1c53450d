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
//  - Call-level guard: overall density >= threshold -> one sgemm of the whole call.
#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>

#include "cpu_kernels.h"
#include "spartan/common/error.h"
#include "spartan/gemm/tile_sparse.h"

namespace spartan::gemm {

using format::TileFormat;
using format::TiledMatrix;
using format::TileHeader;

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
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

// Iterates the non-zeros of one stored row (local row `r`) of a sparse-format tile: f(col, value).
// `cursor` is the running value index for BITMAP tiles (rows must be visited in increasing order).
template <class F>
inline void for_row(const TiledMatrix& s, const TileHeader& h, std::uint32_t r_eff, std::uint32_t c_eff,
                    std::uint32_t r, std::size_t& cursor, F&& f) {
  const std::uint8_t* p = s.tile_payload(h);
  if (h.fmt() == TileFormat::Ell) {
    const std::uint32_t w = h.width;
    const float* vals = reinterpret_cast<const float*>(p + format::ell_values_offset(r_eff, w, s.grid.tile_cols));
    const bool u8 = format::index_bytes(s.grid.tile_cols) == 1;
    for (std::uint32_t j = 0; j < w; ++j) {
      const float v = vals[std::size_t(r) * w + j];
      if (format::is_zero(v)) break;  // padding ends the row
      const std::size_t slot = std::size_t(r) * w + j;
      const std::uint32_t col = u8 ? p[slot] : format::detail::load_le<std::uint16_t>(p + 2 * slot);
      f(col, v);
    }
  } else {  // Bitmap
    const std::size_t words = format::bitmap_row_words(c_eff);
    const float* vals = reinterpret_cast<const float*>(p + format::bitmap_bytes(r_eff, c_eff));
    const std::uint32_t* bm = reinterpret_cast<const std::uint32_t*>(p) + std::size_t(r) * words;
    for (std::size_t wi = 0; wi < words; ++wi) {
      std::uint32_t bits = bm[wi];
      while (bits) {
        const int b = __builtin_ctz(bits);
        bits &= bits - 1;
        f(std::uint32_t(wi * 32 + b), vals[cursor++]);
      }
    }
  }
}

// Row list of the chunk of S rows covered by tile rows [b0, b1) when rows of S are stored rows: the
// entries of chunk row j are ent[rp[j] .. rp[j + 1]), r ascending. ELL tiles with u8 indices are read
// branch-free (every slot is written, the cursor advances on non-zeros; + 1 slot of slack).
void build_rows(const TiledMatrix& s, std::uint32_t b0, std::uint32_t b1, float alpha, bool u8idx,
                std::vector<detail::Entry>& ent, std::vector<std::uint32_t>& rp, std::vector<std::size_t>& cursor) {
  const format::TileGrid& g = s.grid;
  const std::uint32_t nc = g.tiles_c(), TR = g.tile_rows, TC = g.tile_cols;
  std::size_t slots = 0;
  std::uint32_t crows = 0;
  for (std::uint32_t b = b0; b < b1; ++b) {
    crows += g.r_eff(b);
    for (std::uint32_t tj = 0; tj < nc; ++tj) {
      const TileHeader& h = s.header(b, tj);
      if (h.nnz == 0 || h.fmt() == TileFormat::Dense) continue;
      slots += (h.fmt() == TileFormat::Ell && u8idx) ? std::size_t(g.r_eff(b)) * h.width : h.nnz;
    }
  }
  ent.resize(slots + 1);
  rp.assign(std::size_t(crows) + 1, 0);
  detail::Entry* e = ent.data();
  std::size_t ne = 0;
  for (std::uint32_t b = b0; b < b1; ++b) {
    std::fill(cursor.begin(), cursor.end(), 0);
    const std::uint32_t rows = g.r_eff(b), j0 = (b - b0) * TR;
    for (std::uint32_t r = 0; r < rows; ++r) {
      for (std::uint32_t tj = 0; tj < nc; ++tj) {
        const TileHeader& h = s.header(b, tj);
        if (h.nnz == 0 || h.fmt() == TileFormat::Dense) continue;
        const std::uint32_t base = tj * TC;
        if (h.fmt() == TileFormat::Ell && u8idx) {
          const std::uint32_t w = h.width;
          const std::uint8_t* idx = s.tile_payload(h) + std::size_t(r) * w;
          const float* val =
              reinterpret_cast<const float*>(s.tile_payload(h) + format::ell_values_offset(rows, w, TC)) +
              std::size_t(r) * w;
          for (std::uint32_t j = 0; j < w; ++j) {
            e[ne] = {base + idx[j], alpha * val[j]};
            ne += !format::is_zero(val[j]);
          }
        } else {
          for_row(s, h, rows, g.c_eff(tj), r, cursor[tj],
                  [&](std::uint32_t col, float v) { e[ne++] = {base + col, alpha * v}; });
        }
      }
      rp[j0 + r + 1] = std::uint32_t(ne);
    }
  }
}

// Out block store: C[j][i] = T[j][i] + (beta == 0 ? 0 : beta * C[j][i]) for j < rows, i < w.
void store_block(const float* T, std::size_t ldt, int rows, int w, float* C, std::size_t ldc, float beta) {
  for (int j = 0; j < rows; ++j) {
    const float* t = T + std::size_t(j) * ldt;
    float* crow = C + std::size_t(j) * ldc;
    if (beta == 0.0f)
      for (int i = 0; i < w; ++i) crow[i] = t[i];
    else if (beta == 1.0f)
      for (int i = 0; i < w; ++i) crow[i] += t[i];
    else
      for (int i = 0; i < w; ++i) crow[i] = beta * crow[i] + t[i];
  }
}

}  // namespace

TileSparseEngine::TileSparseEngine(const TileSparseOptions& opt) : opt_(opt) {
  if (opt.tile_rows == 0 || opt.tile_cols == 0 || opt.tile_cols > 65535)
    throw InputError("tile-sparse gemm: tile size must be >= 1 x 1 with at most 65535 columns");
  if (opt.sparse_format != TileFormat::Ell && opt.sparse_format != TileFormat::Bitmap)
    throw InputError("tile-sparse gemm: sparse format must be ELL or BITMAP");
  const bool has = detail::cpu_has_avx2_fma();
  if (opt.isa == Isa::Avx2 && !has) throw InputError("tile-sparse gemm: AVX2/FMA requested but the CPU lacks it");
  avx2_ = opt.isa == Isa::Auto ? has : opt.isa == Isa::Avx2;
}

std::string TileSparseEngine::isa_name() const { return avx2_ ? "avx2" : "portable"; }

format::TiledMatrix TileSparseEngine::compact_operand(const GemmCall& c) const {
  const Stored st = stored_sparse(c);
  format::CompactOptions o;
  o.tile_rows = opt_.tile_rows;
  o.tile_cols = opt_.tile_cols;
  o.threshold = opt_.threshold;
  o.sparse_format = opt_.sparse_format;
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
  const TiledMatrix s = compact_operand(c);
  const double t1 = now_s();
  run_compacted(c, s);
  stats_.compact_s = t1 - t0;
}

void TileSparseEngine::run_compacted(const GemmCall& c, const TiledMatrix& s) {
  validate(c);
  if (c.sparse == SparseOperand::None) throw InputError("tile-sparse gemm: run_compacted needs a sparse operand");
  const Stored st = stored_sparse(c);
  if (s.grid.rows != std::uint32_t(st.rows) || s.grid.cols != std::uint32_t(st.cols) ||
      s.elem != format::ElemType::F32 || s.headers.size() != s.grid.num_tiles())
    throw InputError("tile-sparse gemm: compacted operand does not match the call's sparse operand shape");
  const double t0 = now_s();
  stats_ = TileSparseStats{};
  const format::TileCounts tc = format::count_tiles(s);
  stats_.tiles_zero = tc.zero;
  stats_.tiles_sparse = tc.sparse;
  stats_.tiles_dense = tc.dense;
  for (const auto& h : s.headers) stats_.nnz += h.nnz;
  if (c.M == 0 || c.N == 0) return;
  const double density = double(stats_.nnz) / (double(st.rows) * double(st.cols));
  if (c.K == 0 || (tc.sparse == 0 && tc.zero == 0) || (opt_.whole_call_guard && density >= opt_.threshold)) {
    // all DENSE, or dense enough overall (call-level guard), or nothing to sum: one sgemm
    stats_.full_dense = c.K > 0;
    stats_.dense_calls = 1;
    make_dense_engine()->run(c);
    stats_.compute_s = now_s() - t0;
    return;
  }
  const bool sp_a = c.sparse == SparseOperand::A;
  // S is the stored matrix (bands = tile rows) or its transpose (bands = tile columns).
  const bool trans_s = sp_a ? c.op_a == Op::T : c.op_b == Op::N;
  const format::TileGrid& g = s.grid;
  const std::uint32_t n_bands = trans_s ? g.tiles_c() : g.tiles_r();
  const std::uint32_t n_rt = trans_s ? g.tiles_r() : g.tiles_c();          // tiles along R
  const std::uint32_t p_tile = trans_s ? g.tile_cols : g.tile_rows;         // band height in P
  const std::uint32_t r_tile = trans_s ? g.tile_rows : g.tile_cols;         // tile extent along R
  const int P = sp_a ? c.M : c.N, R = c.K, Q = sp_a ? c.N : c.M;
  auto hdr = [&](std::uint32_t band, std::uint32_t rt) -> const TileHeader& {
    return trans_s ? s.header(rt, band) : s.header(band, rt);
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
  bool any_sparse_band = false;
  for (std::uint32_t band = 0; band < n_bands; ++band) {
    runs.clear();
    for (std::uint32_t rt = 0; rt < n_rt; ++rt) {
      const TileHeader& h = hdr(band, rt);
      if (h.nnz == 0) continue;
      if (h.fmt() != TileFormat::Dense) {
        any_sparse_band = true;
        continue;
      }
      const int ra = int(rt * r_tile), rb = std::min(R, int((rt + 1) * r_tile));
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
  if (!any_sparse_band) {
    stats_.compute_s = now_s() - t0;
    return;
  }

  // ---- Sparse tiles (loop structure: sw/gemm/README.md). D[r][q] must be contiguous along Q: it is the
  // dense operand as stored (op(B) = B for sparse A, op(A)^T = A for sparse B) or, otherwise, its
  // transpose packed once per call (AVX2 8x8 blocks, parallel).
  const detail::GatherFn gather = avx2_ ? detail::gather_avx2 : detail::gather_portable;
  const detail::TransposeStoreFn tstore = avx2_ ? detail::transpose_store_avx2 : detail::transpose_store_portable;
  const int nthreads = opt_.num_threads > 0 ? opt_.num_threads : omp_get_max_threads();
  const float* X = sp_a ? c.B : c.A;  // dense operand as stored
  const std::size_t ldx = std::size_t(sp_a ? c.ldb : c.lda);
  const bool pack = sp_a ? c.op_b == Op::T : c.op_a == Op::N;  // D = X^T
  const float* D = X;
  std::size_t ldd = ldx;
  if (pack) {
    pack_.resize(std::size_t(R) * Q);
    const int nblk = (Q + 63) / 64;
    float* dst = pack_.data();
#pragma omp parallel for num_threads(nthreads) schedule(static)
    for (int b = 0; b < nblk; ++b) {
      const int q0 = b * 64, qn = std::min(64, Q - q0);
      tstore(X + std::size_t(q0) * ldx, ldx, qn, R, dst + q0, std::size_t(Q), 0.0f);
    }
    D = pack_.data(), ldd = std::size_t(Q);
  }
  const bool u8idx = format::index_bytes(g.tile_cols) == 1;
  const float alpha = c.alpha;
  if (trans_s) {
    // S = stored^T (e.g. the forward pass, sparse B with op N): scatter straight from the compacted
    // tiles, no row list. Work item = (band = tile column, block of kScatterQ along Q): T[p][q-block]
    // (L1-resident) accumulates alpha * v * D[r][q-block] for every non-zero (r, p, v) of the band, D's
    // row held in registers per stored row; then T is stored into C (transposed for sparse B).
    constexpr int QS = detail::kScatterQ;
    detail::ScatterFn<std::uint8_t> sc8 = detail::scatter_portable;
    detail::ScatterFn<std::uint16_t> sc16 = detail::scatter_portable;
    if (avx2_) sc8 = detail::scatter_avx2, sc16 = detail::scatter_avx2;
    const std::uint32_t TC = g.tile_cols;
    const int nqb = (Q + QS - 1) / QS;
    const long n_items = long(n_bands) * nqb;
#pragma omp parallel num_threads(nthreads)
    {
      std::vector<float> tbuf(std::size_t(TC) * QS + 8);
      float* T = reinterpret_cast<float*>((reinterpret_cast<std::uintptr_t>(tbuf.data()) + 31) & ~std::uintptr_t(31));
      std::vector<std::uint16_t> dcol(TC);
      std::vector<float> dval(TC);
#pragma omp for schedule(dynamic, 1)
      for (long it = 0; it < n_items; ++it) {
        // q-block major: consecutive items share D's q-block slice (kept in L2)
        const std::uint32_t band = std::uint32_t(it % n_bands);
        const int q0 = int(it / n_bands) * QS, qn = std::min(QS, Q - q0), ldt = (qn + 7) / 8 * 8;
        const std::uint32_t ce = g.c_eff(band), p0 = band * TC;
        bool any = false;
        for (std::uint32_t rt = 0; rt < n_rt && !any; ++rt) {
          const TileHeader& h = s.header(rt, band);
          any = h.nnz != 0 && h.fmt() != TileFormat::Dense;
        }
        if (!any && beta_k != 0.0f) continue;
        std::fill(T, T + std::size_t(ce) * ldt, 0.0f);
        for (std::uint32_t rt = 0; rt < n_rt && any; ++rt) {
          const TileHeader& h = s.header(rt, band);
          if (h.nnz == 0 || h.fmt() == TileFormat::Dense) continue;
          const std::uint32_t re = g.r_eff(rt);
          const float* Dr = D + std::size_t(rt) * g.tile_rows * ldd + q0;
          const std::uint8_t* pl = s.tile_payload(h);
          if (h.fmt() == TileFormat::Ell) {
            const float* val = reinterpret_cast<const float*>(pl + format::ell_values_offset(re, h.width, TC));
            if (u8idx)
              sc8(pl, val, h.width, int(re), Dr, ldd, alpha, T, qn);
            else
              sc16(reinterpret_cast<const std::uint16_t*>(pl), val, h.width, int(re), Dr, ldd, alpha, T, qn);
          } else {  // BITMAP: decode each row into a list, then scatter it
            std::size_t cur = 0;
            for (std::uint32_t lr = 0; lr < re; ++lr) {
              std::uint32_t n = 0;
              for_row(s, h, re, ce, lr, cur, [&](std::uint32_t col, float v) {
                dcol[n] = static_cast<std::uint16_t>(col);
                dval[n++] = v;
              });
              if (n) sc16(dcol.data(), dval.data(), n, 1, Dr + std::size_t(lr) * ldd, ldd, alpha, T, qn);
            }
          }
        }
        if (sp_a)
          store_block(T, std::size_t(ldt), int(ce), qn, c.C + std::size_t(p0) * c.ldc + q0, std::size_t(c.ldc), beta_k);
        else
          tstore(T, std::size_t(ldt), int(ce), qn, c.C + std::size_t(q0) * c.ldc + p0, std::size_t(c.ldc), beta_k);
      }
    }
    stats_.compute_s = now_s() - t0;
    return;
  }
  // S rows = stored rows (e.g. backward-weight, sparse B with op T): chunks of tile rows (~kSub rows of
  // P) build their row list (Entry = {r, alpha * v}) in a per-thread buffer, then the gather
  // micro-kernel runs on blocks of kKBlock along R (the D block stays in L2). The output is C itself
  // (sparse A) or, for C^T (sparse B), a per-thread buffer stored transposed into C.
  constexpr int kSub = 64, kKBlock = 1024;
  const std::uint32_t bands_per_chunk = std::max(1u, std::uint32_t(kSub) / p_tile);
  const int n_chunks = int((n_bands + bands_per_chunk - 1) / bands_per_chunk);
  const bool ow_first = !sp_a || beta_k == 0.0f;  // the first k-block overwrites the output
  const int KB = R <= kKBlock * 3 / 2 ? R : kKBlock;
#pragma omp parallel num_threads(nthreads)
  {
    std::vector<detail::Entry> ent;
    std::vector<std::uint32_t> rp;
    std::vector<std::size_t> cursor(n_rt);
    std::vector<float> tmp;
    std::uint32_t lo[kSub], hi[kSub];
#pragma omp for schedule(dynamic, 1)
    for (int ci = 0; ci < n_chunks; ++ci) {
      const std::uint32_t b0 = std::uint32_t(ci) * bands_per_chunk, b1 = std::min(n_bands, b0 + bands_per_chunk);
      const int cp0 = int(b0 * p_tile), crows = std::min(P, int(b1 * p_tile)) - cp0;
      build_rows(s, b0, b1, alpha, u8idx, ent, rp, cursor);
      if (beta_k != 0.0f && rp[crows] == 0) continue;  // nothing to add
      const detail::Entry* ep = ent.data();
      for (int s0 = 0; s0 < crows; s0 += kSub) {
        const int rows = std::min(kSub, crows - s0), p0 = cp0 + s0;
        if (beta_k != 0.0f && rp[s0] == rp[s0 + rows]) continue;
        float* out;
        std::size_t ldo;
        if (sp_a) {
          out = c.C + std::size_t(p0) * c.ldc, ldo = std::size_t(c.ldc);
        } else {
          tmp.resize(std::size_t(rows) * Q);
          out = tmp.data(), ldo = std::size_t(Q);
        }
        for (int j = 0; j < rows; ++j) hi[j] = rp[s0 + j];
        bool first = true;
        for (int k0 = 0; k0 < R; k0 += KB) {
          const std::uint32_t k1 = std::uint32_t(std::min(R, k0 + KB));
          bool any = false;
          for (int j = 0; j < rows; ++j) {
            lo[j] = hi[j];
            const std::uint32_t end = rp[s0 + j + 1];
            std::uint32_t k = lo[j];
            if (k1 == std::uint32_t(R))
              k = end;
            else
              while (k < end && ep[k].r < k1) ++k;
            hi[j] = k;
            any |= k != lo[j];
          }
          if (!any && !(first && ow_first)) continue;
          gather(lo, hi, ep, rows, D, ldd, out, ldo, Q, first && ow_first);
          first = false;
        }
        if (!sp_a) tstore(tmp.data(), std::size_t(Q), rows, Q, c.C + p0, std::size_t(c.ldc), beta_k);
      }
    }
  }
  stats_.compute_s = now_s() - t0;
}

std::unique_ptr<TileSparseEngine> make_tile_sparse_engine(const TileSparseOptions& opt) {
  return std::make_unique<TileSparseEngine>(opt);
}

}  // namespace spartan::gemm
