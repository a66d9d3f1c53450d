// Tile-sparse CPU GEMM against the OpenBLAS reference: all sparse-operand/op combinations, both sparse
// formats, both ISAs, thresholds that force all-sparse / mixed / all-dense, odd shapes.
//
// Tolerance (fp32): |C - C_ref| <= 8 * K * 2^-24 * (|alpha| * sum_k |a_ik| |b_kj| + |beta| |C0_ij|) + 1e-30.
// Both sides are fp32 sums of the same K products in different orders; the bound is the standard
// worst-case error of recursive summation (Higham, "Accuracy and Stability of Numerical Algorithms", 3.1)
// for the two results, with margin.
#include <gtest/gtest.h>
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <tuple>
#include <utility>
#include <vector>

#include "spartan/common/error.h"
#include "spartan/gemm/tile_sparse.h"

using namespace spartan::gemm;
using spartan::format::TileFormat;

namespace {

/// The row gather's D slice of the 512 KiB-L2 machine (R blocks of 1024 rows; one block up to R = 1280), for
/// tests that must take the one-block or the several-block path whatever this machine's L2 size is.
constexpr std::size_t kSlice256K = std::size_t(256) << 10;

struct Case {
  SparseOperand sp;
  Op oa, ob;
  int M, N, K;
  double sparsity;
};

void check_case_into(TileSparseStats& out, const Case& cs, const TileSparseOptions& opt, std::mt19937& rng,
                     float alpha, float beta, int pad) {
  std::uniform_real_distribution<float> u(-1, 1);
  std::uniform_real_distribution<double> p(0, 1);
  const int ar = cs.oa == Op::N ? cs.M : cs.K, ac = cs.oa == Op::N ? cs.K : cs.M;
  const int br = cs.ob == Op::N ? cs.K : cs.N, bc = cs.ob == Op::N ? cs.N : cs.K;
  const int lda = ac + pad, ldb = bc + pad, ldc = cs.N + pad;
  std::vector<float> A(std::size_t(ar) * lda), B(std::size_t(br) * ldb), C0(std::size_t(cs.M) * ldc);
  const double sa = cs.sp == SparseOperand::A ? cs.sparsity : 0, sb = cs.sp == SparseOperand::B ? cs.sparsity : 0;
  // Clustered zeros (whole 8x8 blocks) for half of the sparsity, random for the rest: mixes zero,
  // sparse and dense tiles.
  for (int i = 0; i < ar; ++i)
    for (int j = 0; j < ac; ++j) A[std::size_t(i) * lda + j] = p(rng) < sa ? (p(rng) < 0.5 ? 0.0f : -0.0f) : u(rng);
  for (int i = 0; i < br; ++i)
    for (int j = 0; j < bc; ++j) B[std::size_t(i) * ldb + j] = p(rng) < sb ? 0.0f : u(rng);
  if (cs.sparsity > 0.5) {
    float* S = cs.sp == SparseOperand::A ? A.data() : B.data();
    const int rows = cs.sp == SparseOperand::A ? ar : br, cols = cs.sp == SparseOperand::A ? ac : bc;
    const int ld = cs.sp == SparseOperand::A ? lda : ldb;
    for (int i = 0; i < rows; ++i)
      for (int j = 0; j < cols; ++j)
        if (((i / 24) + (j / 24)) % 3 == 0) S[std::size_t(i) * ld + j] = 0.0f;
  }
  for (auto& x : C0) x = u(rng);
  std::vector<float> C = C0, R = C0;
  GemmCall c{cs.oa, cs.ob, cs.M, cs.N, cs.K, alpha, beta, A.data(), lda, B.data(), ldb, C.data(), ldc, cs.sp};
  GemmCall r = c;
  r.C = R.data();
  make_dense_engine()->run(r);
  TileSparseEngine e(opt);
  e.run(c);
  auto a = [&](int i, int k) { return cs.oa == Op::N ? A[std::size_t(i) * lda + k] : A[std::size_t(k) * lda + i]; };
  auto b = [&](int k, int j) { return cs.ob == Op::N ? B[std::size_t(k) * ldb + j] : B[std::size_t(j) * ldb + k]; };
  for (int i = 0; i < cs.M; ++i)
    for (int j = 0; j < cs.N; ++j) {
      double mag = 0;
      for (int k = 0; k < cs.K; ++k) mag += std::fabs(double(a(i, k)) * b(k, j));
      const double tol =
          8.0 * cs.K * std::ldexp(1.0, -24) * (std::fabs(alpha) * mag + std::fabs(beta * C0[std::size_t(i) * ldc + j])) +
          1e-30;
      ASSERT_LE(std::fabs(double(C[std::size_t(i) * ldc + j]) - R[std::size_t(i) * ldc + j]), tol)
          << "C(" << i << "," << j << ") sp=" << int(cs.sp) << " oa=" << int(cs.oa) << " ob=" << int(cs.ob)
          << " M=" << cs.M << " N=" << cs.N << " K=" << cs.K << " thr=" << opt.threshold
          << " fmt=" << int(opt.sparse_format) << " isa=" << e.isa_name();
    }
  // Padding columns of C untouched.
  for (int i = 0; i < cs.M; ++i)
    for (int j = cs.N; j < ldc; ++j) ASSERT_EQ(C[std::size_t(i) * ldc + j], C0[std::size_t(i) * ldc + j]);
  const TileSparseStats& st = e.last_stats();
  std::size_t nnz = 0;
  const float* S = cs.sp == SparseOperand::A ? A.data() : B.data();
  const int rows = cs.sp == SparseOperand::A ? ar : br, cols = cs.sp == SparseOperand::A ? ac : bc;
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j) nnz += !spartan::format::is_zero(S[std::size_t(i) * (cols + pad) + j]);
  EXPECT_EQ(st.nnz, nnz);
  // The engine tiles op(A) = A^T (M x K) instead of the stored K x M A when it gathers op(A)'s rows.
  const bool op_tiles = e.compact_orientation(c) == Orientation::Op && cs.oa == Op::T;
  const int trows = op_tiles ? cs.M : rows, tcols = op_tiles ? cs.K : cols;
  const std::size_t tiles = std::size_t((trows + opt.tile_rows - 1) / opt.tile_rows) *
                            ((tcols + opt.tile_cols - 1) / opt.tile_cols);
  EXPECT_EQ(st.tiles_zero + st.tiles_sparse + st.tiles_dense, tiles);
  if (opt.threshold > 1 && !opt.dense_if_not_smaller) {
    EXPECT_EQ(st.tiles_dense, 0u);
  }
  out = st;
}

/// Checks one call against OpenBLAS (tolerance above) and returns the engine's stats of that call.
TileSparseStats check_case(const Case& cs, const TileSparseOptions& opt, std::mt19937& rng, float alpha = 1.0f,
                           float beta = 0.0f, int pad = 0) {
  TileSparseStats st;
  check_case_into(st, cs, opt, rng, alpha, beta, pad);
  return st;
}

/// Runs call c (C ignored) into C2 on an AVX2 engine and into C5 on an AVX-512 one, options o otherwise;
/// returns the two engines' stats.
std::pair<TileSparseStats, TileSparseStats> run_avx2_and_avx512(GemmCall c, TileSparseOptions o, std::vector<float>& C2,
                                                                std::vector<float>& C5) {
  o.isa = Isa::Avx2;
  TileSparseEngine e2(o);
  o.isa = Isa::Avx512;
  TileSparseEngine e5(o);
  c.C = C2.data();
  e2.run(c);
  c.C = C5.data();
  e5.run(c);
  return {e2.last_stats(), e5.last_stats()};
}

// Options that keep every non-zero tile sparse (no DENSE tile, whole-call guard as given), on one thread, with
// the given kernels: for tests that must reach the sparse kernels.
TileSparseOptions all_sparse(TransposedKernel tk, RowsKernel rk, Isa isa) {
  TileSparseOptions o;
  o.threshold = 2.0;
  o.dense_if_not_smaller = false;
  o.transposed_kernel = tk;
  o.rows_kernel = rk;
  o.isa = isa;
  o.num_threads = 1;
  return o;
}

std::vector<Isa> isas() {
  std::vector<Isa> v = {Isa::Portable};
  const std::string best = TileSparseEngine().isa_name();
  if (best == "avx2" || best == "avx512") v.push_back(Isa::Avx2);
  if (best == "avx512") v.push_back(Isa::Avx512);
  return v;
}

}  // namespace

// The three training GEMMs of a conv layer (im2col, row-major):
//   forward           Y[Cout x HW]    = W[Cout x CKK] * col[CKK x HW]          sparse B, N N
//   backward-weight   dW[Cout x CKK]  = dY[Cout x HW] * col^T                    sparse B (op T) or A (dY masked)
//   backward-data     dcol[CKK x HW]  = W^T * dY                                 sparse B, T N
// plus sparse A with A transposed; every combination is checked.
TEST(TileSparseGemm, AllOpsFormatsIsasThresholds) {
  std::mt19937 rng(11);
  const int shapes[][3] = {{37, 70, 45}, {5, 131, 33}, {100, 9, 77}};
  for (SparseOperand sp : {SparseOperand::A, SparseOperand::B})
    for (Op oa : {Op::N, Op::T})
      for (Op ob : {Op::N, Op::T})
        for (auto& sh : shapes)
          for (double sparsity : {0.0, 0.6, 0.95}) {
            Case cs{sp, oa, ob, sh[0], sh[1], sh[2], sparsity};
            for (Isa isa : isas())
              for (TileFormat f : {TileFormat::Ell, TileFormat::Bitmap})
                for (double thr : {0.0, 0.3, 2.0}) {
                  TileSparseOptions o;
                  o.isa = isa;
                  o.sparse_format = f;
                  o.threshold = thr;
                  o.tile_rows = 32;
                  o.tile_cols = 32;
                  check_case(cs, o, rng);
                }
          }
}

TEST(TileSparseGemm, AlphaBetaStridesAndTileSizes) {
  std::mt19937 rng(12);
  const std::uint32_t tiles[][2] = {{8, 8}, {16, 64}, {7, 300}, {64, 16}};
  for (auto& t : tiles)
    for (SparseOperand sp : {SparseOperand::A, SparseOperand::B})
      for (Op oa : {Op::N, Op::T})
        for (Op ob : {Op::N, Op::T}) {
          TileSparseOptions o;
          o.tile_rows = t[0];
          o.tile_cols = t[1];
          o.threshold = 0.5;
          check_case(Case{sp, oa, ob, 41, 67, 83, 0.8}, o, rng, 1.5f, 0.5f, 3);
          check_case(Case{sp, oa, ob, 41, 67, 83, 0.8}, o, rng, -2.0f, 1.0f, 0);
          o.whole_call_guard = false;  // mixed DENSE / sparse / zero tiles even where the call is dense overall
          o.threshold = 0.3;
          check_case(Case{sp, oa, ob, 41, 67, 83, 0.6}, o, rng, 1.0f, 0.0f, 1);
        }
}

// Long reductions (R = K split into several R blocks), Q > 64 (several gather panels), the dense operand
// packed (transposed, or reused enough) and read in place (untransposed, little reuse), default tiles.
TEST(TileSparseGemm, LongReductionsPanelsAndPacking) {
  std::mt19937 rng(21);
  for (SparseOperand sp : {SparseOperand::A, SparseOperand::B})
    for (Op oa : {Op::N, Op::T})
      for (Op ob : {Op::N, Op::T})
        for (double sparsity : {0.5, 0.95}) {
          TileSparseOptions o;
          o.threshold = 2.0;  // every non-zero tile sparse
          o.dense_if_not_smaller = false;
          o.isa = isas().back();
          o.gather_slice_bytes = kSlice256K;  // R blocks of 1024 rows: 2100 = three blocks
          // Sparse A op T: A as stored (Auto would take the row gather of op(A), N = 90 >= kRowGatherMinQ; it has
          // tests of its own), so that this test keeps the stored orientation's paths.
          if (sp == SparseOperand::A && oa == Op::T) o.transposed_kernel = TransposedKernel::Scatter;
          const TileSparseStats st = check_case(Case{sp, oa, ob, 70, 90, 2100, sparsity}, o, rng,
                                                sparsity > 0.9 ? 1.0f : -0.5f, sparsity > 0.9 ? 0.0f : 0.25f,
                                                sparsity > 0.9 ? 0 : 5);
          EXPECT_FALSE(st.row_gather);
          if (st.wide_panel_floats > 0) {
            // The wide gather (AVX-512) of A's rows reused enough (op N): R blocks of whole 256-column tiles
            // whose 96-float panel rows fit the 256 KiB slice (2 tiles, 192 KiB): 9 tiles = five blocks
            EXPECT_EQ(oa, Op::N);
            EXPECT_EQ(st.wide_panel_floats, 96);
            EXPECT_EQ(st.r_blocks, 5);
          } else if (!st.scattered && !st.full_dense) {
            EXPECT_EQ(st.r_blocks, 3);
          }
        }
}

