// Internal CPU micro-kernels of the tile-sparse GEMM, checked directly against their portable versions
// (the engine tests in test_tile_sparse.cpp reach them only through whole GEMM calls).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "cpu_kernels.h"

using namespace spartan::gemm::detail;

// transpose_store_avx2 (8x8 blocks: lane crossing in the loads, in-lane 4x4 transposes) must give the
// portable result for every block / edge combination, both loop orders (rows <= 64 and > 64), padded
// strides and the three beta cases. beta 0 and 1 are exact; a general beta uses one FMA per element on
// the AVX2 side (portable: multiply, then add), so the bound is one rounding of the largest term.
TEST(TileSparseKernels, TransposeStoreAvx2MatchesPortable) {
  if (!cpu_has_avx2_fma()) GTEST_SKIP() << "no AVX2/FMA on this CPU";
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-2, 2);
  for (int rows : {1, 7, 8, 9, 63, 64, 65, 130})
    for (int w : {1, 5, 8, 13, 64})
      for (float beta : {0.0f, 1.0f, -0.75f}) {
        const std::size_t ldt = std::size_t(w) + 3, ldc = std::size_t(rows) + 5;
        std::vector<float> T(std::size_t(rows) * ldt), C0(std::size_t(w) * ldc);
        for (float& x : T) x = u(rng);
        for (float& x : C0) x = u(rng);
        if (beta == 0.0f) C0[0] = std::nanf("");  // beta 0 must not read C
        std::vector<float> Ca = C0, Cp = C0;
        transpose_store_avx2(T.data(), ldt, rows, w, Ca.data(), ldc, beta);
        transpose_store_portable(T.data(), ldt, rows, w, Cp.data(), ldc, beta);
        for (int i = 0; i < w; ++i)
          for (std::size_t j = 0; j < ldc; ++j) {
            const std::size_t at = std::size_t(i) * ldc + j;
            if (j >= std::size_t(rows)) {
              ASSERT_TRUE(Ca[at] == C0[at] || (std::isnan(Ca[at]) && std::isnan(C0[at])))
                  << "padding written at " << i << "," << j;
              continue;
            }
            if (beta == 0.0f || beta == 1.0f) {
              ASSERT_EQ(Ca[at], Cp[at]) << rows << "x" << w << " beta " << beta << " at " << i << "," << j;
            } else {
              const float bound = 2 * std::ldexp(std::fabs(beta * C0[at]) + std::fabs(T[std::size_t(j) * ldt + i]), -24);
              ASSERT_NEAR(Ca[at], Cp[at], bound) << rows << "x" << w << " at " << i << "," << j;
            }
          }
      }
}
