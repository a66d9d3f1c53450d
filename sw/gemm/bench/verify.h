// bench-gemm's check of a row's tile-sparse results against OpenBLAS (outside the timed region).
#pragma once
#include <cblas.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "spartan/common/aligned.h"
#include "spartan/format/tile_format.h"
#include "spartan/gemm/gemm.h"

namespace spartan::gemm::bench {

/// The result of checking one row's tile-sparse results (one entry per checked run, in the order given).
struct Check {
  /// Elements of the run's C outside the fp32 bound on the timed inputs (check_bound).
  std::vector<std::size_t> bound_bad;
  /// Elements of the run's C that differ from the exact product of integer-valued inputs with the timed inputs'
  /// zero pattern (check_exact); empty when that check was not made (K too large for exact fp32 sums).
  std::vector<std::size_t> exact_bad;
  double worst = 0;  ///< the largest |C - R| / bound among the finite elements of check_bound
  std::size_t bad() const {
    return std::accumulate(bound_bad.begin(), bound_bad.end(), std::size_t(0)) +
           std::accumulate(exact_bad.begin(), exact_bad.end(), std::size_t(0));
  }
  bool ok() const { return bad() == 0; }
};

/// Floats spanned by the stored A (`a`) or B of `c` (rows x leading dimension, row-major).
inline std::size_t stored_floats(const GemmCall& c, bool a) {
  const std::size_t rows = a ? (c.op_a == Op::N ? std::size_t(c.M) : std::size_t(c.K))
                             : (c.op_b == Op::N ? std::size_t(c.K) : std::size_t(c.N));
  return rows * std::size_t(a ? c.lda : c.ldb);
}

/// R = op(A) op(B) for `c`'s shape, ops and leading dimensions (OpenBLAS, alpha 1, beta 0).
inline void reference_sgemm(const GemmCall& c, const float* A, const float* B, float* R) {
  cblas_sgemm(CblasRowMajor, c.op_a == Op::N ? CblasNoTrans : CblasTrans, c.op_b == Op::N ? CblasNoTrans : CblasTrans,
              c.M, c.N, c.K, 1.0f, A, c.lda, B, c.ldb, 0.0f, R, c.ldc);
}

/// Checks the results of `runs` (callables taking a GemmCall: the timed kernel with the packed weights reused,
/// the kernel packing them, ...) for the call `c` (alpha 1, beta 0, row-major) against OpenBLAS on the timed
/// inputs: each writes into a NaN-filled C through a copy of `c` whose C points there, and every element of the
/// M x N result must lie within the fp32 bound of the GEMM test suite (sw/gemm/tests/test_tile_sparse.cpp)
/// |C - R| <= 8 K 2^-24 sum_k |a_ik b_kj| + K FLT_MIN, R sgemm's result, the sum from a second sgemm of
/// |op(A)| |op(B)| (each side's rounding error is below K 2^-24 times the sum of magnitudes, whatever the
/// summation order; the K FLT_MIN term allows either side to flush subnormal products). Where R or the sum is not
/// finite (an Inf or NaN input), the element must equal R (NaN where R is NaN). This bound never fails a correct
/// result, but it is a worst case, 100-1000x the usual error at large K: an error of a few terms in a long sum
/// can pass it. check_exact() closes that gap. Allocates M x ldc floats three times and copies A and B.
template <class... Runs>
Check check_bound(const GemmCall& c, Runs&&... runs) {
  const std::size_t a_size = stored_floats(c, true), b_size = stored_floats(c, false);
  AlignedVector<float> abs_a(a_size), abs_b(b_size), R(std::size_t(c.M) * c.ldc), mag(R.size()), out(R.size());
  for (std::size_t i = 0; i < a_size; ++i) abs_a[i] = std::fabs(c.A[i]);
  for (std::size_t i = 0; i < b_size; ++i) abs_b[i] = std::fabs(c.B[i]);
  reference_sgemm(c, c.A, c.B, R.data());
  reference_sgemm(c, abs_a.data(), abs_b.data(), mag.data());
  Check ck;
  const double unit = 8.0 * c.K * std::ldexp(1.0, -24), floor = double(c.K) * double(FLT_MIN);
  auto check_one = [&](auto&& run) {
    std::fill(out.begin(), out.end(), std::nanf(""));
    GemmCall v = c;
    v.C = out.data();
    run(v);
    std::size_t bad = 0;
    for (int i = 0; i < c.M; ++i)
      for (int j = 0; j < c.N; ++j) {
        const std::size_t x = std::size_t(i) * std::size_t(c.ldc) + std::size_t(j);
        if (!std::isfinite(R[x]) || !std::isfinite(mag[x])) {
          bad += !(std::isnan(R[x]) ? std::isnan(out[x]) : out[x] == R[x]);
          continue;
        }
        const double bound = unit * double(mag[x]) + floor, err = std::fabs(double(out[x]) - double(R[x]));
        if (!(err <= bound)) ++bad;
        if (err == err) ck.worst = std::max(ck.worst, err / bound);
      }
    ck.bound_bad.push_back(bad);
  };
  (check_one(runs), ...);
  return ck;
}

/// The exact check: copies of A and B whose values are small integers (the sparse operand's non-zeros become
/// non-zero integers in [-r, r], its zeros stay, so the zero pattern, the tile formats and the kernels' paths are
/// those of the timed inputs; the dense operand gets integers in [-r, r]), with r <= 8 and K r^2 < 2^24, so that
/// every product and every partial sum is an integer below 2^24: exact in fp32 in any order. Each run (a callable
/// taking a GemmCall for these copies; it must compact the sparse operand itself) writes into a NaN-filled C and
/// must equal sgemm's result element for element. A lost, repeated or misplaced non-zero changes the result by at
/// least 1 and fails. Not made (ck.exact_bad left empty) when K >= 2^24 (r would be below 1).
template <class... Runs>
void check_exact(Check& ck, const GemmCall& c, std::uint32_t seed, Runs&&... runs) {
  const int r = int(std::min(8.0, std::floor(std::sqrt(double((1u << 24) - 1) / double(c.K)))));
  if (r < 1) return;
  const std::size_t a_size = stored_floats(c, true), b_size = stored_floats(c, false);
  AlignedVector<float> A(a_size), B(b_size), R(std::size_t(c.M) * c.ldc), out(R.size());
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> mag(1, r), any(-r, r), sign(0, 1);
  auto sparse_int = [&](float x) {
    return format::is_zero(x) ? x : float(sign(rng) ? mag(rng) : -mag(rng));
  };
  for (std::size_t i = 0; i < a_size; ++i) A[i] = c.sparse == SparseOperand::A ? sparse_int(c.A[i]) : float(any(rng));
  for (std::size_t i = 0; i < b_size; ++i) B[i] = c.sparse == SparseOperand::B ? sparse_int(c.B[i]) : float(any(rng));
  reference_sgemm(c, A.data(), B.data(), R.data());
  auto check_one = [&](auto&& run) {
    std::fill(out.begin(), out.end(), std::nanf(""));
    GemmCall v = c;
    v.A = A.data(), v.B = B.data(), v.C = out.data();
    run(v);
    std::size_t bad = 0;
    for (int i = 0; i < c.M; ++i)
      for (int j = 0; j < c.N; ++j) {
        const std::size_t x = std::size_t(i) * std::size_t(c.ldc) + std::size_t(j);
        bad += !(out[x] == R[x]);
      }
    ck.exact_bad.push_back(bad);
  };
  (check_one(runs), ...);
}

/// "ok (bound 0.004, exact)" or "WRONG: kernel 512 inexact, kernel+pack 3 outside the bound" for the runs named
/// `names` (in the order they were checked).
inline std::string check_text(const Check& ck, const std::vector<std::string>& names) {
  if (ck.ok()) {
    char b[64];
    std::snprintf(b, sizeof b, "ok (bound %.3f%s)", ck.worst, ck.exact_bad.empty() ? "; exact check not made: K >= 2^24" : ", exact");
    return b;
  }
  std::string s = "WRONG:";
  const char* sep = " ";
  for (std::size_t k = 0; k < names.size(); ++k) {
    const std::size_t nb = k < ck.bound_bad.size() ? ck.bound_bad[k] : 0, ne = k < ck.exact_bad.size() ? ck.exact_bad[k] : 0;
    if (nb > 0) s += sep + names[k] + " " + std::to_string(nb) + " outside the bound", sep = ", ";
    if (ne > 0) s += sep + names[k] + " " + std::to_string(ne) + " inexact", sep = ", ";
  }
  return s;
}

}  // namespace spartan::gemm::bench
