// CPU tile-sparse GEMM engine (design and loop structure: sw/gemm/README.md).
//
// The call is viewed as Out[P x Q] += S[P x R] * D[R x Q] with S the logical sparse operand:
//   sparse A: P = M, R = K, Q = N, Out = C,   S = op(A),   D = op(B)
//   sparse B: P = N, R = K, Q = M, Out = C^T, S = op(B)^T, D = op(A)^T
// S is the stored (compacted) matrix or its transpose. A "band" is the set of tiles covering one tile
// range of P (a tile row of the stored matrix, or a tile column when S is its transpose).
//  - DENSE tiles: maximal runs of adjacent DENSE tiles along R in a band become one sgemm on the
//    original operands (in place, no copy); consecutive bands with identical runs share one call.
//  - ELL/BITMAP tiles: a band's non-zeros are gathered into a row list (Entry = {r, alpha*v}) and the
//    gather micro-kernel accumulates Out rows from rows of D (vectorised along Q).
#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
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
  if (c.K == 0 || (tc.sparse == 0 && tc.zero == 0)) {  // all DENSE (or nothing to sum): one sgemm
    stats_.full_dense = c.K > 0;
    stats_.dense_calls = 1;
    make_dense_engine()->run(c);
    stats_.compute_s = now_s() - t0;
    return;
  }
  scale_c(c);

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
  std::vector<std::pair<int, int>> runs, prev;
  int group_p0 = 0;
  auto flush = [&](int p0, int p1) {
    for (const auto& [ra, rb] : prev) {
      const int kk = rb - ra, pp = p1 - p0;
      const float *a, *b;
      if (sp_a) {  // C[p0:p1, :] += op(A)[p0:p1, ra:rb] * op(B)[ra:rb, :]
        a = c.op_a == Op::N ? c.A + std::size_t(p0) * c.lda + ra : c.A + std::size_t(ra) * c.lda + p0;
        b = c.op_b == Op::N ? c.B + std::size_t(ra) * c.ldb : c.B + ra;
        cblas_sgemm(CblasRowMajor, cb(c.op_a), cb(c.op_b), pp, c.N, kk, c.alpha, a, c.lda, b, c.ldb, 1.0f,
                    c.C + std::size_t(p0) * c.ldc, c.ldc);
      } else {  // C[:, p0:p1] += op(A)[:, ra:rb] * op(B)[ra:rb, p0:p1]
        a = c.op_a == Op::N ? c.A + ra : c.A + std::size_t(ra) * c.lda;
        b = c.op_b == Op::N ? c.B + std::size_t(ra) * c.ldb + p0 : c.B + std::size_t(p0) * c.ldb + ra;
        cblas_sgemm(CblasRowMajor, cb(c.op_a), cb(c.op_b), c.M, pp, kk, c.alpha, a, c.lda, b, c.ldb, 1.0f, c.C + p0,
                    c.ldc);
      }
      ++stats_.dense_calls;
    }
  };
  bool any_sparse_band = false;
  std::vector<char> band_sparse(n_bands, 0);
  for (std::uint32_t band = 0; band < n_bands; ++band) {
    runs.clear();
    for (std::uint32_t rt = 0; rt < n_rt; ++rt) {
      const TileHeader& h = hdr(band, rt);
      if (h.nnz == 0) continue;
      if (h.fmt() != TileFormat::Dense) {
        band_sparse[band] = 1;
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
  if (!any_sparse_band) {
    stats_.compute_s = now_s() - t0;
    return;
  }

  // ---- Sparse tiles: D rows contiguous along Q (pack when the stored layout is transposed).
  const float* D;
  std::size_t ldd;
  if (sp_a) {  // D = op(B) [K x N]
    if (c.op_b == Op::N) {
      D = c.B, ldd = c.ldb;
    } else {  // B stored N x K
      pack_.resize(std::size_t(R) * Q);
      for (int n = 0; n < Q; ++n)
        for (int k = 0; k < R; ++k) pack_[std::size_t(k) * Q + n] = c.B[std::size_t(n) * c.ldb + k];
      D = pack_.data(), ldd = Q;
    }
  } else {  // D = op(A)^T [K x M]
    if (c.op_a == Op::T) {
      D = c.A, ldd = c.lda;
    } else {  // A stored M x K
      pack_.resize(std::size_t(R) * Q);
      for (int m = 0; m < Q; ++m)
        for (int k = 0; k < R; ++k) pack_[std::size_t(k) * Q + m] = c.A[std::size_t(m) * c.lda + k];
      D = pack_.data(), ldd = Q;
    }
  }
  float* Out;
  std::size_t ldo;
  if (sp_a) {
    Out = c.C, ldo = c.ldc;
  } else {
    ct_.assign(std::size_t(P) * Q, 0.0f);
    Out = ct_.data(), ldo = Q;
  }
  const detail::GatherFn gather = avx2_ ? detail::gather_avx2 : detail::gather_portable;
  const float alpha = c.alpha;
  const int nthreads = opt_.num_threads > 0 ? opt_.num_threads : omp_get_max_threads();

#pragma omp parallel num_threads(nthreads)
  {
    std::vector<std::uint32_t> row_ptr, count;
    std::vector<detail::Entry> ent;
    std::vector<std::size_t> cursor(n_rt);
#pragma omp for schedule(dynamic, 1)
    for (std::uint32_t band = 0; band < n_bands; ++band) {
      if (!band_sparse[band]) continue;
      const int p0 = int(band * p_tile), rows = std::min(P, p0 + int(p_tile)) - p0;
      row_ptr.assign(rows + 1, 0);
      ent.clear();
      if (!trans_s) {  // stored tile rows are rows of S: walk row by row across the band's tiles
        std::fill(cursor.begin(), cursor.end(), 0);
        for (int r = 0; r < rows; ++r) {
          for (std::uint32_t rt = 0; rt < n_rt; ++rt) {
            const TileHeader& h = hdr(band, rt);
            if (h.nnz == 0 || h.fmt() == TileFormat::Dense) continue;
            const std::uint32_t base = rt * r_tile;
            for_row(s, h, std::uint32_t(rows), g.c_eff(rt), std::uint32_t(r), cursor[rt],
                    [&](std::uint32_t col, float v) { ent.push_back({base + col, alpha * v}); });
          }
          row_ptr[r + 1] = std::uint32_t(ent.size());
        }
      } else {  // stored tile rows run along R: counting sort of the entries by their column (= row of S)
        count.assign(rows + 1, 0);
        for (int pass = 0; pass < 2; ++pass) {
          for (std::uint32_t rt = 0; rt < n_rt; ++rt) {
            const TileHeader& h = hdr(band, rt);
            if (h.nnz == 0 || h.fmt() == TileFormat::Dense) continue;
            const std::uint32_t re = g.r_eff(rt);
            std::size_t cur = 0;
            for (std::uint32_t lr = 0; lr < re; ++lr)
              for_row(s, h, re, std::uint32_t(rows), lr, cur, [&](std::uint32_t col, float v) {
                if (pass == 0)
                  ++count[col + 1];
                else
                  ent[row_ptr[col]++] = {rt * r_tile + lr, alpha * v};
              });
          }
          if (pass == 0) {
            for (int r = 0; r < rows; ++r) count[r + 1] += count[r];
            ent.resize(count[rows]);
            std::copy(count.begin(), count.end() - 1, row_ptr.begin());
          }
        }
        std::copy(count.begin(), count.end(), row_ptr.begin());
      }
      gather(row_ptr.data(), ent.data(), rows, D, ldd, Out + std::size_t(p0) * ldo, ldo, Q);
    }
  }
  if (!sp_a) {  // C[m][n] += Ct[n][m], blocked transpose-add over the bands that had sparse tiles
    constexpr int BLK = 32;
    for (std::uint32_t band = 0; band < n_bands; ++band) {
      if (!band_sparse[band]) continue;
      const int n0 = int(band * p_tile), n1 = std::min(P, n0 + int(p_tile));
      for (int m0 = 0; m0 < c.M; m0 += BLK)
        for (int n = n0; n < n1; ++n) {
          const float* src = ct_.data() + std::size_t(n) * Q;
          for (int m = m0; m < std::min(c.M, m0 + BLK); ++m) c.C[std::size_t(m) * c.ldc + n] += src[m];
        }
    }
  }
  stats_.compute_s = now_s() - t0;
}

std::unique_ptr<TileSparseEngine> make_tile_sparse_engine(const TileSparseOptions& opt) {
  return std::make_unique<TileSparseEngine>(opt);
}

}  // namespace spartan::gemm
