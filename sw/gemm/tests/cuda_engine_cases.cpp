// The CUDA engines' test cases (cuda_engine_cases.h), against the OpenBLAS reference. Skipped (GTEST_SKIP)
// when the backend cannot run here (the GPU backend without a usable GPU: cuda_unusable_reason()).
// Tolerance as in test_tile_sparse.cpp: 8 * K * 2^-24 * (|alpha| sum_k |a_ik b_kj| + |beta c0_ij|).
#include "cuda_engine_cases.h"

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "spartan/common/error.h"
#include "spartan/gemm/cuda.h"

using spartan::format::TileFormat;

namespace spartan::gemm::cuda_cases {

#define SKIP_UNLESS_USABLE()                                                                   \
  do {                                                                                         \
    if (const std::string why = be().unusable_reason(); !why.empty()) GTEST_SKIP() << why;     \
  } while (0)

void check_engine(GemmEngine& e, SparseOperand sp, Op oa, Op ob, int M, int N, int K, double sparsity,
                  std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1, 1);
  std::uniform_real_distribution<double> p(0, 1);
  const int ar = oa == Op::N ? M : K, ac = oa == Op::N ? K : M, br = ob == Op::N ? K : N, bc = ob == Op::N ? N : K;
  std::vector<float> A(std::size_t(ar) * ac), B(std::size_t(br) * bc), C0(std::size_t(M) * N);
  for (auto& x : A) x = (sp == SparseOperand::A && p(rng) < sparsity) ? 0.0f : u(rng);
  for (auto& x : B) x = (sp == SparseOperand::B && p(rng) < sparsity) ? 0.0f : u(rng);
  for (auto& x : C0) x = u(rng);
  std::vector<float> C = C0, R = C0;
  const float alpha = 1.5f, beta = 0.5f;
  GemmCall c{oa, ob, M, N, K, alpha, beta, A.data(), ac, B.data(), bc, C.data(), N, sp};
  GemmCall r = c;
  r.C = R.data();
  make_dense_engine()->run(r);
  e.run(c);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double mag = 0;
      for (int k = 0; k < K; ++k) {
        const double a = oa == Op::N ? A[std::size_t(i) * ac + k] : A[std::size_t(k) * ac + i];
        const double b = ob == Op::N ? B[std::size_t(k) * bc + j] : B[std::size_t(j) * bc + k];
        mag += std::fabs(a * b);
      }
      const double tol = 8.0 * K * std::ldexp(1.0, -24) * (alpha * mag + beta * std::fabs(C0[i * N + j])) + 1e-30;
      ASSERT_LE(std::fabs(double(C[i * N + j]) - R[i * N + j]), tol)
          << e.name() << " C(" << i << "," << j << ") sp=" << int(sp) << " oa=" << int(oa) << " ob=" << int(ob);
    }
}


TEST_P(CudaEngineCases, MatchesOpenBlasAllOpsAndFormats) {
  SKIP_UNLESS_USABLE();
  std::mt19937 rng(3);
  auto dense = be().dense();
  for (SparseOperand sp : {SparseOperand::A, SparseOperand::B})
    for (Op oa : {Op::N, Op::T})
      for (Op ob : {Op::N, Op::T}) {
        check_engine(*dense, sp, oa, ob, 37, 150, 70, 0.5, rng);
        for (TileFormat f : {TileFormat::Ell, TileFormat::Bitmap})
          for (double thr : {0.0, 0.3, 2.0})
            for (bool guard : {true, false}) {
            TileSparseOptions o;
            o.sparse_format = f;
            o.threshold = thr;
            o.whole_call_guard = guard;  // off: the tile kernel also for the dense-enough calls
            auto e = be().tile(o);
            for (double s : {0.0, 0.7, 0.97}) check_engine(*e, sp, oa, ob, 37, 150, 70, s, rng);
            const TileSparseStats* st = be().stats(*e);
            ASSERT_NE(st, nullptr);
            EXPECT_GT(st->tiles_zero + st->tiles_sparse + st->tiles_dense, 0u);
          }
      }
}