// S = transpose of the stored operand (sparse B op N, sparse A op T): the outer-product (scatter) kernel
// and the column-bucket + gather kernel, each forced, against OpenBLAS; shapes not multiples of the tile,
// Q below / within / above one 64-column panel (with a tail), long reductions, alpha / beta / strides,
// both ISAs. BITMAP tiles and 2-byte indices (tile_cols > 256) must fall back to the gather.
TEST(TileSparseGemm, TransposedScatterAndGatherMatchReference) {
  std::mt19937 rng(51);
  const int shapes[][3] = {{37, 70, 45}, {5, 131, 300}, {100, 9, 77}, {40, 150, 520}, {203, 40, 150}};
  const std::uint32_t tiles[][2] = {{32, 32}, {8, 256}, {7, 300}};
  for (TransposedKernel tk : {TransposedKernel::Scatter, TransposedKernel::Gather})
    for (SparseOperand sp : {SparseOperand::A, SparseOperand::B})
      for (auto& sh : shapes)
        for (auto& t : tiles)
          for (TileFormat f : {TileFormat::Ell, TileFormat::Bitmap})
            for (Isa isa : isas()) {
              const Op oa = sp == SparseOperand::A ? Op::T : (sh[0] % 2 ? Op::N : Op::T);
              const Op ob = sp == SparseOperand::B ? Op::N : (sh[1] % 2 ? Op::N : Op::T);
              TileSparseOptions o;
              o.transposed_kernel = tk;
              o.tile_rows = t[0];
              o.tile_cols = t[1];
              o.sparse_format = f;
              o.isa = isa;
              o.threshold = 2.0;  // every non-zero tile sparse
              o.dense_if_not_smaller = false;
              o.num_threads = &sh == &shapes[3] ? 2 : 1;  // bands shared by two threads on one shape (spinning
                                                          // OpenMP barriers make many threaded calls slow here)
              const bool u8_ell = f == TileFormat::Ell && t[1] <= 256;
              TileSparseStats st = check_case(Case{sp, oa, ob, sh[0], sh[1], sh[2], 0.9}, o, rng);
              EXPECT_EQ(st.scattered, tk == TransposedKernel::Scatter && u8_ell && st.tiles_sparse > 0);
              // Mixed DENSE / sparse / zero tiles, alpha, beta, padded strides.
              o.whole_call_guard = false;
              o.threshold = 0.3;
              st = check_case(Case{sp, oa, ob, sh[0], sh[1], sh[2], 0.6}, o, rng, -1.5f, 0.5f, 3);
              if (tk == TransposedKernel::Gather) {
                EXPECT_FALSE(st.scattered);
              }
              st = check_case(Case{sp, oa, ob, sh[0], sh[1], sh[2], 0.95}, o, rng, 2.0f, 1.0f, 1);
              if (tk == TransposedKernel::Gather) {
                EXPECT_FALSE(st.scattered);
              }
            }
}

// The row gather's R blocks follow TileSparseOptions::gather_slice_bytes (R <= 1.25 x slice / 256 B: one
// block), and its default follows this machine's L2 size; one block and several give the same results
// within the fp32 tolerance, on stored rows (sparse A op N) and on the row lists of stored^T (sparse B op N).
TEST(TileSparseGemm, GatherSliceSetsRBlocks) {
  const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
  const std::size_t l2_bytes = l2 > 0 ? std::size_t(l2) : std::size_t(512) << 10;
  EXPECT_EQ(default_gather_slice_bytes(), std::max(kSlice256K, l2_bytes - std::min(l2_bytes, kSlice256K)));
  std::mt19937 rng(77);
  struct P {
    SparseOperand sp;
    Op oa, ob;
    TransposedKernel tk;
  };
  for (const P& pa : {P{SparseOperand::A, Op::N, Op::N, TransposedKernel::Auto},
                      P{SparseOperand::B, Op::T, Op::N, TransposedKernel::Gather}})
    for (Isa isa : isas()) {
      for (auto [slice, r, blocks] : {std::tuple{kSlice256K, 1280, 1}, std::tuple{kSlice256K, 1281, 2},
                                      std::tuple{kSlice256K, 2100, 3}, std::tuple{std::size_t(1) << 20, 2100, 1},
                                      std::tuple{std::size_t(1) << 20, 5121, 2}}) {
        TileSparseOptions o;
        o.isa = isa;
        o.threshold = 2.0;  // every non-zero tile sparse
        o.dense_if_not_smaller = false;
        o.transposed_kernel = pa.tk;
        o.gather_slice_bytes = slice;
        const TileSparseStats st = check_case(Case{pa.sp, pa.oa, pa.ob, 40, 70, r, 0.9}, o, rng);
        EXPECT_FALSE(st.scattered);
        EXPECT_EQ(st.r_blocks, blocks) << "slice " << slice << " R " << r << " sp " << int(pa.sp);
      }
    }
  // The engine's slice: the option, or the default, in whole 64-float rows within 16 KiB .. 8 MiB; the default
  // (0) sets the R-block count of a call (here one block of R = 2100 when this machine's default slice has at
  // least 1680 rows, 420 KiB: e.g. 768 KiB on a 1 MiB L2; else three blocks of 256 KiB).
  {
    const std::size_t row = 64 * sizeof(float);
    TileSparseOptions o;
    EXPECT_EQ(TileSparseEngine(o).gather_slice_bytes(),
              std::min<std::size_t>(default_gather_slice_bytes() / row * row, kMaxGatherSliceBytes));
    o.gather_slice_bytes = 1;
    EXPECT_EQ(TileSparseEngine(o).gather_slice_bytes(), std::size_t(16) << 10);
    o.gather_slice_bytes = kSlice256K + 100;
    EXPECT_EQ(TileSparseEngine(o).gather_slice_bytes(), kSlice256K);
    o.gather_slice_bytes = 0;
    o.threshold = 2.0;
    o.dense_if_not_smaller = false;
    const std::size_t kb = TileSparseEngine(o).gather_slice_bytes() / row;
    const int expect = 2100 * 4 <= int(kb) * 5 ? 1 : int((2100 + kb - 1) / kb);
    const TileSparseStats st = check_case(Case{SparseOperand::A, Op::N, Op::N, 40, 70, 2100, 0.9}, o, rng);
    EXPECT_EQ(st.r_blocks, expect) << "default slice " << kb << " rows";
    // The direct ELL row gather (Q <= 32) over one R block longer than 1280 rows (reachable with slices above
    // 256 KiB), against OpenBLAS.
    o.gather_slice_bytes = std::size_t(1) << 20;
    o.rows_kernel = RowsKernel::Auto;
    for (Isa isa : isas()) {
      o.isa = isa;
      const TileSparseStats sd = check_case(Case{SparseOperand::A, Op::N, Op::N, 37, 24, 3000, 0.9}, o, rng, 0.5f, 0.0f, 3);
      EXPECT_TRUE(sd.direct_rows);
      EXPECT_EQ(sd.r_blocks, 1);
    }
  }
  TileSparseOptions big;
  big.gather_slice_bytes = kMaxGatherSliceBytes + 1;
  EXPECT_THROW(TileSparseEngine{big}, spartan::InputError);
  big.gather_slice_bytes = kMaxGatherSliceBytes;
  EXPECT_NO_THROW(TileSparseEngine{big});
}

// S = the stored operand (sparse B op T, sparse A op N): the direct ELL row gather and the row lists, each
// forced, against OpenBLAS (same coverage as above; BITMAP tiles, 2-byte indices and R longer than one
// gather R block must fall back to the lists).
TEST(TileSparseGemm, StoredRowsDirectAndListsMatchReference) {
  std::mt19937 rng(53);
  const int shapes[][3] = {{37, 70, 45}, {5, 131, 300}, {100, 9, 77}, {40, 150, 520}, {203, 40, 150}, {20, 30, 1500}};
  const std::uint32_t tiles[][2] = {{32, 32}, {8, 256}, {7, 300}};
  for (RowsKernel rk : {RowsKernel::Direct, RowsKernel::Lists})
    for (SparseOperand sp : {SparseOperand::A, SparseOperand::B})
      for (auto& sh : shapes)
        for (auto& t : tiles)
          for (TileFormat f : {TileFormat::Ell, TileFormat::Bitmap})
            for (Isa isa : isas()) {
              const Op oa = sp == SparseOperand::A ? Op::N : (sh[0] % 2 ? Op::N : Op::T);
              const Op ob = sp == SparseOperand::B ? Op::T : (sh[1] % 2 ? Op::N : Op::T);
              TileSparseOptions o;
              o.rows_kernel = rk;
              o.tile_rows = t[0];
              o.tile_cols = t[1];
              o.sparse_format = f;
              o.isa = isa;
              o.threshold = 2.0;
              o.dense_if_not_smaller = false;
              o.num_threads = &sh == &shapes[3] ? 2 : 1;
              o.gather_slice_bytes = kSlice256K;  // one R block up to R = 1280
              const bool direct_ok = f == TileFormat::Ell && t[1] <= 256 && sh[2] <= 1280;
              TileSparseStats st = check_case(Case{sp, oa, ob, sh[0], sh[1], sh[2], 0.9}, o, rng);
              EXPECT_EQ(st.direct_rows, rk == RowsKernel::Direct && direct_ok && st.tiles_sparse > 0);
              o.whole_call_guard = false;
              o.threshold = 0.3;
              st = check_case(Case{sp, oa, ob, sh[0], sh[1], sh[2], 0.6}, o, rng, -1.5f, 0.5f, 3);
              st = check_case(Case{sp, oa, ob, sh[0], sh[1], sh[2], 0.95}, o, rng, 2.0f, 1.0f, 1);
              if (rk == RowsKernel::Lists) {
                EXPECT_FALSE(st.direct_rows);
              }
            }
}

// The stored rows' direct gather of a narrow Q (<= kDirectRowsMaxQ = 32) sums each row's non-zeros in two
// accumulator sets (gather_ell_u8_avx2_pairs): rows of odd and even counts, of one non-zero, empty rows,
// short ELL rows (padding ends them) and wide ones (w >= 16: counted), masked tails (Q = 5, 13, 24 + 3);
// Q = 33 keeps one set. Against OpenBLAS with alpha / beta and padded strides, sparse A (C rows) and sparse B
// (C^T), every ISA, one thread (two at 90 %). Mutation-checked: dropping a row's odd last non-zero, or the second set, fails here.
TEST(TileSparseGemm, NarrowDirectGatherPairsMatchReference) {
  std::mt19937 rng(71);
  const int shapes[][3] = {{144, 16, 784}, {288, 32, 196}, {60, 5, 300}, {90, 13, 49}, {70, 27, 520}, {50, 33, 300}};
  for (SparseOperand sp : {SparseOperand::A, SparseOperand::B})
    for (auto& sh : shapes)
      for (double sparsity : {0.5, 0.9, 0.97})
        for (Isa isa : isas()) {
          const int threads = sparsity == 0.9 ? 2 : 1;
          // Sparse A: Q = N; sparse B (op T, S = its stored rows): Q = M.
          const int M = sp == SparseOperand::A ? sh[0] : sh[1], N = sp == SparseOperand::A ? sh[1] : sh[0];
          TileSparseOptions o;
          o.isa = isa;
          o.rows_kernel = RowsKernel::Direct;  // (Auto takes the lists for Q = 33 without AVX-512)
          o.num_threads = threads;
          o.threshold = 2.0;
          o.dense_if_not_smaller = false;
          o.whole_call_guard = false;
          const Op ob = sp == SparseOperand::B ? Op::T : Op::N;
          TileSparseStats st = check_case(Case{sp, Op::N, ob, M, N, sh[2], sparsity}, o, rng, 1.0f, 0.0f, 0);
          const int Q = sh[1];
          EXPECT_TRUE(st.direct_rows) << sh[0] << "x" << sh[1] << "x" << sh[2];
          EXPECT_EQ(st.gather_pairs, isa != Isa::Portable && Q <= kDirectRowsMaxQ) << "Q " << Q << " isa " << int(isa);
          st = check_case(Case{sp, Op::N, ob, M, N, sh[2], sparsity}, o, rng, -0.75f, 0.5f, 3);
          EXPECT_EQ(st.gather_pairs, isa != Isa::Portable && Q <= kDirectRowsMaxQ) << "Q " << Q << " isa " << int(isa);
        }
}

// Out = C^T written in long runs (store_runs_min_bytes = 0 forces it on these small outputs): the row
// gathers fill pieces of up to kStoreRunRows rows of S and the transposed store walks eight (AVX-512:
// sixteen) C rows at a time over a whole piece. P = N > kStoreRunRows (several pieces, the last partial), off
// the tile grid, on each path that writes C^T: row lists of stored^T (T N), the scatter kernel (N N, bands of
// up to 300 rows per transposed store), row lists of stored rows and the direct row gather (N T), the R-blocked
// gather (N T, R > 1280). Both ISAs, alpha / beta / padded strides, mixed DENSE / sparse / zero tiles,
// two threads on one shape; the default (2 MiB) must give the same results.
TEST(TileSparseGemm, LongStoreRunsMatchReference) {
  std::mt19937 rng(57);
  struct S {
    Op oa, ob;
    int M, N, K;
    TransposedKernel tk;
    RowsKernel rk;
  };
  const S shapes[] = {{Op::T, Op::N, 70, 1100, 40, TransposedKernel::Gather, RowsKernel::Auto},
                      {Op::N, Op::N, 45, 1300, 300, TransposedKernel::Scatter, RowsKernel::Auto},
                      {Op::N, Op::T, 70, 1030, 300, TransposedKernel::Auto, RowsKernel::Lists},
                      {Op::N, Op::T, 20, 900, 300, TransposedKernel::Auto, RowsKernel::Direct},
                      {Op::N, Op::T, 19, 600, 1400, TransposedKernel::Auto, RowsKernel::Lists}};
  const std::uint32_t tiles[][2] = {{8, 256}, {7, 300}};
  for (const S& sh : shapes)
    for (auto& t : tiles)
      for (Isa isa : isas())
        for (std::size_t min_bytes : {std::size_t(0), kStoreRunsMinBytes}) {
          TileSparseOptions o;
          o.transposed_kernel = sh.tk;
          o.rows_kernel = sh.rk;
          o.tile_rows = t[0];
          o.tile_cols = t[1];
          o.isa = isa;
          o.store_runs_min_bytes = min_bytes;
          o.gather_slice_bytes = kSlice256K;  // R = 1400: two R blocks
          o.threshold = 2.0;
          o.dense_if_not_smaller = false;
          o.num_threads = &sh == &shapes[2] ? 2 : 1;
          const Case cs{SparseOperand::B, sh.oa, sh.ob, sh.M, sh.N, sh.K, 0.9};
          TileSparseStats st = check_case(cs, o, rng);
          EXPECT_GT(st.tiles_sparse, 0u);
          EXPECT_FALSE(st.out_streamed);
          EXPECT_EQ(st.store_runs, min_bytes == 0 && !st.scattered);
          o.whole_call_guard = false;
          o.threshold = 0.3;
          Case mixed = cs;
          mixed.sparsity = 0.6;
          check_case(mixed, o, rng, -1.5f, 0.5f, 3);
          mixed.sparsity = 0.95;
          check_case(mixed, o, rng, 2.0f, 1.0f, 1);
        }
}

