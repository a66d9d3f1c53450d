#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "spartan/common/error.h"
#include "spartan/gemm/gemm.h"

using namespace spartan::gemm;

// Naive triple loop as the oracle for the dense engine, all four op combinations.
TEST(DenseGemm, MatchesNaiveAllOps) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1, 1);
  const int M = 7, N = 5, K = 9;
  for (Op oa : {Op::N, Op::T})
    for (Op ob : {Op::N, Op::T}) {
      std::vector<float> A(M * K), B(K * N), C(M * N, 0.5f), R(M * N);
      for (auto& x : A) x = u(rng);
      for (auto& x : B) x = u(rng);
      auto a = [&](int i, int k) { return oa == Op::N ? A[i * K + k] : A[k * M + i]; };
      auto b = [&](int k, int j) { return ob == Op::N ? B[k * N + j] : B[j * K + k]; };
      for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) {
          double s = 0;
          for (int k = 0; k < K; ++k) s += double(a(i, k)) * b(k, j);
          R[i * N + j] = float(2.0 * s + 0.25 * 0.5);
        }
      GemmCall c{oa, ob, M, N, K, 2.0f, 0.25f, A.data(), oa == Op::N ? K : M, B.data(), ob == Op::N ? N : K,
                 C.data(), N, SparseOperand::A};
      make_dense_engine()->run(c);
      for (int i = 0; i < M * N; ++i) EXPECT_NEAR(C[i], R[i], 1e-5f);
    }
}

TEST(DenseGemm, RejectsBadLeadingDimension) {
  std::vector<float> A(4), B(4), C(4);
  GemmCall c{Op::N, Op::N, 2, 2, 2, 1, 0, A.data(), 1, B.data(), 2, C.data(), 2, SparseOperand::None};
  EXPECT_THROW(make_dense_engine()->run(c), spartan::InputError);
}