// GemmCall::device_pointers: the same kernels on operands already on the device (no copies; the tile-sparse
// engine compacts on the device) give exactly the host-pointer call's result and tile statistics. Sparsities 0.0
// and 0.5 make DENSE tiles (in place, read from the device operand), 0.8 mostly ELL/BITMAP ones.
TEST_P(CudaEngineCases, DevicePointersGiveTheHostPointerResult) {
  SKIP_UNLESS_USABLE();
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1, 1);
  std::uniform_real_distribution<double> p(0, 1);
  const int M = 45, N = 130, K = 77;
  for (SparseOperand sp : {SparseOperand::A, SparseOperand::B})
    for (Op oa : {Op::N, Op::T})
      for (Op ob : {Op::N, Op::T})
        for (TileFormat f : {TileFormat::Ell, TileFormat::Bitmap})
          for (double thr : {0.3, 2.0})
            for (double sparsity : {0.0, 0.5, 0.8})
              for (bool guard : {true, false}) {
            const int ar = oa == Op::N ? M : K, ac = oa == Op::N ? K : M, br = ob == Op::N ? K : N, bc = ob == Op::N ? N : K;
            std::vector<float> A(std::size_t(ar) * ac), B(std::size_t(br) * bc), C0(std::size_t(M) * N);
            for (auto& x : A) x = (sp == SparseOperand::A && p(rng) < sparsity) ? 0.0f : u(rng);
            for (auto& x : B) x = (sp == SparseOperand::B && p(rng) < sparsity) ? 0.0f : u(rng);
            for (auto& x : C0) x = u(rng);
            TileSparseOptions o;
            o.sparse_format = f;
            o.threshold = thr;
            o.whole_call_guard = guard;
            std::unique_ptr<GemmEngine> engines[2] = {be().dense(), be().tile(o)};
            for (auto& e : engines) {
              std::vector<float> C = C0;
              GemmCall c{oa, ob, M, N, K, 1.25f, 0.5f, A.data(), ac, B.data(), bc, C.data(), N, sp};
              e->run(c);
              const TileSparseStats host_stats = *be().stats(*e);
              const auto dA = be().upload(A), dB = be().upload(B), dC = be().upload(C0);
              GemmCall d = c;
              d.A = dA->p, d.B = dB->p, d.C = dC->p;
              d.device_pointers = true;
              e->run(d);
              const TileSparseStats dev_stats = *be().stats(*e);
              const std::vector<float> got = dC->host();
              for (std::size_t i = 0; i < got.size(); ++i)
                ASSERT_EQ(got[i], C[i]) << e->name() << " element " << i << " sp=" << int(sp) << " oa=" << int(oa)
                                        << " ob=" << int(ob) << " thr=" << thr
                                        << " sparsity=" << sparsity;
              EXPECT_EQ(dev_stats.nnz, host_stats.nnz) << e->name();
              EXPECT_EQ(dev_stats.tiles_zero, host_stats.tiles_zero) << e->name();
              EXPECT_EQ(dev_stats.tiles_sparse, host_stats.tiles_sparse) << e->name();
              EXPECT_EQ(dev_stats.tiles_dense, host_stats.tiles_dense) << e->name();
            }
          }
}

// BLAS semantics of alpha == 0 (review finding on the CPU engine, same in the CUDA tile kernel): A and B are
// not read, C = beta * C, so Inf / NaN in the dense operand must not give 0 * Inf = NaN.
TEST_P(CudaEngineCases, TileSparseAlphaZeroReadsNeitherOperand) {
  SKIP_UNLESS_USABLE();
  for (SparseOperand sp : {SparseOperand::A, SparseOperand::B})
    for (float beta : {0.0f, 0.5f}) {
      const int M = 24, N = 40, K = 64;
      std::vector<float> A(std::size_t(M) * K), B(std::size_t(K) * N), C(std::size_t(M) * N);
      std::vector<float>& S = sp == SparseOperand::A ? A : B;
      std::vector<float>& X = sp == SparseOperand::A ? B : A;
      for (std::size_t i = 0; i < S.size(); ++i) S[i] = i % 4 == 0 ? 1.0f : 0.0f;
      for (std::size_t i = 0; i < X.size(); ++i) X[i] = i % 2 ? INFINITY : NAN;
      for (std::size_t i = 0; i < C.size(); ++i) C[i] = beta == 0.0f ? NAN : float(i % 7);
      TileSparseOptions o;
      o.tile_rows = o.tile_cols = 32;
      o.threshold = 2.0;  // every non-zero tile sparse
      o.dense_if_not_smaller = false;
      auto e = be().tile(o);
      GemmCall c{Op::N, Op::N, M, N, K, 0.0f, beta, A.data(), K, B.data(), N, C.data(), N, sp};
      e->run(c);
      for (std::size_t i = 0; i < C.size(); ++i)
        ASSERT_EQ(C[i], beta == 0.0f ? 0.0f : 0.5f * float(i % 7)) << "element " << i << " sp=" << int(sp);
    }
}