// Auto picks the scatter kernel for forward-like calls (Q <= kScatterMaxQ, R >= kScatterMinR) only.
TEST(TileSparseGemm, TransposedKernelAutoChoice) {
  std::mt19937 rng(52);
  TileSparseOptions o;
  o.threshold = 2.0;
  o.dense_if_not_smaller = false;
  o.isa = isas().back();
  // forward Y = W * col: Q = M (Cout), R = K
  EXPECT_TRUE(check_case(Case{SparseOperand::B, Op::N, Op::N, kScatterMaxQ, 100, kScatterMinR, 0.9}, o, rng).scattered);
  EXPECT_FALSE(check_case(Case{SparseOperand::B, Op::N, Op::N, kScatterMaxQ + 1, 100, 300, 0.9}, o, rng).scattered);
  EXPECT_FALSE(check_case(Case{SparseOperand::B, Op::N, Op::N, 64, 100, kScatterMinR - 1, 0.9}, o, rng).scattered);
  // S = stored rows (backward-weight): never; the direct row gather for Q = M <= kDirectRowsMaxQ
  TileSparseStats st = check_case(Case{SparseOperand::B, Op::N, Op::T, 64, 100, 300, 0.9}, o, rng);
  EXPECT_FALSE(st.scattered);
  EXPECT_FALSE(st.direct_rows);
  st = check_case(Case{SparseOperand::B, Op::N, Op::T, kDirectRowsMaxQ, 100, 300, 0.9}, o, rng);
  EXPECT_TRUE(st.direct_rows);
}

TEST(TileSparseGemm, BetaZeroIgnoresNanInC) {
  std::vector<float> A(4 * 4, 1.0f), B(4 * 4, 0.0f), C(16, NAN);
  B[0] = 2.0f;
  GemmCall c{Op::N, Op::N, 4, 4, 4, 1.0f, 0.0f, A.data(), 4, B.data(), 4, C.data(), 4, SparseOperand::B};
  TileSparseOptions o;
  o.tile_rows = o.tile_cols = 2;
  o.threshold = 0.5;
  TileSparseEngine e(o);
  e.run(c);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(C[i * 4 + 0], 2.0f);
    for (int j = 1; j < 4; ++j) EXPECT_EQ(C[i * 4 + j], 0.0f);
  }
  EXPECT_EQ(e.last_stats().tiles_zero, 3u);
  EXPECT_EQ(e.last_stats().tiles_sparse, 1u);
}

// BLAS semantics of alpha == 0 (review finding): A and B are not read, C = beta * C. The sparse kernels folded
// alpha into the entries and multiplied by the dense operand, so an Inf in it gave 0 * Inf = NaN. Checked on
// the gather and scatter kernels (sparse B op N), the stored-rows kernels (sparse A op N: direct and lists)
// and the several-R-block gather; beta 0 (NaN in C ignored) and beta 0.5.
TEST(TileSparseGemm, AlphaZeroReadsNeitherOperand) {
  struct Path {
    SparseOperand sp;
    TransposedKernel tk;
    RowsKernel rk;
    int K;
  };
  const Path paths[] = {{SparseOperand::B, TransposedKernel::Gather, RowsKernel::Auto, 160},
                        {SparseOperand::B, TransposedKernel::Scatter, RowsKernel::Auto, 160},
                        {SparseOperand::A, TransposedKernel::Auto, RowsKernel::Direct, 160},
                        {SparseOperand::A, TransposedKernel::Auto, RowsKernel::Lists, 160},
                        {SparseOperand::B, TransposedKernel::Gather, RowsKernel::Auto, 1500}};  // several R blocks
  for (const Path& pa : paths)
    for (float beta : {0.0f, 0.5f})
      for (Isa isa : isas()) {
        const int M = 24, N = 40, K = pa.K;
        // Sparse operand: one non-zero per 4 elements; dense operand: all Inf and NaN.
        std::vector<float> A(std::size_t(M) * K), B(std::size_t(K) * N), C(std::size_t(M) * N);
        std::vector<float>& S = pa.sp == SparseOperand::A ? A : B;
        std::vector<float>& X = pa.sp == SparseOperand::A ? B : A;
        for (std::size_t i = 0; i < S.size(); ++i) S[i] = i % 4 == 0 ? 1.0f : 0.0f;
        for (std::size_t i = 0; i < X.size(); ++i) X[i] = i % 2 ? INFINITY : NAN;
        for (std::size_t i = 0; i < C.size(); ++i) C[i] = beta == 0.0f ? NAN : float(i % 7);
        GemmCall c{Op::N, Op::N, M, N, K, 0.0f, beta, A.data(), K, B.data(), N, C.data(), N, pa.sp};
        TileSparseOptions o = all_sparse(pa.tk, pa.rk, isa);
        o.tile_rows = 8;
        o.tile_cols = 32;
        TileSparseEngine e(o);
        e.run(c);
        EXPECT_GT(e.last_stats().tiles_sparse, 0u);
        for (std::size_t i = 0; i < C.size(); ++i)
          ASSERT_EQ(C[i], beta == 0.0f ? 0.0f : 0.5f * float(i % 7))
              << "element " << i << " sp=" << int(pa.sp) << " K=" << K << " beta=" << beta;
      }
}

// A compacted operand whose u8 ELL slots (2^32: 2^21 full 8 x 256 tiles) exceed the 32-bit entry positions of
// the row lists (several-R-block path): InputError up front instead of wrapping positions. Headers only: the
// check comes before any payload or operand element is read.
TEST(TileSparseGemm, RejectsOperandBeyond32BitListPositions) {
  const std::uint32_t TR = 8, TC = 256, rows = TR * 2048, cols = TC * 1024;  // 2048 x 1024 tiles
  spartan::format::TiledMatrix s;
  s.grid = spartan::format::TileGrid{rows, cols, TR, TC};
  spartan::format::TileHeader h;
  h.format = std::uint8_t(TileFormat::Ell);
  h.width = TC;
  h.nnz = TR * TC;
  s.headers.assign(s.grid.num_tiles(), h);
  std::vector<float> A(1), B(cols), C(rows);  // A (the sparse operand) is not read: no DENSE tile
  GemmCall c{Op::N, Op::N, int(rows), 1, int(cols), 1.0f, 0.0f, A.data(), int(cols), B.data(), 1, C.data(), 1,
             SparseOperand::A};
  TileSparseOptions o;
  o.tile_rows = TR;
  o.tile_cols = TC;
  o.whole_call_guard = false;
  o.rows_kernel = RowsKernel::Lists;
  o.num_threads = 1;
  TileSparseEngine e(o);
  EXPECT_THROW(e.run_compacted(c, s), spartan::InputError);
}

TEST(TileSparseGemm, PrecompactedMatchesRunAndStatsCount) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1, 1);
  const int M = 32, N = 96, K = 64;
  std::vector<float> A(M * K), B(K * N, 0.0f), C1(M * N), C2(M * N);
  for (auto& x : A) x = u(rng);
  for (int k = 0; k < 32; ++k)  // top-left 32x32 tile dense, top-middle sparse, rest zero
    for (int n = 0; n < 64; ++n) B[k * N + n] = (n < 32 || (k + n) % 8 == 0) ? u(rng) + 3.0f : 0.0f;
  GemmCall c{Op::N, Op::N, M, N, K, 1.0f, 0.0f, A.data(), K, B.data(), N, C1.data(), N, SparseOperand::B};
  TileSparseOptions o;
  o.tile_rows = o.tile_cols = 32;
  o.threshold = 0.5;
  TileSparseEngine e(o);
  e.run(c);
  const TileSparseStats s1 = e.last_stats();
  EXPECT_EQ(s1.tiles_dense, 1u);
  EXPECT_EQ(s1.tiles_sparse, 1u);
  EXPECT_EQ(s1.tiles_zero, 4u);
  EXPECT_EQ(s1.dense_calls, 1u);
  const auto t = e.compact_operand(c);
  c.C = C2.data();
  e.run_compacted(c, t, e.compact_orientation(c));
  EXPECT_EQ(C1, C2);
  EXPECT_EQ(e.last_stats().compact_s, 0.0);
  const TileSparseStats* ls = last_tile_stats(e);
  ASSERT_NE(ls, nullptr);
  EXPECT_EQ(ls->tiles_zero, 4u);
  EXPECT_EQ(last_tile_stats(*make_dense_engine()), nullptr);
}

TEST(TileSparseGemm, RejectsMismatchedCompactedOperandAndBadOptions) {
  std::vector<float> A(16), B(16), C(16);
  GemmCall c{Op::N, Op::N, 4, 4, 4, 1.0f, 0.0f, A.data(), 4, B.data(), 4, C.data(), 4, SparseOperand::B};
  TileSparseEngine e;
  spartan::format::CompactOptions o;
  const auto wrong = spartan::format::compact(B.data(), 2, 8, 8, o);
  EXPECT_THROW(e.run_compacted(c, wrong), spartan::InputError);
  TileSparseOptions bad;
  bad.tile_rows = 0;
  EXPECT_THROW(TileSparseEngine{bad}, spartan::InputError);
  // Tile rows beyond 65535 (review finding: 2^31 was accepted, band starts int(band * p_tile) wrapped and C
  // was never written; 0xFFFFFFFF gave a grid of 0 tiles).
  for (std::uint32_t tr : {65536u, 0x80000000u, 0xFFFFFFFFu}) {
    bad = TileSparseOptions{};
    bad.tile_rows = tr;
    bad.tile_cols = 1;
    EXPECT_THROW(TileSparseEngine{bad}, spartan::InputError) << tr;
  }
  bad = TileSparseOptions{};
  bad.tile_rows = 65535;
  bad.tile_cols = 1;
  EXPECT_NO_THROW(TileSparseEngine{bad});
  auto big = spartan::format::compact(B.data(), 4, 4, 4, o);  // a run_compacted operand with a bad grid
  big.grid.tile_rows = 0x80000000u;
  EXPECT_THROW(e.run_compacted(c, big), spartan::InputError);
  bad = TileSparseOptions{};
  bad.sparse_format = TileFormat::Dense;
  EXPECT_THROW(TileSparseEngine{bad}, spartan::InputError);
  // Numeric options are checked up front (review finding 86: NaN only failed in run(), negative values were
  // accepted); 0 and > 1 thresholds are valid (every tile DENSE / every non-zero tile sparse).
  for (double t : {std::nan(""), -0.1, -std::numeric_limits<double>::infinity()}) {
    bad = TileSparseOptions{};
    bad.threshold = t;
    EXPECT_THROW(TileSparseEngine{bad}, spartan::InputError) << t;
  }
  for (double t : {0.0, 1.0, 2.0}) {
    bad = TileSparseOptions{};
    bad.threshold = t;
    EXPECT_NO_THROW(TileSparseEngine{bad}) << t;
  }
  for (double g : {-0.5, std::nan(""), std::numeric_limits<double>::infinity()}) {
    bad = TileSparseOptions{};
    bad.guard_fraction = g;
    EXPECT_THROW(TileSparseEngine{bad}, spartan::InputError) << g;
  }
  bad = TileSparseOptions{};
  bad.num_threads = -3;
  EXPECT_THROW(TileSparseEngine{bad}, spartan::InputError);
  EXPECT_THROW(calibration_crossover({}, {}, {}), spartan::InputError);
#if defined(__x86_64__) || defined(__i386__)
  // An ISA the CPU lacks is refused (not silently replaced).
  bad = TileSparseOptions{};
  bad.isa = Isa::Avx512;
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    EXPECT_EQ(TileSparseEngine{bad}.isa_name(), "avx512");
  else
    EXPECT_THROW(TileSparseEngine{bad}, spartan::InputError);
#endif
}

// The AVX-512 scatter kernel gives the AVX2 engine's C bit for bit (same FMAs per element, in the same
// order) on forward-type calls (sparse B, op N, R >= kScatterMinR, Q <= kScatterMaxQ), including Q not a
// multiple of 16, alpha / beta and partial tiles.
TEST(TileSparseGemm, Avx512ScatterBitIdenticalToAvx2) {
  if (TileSparseEngine().isa_name() != "avx512") GTEST_SKIP() << "no AVX-512F on this CPU";
  std::mt19937 rng(61);
  std::uniform_real_distribution<float> u(-1, 1);
  std::uniform_real_distribution<double> p(0, 1);
  // Q = M: 64 (four zmm), 24 and 13 (two and one zmm, masked tails), 44 (three zmm), 130 (panels 64, 64 and
  // 2: AVX2 for the last), 6 (AVX2 only), 512.
  const int shapes[][3] = {{64, 196, 576}, {24, 300, 150}, {13, 77, 260}, {44, 90, 200},
                           {130, 49, 1000}, {6, 120, 300}, {512, 40, 300}};
  for (auto& sh : shapes)
    for (double sparsity : {0.9, 0.97}) {
      const int M = sh[0], N = sh[1], K = sh[2];
      std::vector<float> A(std::size_t(M) * K), B(std::size_t(K) * N);
      for (auto& x : A) x = u(rng);
      for (auto& x : B) x = p(rng) < sparsity ? 0.0f : u(rng);
      std::vector<float> C0(std::size_t(M) * N);
      for (auto& x : C0) x = u(rng);
      std::vector<float> C2 = C0, C5 = C0;
      const GemmCall c{Op::N, Op::N, M, N, K, -1.25f, 0.5f, A.data(), K, B.data(), N, nullptr, N, SparseOperand::B};
      TileSparseOptions o;
      o.num_threads = 1;
      const auto [st2, st5] = run_avx2_and_avx512(c, o, C2, C5);
      EXPECT_TRUE(st2.scattered && st5.scattered) << M << "x" << N << "x" << K;
      EXPECT_EQ(std::memcmp(C2.data(), C5.data(), C2.size() * sizeof(float)), 0) << M << "x" << N << "x" << K;
    }
}

