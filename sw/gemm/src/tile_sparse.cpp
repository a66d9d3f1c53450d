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

// dst[c][r] = src[r][c] for a rows x cols source (row stride lds), destination row stride ldd; blocked.
void transpose(const float* src, std::size_t lds, int rows, int cols, float* dst, std::size_t ldd) {
  constexpr int BLK = 16;
  for (int r0 = 0; r0 < rows; r0 += BLK)
    for (int c0 = 0; c0 < cols; c0 += BLK) {
      const int r1 = std::min(rows, r0 + BLK), c1 = std::min(cols, c0 + BLK);
      for (int c = c0; c < c1; ++c)
        for (int r = r0; r < r1; ++r) dst[std::size_t(c) * ldd + r] = src[std::size_t(r) * lds + c];
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

  // ---- Sparse tiles. (1) The non-zeros of all sparse tiles become one row list over P (CSR-like,
  // Entry = {r, alpha * v}), rows in order, entries in increasing r. (2) The gather micro-kernel
  // accumulates Out[p][q-block] += v * D[r][q-block] over 64-row chunks and 256-deep blocks of R. D rows
  // are contiguous along Q when the dense operand's layout allows (op(B) = B for sparse A, op(A)^T = A for
  // sparse B); otherwise the dense operand is transposed once into a reused buffer (blocked).
  const float* X;  // dense operand as stored
  std::size_t ldx;
  bool pack;       // D[r][q] = X[q][r] (transpose into pack_) or X[r][q] (use in place)
  if (sp_a) {
    X = c.B, ldx = c.ldb, pack = c.op_b == Op::T;
  } else {
    X = c.A, ldx = c.lda, pack = c.op_a == Op::N;
  }
  const float alpha = c.alpha;
  row_ptr_.assign(std::size_t(P) + 1, 0);
  ent_.resize(stats_.nnz + 1);  // + 1: the branch-free ELL loops write one slot past the last entry
  std::size_t ne = 0;
  const bool u8idx = format::index_bytes(g.tile_cols) == 1;
  if (!trans_s) {  // stored rows are rows of S: walk each band row by row across its sparse tiles
    std::vector<std::size_t> cursor(n_rt);
    for (std::uint32_t band = 0; band < n_bands; ++band) {
      if (!band_sparse[band]) {
        for (std::uint32_t r = 0; r < g.r_eff(band); ++r) row_ptr_[band * p_tile + r + 1] = std::uint32_t(ne);
        continue;
      }
      std::fill(cursor.begin(), cursor.end(), 0);
      const std::uint32_t rows = g.r_eff(band);
      for (std::uint32_t r = 0; r < rows; ++r) {
        for (std::uint32_t rt = 0; rt < n_rt; ++rt) {
          const TileHeader& h = hdr(band, rt);
          if (h.nnz == 0 || h.fmt() == TileFormat::Dense) continue;
          const std::uint32_t base = rt * r_tile;
          if (h.fmt() == TileFormat::Ell && u8idx) {  // branch-free: padding slots write, then get overwritten
            const std::uint32_t w = h.width;
            const std::uint8_t* idx = s.tile_payload(h) + std::size_t(r) * w;
            const float* val = reinterpret_cast<const float*>(s.tile_payload(h) +
                                                              format::ell_values_offset(rows, w, g.tile_cols)) +
                               std::size_t(r) * w;
            for (std::uint32_t j = 0; j < w; ++j) {
              ent_[ne] = {base + idx[j], alpha * val[j]};
              ne += !format::is_zero(val[j]);
            }
          } else {
            for_row(s, h, rows, g.c_eff(rt), r, cursor[rt],
                    [&](std::uint32_t col, float v) { ent_[ne++] = {base + col, alpha * v}; });
          }
        }
        row_ptr_[band * p_tile + r + 1] = std::uint32_t(ne);
      }
    }
  } else {  // stored rows run along R: per tile column (band), collect in stored order, then sort by column
    const std::uint32_t TC = g.tile_cols;
    std::vector<std::uint32_t> cnt(TC + 1);
    for (std::uint32_t band = 0; band < n_bands; ++band) {
      const std::uint32_t pbase = band * TC, ce = g.c_eff(band);
      std::size_t band_nnz = 0;
      for (std::uint32_t rt = 0; rt < n_rt; ++rt) {
        const TileHeader& h = s.header(rt, band);
        if (h.fmt() != TileFormat::Dense) band_nnz += h.nnz;
      }
      tcol_.resize(band_nnz + 1);
      tent_.resize(band_nnz + 1);
      std::uint16_t* tcol = tcol_.data();  // raw pointers: no reloads of the vectors' data pointers
      detail::Entry* tent = tent_.data();
      std::size_t n = 0;
      for (std::uint32_t rt = 0; rt < n_rt && band_nnz; ++rt) {
        const TileHeader& h = s.header(rt, band);
        if (h.nnz == 0 || h.fmt() == TileFormat::Dense) continue;
        const std::uint32_t re = g.r_eff(rt), rbase = rt * g.tile_rows;
        if (h.fmt() == TileFormat::Ell && u8idx) {  // branch-free over all ELL slots (padding: +0.0)
          const std::uint32_t w = h.width;
          const std::uint8_t* idx = s.tile_payload(h);
          const float* val =
              reinterpret_cast<const float*>(s.tile_payload(h) + format::ell_values_offset(re, w, TC));
          for (std::uint32_t lr = 0; lr < re; ++lr)
            for (std::uint32_t j = 0; j < w; ++j) {
              const std::size_t slot = std::size_t(lr) * w + j;
              tcol[n] = idx[slot];
              tent[n] = {rbase + lr, alpha * val[slot]};
              n += !format::is_zero(val[slot]);
            }
        } else {
          std::size_t cur = 0;
          for (std::uint32_t lr = 0; lr < re; ++lr)
            for_row(s, h, re, ce, lr, cur, [&](std::uint32_t col, float v) {
              tcol[n] = static_cast<std::uint16_t>(col);
              tent[n++] = {rbase + lr, alpha * v};
            });
        }
      }
      std::fill(cnt.begin(), cnt.end(), 0);
      std::uint32_t* cn = cnt.data();
      for (std::size_t i = 0; i < n; ++i) ++cn[tcol[i] + 1];
      for (std::uint32_t col = 0; col < ce; ++col) {
        cn[col + 1] += cn[col];
        row_ptr_[pbase + col + 1] = std::uint32_t(ne + cn[col + 1]);
      }
      detail::Entry* out = ent_.data() + ne;
      for (std::size_t i = 0; i < n; ++i) out[cn[tcol[i]]++] = tent[i];
      ne += n;
    }
  }
  ent_.resize(ne);

  const detail::GatherFn gather = avx2_ ? detail::gather_avx2 : detail::gather_portable;
  const detail::TransposeAddFn tadd = avx2_ ? detail::transpose_add_avx2 : detail::transpose_add_portable;
  const float* D;
  std::size_t ldd;
  if (pack) {  // D = X^T [R x Q], blocked transpose into a reused buffer
    pack_.resize(std::size_t(R) * Q);
    transpose(X, ldx, Q, R, pack_.data(), std::size_t(Q));
    D = pack_.data(), ldd = std::size_t(Q);
  } else {
    D = X, ldd = ldx;
  }
  // Rows of S in chunks of PB and R in blocks of KB: a chunk's entries stay in L1/L2 and the D block
  // (KB rows x 64 floats per sweep of the gather) stays in L2 while the chunk's rows reuse it. Chunks
  // write disjoint rows of Out, so they run in parallel.
  constexpr int PB = 64, KB = 256;
  const int n_chunks = (P + PB - 1) / PB;
  const int nthreads = opt_.num_threads > 0 ? opt_.num_threads : omp_get_max_threads();
  const std::uint32_t* rp = row_ptr_.data();
  const detail::Entry* ep = ent_.data();
#pragma omp parallel num_threads(nthreads)
  {
    std::vector<float> tmp;
    std::uint32_t lo[PB], hi[PB];
#pragma omp for schedule(dynamic, 1)
    for (int ci = 0; ci < n_chunks; ++ci) {
      const int p0 = ci * PB, rows = std::min(PB, P - p0);
      if (rp[p0] == rp[p0 + rows]) continue;
      float* out;
      std::size_t ldo;
      if (sp_a) {  // Out = C: rows m
        out = c.C + std::size_t(p0) * c.ldc, ldo = c.ldc;
      } else {  // Out = C^T: accumulate rows (= columns n of C) in tmp, add transposed at the end
        tmp.assign(std::size_t(rows) * Q, 0.0f);
        out = tmp.data(), ldo = std::size_t(Q);
      }
      for (int j = 0; j < rows; ++j) hi[j] = rp[p0 + j];
      for (int k0 = 0; k0 < R; k0 += KB) {
        const std::uint32_t k1 = std::uint32_t(std::min(R, k0 + KB));
        for (int j = 0; j < rows; ++j) {
          lo[j] = hi[j];
          const std::uint32_t end = rp[p0 + j + 1];
          std::uint32_t k = lo[j];
          while (k < end && ep[k].r < k1) ++k;
          hi[j] = k;
        }
        gather(lo, hi, ep, rows, D, ldd, out, ldo, Q);
      }
      if (!sp_a) tadd(tmp.data(), std::size_t(Q), rows, Q, c.C + p0, c.ldc);
    }
  }
  stats_.compute_s = now_s() - t0;
}

std::unique_ptr<TileSparseEngine> make_tile_sparse_engine(const TileSparseOptions& opt) {
  return std::make_unique<TileSparseEngine>(opt);
}

}  // namespace spartan::gemm