// Host pointers with strides larger than the columns and buffers sized exactly to the BLAS span: the engines
// read nothing past A/B, write nothing past C, leave the gaps between C's rows untouched, and give the OpenBLAS
// result (tolerance as check_engine's).
TEST_P(CudaEngineCases, TightlySizedStridedHostOperands) {
  SKIP_UNLESS_USABLE();
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> u(-1, 1);
  const int M = 21, N = 67, K = 40, pad = 7;
  const float kGap = 12345.0f;
  for (SparseOperand sp : {SparseOperand::None, SparseOperand::A, SparseOperand::B})
    for (Op oa : {Op::N, Op::T})
      for (Op ob : {Op::N, Op::T}) {
        const int ar = oa == Op::N ? M : K, ac = oa == Op::N ? K : M, br = ob == Op::N ? K : N, bc = ob == Op::N ? N : K;
        const int lda = ac + pad, ldb = bc + pad, ldc = N + pad;
        std::vector<float> A(blas_stored_elems(ar, ac, lda)), B(blas_stored_elems(br, bc, ldb)),
            C0(blas_stored_elems(M, N, ldc), kGap);
        for (std::size_t i = 0; i < A.size(); ++i) A[i] = int(i % lda) < ac ? (u(rng) < -0.4f ? 0.0f : u(rng)) : 0.0f;
        for (std::size_t i = 0; i < B.size(); ++i) B[i] = int(i % ldb) < bc ? (u(rng) < -0.4f ? 0.0f : u(rng)) : 0.0f;
        for (std::size_t i = 0; i < C0.size(); ++i)
          if (int(i % ldc) < N) C0[i] = u(rng);
        std::vector<float> R = C0;
        GemmCall r{oa, ob, M, N, K, 1.5f, 0.5f, A.data(), lda, B.data(), ldb, R.data(), ldc, sp};
        make_dense_engine()->run(r);
        // check_engine's bound with |a|, |b|, |c0| <= 1: 8 K 2^-24 (alpha K + beta).
        const double tol = 8.0 * K * std::ldexp(1.0, -24) * (1.5 * K + 0.5);
        std::unique_ptr<GemmEngine> engines[2] = {be().dense(), be().tile({})};
        for (auto& e : engines) {
          std::vector<float> C = C0;
          GemmCall c = r;
          c.C = C.data();
          e->run(c);
          for (std::size_t i = 0; i < C.size(); ++i) {
            if (int(i % ldc) >= N) {
              ASSERT_EQ(C[i], kGap) << e->name() << " wrote the gap element " << i;
              continue;
            }
            ASSERT_NEAR(C[i], R[i], tol) << e->name() << " element " << i << " sp=" << int(sp);
          }
        }
      }
}

namespace {

/// Row-major operand of rows x cols with row stride ld (> cols; the gaps hold a value no kernel may use).
std::vector<float> strided(int rows, int cols, int ld) { return std::vector<float>(blas_stored_elems(rows, cols, ld), 7e30f); }

/// Zero pattern of the sparse operand by stored row: blocks of 32 rows (so whole tiles of 8 x 256, 32 x 32
/// and 4 x 300 are zero) cycle through zero, 90 % sparse (ELL/BITMAP tiles) and 40 % sparse (DENSE tiles at
/// threshold 0.3). `draw` is uniform in [0, 1).
bool zero_at(int stored_row, double draw) {
  switch ((stored_row / 32) % 3) {
    case 1: return true;
    case 0: return draw < 0.9;
    default: return draw < 0.4;
  }
}

}  // namespace