// Sparse A op T (the train layout's forward, Y^T = col^T W^T) through the scatter kernel with beta 0: for Q
// panels of whole 16-float vectors the AVX-512 kernel adds straight into C's rows (zeroed first) instead of an
// output block copied into C, when Q is one panel (<= 64). C must be bit for bit the AVX2 engine's (block
// path), with NaN in C before the call gone (beta 0), C's padding columns (ldc > N) and a guard area after its
// last row untouched, one or two threads. Q = N: 16, 32, 48 and 64 (into C), 24 and 40 (masked tails), 80, 128
// and 512 (several panels: block path).
TEST(TileSparseGemm, Avx512ScatterIntoCBitIdenticalToAvx2) {
  if (TileSparseEngine().isa_name() != "avx512") GTEST_SKIP() << "no AVX-512F on this CPU";
  std::mt19937 rng(67);
  std::uniform_real_distribution<float> u(-1, 1);
  std::uniform_real_distribution<double> p(0, 1);
  const int shapes[][3] = {{200, 16, 150}, {70, 32, 300}, {33, 48, 260}, {49, 64, 576}, {300, 128, 100},
                           {49, 512, 400}, {90, 24, 200}, {130, 40, 260}, {60, 80, 300}};
  constexpr float kSentinel = 1234.5f;  // padding columns and the guard rows after C
  constexpr int kGuardRows = 3;
  for (auto& sh : shapes)
    for (int threads : {1, 2})
      for (int pad : {0, 5}) {
        const int M = sh[0], N = sh[1], K = sh[2], ldc = N + pad;
        std::vector<float> A(std::size_t(K) * M), B(std::size_t(N) * K);  // A stored K x M, B stored N x K
        for (auto& x : A) x = p(rng) < 0.95 ? 0.0f : u(rng);
        for (auto& x : B) x = u(rng);
        std::vector<float> C0(std::size_t(M + kGuardRows) * ldc, kSentinel);
        for (int i = 0; i < M; ++i)
          for (int j = 0; j < N; ++j) C0[std::size_t(i) * ldc + j] = std::numeric_limits<float>::quiet_NaN();
        std::vector<float> C2 = C0, C5 = C0;
        const GemmCall c{Op::T, Op::T, M, N, K, 0.75f, 0.0f, A.data(), M, B.data(), K, nullptr, ldc, SparseOperand::A};
        TileSparseOptions o;
        o.num_threads = threads;
        o.transposed_kernel = TransposedKernel::Scatter;
        const auto [st2, st5] = run_avx2_and_avx512(c, o, C2, C5);
        const std::string where = std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K) +
                                  " threads " + std::to_string(threads) + " pad " + std::to_string(pad);
        ASSERT_TRUE(st2.scattered && st5.scattered) << where;
        EXPECT_FALSE(st2.scatter_into_c) << where;
        EXPECT_EQ(st5.scatter_into_c, N % 16 == 0 && N <= 64) << where;
        EXPECT_EQ(std::memcmp(C2.data(), C5.data(), C2.size() * sizeof(float)), 0) << where;
        for (int i = 0; i < M + kGuardRows; ++i)
          for (int j = 0; j < ldc; ++j) {
            const float v = C5[std::size_t(i) * ldc + j];
            if (i < M && j < N) {
              ASSERT_FALSE(std::isnan(v)) << where << " C(" << i << "," << j << ")";
            } else {
              ASSERT_EQ(v, kSentinel) << where << " padding or guard (" << i << "," << j << ")";
            }
          }
        // against OpenBLAS, within the suite's tolerance
        o.isa = Isa::Avx512;
        check_case(Case{SparseOperand::A, Op::T, Op::T, M, N, K, 0.95}, o, rng, 1.0f, 0.0f, pad);
      }
}

// Sparse A op N, op(B) = B (the train layout's backward-weight and backward-data calls): with AVX-512 the
// direct row gather runs in wide panels (up to 384 floats) and must give C bit for bit as the AVX2 direct
// gather in 64-float panels (same FMAs per element in the same order). Q = N: 64 (four zmm), 33 (masked
// 48-float panel), 384 (24 zmm), 400 (two panels, 208 + 192), 512 (two of 256), 100 (masked tail); R = K
// over one to four 256-column tiles; beta 0 (rows overwritten), 1 (rows without non-zeros untouched) and
// 0.5 (C scaled first); padded strides; one or two threads.
TEST(TileSparseGemm, Avx512WideRowGatherBitIdenticalToAvx2Direct) {
  if (TileSparseEngine().isa_name() != "avx512") GTEST_SKIP() << "no AVX-512F on this CPU";
  std::mt19937 rng(67);
  std::uniform_real_distribution<float> u(-1, 1);
  std::uniform_real_distribution<double> p(0, 1);
  const int shapes[][3] = {{300, 64, 700}, {77, 33, 200}, {129, 384, 169}, {50, 400, 196}, {40, 512, 49}, {260, 100, 1000}};
  const int expect_q[] = {64, 48, 384, 208, 256, 112};
  for (std::size_t si = 0; si < std::size(shapes); ++si)
    for (double sparsity : {0.9, 0.97})
      for (float beta : {0.0f, 1.0f, 0.5f}) {
        const int M = shapes[si][0], N = shapes[si][1], K = shapes[si][2], lda = K + 3, ldb = N + 5, ldc = N + 2;
        std::vector<float> A(std::size_t(M) * lda), B(std::size_t(K) * ldb);
        for (auto& x : A) x = p(rng) < sparsity ? 0.0f : u(rng);
        for (int i = 0; i < M / 10; ++i)  // some all-zero rows
          std::fill(A.begin() + std::ptrdiff_t(i) * 10 * lda, A.begin() + (std::ptrdiff_t(i) * 10 + 1) * lda, 0.0f);
        for (auto& x : B) x = u(rng);
        std::vector<float> C0(std::size_t(M) * ldc);
        for (auto& x : C0) x = u(rng);
        std::vector<float> C2 = C0, C5 = C0, R = C0;
        GemmCall c{Op::N, Op::N, M, N, K, -1.25f, beta, A.data(), lda, B.data(), ldb, nullptr, ldc, SparseOperand::A};
        TileSparseOptions o;
        o.num_threads = 1;
        o.threshold = 2.0;
        o.dense_if_not_smaller = false;
        o.gather_slice_bytes = std::size_t(768) << 10;
        o.isa = Isa::Avx2;
        o.rows_kernel = RowsKernel::Direct;
        TileSparseEngine e2(o);
        o.isa = Isa::Avx512;
        o.rows_kernel = RowsKernel::Auto;
        o.num_threads = si % 2 == 0 ? 1 : 2;  // row groups (or, Q > 384, bands) split between threads: same C
        TileSparseEngine e5(o);
        c.C = C2.data();
        e2.run(c);
        c.C = C5.data();
        e5.run(c);
        c.C = R.data();
        make_dense_engine()->run(c);
        const std::string what = std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K) +
                                 " beta " + std::to_string(beta);
        EXPECT_TRUE(e2.last_stats().direct_rows && e5.last_stats().direct_rows) << what;
        EXPECT_EQ(e2.last_stats().wide_panel_floats, 0) << what;
        EXPECT_EQ(e5.last_stats().wide_panel_floats, expect_q[si]) << what;
        EXPECT_EQ(std::memcmp(C2.data(), C5.data(), C2.size() * sizeof(float)), 0) << what;
        for (std::size_t i = 0; i < R.size(); ++i) {
          if (int(i % std::size_t(ldc)) >= N) {  // padding columns untouched
            ASSERT_EQ(C5[i], C0[i]) << what;
            continue;
          }
          ASSERT_NEAR(C5[i], R[i], 1e-4 * (1 + std::fabs(R[i])) * std::sqrt(double(K))) << what << " at " << i;
        }
      }
}

// Auto's choice of the wide direct row gather (AVX-512 only): sparse A op N N with Q = N > kDirectRowsMaxQ,
// one panel of B's rows within 1.25 slices, one R block, and B within 1.25 slices or reused enough
// (non-zeros >= kWideRowsMinReuse x R).
TEST(TileSparseGemm, WideRowGatherAutoChoice) {
  std::mt19937 rng(68);
  auto direct_of = [](TileSparseOptions x) {
    x.rows_kernel = RowsKernel::Direct;
    return x;
  };
  TileSparseOptions o;
  o.threshold = 2.0;
  o.dense_if_not_smaller = false;
  o.gather_slice_bytes = kSlice256K;  // 1.25 slices: 320 KiB
  o.isa = isas().back();
  const bool w = TileSparseEngine(o).isa_name() == std::string("avx512");
  auto q_of = [&](const Case& cs, const TileSparseOptions& oo) { return check_case(cs, oo, rng).wide_panel_floats; };
  TileSparseStats st = check_case(Case{SparseOperand::A, Op::N, Op::N, 100, 64, 300, 0.9}, o, rng);
  EXPECT_EQ(st.wide_panel_floats, w ? 64 : 0);
  EXPECT_FALSE(st.wide_r_blocked);  // one panel, one R block: by row groups
  // Two panels: panel by panel through all bands (each panel of B read once), one R block
  st = check_case(Case{SparseOperand::A, Op::N, Op::N, 60, 600, 48, 0.9}, o, rng);
  EXPECT_EQ(st.wide_panel_floats, w ? 304 : 0);
  EXPECT_EQ(st.wide_r_blocked, w);
  if (w) {
    EXPECT_EQ(st.r_blocks, 1);
  }
  // ... also when a panel (256 floats x 300 rows, 300 KiB) exceeds the slice (256 KiB) but not 1.25 slices: one
  // R block (a second would add into C again)
  st = check_case(Case{SparseOperand::A, Op::N, Op::N, 60, 512, 300, 0.9}, direct_of(o), rng);
  EXPECT_EQ(st.wide_panel_floats, w ? 256 : 0);
  EXPECT_EQ(st.wide_r_blocked, w);
  if (w) {
    EXPECT_EQ(st.r_blocks, 1);
  }
  // B of 200 x 512 floats (400 KiB) exceeds 1.25 slices, a 256-float panel (200 KiB) does not: wide with
  // 100 rows of A (about 1300 non-zeros >= 4 x 200), the lists with 10 rows (about 130)
  EXPECT_EQ(q_of(Case{SparseOperand::A, Op::N, Op::N, 100, 512, 200, 0.9}, o), w ? 256 : 0);
  st = check_case(Case{SparseOperand::A, Op::N, Op::N, 10, 512, 200, 0.9}, o, rng);
  EXPECT_EQ(st.wide_panel_floats, 0);
  EXPECT_FALSE(st.direct_rows);
  TileSparseOptions direct = o;  // forced Direct: wide panels whatever the reuse
  direct.rows_kernel = RowsKernel::Direct;
  EXPECT_EQ(q_of(Case{SparseOperand::A, Op::N, Op::N, 10, 512, 200, 0.9}, direct), w ? 256 : 0);
  EXPECT_EQ(q_of(Case{SparseOperand::A, Op::N, Op::N, 60, 100, 300, 0.9}, [&] {
              TileSparseOptions l = o;
              l.rows_kernel = RowsKernel::Lists;
              return l;
            }()), 0);
  EXPECT_EQ(q_of(Case{SparseOperand::A, Op::N, Op::T, 60, 100, 300, 0.9}, o), 0);  // B would need a transpose
  // Sparse A op T with N = 16 < kRowGatherMinQ: S = stored^T (Auto: the scatter
  // kernel) ...
  EXPECT_EQ(q_of(Case{SparseOperand::A, Op::T, Op::N, 60, 16, 300, 0.9}, o), 0);
  // ... unless op(A) is compacted (TransposedKernel::RowGather): its rows, in wide panels
  EXPECT_EQ(q_of(Case{SparseOperand::A, Op::T, Op::N, 60, 100, 300, 0.9}, [&] {
              TileSparseOptions rg = o;
              rg.transposed_kernel = TransposedKernel::RowGather;
              return rg;
            }()), w ? 112 : 0);
  EXPECT_EQ(q_of(Case{SparseOperand::B, Op::N, Op::T, 100, 60, 300, 0.9}, o), 0);  // C^T: not this kernel
  // 1200 rows x 128 floats of B (600 KiB) in one panel exceed 1.25 slices: the lists (one R block)
  st = check_case(Case{SparseOperand::A, Op::N, Op::N, 40, 128, 1200, 0.9}, o, rng);
  EXPECT_EQ(st.wide_panel_floats, 0);
  EXPECT_FALSE(st.direct_rows);
  // Q <= kDirectRowsMaxQ: the AVX2 direct gather as before
  st = check_case(Case{SparseOperand::A, Op::N, Op::N, 100, kDirectRowsMaxQ, 300, 0.9}, o, rng);
  EXPECT_EQ(st.wide_panel_floats, 0);
  EXPECT_TRUE(st.direct_rows);
  // R = 1500 > 1280 rows: two R blocks, where the direct gathers do not run, although one 48-float panel of
  // B (1500 x 48 floats, 281 KiB) fits 1.25 slices; also when Direct is asked for
  st = check_case(Case{SparseOperand::A, Op::N, Op::N, 30, 40, 1500, 0.9}, o, rng);
  EXPECT_EQ(st.wide_panel_floats, 0);
  EXPECT_EQ(st.r_blocks, 2);
  st = check_case(Case{SparseOperand::A, Op::N, Op::N, 30, 40, 1500, 0.9}, direct, rng);
  EXPECT_EQ(st.wide_panel_floats, 0);
  EXPECT_FALSE(st.direct_rows);
  // ... but with B's rows reused (100 rows of A: about 10000 non-zeros >= 4 x 1500) the wide gather runs in R
  // blocks of whole tiles: 48-float panel rows of 256-column tiles, 48 KiB each, five per 256 KiB slice: 6
  // tiles along R = two blocks
  st = check_case(Case{SparseOperand::A, Op::N, Op::N, 100, 40, 1500, 0.9}, o, rng);
  EXPECT_EQ(st.wide_panel_floats, w ? 48 : 0);
  EXPECT_EQ(st.r_blocks, 2);
  EXPECT_EQ(st.direct_rows, w);
  EXPECT_EQ(st.wide_r_blocked, w);
  EXPECT_FALSE(st.row_gather);
}

