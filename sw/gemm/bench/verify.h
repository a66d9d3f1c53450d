// bench-gemm's check of a row's tile-sparse results against OpenBLAS (outside the timed region).
#pragma once
#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstddef>

#include "spartan/common/aligned.h"
#include "spartan/gemm/gemm.h"

namespace spartan::gemm::bench {

/// The fp32 bound of the GEMM test suite (sw/gemm/tests/test_tile_sparse.cpp): |C - R| <= 8 K 2^-24 sum_k
/// |a_ik b_kj| for alpha 1, beta 0, R the OpenBLAS result (each side's rounding error is below K 2^-24 times the
/// sum of the magnitudes; the factor 8 leaves room for either summation order).
struct Check {
  std::size_t bad = 0;  ///< elements outside the bound (NaN included), over all results checked
  double worst = 0;     ///< the largest |C - R| / bound among the finite differences
};

/// Checks the results of `runs` (callables taking a GemmCall: the timed kernel with the packed weights reused,
/// the kernel packing them, ...) for the call `c` (alpha 1, beta 0, row-major) against OpenBLAS: each writes into
/// a NaN-filled C through a copy of `c` whose C points there, and every element of the M x N result is compared
/// with sgemm's within the bound above (computed from a second sgemm of |op(A)| |op(B)|). A fast but wrong kernel
/// fails the row instead of showing a ratio. Allocates M x ldc floats three times and copies A and B.
template <class... Runs>
Check verify_row(const GemmCall& c, Runs&&... runs) {
  const std::size_t a_rows = c.op_a == Op::N ? std::size_t(c.M) : std::size_t(c.K);
  const std::size_t b_rows = c.op_b == Op::N ? std::size_t(c.K) : std::size_t(c.N);
  const std::size_t a_size = a_rows * std::size_t(c.lda), b_size = b_rows * std::size_t(c.ldb);
  AlignedVector<float> abs_a(a_size), abs_b(b_size), R(std::size_t(c.M) * c.ldc), mag(R.size()), out(R.size());
  for (std::size_t i = 0; i < a_size; ++i) abs_a[i] = std::fabs(c.A[i]);
  for (std::size_t i = 0; i < b_size; ++i) abs_b[i] = std::fabs(c.B[i]);
  const auto ta = c.op_a == Op::N ? CblasNoTrans : CblasTrans, tb = c.op_b == Op::N ? CblasNoTrans : CblasTrans;
  cblas_sgemm(CblasRowMajor, ta, tb, c.M, c.N, c.K, 1.0f, c.A, c.lda, c.B, c.ldb, 0.0f, R.data(), c.ldc);
  cblas_sgemm(CblasRowMajor, ta, tb, c.M, c.N, c.K, 1.0f, abs_a.data(), c.lda, abs_b.data(), c.ldb, 0.0f, mag.data(),
              c.ldc);
  Check ck;
  const double unit = 8.0 * c.K * std::ldexp(1.0, -24);
  auto check_one = [&](auto&& run) {
    std::fill(out.begin(), out.end(), std::nanf(""));
    GemmCall v = c;
    v.C = out.data();
    run(v);
    for (int i = 0; i < c.M; ++i)
      for (int j = 0; j < c.N; ++j) {
        const std::size_t x = std::size_t(i) * std::size_t(c.ldc) + std::size_t(j);
        const double bound = unit * double(mag[x]) + 1e-30, err = std::fabs(double(out[x]) - double(R[x]));
        if (!(err <= bound)) ++ck.bad;
        if (err == err) ck.worst = std::max(ck.worst, err / bound);
      }
  };
  (check_one(runs), ...);
  return ck;
}

}  // namespace spartan::gemm::bench