// Shapes beyond one tile and one 128-column block in every direction (multi-tile offsets along R, several
// bands, several P chunks of a band, several y-blocks of a transposed output), 2-byte ELL indices
// (4 x 300: tile_cols > 256), whole zero tiles (every third block of 32 stored rows of the sparse operand is
// zero, see zero_at) and strides larger than the rows. The whole-call guard is off so that DENSE, sparse and zero tiles
// all go through the tile kernel (threshold 0.3: a mix of DENSE and sparse tiles; 2.0: all sparse). Each case
// also runs with beta = 0 on a C full of NaN (BLAS: C is not read) and must give op(A) op(B) * alpha.
// Tolerance as check_engine's, from |op(A)| |op(B)| computed by OpenBLAS.
TEST_P(CudaEngineCases, MultiTileShapesZeroTilesAndWideIndices) {
  SKIP_UNLESS_USABLE();
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-1, 1);
  std::uniform_real_distribution<double> p(0, 1);
  const int M = 300, N = 260, K = 530;
  const float alpha = 1.5f;
  for (SparseOperand sp : {SparseOperand::A, SparseOperand::B})
    for (Op oa : {Op::N, Op::T})
      for (Op ob : {Op::N, Op::T}) {
        const int ar = oa == Op::N ? M : K, ac = oa == Op::N ? K : M, br = ob == Op::N ? K : N, bc = ob == Op::N ? N : K;
        const int lda = ac + 3, ldb = bc + 5, ldc = N + 2;
        std::vector<float> A = strided(ar, ac, lda), B = strided(br, bc, ldb), C0 = strided(M, N, ldc);
        std::vector<float> absA = A, absB = B;
        for (int i = 0; i < ar; ++i)
          for (int j = 0; j < ac; ++j) {
            const bool zero = sp == SparseOperand::A && zero_at(i, p(rng));
            A[std::size_t(i) * lda + j] = zero ? 0.0f : u(rng);
            absA[std::size_t(i) * lda + j] = std::fabs(A[std::size_t(i) * lda + j]);
          }
        for (int i = 0; i < br; ++i)
          for (int j = 0; j < bc; ++j) {
            const bool zero = sp == SparseOperand::B && zero_at(i, p(rng));
            B[std::size_t(i) * ldb + j] = zero ? 0.0f : u(rng);
            absB[std::size_t(i) * ldb + j] = std::fabs(B[std::size_t(i) * ldb + j]);
          }
        for (int i = 0; i < M; ++i)
          for (int j = 0; j < N; ++j) C0[std::size_t(i) * ldc + j] = u(rng);
        // References: beta 0.5 on C0, and beta 0 (C0 not read); |op(A)| |op(B)| for the tolerance.
        std::vector<float> R5 = C0, R0(C0.size(), 0.0f), mag(C0.size(), 0.0f);
        make_dense_engine()->run({oa, ob, M, N, K, alpha, 0.5f, A.data(), lda, B.data(), ldb, R5.data(), ldc});
        make_dense_engine()->run({oa, ob, M, N, K, alpha, 0.0f, A.data(), lda, B.data(), ldb, R0.data(), ldc});
        make_dense_engine()->run({oa, ob, M, N, K, 1.0f, 0.0f, absA.data(), lda, absB.data(), ldb, mag.data(), ldc});
        struct Tile {
          std::uint32_t r, c;
        };
        for (Tile t : {Tile{8, 256}, Tile{32, 32}, Tile{4, 300}})
          for (TileFormat f : {TileFormat::Ell, TileFormat::Bitmap})
            for (double thr : {0.3, 2.0}) {
              TileSparseOptions o;
              o.tile_rows = t.r;
              o.tile_cols = t.c;
              o.sparse_format = f;
              o.threshold = thr;
              o.whole_call_guard = false;
              auto e = be().tile(o);
              for (float beta : {0.5f, 0.0f}) {
                std::vector<float> C = C0;
                if (beta == 0.0f)
                  for (int i = 0; i < M; ++i)
                    for (int j = 0; j < N; ++j) C[std::size_t(i) * ldc + j] = NAN;
                e->run({oa, ob, M, N, K, alpha, beta, A.data(), lda, B.data(), ldb, C.data(), ldc, sp});
                const std::vector<float>& R = beta == 0.0f ? R0 : R5;
                for (int i = 0; i < M; ++i)
                  for (int j = 0; j < N; ++j) {
                    const std::size_t x = std::size_t(i) * ldc + j;
                    const double tol =
                        8.0 * K * std::ldexp(1.0, -24) * (alpha * mag[x] + beta * std::fabs(C0[x])) + 1e-30;
                    ASSERT_LE(std::fabs(double(C[x]) - R[x]), tol)
                        << "C(" << i << "," << j << ") sp=" << int(sp) << " oa=" << int(oa) << " ob=" << int(ob)
                        << " tile " << t.r << "x" << t.c << " format " << int(f) << " thr " << thr << " beta " << beta;
                  }
                for (std::size_t x = 0; x < C.size(); ++x)
                  if (int(x % ldc) >= N) {
                    ASSERT_EQ(C[x], C0[x]) << "gap element " << x << " written";
                  }
                const TileSparseStats* st = be().stats(*e);
                ASSERT_NE(st, nullptr);
                EXPECT_GT(st->tiles_zero, 0u) << "tile " << t.r << "x" << t.c;
                EXPECT_GT(st->tiles_sparse, 0u) << "tile " << t.r << "x" << t.c;
                if (thr < 1.0) {
                  EXPECT_GT(st->tiles_dense, 0u) << "tile " << t.r << "x" << t.c;
                }
                EXPECT_FALSE(st->full_dense);
              }
            }
      }
}