// The wide row gather reads one panel of B in place only as 64-byte aligned rows (ldb == panel width); a
// misaligned B or a padded stride go through the packed copy (aligned panels; several panels: the next test), which a
// call with the same GemmCall::dense_version reuses. All of them give the same C, bit for bit.
TEST(TileSparseGemm, WideRowGatherPacksUnalignedB) {
  if (TileSparseEngine().isa_name() != "avx512") GTEST_SKIP() << "no AVX-512F on this CPU";
  std::mt19937 rng(69);
  std::uniform_real_distribution<float> u(-1, 1);
  std::uniform_real_distribution<double> p(0, 1);
  const int M = 200, N = 128, K = 300;
  std::vector<float> A(std::size_t(M) * K);
  for (auto& x : A) x = p(rng) < 0.9 ? 0.0f : u(rng);
  std::vector<float> store(std::size_t(K) * N + 64);
  float* aligned = store.data() + (16 - reinterpret_cast<std::uintptr_t>(store.data()) / sizeof(float) % 16) % 16;
  for (int i = 0; i < K * N; ++i) aligned[i] = u(rng);
  TileSparseOptions o;
  o.num_threads = 1;
  o.threshold = 2.0;
  o.dense_if_not_smaller = false;
  o.gather_slice_bytes = std::size_t(768) << 10;
  TileSparseEngine e(o);
  auto run = [&](const float* B, std::uint64_t version) {
    std::vector<float> C(std::size_t(M) * N, 7.0f);
    GemmCall c{Op::N, Op::N, M, N, K, 1.0f, 0.0f, A.data(), K, B, N, C.data(), N, SparseOperand::A};
    c.dense_version = version;
    e.run(c);
    EXPECT_EQ(e.last_stats().wide_panel_floats, N);
    return C;
  };
  const std::vector<float> c_in_place = run(aligned, 0);
  EXPECT_FALSE(e.last_stats().dense_packed);
  std::vector<float> store2(std::size_t(K) * N + 64);  // same values, 16 bytes off a 64-byte boundary
  float* mis = store2.data() + (16 - reinterpret_cast<std::uintptr_t>(store2.data()) / sizeof(float) % 16) % 16 + 4;
  std::copy(aligned, aligned + std::size_t(K) * N, mis);
  std::vector<float> c_packed = run(mis, 5);
  EXPECT_TRUE(e.last_stats().dense_packed);
  EXPECT_FALSE(e.last_stats().dense_pack_reused);
  EXPECT_EQ(std::memcmp(c_in_place.data(), c_packed.data(), c_packed.size() * sizeof(float)), 0);
  c_packed = run(mis, 5);  // same version: the packed copy is reused
  EXPECT_TRUE(e.last_stats().dense_pack_reused);
  EXPECT_EQ(std::memcmp(c_in_place.data(), c_packed.data(), c_packed.size() * sizeof(float)), 0);
  {  // aligned but padded rows (ldb = N + 16): packed too
    std::vector<float> store3(std::size_t(K) * (N + 16) + 16);
    float* pad = store3.data() + (16 - reinterpret_cast<std::uintptr_t>(store3.data()) / sizeof(float) % 16) % 16;
    for (int k = 0; k < K; ++k) std::copy(aligned + std::size_t(k) * N, aligned + std::size_t(k + 1) * N, pad + std::size_t(k) * (N + 16));
    std::vector<float> C(std::size_t(M) * N, 7.0f);
    GemmCall c{Op::N, Op::N, M, N, K, 1.0f, 0.0f, A.data(), K, pad, N + 16, C.data(), N, SparseOperand::A};
    e.run(c);
    EXPECT_EQ(e.last_stats().wide_panel_floats, N);
    EXPECT_TRUE(e.last_stats().dense_packed);
    EXPECT_EQ(std::memcmp(c_in_place.data(), C.data(), C.size() * sizeof(float)), 0);
  }
  // reference: OpenBLAS
  std::vector<float> R(std::size_t(M) * N);
  GemmCall r{Op::N, Op::N, M, N, K, 1.0f, 0.0f, A.data(), K, aligned, N, R.data(), N, SparseOperand::A};
  make_dense_engine()->run(r);
  for (std::size_t i = 0; i < R.size(); ++i) ASSERT_NEAR(c_in_place[i], R[i], 1e-4 * (1 + std::fabs(R[i]))) << i;
}

// A packed B is reused only by a call that reads the same panels: the wide gather's aligned panels and the
// 64-float panels of the other kernels can have the same width (Q = 64) but start at different places in
// the engine's buffer. Same B, same dense_version, same R and Q: a wide call (sparse A op N, B 16 bytes off a
// line: packed), then a call that does not take the wide gather (sparse A op T: the scatter kernel), then the
// wide call again; each against OpenBLAS.
TEST(TileSparseGemm, PackedBNotReusedAcrossPanelLayouts) {
  std::mt19937 rng(70);
  std::uniform_real_distribution<float> u(-1, 1);
  std::uniform_real_distribution<double> p(0, 1);
  const int M = 120, N = 64, K = 300;
  std::vector<float> An(std::size_t(M) * K), At(std::size_t(K) * M);  // op(A) the same matrix both times
  for (int i = 0; i < M; ++i)
    for (int k = 0; k < K; ++k) An[std::size_t(i) * K + k] = At[std::size_t(k) * M + i] = p(rng) < 0.9 ? 0.0f : u(rng);
  std::vector<float> store(std::size_t(K) * N + 32);
  float* B = store.data() + (16 - reinterpret_cast<std::uintptr_t>(store.data()) / sizeof(float) % 16) % 16 + 4;
  for (int i = 0; i < K * N; ++i) B[i] = u(rng);
  std::vector<float> R(std::size_t(M) * N);
  GemmCall r{Op::N, Op::N, M, N, K, 1.0f, 0.0f, An.data(), K, B, N, R.data(), N, SparseOperand::A};
  make_dense_engine()->run(r);
  TileSparseOptions o;
  o.num_threads = 1;
  o.threshold = 2.0;
  o.dense_if_not_smaller = false;
  o.transposed_kernel = TransposedKernel::Scatter;  // op T: A as stored, the scatter kernel's 64-float panels
  TileSparseEngine e(o);
  const bool wide = e.isa_name() == std::string("avx512");
  for (int step = 0; step < 3; ++step) {
    const bool trans = step == 1;
    std::vector<float> C(std::size_t(M) * N, 3.0f);
    GemmCall c{trans ? Op::T : Op::N, Op::N, M, N, K, 1.0f, 0.0f, trans ? At.data() : An.data(), trans ? M : K,
               B, N, C.data(), N, SparseOperand::A};
    c.dense_version = 42;
    e.run(c);
    EXPECT_EQ(e.last_stats().wide_panel_floats, wide && !trans ? N : 0) << "step " << step;
    for (std::size_t i = 0; i < C.size(); ++i)
      ASSERT_NEAR(C[i], R[i], 1e-4 * (1 + std::fabs(R[i]))) << "step " << step << " at " << i;
  }
}

// The wide gather in R blocks packs D one R block of one panel at a time when the call asks for no pack to keep
// (GemmCall::dense_version 0, TileSparseStats::dense_block_packed), the whole of D otherwise (kept, then reused).
// Same FMAs in the same order: C is bit for bit the same on all three, on one and two threads, and agrees with
// OpenBLAS. Cases: the forward's row gather of op(A) (W^T transposed from W) with several R blocks and panels;
// sparse A op N with B of several wide panels in one R block; and in several R blocks.
TEST(TileSparseGemm, WideBlockPackBitIdenticalToWholePack) {
  if (TileSparseEngine().isa_name() != "avx512") GTEST_SKIP() << "no AVX-512F on this CPU";
  std::mt19937 rng(71);
  std::uniform_real_distribution<float> u(-1, 1);
  std::uniform_real_distribution<double> p(0, 1);
  struct W {
    Op oa, ob;
    int M, N, K;
    int r_blocks;        // expected TileSparseStats::r_blocks
    bool several_panels;  // wide panels narrower than N
  };
  // 64 KiB slices: the forward (K = 1000: 4 tiles of 256 columns along K; 2 wide panels of 208 floats) takes one
  // tile per block: 4 R blocks; N = 800 is 3 panels of 272 floats, one R block (200 rows); the stored rows' B of
  // one 272-float panel has 700 rows, one 256-row tile per block: 3 blocks.
  for (const W& w : {W{Op::T, Op::T, 150, 400, 1000, 4, true}, W{Op::N, Op::N, 120, 800, 200, 1, true},
                     W{Op::N, Op::N, 300, 260, 700, 3, false}})
    for (int threads : {1, 2})
      for (float beta : {0.0f, 0.5f}) {
        const int M = w.M, N = w.N, K = w.K;
        std::vector<float> A(std::size_t(M) * K), B(std::size_t(K) * N + 20);
        for (auto& x : A) x = p(rng) < 0.9 ? 0.0f : u(rng);
        for (auto& x : B) x = u(rng);
        const int lda = w.oa == Op::N ? K : M, ldb = w.ob == Op::N ? N : K;
        // 16 bytes off a 64-byte boundary: packed whatever the layout (an aligned B of several panels and little
        // reuse is read in place: kWideInPlaceMaxReuse).
        const float* b = B.data() + (16 - reinterpret_cast<std::uintptr_t>(B.data()) / sizeof(float) % 16) % 16 + 4;
        std::vector<float> C0(std::size_t(M) * N);
        for (auto& x : C0) x = u(rng);
        TileSparseOptions o;
        o.num_threads = threads;
        o.threshold = 2.0;
        o.dense_if_not_smaller = false;
        o.gather_slice_bytes = std::size_t(64) << 10;
        o.transposed_kernel = TransposedKernel::RowGather;
        TileSparseEngine e(o);
        auto run = [&](std::uint64_t version) {
          std::vector<float> C = C0;
          GemmCall c{w.oa, w.ob, M, N, K, 1.0f, beta, A.data(), lda, b, ldb, C.data(), N, SparseOperand::A};
          c.dense_version = version;
          e.run(c);
          return C;
        };
        const std::string what = std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K) + " threads " +
                                 std::to_string(threads) + " beta " + std::to_string(beta);
        const std::vector<float> c_block = run(0);
        const TileSparseStats sb = e.last_stats();
        EXPECT_TRUE(sb.wide_r_blocked && sb.dense_packed && sb.dense_block_packed) << what;
        EXPECT_FALSE(sb.dense_pack_reused) << what;
        EXPECT_EQ(sb.r_blocks, w.r_blocks) << what;
        EXPECT_EQ(sb.wide_panel_floats < N, w.several_panels) << what;
        EXPECT_EQ(sb.row_gather, w.oa == Op::T) << what;
        const std::vector<float> c_whole = run(7);
        EXPECT_TRUE(e.last_stats().dense_packed && !e.last_stats().dense_block_packed) << what;
        EXPECT_FALSE(e.last_stats().dense_pack_reused) << what;
        const std::vector<float> c_reused = run(7);
        EXPECT_TRUE(e.last_stats().dense_pack_reused && !e.last_stats().dense_block_packed) << what;
        EXPECT_EQ(std::memcmp(c_block.data(), c_whole.data(), c_block.size() * sizeof(float)), 0) << what;
        EXPECT_EQ(std::memcmp(c_block.data(), c_reused.data(), c_block.size() * sizeof(float)), 0) << what;
        // A block pack does not disturb the kept one: version 7 is still reused after a version-0 call.
        run(0);
        EXPECT_EQ(std::memcmp(run(7).data(), c_block.data(), c_block.size() * sizeof(float)), 0) << what;
        EXPECT_TRUE(e.last_stats().dense_pack_reused) << what;
        std::vector<float> R = C0;
        GemmCall r{w.oa, w.ob, M, N, K, 1.0f, beta, A.data(), lda, b, ldb, R.data(), N, SparseOperand::A};
        make_dense_engine()->run(r);
        for (std::size_t i = 0; i < R.size(); ++i)
          ASSERT_NEAR(c_block[i], R[i], 1e-4 * (1 + std::fabs(R[i])) * std::sqrt(double(K))) << what << " at " << i;
      }
}

// The AVX-512 wide gather prefetches the next band's ELL payload while it gathers a band when the payload is larger
// than L1d (TileSparseOptions::payload_prefetch, TileSparseStats::payload_prefetched): prefetches are hints, so C is
// bit for bit the same with and without them. Cases: the R-blocked loop (the forward's row gather of op(A), several
// R blocks and panels; sparse A op N with B of several wide panels), the bands of row groups (sparse A op N, one
// panel and R block: one group, and with two threads several groups, enough work for the team), a payload of a
// few KiB (not prefetched); one and two threads; beta 0 and 0.5; against OpenBLAS. (That the walk covers the next
// band's lines: TileSparseKernels.PayloadLineWalkCoversTheNextBandsBlocks.)
TEST(TileSparseGemm, PayloadPrefetchBitIdentical) {
  if (TileSparseEngine().isa_name() != "avx512") GTEST_SKIP() << "no AVX-512F on this CPU";
  std::mt19937 rng(73);
  std::uniform_real_distribution<float> u(-1, 1);
  std::uniform_real_distribution<double> p(0, 1);
  struct W {
    Op oa;
    int M, N, K;
    double density;
    std::size_t slice_kib;
    bool r_blocked, prefetched;
  };
  // Payloads (ELL, 5 bytes per slot): about 200-300 KiB, larger than any L1d, except the last case's few KiB,
  // smaller than any.
  for (const W& w : {W{Op::T, 400, 400, 1000, 0.1, 16, true, true}, W{Op::N, 1500, 800, 200, 0.1, 16, true, true},
                     W{Op::N, 2000, 100, 150, 0.1, 64, false, true}, W{Op::T, 400, 400, 1000, 0.1, 8192, true, true},
                     W{Op::T, 64, 400, 300, 0.05, 16, true, false}, W{Op::N, 4000, 200, 300, 0.1, 8192, false, true}})
    for (int threads : {1, 2})
      for (float beta : {0.0f, 0.5f}) {
        const int M = w.M, N = w.N, K = w.K;
        std::vector<float> A(std::size_t(M) * K), B(std::size_t(K) * N);
        for (auto& x : A) x = p(rng) < w.density ? u(rng) : 0.0f;
        for (auto& x : B) x = u(rng);
        const int lda = w.oa == Op::N ? K : M;
        std::vector<float> C0(std::size_t(M) * N);
        for (auto& x : C0) x = u(rng);
        auto run = [&](bool prefetch, TileSparseStats* st) {
          TileSparseOptions o;
          o.num_threads = threads;
          o.threshold = 2.0;
          o.dense_if_not_smaller = false;
          o.gather_slice_bytes = w.slice_kib << 10;
          o.transposed_kernel = TransposedKernel::RowGather;
          o.payload_prefetch = prefetch;
          TileSparseEngine e(o);
          std::vector<float> C = C0;
          GemmCall c{w.oa, Op::N, M, N, K, 1.0f, beta, A.data(), lda, B.data(), N, C.data(), N, SparseOperand::A};
          e.run(c);
          *st = e.last_stats();
          return C;
        };
        const std::string what = std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K) + " slice " +
                                 std::to_string(w.slice_kib) + " KiB threads " + std::to_string(threads) + " beta " +
                                 std::to_string(beta);
        TileSparseStats on{}, off{};
        const std::vector<float> c_on = run(true, &on), c_off = run(false, &off);
        EXPECT_GT(on.wide_panel_floats, 0) << what;
        EXPECT_EQ(on.wide_r_blocked, w.r_blocked) << what;
        EXPECT_EQ(on.payload_prefetched, w.prefetched) << what;
        EXPECT_FALSE(off.payload_prefetched) << what;
        EXPECT_EQ(std::memcmp(c_on.data(), c_off.data(), c_on.size() * sizeof(float)), 0) << what;
        std::vector<float> R = C0;
        GemmCall r{w.oa, Op::N, M, N, K, 1.0f, beta, A.data(), lda, B.data(), N, R.data(), N, SparseOperand::A};
        make_dense_engine()->run(r);
        for (std::size_t i = 0; i < R.size(); ++i)
          ASSERT_NEAR(c_on[i], R[i], 1e-4 * (1 + std::fabs(R[i])) * std::sqrt(double(K))) << what << " at " << i;
      }
}

// TransposedKernel::RowGather (sparse A op T, the train layout's forward): the engine compacts op(A) = A^T
// (Orientation::Op) and gathers its rows: with AVX-512 and u8 ELL tiles the wide gather in R blocks of whole
// tiles (a 16 KiB slice: several blocks), otherwise the rows kernels; DENSE tiles mixed in (guard off),
// BITMAP, 2-byte indices, op(B) = B and B^T (packed transposed into wide panels), alpha / beta / strides,
// two panels of op(B) (N = 400), every ISA; each against OpenBLAS.
TEST(TileSparseGemm, RowGatherOfCompactedOpAMatchesReference) {
  std::mt19937 rng(71);
  const int shapes[][3] = {{37, 70, 45}, {203, 400, 700}, {64, 40, 1100}, {9, 130, 300}};
  const std::uint32_t tiles[][2] = {{8, 256}, {32, 32}, {7, 300}};
  for (Isa isa : isas())
    for (auto& sh : shapes)
      for (auto& t : tiles)
        for (Op ob : {Op::N, Op::T})
          for (TileFormat f : {TileFormat::Ell, TileFormat::Bitmap}) {
            TileSparseOptions o;
            o.isa = isa;
            o.transposed_kernel = TransposedKernel::RowGather;
            o.tile_rows = t[0];
            o.tile_cols = t[1];
            o.sparse_format = f;
            o.gather_slice_bytes = std::size_t(16) << 10;
            o.threshold = f == TileFormat::Ell ? 0.3 : 2.0;
            o.whole_call_guard = false;
            const Case cs{SparseOperand::A, Op::T, ob, sh[0], sh[1], sh[2], 0.9};
            const TileSparseStats st = check_case(cs, o, rng, ob == Op::N ? 1.0f : -1.5f, ob == Op::N ? 0.0f : 0.5f,
                                                  ob == Op::N ? 0 : 3);
            EXPECT_EQ(st.row_gather, !st.full_dense && st.tiles_sparse > 0);
            EXPECT_FALSE(st.scattered);  // S is the stored matrix of op(A)'s tiles
            const bool wide = isa == Isa::Avx512 && f == TileFormat::Ell && t[1] <= 256;
            if (wide && st.tiles_sparse > 0) {
              EXPECT_GT(st.wide_panel_floats, 0);
              // R blocks of whole tiles whose panel rows fit 16 KiB (at least one tile)
              const int wq = st.wide_panel_floats, tk = (sh[2] + int(t[1]) - 1) / int(t[1]);
              const int per = std::max(1, int((std::size_t(16) << 10) / (std::size_t(t[1]) * wq * sizeof(float))));
              EXPECT_EQ(st.r_blocks, (tk + per - 1) / per);
            } else {
              EXPECT_EQ(st.wide_panel_floats, 0);
            }
          }
}

// Auto's orientation: Op (RowGather) for sparse A op T on an AVX-512 engine with u8 ELL tiles when op(B) has
// >= kRowGatherMinQ columns, whatever M and K; Stored otherwise (a narrower op(B) however large op(A) is, BITMAP,
// 2-byte indices, an AVX2 engine, Scatter or Gather asked for, op N, sparse B).
TEST(TileSparseGemm, RowGatherAutoChoice) {
  TileSparseOptions o;
  TileSparseEngine e(o);
  const bool avx512 = e.isa_name() == std::string("avx512");
  auto orient = [&](const TileSparseEngine& en, Op oa, int M, int K, SparseOperand sp = SparseOperand::A, int N = 256) {
    GemmCall c;
    c.op_a = oa, c.M = M, c.N = N, c.K = K, c.sparse = sp;
    return en.compact_orientation(c);
  };
  const Orientation yes = avx512 ? Orientation::Op : Orientation::Stored;
  constexpr SparseOperand A = SparseOperand::A;
  constexpr int narrow = kRowGatherMinQ - 1;
  EXPECT_EQ(orient(e, Op::T, 169, 2304), yes);                     // AlexNet conv5
  EXPECT_EQ(orient(e, Op::T, 49, 4608, A, 512), yes);               // ResNet-18 conv5_x: N >= kRowGatherMinQ
  EXPECT_EQ(orient(e, Op::T, 49, 576, A, 64), yes);                 // vgg-s b2c2 at batch 1
  EXPECT_EQ(orient(e, Op::T, 1, 64, A, kRowGatherMinQ), yes);       // one row, the narrowest such op(B)
  // A narrow op(B) stays Stored (the scatter kernel) however large op(A) is
  EXPECT_EQ(orient(e, Op::T, 64, 4096, A, narrow), Orientation::Stored);
  EXPECT_EQ(orient(e, Op::T, 50176, 4608, A, narrow), Orientation::Stored);
  EXPECT_EQ(orient(e, Op::T, 784, 144, A, 16), Orientation::Stored);       // vgg-s b0c2 at batch 1
  EXPECT_EQ(orient(e, Op::T, 784 * 64, 144, A, 16), Orientation::Stored);  // ... and at batch 64
  EXPECT_EQ(orient(e, Op::T, 784 * 64, 144, A, kRowGatherMinQ), yes);     // one column wider
  EXPECT_EQ(orient(e, Op::N, 169, 2304), Orientation::Stored);
  EXPECT_EQ(orient(e, Op::T, 169, 2304, SparseOperand::B), Orientation::Stored);
  for (auto change : std::vector<std::function<void(TileSparseOptions&)>>{
           [](TileSparseOptions& x) { x.sparse_format = TileFormat::Bitmap; },
           [](TileSparseOptions& x) { x.tile_cols = 257; },
           [](TileSparseOptions& x) { x.transposed_kernel = TransposedKernel::Scatter; },
           [](TileSparseOptions& x) { x.transposed_kernel = TransposedKernel::Gather; },
           [](TileSparseOptions& x) { x.isa = Isa::Avx2; }}) {
    TileSparseOptions oo = o;
    change(oo);
    if (oo.isa == Isa::Avx2 && e.isa_name() == std::string("portable")) continue;
    EXPECT_EQ(orient(TileSparseEngine(oo), Op::T, 169, 2304), Orientation::Stored);
  }
}

// The orientation API: Op only for sparse A op T with RowGather; compact_operand() then tiles A^T
// (format::compact_transposed, M x K) and run_compacted() takes it with Orientation::Op; the stored tiles
// with Orientation::Stored give the same C (within fp32 rounding); Op for a sparse B op T is refused.
TEST(TileSparseGemm, CompactOrientationAndRunCompacted) {
  std::mt19937 rng(72);
  std::uniform_real_distribution<float> u(-1, 1);
  std::uniform_real_distribution<double> p(0, 1);
  const int M = 90, N = 80, K = 300;
  std::vector<float> At(std::size_t(K) * M), B(std::size_t(K) * N), C1(std::size_t(M) * N), C2(C1.size()), R(C1.size());
  for (auto& x : At) x = p(rng) < 0.9 ? 0.0f : u(rng);
  for (auto& x : B) x = u(rng);
  TileSparseOptions o, so;
  o.transposed_kernel = TransposedKernel::RowGather;
  so.transposed_kernel = TransposedKernel::Scatter;  // (Auto would take the rows of op(A) too: N >= kRowGatherMinQ)
  TileSparseEngine e(o), plain(so);
  GemmCall c{Op::T, Op::N, M, N, K, 1.0f, 0.0f, At.data(), M, B.data(), N, C1.data(), N, SparseOperand::A};
  EXPECT_EQ(e.compact_orientation(c), Orientation::Op);
  EXPECT_EQ(plain.compact_orientation(c), Orientation::Stored);
  GemmCall cn = c;
  cn.op_a = Op::N;
  EXPECT_EQ(e.compact_orientation(cn), Orientation::Stored);  // op(A) = A: nothing to transpose
  GemmCall cb = c;
  cb.sparse = SparseOperand::B;
  EXPECT_EQ(e.compact_orientation(cb), Orientation::Stored);
  const auto t = e.compact_operand(c);
  EXPECT_EQ(t.grid.rows, std::uint32_t(M));
  EXPECT_EQ(t.grid.cols, std::uint32_t(K));
  e.run_compacted(c, t, Orientation::Op);
  {  // without an orientation: the tiles' own record (here Op); the default engine's Auto compacts op(A) too
    std::vector<float> C3(C1.size());
    GemmCall c3 = c;
    c3.C = C3.data();
    TileSparseEngine auto_engine;
    const auto t3 = auto_engine.compact_operand(c3);
    EXPECT_EQ(t3.source_transposed, auto_engine.compact_orientation(c3) == Orientation::Op);
    auto_engine.run_compacted(c3, t3);
    for (std::size_t i = 0; i < C1.size(); ++i) ASSERT_NEAR(C3[i], C1[i], 1e-4 * (1 + std::fabs(C1[i]))) << i;
    std::fill(C3.begin(), C3.end(), 0.0f);
    e.run_compacted(c3, t);  // tiles of op(A): Op
    EXPECT_EQ(std::memcmp(C3.data(), C1.data(), C1.size() * sizeof(float)), 0);
    std::fill(C3.begin(), C3.end(), 0.0f);
    e.run_compacted(c3, plain.compact_operand(c3));  // stored tiles: Stored
    EXPECT_FALSE(e.last_stats().row_gather);
    for (std::size_t i = 0; i < C1.size(); ++i) ASSERT_NEAR(C3[i], C1[i], 1e-4 * (1 + std::fabs(C1[i]))) << i;
  }
  c.C = C2.data();
  e.run_compacted(c, plain.compact_operand(c), Orientation::Stored);  // stored K x M tiles: scatter or gather
  EXPECT_FALSE(e.last_stats().row_gather);
  c.C = R.data();
  make_dense_engine()->run(c);
  for (std::size_t i = 0; i < R.size(); ++i) {
    ASSERT_NEAR(C1[i], R[i], 1e-4 * (1 + std::fabs(R[i]))) << i;
    ASSERT_NEAR(C2[i], R[i], 1e-4 * (1 + std::fabs(R[i]))) << i;
  }
  EXPECT_THROW(e.run_compacted(c, t, Orientation::Stored), spartan::InputError);  // M x K tiles, K x M expected
  {  // a square A fits both orientations' shapes: the tiles' own record refuses the wrong one
    const int S = 96;
    std::vector<float> Aq(std::size_t(S) * S), Bq(std::size_t(S) * N), Cq(std::size_t(S) * N);
    for (auto& x : Aq) x = p(rng) < 0.9 ? 0.0f : u(rng);
    for (auto& x : Bq) x = u(rng);
    GemmCall q{Op::T, Op::N, S, N, S, 1.0f, 0.0f, Aq.data(), S, Bq.data(), N, Cq.data(), N, SparseOperand::A};
    const auto tq = e.compact_operand(q);  // of A^T (compact_transposed)
    EXPECT_TRUE(tq.source_transposed);
    EXPECT_THROW(e.run_compacted(q, tq, Orientation::Stored), spartan::InputError);
    EXPECT_THROW(e.run_compacted(q, plain.compact_operand(q), Orientation::Op), spartan::InputError);  // of A
    EXPECT_NO_THROW(e.run_compacted(q, tq, Orientation::Op));
  }
  // Op for a sparse B op T is refused (here the tiles' shape, M x K with N = M, would fit the call's stored B)
  std::vector<float> Ad(std::size_t(M) * K, 1.0f), Bs(std::size_t(M) * K, 0.0f), Cb(std::size_t(M) * M);
  GemmCall bt{Op::N, Op::T, M, M, K, 1.0f, 0.0f, Ad.data(), K, Bs.data(), K, Cb.data(), M, SparseOperand::B};
  EXPECT_THROW(e.run_compacted(bt, t, Orientation::Op), spartan::InputError);
  // RowsKernel::Lists is honoured for op(A)'s tiles: its rows, without the wide gather
  TileSparseOptions ol = o;
  ol.rows_kernel = RowsKernel::Lists;
  TileSparseEngine el(ol);
  c.C = C2.data();
  el.run(c);
  EXPECT_TRUE(el.last_stats().row_gather);
  EXPECT_EQ(el.last_stats().wide_panel_floats, 0);
  EXPECT_FALSE(el.last_stats().direct_rows);
  for (std::size_t i = 0; i < R.size(); ++i) ASSERT_NEAR(C2[i], R[i], 1e-4 * (1 + std::fabs(R[i]))) << i;
}