// The CPU engine's whole-call rule (review finding F5): with the guard on and the sparse operand dense enough
// (density 0.5 >= 0.95 * 0.3 = 0.285: the default guard fraction with the test's threshold) both engines run
// one SGEMM, so a zero of the sparse operand times an Inf of the dense one is NaN in both; with the guard off
// and every tile sparse (threshold 2) both skip the zeros. The NaN / Inf pattern of C and full_dense agree with
// the CPU tile-sparse engine in every case.
TEST_P(CudaEngineCases, WholeCallGuardAsInTheCpuEngine) {
  SKIP_UNLESS_USABLE();
  const int M = 40, N = 70, K = 96;
  for (SparseOperand sp : {SparseOperand::A, SparseOperand::B})
    for (bool guard : {true, false}) {
      std::vector<float> A(std::size_t(M) * K), B(std::size_t(K) * N);
      std::vector<float>& S = sp == SparseOperand::A ? A : B;
      std::vector<float>& X = sp == SparseOperand::A ? B : A;
      for (std::size_t i = 0; i < S.size(); ++i) S[i] = i % 2 ? 0.0f : 0.25f * float(1 + i % 5);
      for (std::size_t i = 0; i < X.size(); ++i) X[i] = i % 37 == 3 ? INFINITY : 0.5f - float(i % 3);
      TileSparseOptions o;
      o.whole_call_guard = guard;
      o.threshold = guard ? 0.3 : 2.0;
      o.tile_rows = o.tile_cols = 16;
      std::vector<float> Cc(std::size_t(M) * N, 1.0f), Cg = Cc;
      auto cpu = make_engine("tile-sparse", o);
      auto gpu = be().tile(o);
      cpu->run({Op::N, Op::N, M, N, K, 1.0f, 0.5f, A.data(), K, B.data(), N, Cc.data(), N, sp});
      gpu->run({Op::N, Op::N, M, N, K, 1.0f, 0.5f, A.data(), K, B.data(), N, Cg.data(), N, sp});
      EXPECT_EQ(be().stats(*gpu)->full_dense, guard);
      EXPECT_EQ(last_tile_stats(*cpu)->full_dense, guard);
      int nans = 0;
      for (std::size_t i = 0; i < Cc.size(); ++i) {
        ASSERT_EQ(std::isnan(Cg[i]), std::isnan(Cc[i])) << "element " << i << " sp=" << int(sp) << " guard " << guard;
        nans += std::isnan(Cc[i]);
        if (!std::isnan(Cc[i])) {
          if (std::isinf(Cc[i]))
            ASSERT_EQ(Cg[i], Cc[i]) << "element " << i;
          else
            ASSERT_NEAR(Cg[i], Cc[i], 1e-2) << "element " << i;  // |terms| sum to <= 96 * 1.25 * 1.5
        }
      }
      if (guard) {
        EXPECT_GT(nans, 0) << "the case must make 0 * Inf in the SGEMM";
      }
    }
}

// The shared-memory check happens at construction (review finding F6): every allowed tile (<= 4096 elements,
// sides <= 1024) fits with some rows of P per block on any GPU this build runs on, in both orientations.
TEST_P(CudaEngineCases, EveryAllowedTileConstructsAndRuns) {
  SKIP_UNLESS_USABLE();
  for (TileShape t : kAllowedTileExamples) {
    TileSparseOptions o;
    o.tile_rows = t.r;
    o.tile_cols = t.c;
    o.whole_call_guard = false;
    o.threshold = 2.0;
    std::unique_ptr<GemmEngine> e;
    ASSERT_NO_THROW(e = be().tile(o)) << t.r << "x" << t.c;
    std::mt19937 rng(int(t.r * 7 + t.c));
    for (SparseOperand sp : {SparseOperand::A, SparseOperand::B})
      for (Op op : {Op::N, Op::T}) check_engine(*e, sp, op, op, 70, 300, 130, 0.9, rng);
  }
}

}  // namespace spartan::gemm::cuda_cases