// An engine of one thread runs its loops on the calling thread as plain loops, with no OpenMP construct (an
// empty one-thread region costs 1-2 us in libgomp). Called from a caller's OpenMP constructs, those loops must
// stay its own: as orphaned `omp for` loops they would bind to the caller's team and share (or skip, or wait at)
// the caller's own work-sharing loops: inside an active region of two threads, inside an inactive region of one
// (num_threads(1) with a dynamic schedule; sections), and inside an orphaned work-sharing loop outside any
// region.
TEST(TileSparseGemm, OneThreadEnginesInsideACallersOpenMpConstructs) {
  const std::vector<Case> cases = {
      {SparseOperand::A, Op::T, Op::T, 640, 40, 480, 0.9},  // train forward: row gather of op(A), R blocks
      {SparseOperand::A, Op::T, Op::T, 48, 40, 480, 0.9},   // train forward, few rows: scatter kernel
      {SparseOperand::A, Op::N, Op::N, 300, 200, 40, 0.9},  // backward-data: wide direct gather, row groups
      {SparseOperand::A, Op::N, Op::N, 100, 520, 40, 0.9},  // two wide panels: panel by panel, one R block
      {SparseOperand::A, Op::N, Op::N, 200, 24, 300, 0.9},  // backward-weight: direct gather
      {SparseOperand::B, Op::N, Op::N, 40, 300, 200, 0.9},  // row lists, C^T
      {SparseOperand::B, Op::T, Op::N, 200, 300, 40, 0.9},
      {SparseOperand::A, Op::N, Op::T, 120, 70, 2600, 0.9}};  // several R blocks (kSlice256K): row lists + bounds
  TileSparseOptions o;
  o.num_threads = 1;
  o.gather_slice_bytes = kSlice256K;
  const int n = int(cases.size());
  for (int mode = 0; mode < 4; ++mode) {
    SCOPED_TRACE("caller construct " + std::to_string(mode));
    std::vector<int> ran(std::size_t(n), 0);
    auto call = [&](int i) {
      std::mt19937 rng(100 + unsigned(i));
      ++ran[std::size_t(i)];
      check_case(cases[std::size_t(i)], o, rng);
    };
    int callers = 0;
    if (mode == 0) {  // an active region of two threads, each calling its own engines
#pragma omp parallel num_threads(2) reduction(+ : callers)
      {
        callers = omp_get_num_threads() == 2 ? 1 : 0;
        std::mt19937 rng(100 + unsigned(omp_get_thread_num()));
        for (const Case& cs : cases) check_case(cs, o, rng);
      }
      EXPECT_EQ(callers, 2);
      continue;
    }
    if (mode == 1) {  // an inactive region (one thread) with a dynamic schedule
#pragma omp parallel for num_threads(1) schedule(dynamic)
      for (int i = 0; i < n; ++i) call(i);
    } else if (mode == 2) {  // sections of a one-thread region
#pragma omp parallel sections num_threads(1)
      {
#pragma omp section
        for (int i = 0; i < n / 2; ++i) call(i);
#pragma omp section
        for (int i = n / 2; i < n; ++i) call(i);
      }
    } else {  // an orphaned work-sharing loop, no region
#pragma omp for schedule(dynamic)
      for (int i = 0; i < n; ++i) call(i);
    }
    for (int i = 0; i < n; ++i) EXPECT_EQ(ran[std::size_t(i)], 1) << "case " << i;
  }
}

TEST(TileSparseGemm, FactoryByName) {
  for (const auto& n : engine_names()) {
    if (n.rfind("cuda", 0) == 0) continue;  // exercised by test_gemm_cuda where a GPU exists
    EXPECT_EQ(make_engine(n)->name(), n);
  }
  EXPECT_THROW(make_engine("sparse-magic"), spartan::InputError);
}

TEST(TileSparseGemm, WholeCallGuardRunsOneSgemm) {
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> u(-1, 1);
  const int M = 16, N = 64, K = 64;
  std::vector<float> A(M * K), B(K * N, 0.0f), C(M * N);
  for (auto& x : A) x = u(rng);
  for (int k = 0; k < K; ++k)  // left half dense, right half empty: overall density 0.5
    for (int n = 0; n < N / 2; ++n) B[k * N + n] = u(rng) + 2.0f;
  GemmCall c{Op::N, Op::N, M, N, K, 1.0f, 0.0f, A.data(), K, B.data(), N, C.data(), N, SparseOperand::B};
  TileSparseOptions o;
  o.tile_rows = o.tile_cols = 32;
  o.threshold = 0.4;
  TileSparseEngine guarded(o);
  guarded.run(c);
  EXPECT_TRUE(guarded.last_stats().full_dense);
  EXPECT_EQ(guarded.last_stats().dense_calls, 1u);
  EXPECT_EQ(guarded.last_stats().tiles_zero, 2u);  // counts are reported either way
  o.threshold = 0.55;  // density 0.5 >= 0.8 * 0.55: still one sgemm; with guard_fraction 1 it is not
  o.guard_fraction = 0.8;
  TileSparseEngine near(o);
  near.run(c);
  EXPECT_TRUE(near.last_stats().full_dense);
  o.guard_fraction = 1.0;
  TileSparseEngine strict(o);
  strict.run(c);
  EXPECT_FALSE(strict.last_stats().full_dense);
  o.threshold = 0.4;
  o.guard_fraction = 0.8;
  o.whole_call_guard = false;
  TileSparseEngine tiled(o);
  tiled.run(c);
  EXPECT_FALSE(tiled.last_stats().full_dense);
  EXPECT_EQ(tiled.last_stats().tiles_dense, 2u);
  EXPECT_EQ(tiled.last_stats().tiles_zero, 2u);
}

namespace {
// Max |C - C_ref| / bound with OpenBLAS as the reference; <= 1 passes. For calls with a sparse B (op N)
// and |a|, |b|, |C0| <= 1: sum_k |a_ik b_kj| <= nnz of column j of B, so the bound of check_case becomes
// 8 * K * 2^-24 * (nnz_j + |beta|).
double rel_err(const GemmCall& c, const std::vector<float>& C, const std::vector<float>& C0) {
  std::vector<float> R = C0;
  GemmCall r = c;
  r.C = R.data();
  make_dense_engine()->run(r);
  std::vector<int> nnz(std::size_t(c.N), 0);
  for (int k = 0; k < c.K; ++k)
    for (int j = 0; j < c.N; ++j) nnz[std::size_t(j)] += !spartan::format::is_zero(c.B[std::size_t(k) * c.ldb + j]);
  double worst = 0;
  for (int i = 0; i < c.M; ++i)
    for (int j = 0; j < c.N; ++j) {
      const std::size_t at = std::size_t(i) * c.ldc + j;
      const double tol = 8.0 * c.K * std::ldexp(1.0, -24) * (nnz[std::size_t(j)] + std::fabs(c.beta)) + 1e-30;
      worst = std::max(worst, std::fabs(double(C[at]) - R[at]) / tol);
    }
  return worst;
}
}  // namespace

// Several wide panels of B (Q > kWideGatherQ): read in place when the rows are 64-byte aligned (ldb a multiple of 16
// floats), their stride is not a multiple of 4 KiB and the non-zeros number fewer than kWideInPlaceMaxReuse per row
// of B (also with ldb > N and a last panel that is not a whole number of vectors); packed when reused more, when
// the stride is a multiple of 4 KiB or not of 16 floats, or when B is misaligned. With one R block C is bit for
// bit the same either way (the same FMAs in the same order). The R blocks are sized by the rows the gather reads
// (panel floats in place, panel + 16 packed), so a long R can split differently (last case: 2 blocks in place,
// 4 packed) and C may then differ in the last bits; every result agrees with OpenBLAS. Each case has at least 2^22
// multiply-adds, so that two threads do run two.
TEST(TileSparseGemm, WideRowGatherReadsSeveralPanelsInPlaceWhenLittleReused) {
  if (TileSparseEngine().isa_name() != "avx512") GTEST_SKIP() << "no AVX-512F on this CPU";
  std::mt19937 rng(71);
  std::uniform_real_distribution<float> u(-1, 1);
  std::uniform_real_distribution<double> p(0, 1);
  struct Case {
    int M, N, ldb, K;
    double density;
    bool in_place;
    int r_blocks_in_place, r_blocks_packed;
  };
  for (int threads : {1, 2})
    for (const Case& k : {Case{200, 800, 800, 300, 0.1, true, 1, 1}, Case{200, 1024, 1024, 300, 0.1, false, 1, 1},
                          Case{400, 800, 800, 300, 0.5, false, 1, 1}, Case{200, 1000, 1008, 300, 0.1, true, 1, 1},
                          Case{200, 800, 808, 300, 0.1, false, 1, 1}, Case{100, 1600, 1600, 300, 0.2, true, 1, 1},
                          Case{64, 768, 784, 1024, 0.2, true, 2, 4}}) {
      const int K = k.K;
      TileSparseOptions o;
      o.num_threads = threads;
      o.threshold = 2.0;
      o.dense_if_not_smaller = false;
      o.gather_slice_bytes = std::size_t(768) << 10;
      TileSparseEngine e(o);
      const std::string what = std::to_string(k.M) + "x" + std::to_string(k.N) + " ldb " + std::to_string(k.ldb) +
                               " density " + std::to_string(k.density) + " threads " + std::to_string(threads);
      std::vector<float> A(std::size_t(k.M) * K);
      for (auto& x : A) x = p(rng) < k.density ? u(rng) : 0.0f;
      const std::size_t nb = std::size_t(K) * std::size_t(k.ldb);
      std::vector<float> store(nb + 64), store2(nb + 64);
      float* B = store.data() + (16 - reinterpret_cast<std::uintptr_t>(store.data()) / sizeof(float) % 16) % 16;
      float* mis = store2.data() + (16 - reinterpret_cast<std::uintptr_t>(store2.data()) / sizeof(float) % 16) % 16 + 4;
      for (std::size_t i = 0; i < nb; ++i) B[i] = mis[i] = u(rng);
      auto run = [&](const float* b) {
        std::vector<float> C(std::size_t(k.M) * k.N, 7.0f);
        GemmCall c{Op::N, Op::N, k.M, k.N, K, 1.0f, 0.0f, A.data(), K, b, k.ldb, C.data(), k.N, SparseOperand::A};
        e.run(c);
        EXPECT_GT(e.last_stats().wide_panel_floats, 0) << what;
        EXPECT_LT(e.last_stats().wide_panel_floats, k.N) << what;
        return C;
      };
      const std::vector<float> c_aligned = run(B);
      EXPECT_EQ(!e.last_stats().dense_packed, k.in_place) << what;
      EXPECT_EQ(e.last_stats().r_blocks, k.in_place ? k.r_blocks_in_place : k.r_blocks_packed) << what;
      const std::vector<float> c_mis = run(mis);
      EXPECT_TRUE(e.last_stats().dense_packed) << what;
      EXPECT_EQ(e.last_stats().r_blocks, k.r_blocks_packed) << what;
      if (!k.in_place || k.r_blocks_in_place == k.r_blocks_packed) {
        EXPECT_EQ(std::memcmp(c_aligned.data(), c_mis.data(), c_mis.size() * sizeof(float)), 0) << what;
      }
      std::vector<float> R(std::size_t(k.M) * k.N);
      GemmCall r{Op::N, Op::N, k.M, k.N, K, 1.0f, 0.0f, A.data(), K, B, k.ldb, R.data(), k.N, SparseOperand::A};
      make_dense_engine()->run(r);
      for (std::size_t i = 0; i < R.size(); ++i) {
        ASSERT_NEAR(c_aligned[i], R[i], 1e-4 * (1 + std::fabs(R[i]))) << what << " at " << i;
        ASSERT_NEAR(c_mis[i], R[i], 1e-4 * (1 + std::fabs(R[i]))) << what << " at " << i;
      }
    }
}

// GemmCall::dense_version: the packed dense operand is kept between calls only while pointer, shape,
// stride, op and a non-zero version all match; a new version (weights updated in place), version 0, or a
// different shape / stride / pointer repacks. Every result is checked against OpenBLAS.
TEST(TileSparseGemm, DensePackReuseFollowsVersionAndIsInvalidated) {
  std::mt19937 rng(31);
  std::uniform_real_distribution<float> u(-1, 1);
  std::uniform_real_distribution<double> p(0, 1);
  const int M = 96, N = 150, K = 200;  // forward: C = W * col, col sparse; W packed transposed
  std::vector<float> W(std::size_t(M) * K), W2(W.size()), col(std::size_t(K) * N), C(std::size_t(M) * N);
  for (auto& x : W) x = u(rng);
  for (auto& x : W2) x = u(rng);
  for (auto& x : col) x = p(rng) < 0.9 ? 0.0f : u(rng);
  for (Isa isa : isas()) {
    TileSparseOptions o;
    o.isa = isa;
    o.threshold = 2.0;  // every non-zero tile sparse
    o.dense_if_not_smaller = false;
    TileSparseEngine e(o);
    GemmCall c{Op::N, Op::N, M, N, K, 1.0f, 0.0f, W.data(), K, col.data(), N, C.data(), N, SparseOperand::B};
    c.dense_version = 7;
    e.run(c);
    EXPECT_TRUE(e.last_stats().dense_packed);
    EXPECT_FALSE(e.last_stats().dense_pack_reused);
    EXPECT_LE(rel_err(c, C, C), 1.0);
    e.run(c);  // same weights, same version: reused
    EXPECT_TRUE(e.last_stats().dense_pack_reused);
    EXPECT_EQ(e.last_stats().pack_s, 0.0);
    EXPECT_LE(rel_err(c, C, C), 1.0);
    // SGD step: weights updated in place, version bumped -> repacked, result follows the new weights.
    for (std::size_t i = 0; i < W.size(); ++i) W[i] = W[i] * 0.5f + 0.25f;
    c.dense_version = 8;
    e.run(c);
    EXPECT_FALSE(e.last_stats().dense_pack_reused);
    EXPECT_LE(rel_err(c, C, C), 1.0);
    e.run(c);
    EXPECT_TRUE(e.last_stats().dense_pack_reused);
    // version 0: never reused (and does not serve later calls either)
    c.dense_version = 0;
    e.run(c);
    EXPECT_FALSE(e.last_stats().dense_pack_reused);
    e.run(c);
    EXPECT_FALSE(e.last_stats().dense_pack_reused);
    // same version, other pointer / other shape (fewer columns of the dense operand) / other op -> repack
    c.dense_version = 9;
    e.run(c);
    c.A = W2.data();
    e.run(c);
    EXPECT_FALSE(e.last_stats().dense_pack_reused);
    EXPECT_LE(rel_err(c, C, C), 1.0);
    GemmCall small = c;
    small.M = M - 8;
    e.run(small);
    EXPECT_FALSE(e.last_stats().dense_pack_reused);
    std::vector<float> Cs(C.begin(), C.begin() + std::ptrdiff_t(small.M) * N);
    small.C = Cs.data();
    e.run(small);
    EXPECT_TRUE(e.last_stats().dense_pack_reused);
    EXPECT_LE(rel_err(small, Cs, Cs), 1.0);
    GemmCall bd = c;  // backward-data: C[K x N] = W^T * dY with the same W pointer and version
    bd.op_a = Op::T;
    bd.M = K;
    bd.K = M;
    std::vector<float> dY(std::size_t(M) * N), Cb(std::size_t(K) * N);
    for (auto& x : dY) x = p(rng) < 0.9 ? 0.0f : u(rng);
    bd.B = dY.data();
    bd.C = Cb.data();
    e.run(bd);
    EXPECT_FALSE(e.last_stats().dense_pack_reused);
    EXPECT_LE(rel_err(bd, Cb, Cb), 1.0);
  }
}

// Outputs above the streaming size (32 MiB) are written with non-temporal stores when beta == 0 (AVX2),
// with one R block (fused gather + transposed store) and with several; beta != 0 takes the cached path.
// C is offset by one float from the allocation so that row segments start mid-line.
TEST(TileSparseGemm, LargeOutputsStreamedMatchReference) {
  std::mt19937 rng(41);
  std::uniform_real_distribution<float> u(-1, 1);
  std::uniform_real_distribution<double> p(0, 1);
  const int M = 2048, N = 4200;
  for (int K : {24, 1400}) {
    if (K > 100 && isas().back() == Isa::Portable) continue;  // keep the portable run quick
    std::vector<float> A(std::size_t(K) * M), B(std::size_t(K) * N), Cbuf(std::size_t(M) * N + 1, 1.0f);
    for (auto& x : A) x = u(rng);
    for (auto& x : B) x = p(rng) < (K > 100 ? 0.995 : 0.9) ? 0.0f : u(rng);
    for (int run = 0; run < (K > 100 ? 2 : 3); ++run) {
      const float beta = run == 1 ? 0.5f : 0.0f;
      // run 2 (short reduction only): the scatter kernel forced, its transposed stores streamed too
      const TransposedKernel tk = run == 2 ? TransposedKernel::Scatter : TransposedKernel::Gather;
      std::vector<float> C(Cbuf.begin() + 1, Cbuf.end());  // copied back into the offset buffer below
      float* Cp = Cbuf.data() + 1;
      GemmCall c{Op::T, Op::N, M, N, K, 1.0f, beta, A.data(), M, B.data(), N, Cp, N, SparseOperand::B};
      const std::vector<float> C0 = C;
      TileSparseOptions o;
      o.threshold = 2.0;
      o.dense_if_not_smaller = false;
      o.transposed_kernel = tk;
      o.gather_slice_bytes = kSlice256K;  // K = 1400: two R blocks
      TileSparseEngine e(o);
      e.run(c);
      EXPECT_EQ(e.last_stats().scattered, tk == TransposedKernel::Scatter);
      if (tk == TransposedKernel::Gather) {
        EXPECT_EQ(e.last_stats().r_blocks, K > 100 ? 2 : 1);
      }
      std::copy(Cp, Cp + C.size(), C.begin());
      c.C = C.data();
      const double worst = rel_err(c, C, C0);
      if (isas().back() != Isa::Portable) {
        EXPECT_EQ(e.last_stats().out_streamed, beta == 0.0f);
      }
      EXPECT_LE(worst, 1.0) << "K=" << K << " beta=" << beta;
    }
  }
}

// The calibration's crossover rule: the smallest density from which on the dense path is never slower.
TEST(Calibration, CrossoverRule) {
  const std::vector<double> d = {0.1, 0.2, 0.3, 0.4};
  // Dense slower up to 0.2, never slower from 0.3 on.
  EXPECT_DOUBLE_EQ(calibration_crossover(d, {1, 2, 3, 4}, {3, 3, 3, 3}), 0.3);
  // Dense faster at 0.2 but slower again at 0.3: the crossover is after the last density where dense lost.
  EXPECT_DOUBLE_EQ(calibration_crossover(d, {1, 4, 2, 5}, {3, 3, 3, 3}), 0.4);
  // Dense never slower: the first density; dense slower at the last density: 1.0 (every tile sparse).
  EXPECT_DOUBLE_EQ(calibration_crossover(d, {5, 5, 5, 5}, {3, 3, 3, 3}), 0.1);
  EXPECT_DOUBLE_EQ(calibration_crossover(d, {5, 5, 5, 1}, {3, 3, 3, 3}), 1.0);
  EXPECT_THROW(calibration_crossover(d, {1, 2, 3}, {3, 3, 3, 3}), spartan::InputError);
  EXPECT_THROW(calibration_crossover(d, {1, 2, 3, 4}, {3, 3}), spartan::InputError);
}

// calibrate_threshold on a small layer: every density measured for the three passes, sums consistent with the
// passes, thresholds consistent with the measured times (the times themselves are machine-dependent).
TEST(Calibration, SmallLayerIsConsistent) {
  TileSparseOptions o;
  o.num_threads = 1;
  const Calibration cal = calibrate_threshold(o, 96, 16, 72, 3, 1);
  ASSERT_EQ(cal.density.size(), 15u);
  EXPECT_DOUBLE_EQ(cal.density.front(), 0.01);
  EXPECT_DOUBLE_EQ(cal.density.back(), 1.0);
  ASSERT_TRUE(std::is_sorted(cal.density.begin(), cal.density.end()));
  ASSERT_EQ(cal.sparse_s.size(), cal.density.size());
  ASSERT_EQ(cal.dense_s.size(), cal.density.size());
  for (std::size_t k = 0; k < 3; ++k) {
    ASSERT_EQ(cal.pass_sparse_s[k].size(), cal.density.size());
    ASSERT_EQ(cal.pass_dense_s[k].size(), cal.density.size());
    EXPECT_DOUBLE_EQ(cal.pass_threshold[k],
                     calibration_crossover(cal.density, cal.pass_sparse_s[k], cal.pass_dense_s[k]));
  }
  for (std::size_t i = 0; i < cal.density.size(); ++i) {
    double s = 0, d = 0;
    for (std::size_t k = 0; k < 3; ++k) {
      EXPECT_GT(cal.pass_sparse_s[k][i], 0.0);
      EXPECT_GT(cal.pass_dense_s[k][i], 0.0);
      s += cal.pass_sparse_s[k][i], d += cal.pass_dense_s[k][i];
    }
    EXPECT_DOUBLE_EQ(cal.sparse_s[i], s);
    EXPECT_DOUBLE_EQ(cal.dense_s[i], d);
  }
  EXPECT_DOUBLE_EQ(cal.threshold, calibration_crossover(cal.density, cal.sparse_s, cal.dense_s));
  EXPECT_THROW(calibrate_threshold(o, 0, 16, 72), spartan::InputError);
  EXPECT_THROW(calibrate_threshold(o, 96, 16, 72, 1, 0), spartan::InputError);
}

// alpha scales the sum of products, as in BLAS: folded into one factor of each product (row lists, scatter
// kernels) it overflowed, underflowed or made 0 * Inf where the scaled sum is finite (fortieth session's review).
TEST(TileSparseGemm, AlphaIsAppliedToTheSum) {
  struct Case {
    float s, d, alpha, want;  // sparse value, dense value, alpha, exact C
  };
  const Case cases[] = {{2e38f, 0.25f, 4.0f, 2e38f},                                   // alpha * s overflows
                        {1e-30f, 1e30f, 1e-20f, 1e-20f},                               // alpha * s underflows to 0
                        {std::numeric_limits<float>::denorm_min(), INFINITY, 0.5f, INFINITY},  // 0 * Inf
                        {3.0f, 2.0f, 2.5f, 15.0f}};
  struct Path {
    SparseOperand sp;
    TransposedKernel tk;
    RowsKernel rk;
  };
  const Path paths[] = {{SparseOperand::B, TransposedKernel::Gather, RowsKernel::Auto},
                        {SparseOperand::B, TransposedKernel::Scatter, RowsKernel::Auto},
                        {SparseOperand::A, TransposedKernel::Auto, RowsKernel::Direct},
                        {SparseOperand::A, TransposedKernel::Auto, RowsKernel::Lists}};
  for (const Case& k : cases)
    for (const Path& pa : paths)
      for (float beta : {0.0f, 1.0f})
        for (Isa isa : isas()) {
          const int M = 16, N = 64, K = 160;
          // One product per C row/column pair on the diagonal band: C(i, j) = alpha * s * d for j == i, else 0.
          std::vector<float> A(std::size_t(M) * K, 0.0f), B(std::size_t(K) * N, 0.0f), C(std::size_t(M) * N);
          for (int i = 0; i < M; ++i) {
            (pa.sp == SparseOperand::A ? A : B)[pa.sp == SparseOperand::A ? std::size_t(i) * K + i : std::size_t(i) * N + i] = k.s;
            (pa.sp == SparseOperand::A ? B : A)[pa.sp == SparseOperand::A ? std::size_t(i) * N + i : std::size_t(i) * K + i] = k.d;
          }
          for (std::size_t i = 0; i < C.size(); ++i) C[i] = beta == 0.0f ? NAN : 1.0f;
          GemmCall c{Op::N, Op::N, M, N, K, k.alpha, beta, A.data(), K, B.data(), N, C.data(), N, pa.sp};
          TileSparseOptions o = all_sparse(pa.tk, pa.rk, isa);
          o.whole_call_guard = false;
          TileSparseEngine e(o);
          e.run(c);
          for (int i = 0; i < M; ++i)
            for (int j = 0; j < N; ++j) {
              const float base = beta == 0.0f ? 0.0f : 1.0f;
              const float want = i == j ? k.want + base : base;
              const float got = C[std::size_t(i) * N + j];
              if (std::isinf(want))
                ASSERT_EQ(got, want) << "i=" << i << " j=" << j << " alpha=" << k.alpha << " sp=" << int(pa.sp);
              else
                ASSERT_NEAR(got, want, 1e-6f * std::fabs(want)) << "i=" << i << " j=" << j << " alpha=" << k.alpha
                                                                << " sp=" << int(pa.sp) << " tk=" << int(pa.tk);
            }
        }
}

// With MXCSR.DAZ set (start-up code of -ffast-math programs), a denormal compares equal to 0: the kernels took a
// stored denormal activation for ELL padding and dropped the rest of its row (C = 0 for an expected 10, every
// ISA; fortieth session's review). The engine clears DAZ for the call on every thread and restores it after.
TEST(TileSparseGemm, DenormalsAreNotPaddingUnderDaz) {
#if defined(__x86_64__) || defined(__i386__)
  const int M = 4, N = 16, K = 256;
  std::vector<float> A(std::size_t(M) * K, 0.0f), B(std::size_t(K) * N, 1.0f);
  for (int i = 0; i < M; ++i) {
    A[std::size_t(i) * K] = std::numeric_limits<float>::denorm_min();  // the row's first non-zero
    for (int k = 10; k < 20; ++k) A[std::size_t(i) * K + k] = 1.0f;     // ten ordinary ones after it
  }
  for (int threads : {1, 2}) {
    unsigned saved[2] = {0, 0};
#pragma omp parallel num_threads(2)
    {
      const int t = omp_get_thread_num();
      if (t < 2) saved[t] = _mm_getcsr();
      _mm_setcsr(_mm_getcsr() | 0x40u);  // DAZ on every thread of the pool
    }
    for (Isa isa : isas())
      for (RowsKernel rk : {RowsKernel::Lists, RowsKernel::Direct})
        for (int sp = 0; sp < 2; ++sp) {
          std::vector<float> C(std::size_t(M) * N, -1.0f);
          GemmCall c;
          if (sp == 0) {  // C[M x N] = A * B, sparse A
            c = GemmCall{Op::N, Op::N, M, N, K, 1.0f, 0.0f, A.data(), K, B.data(), N, C.data(), N, SparseOperand::A};
          } else {  // C^T[N x M] = B^T * A^T, sparse B = A stored M x K, op T
            c = GemmCall{Op::T, Op::T, N, M, K, 1.0f, 0.0f, B.data(), N, A.data(), K, C.data(), M, SparseOperand::B};
          }
          TileSparseOptions o;
          o.isa = isa;
          o.rows_kernel = rk;
          o.num_threads = threads;
          TileSparseEngine e(o);
          e.run(c);
          ASSERT_EQ(C[0], 10.0f) << "isa=" << e.isa_name() << " rk=" << int(rk) << " sp=" << sp << " threads=" << threads;
          EXPECT_TRUE(_mm_getcsr() & 0x40u) << "the caller's DAZ was not restored";
        }
    if (threads == 1) {  // Only DAZ is restored: an exception flag the call raised (overflow, 0x8) stays set, as without
                         // DAZ (one thread: the product is computed on the calling thread, whose flags these are).
      _mm_setcsr(_mm_getcsr() & ~0x3fu);
      std::vector<float> a(std::size_t(M) * K, 0.0f), b(std::size_t(K) * N, 0.0f), cc(std::size_t(M) * N);
      a[0] = 1e30f;
      b[0] = 1e30f;  // the one product overflows
      GemmCall c{Op::N, Op::N, M, N, K, 1.0f, 0.0f, a.data(), K, b.data(), N, cc.data(), N, SparseOperand::A};
      TileSparseOptions o;
      o.num_threads = threads;
      TileSparseEngine e(o);
      e.run(c);
      EXPECT_TRUE(std::isinf(cc[0]));
      EXPECT_TRUE(_mm_getcsr() & 0x8u) << "the overflow flag of the call was cleared";
      EXPECT_TRUE(_mm_getcsr() & 0x40u);
    }
#pragma omp parallel num_threads(2)
    {
      const int t = omp_get_thread_num();
      if (t < 2) _mm_setcsr(saved[t]);
    }
  }
#else
  GTEST_SKIP() << "MXCSR is x86 only";
#endif
}
