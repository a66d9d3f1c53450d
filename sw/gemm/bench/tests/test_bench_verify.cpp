// bench-gemm's result checks (bench/verify.h). check_bound: a correct tile-sparse result passes, one off by 2.5x
// the fp32 bound, left unwritten (NaN) or all zero fails, one off by a quarter of the bound passes, and an Inf
// input that makes both results Inf passes. check_exact: a correct result passes, and a result computed with one
// non-zero of the sparse operand dropped fails (a few terms missing from a long sum may pass the worst-case bound;
// they cannot pass the exact check). Every layout the bench times (op T T, sparse A and sparse B), with padded
// leading dimensions (whose padding columns of C are not compared).
#include <gtest/gtest.h>

#include <limits>
#include <random>
#include <string>

#include "../verify.h"
#include "spartan/format/tile_format.h"
#include "spartan/gemm/tile_sparse.h"

namespace sg = spartan::gemm;
using sg::Op;

namespace {

struct Case {
  Op oa, ob;
  int M, N, K, pad;
  sg::SparseOperand sp;
  const char* name;
};

class BenchVerify : public ::testing::TestWithParam<Case> {};

TEST_P(BenchVerify, CorrectPassesWrongFails) {
  const Case cs = GetParam();
  const int ar = cs.oa == Op::N ? cs.M : cs.K, ac = cs.oa == Op::N ? cs.K : cs.M;
  const int br = cs.ob == Op::N ? cs.K : cs.N, bc = cs.ob == Op::N ? cs.N : cs.K;
  const int lda = ac + cs.pad, ldb = bc + cs.pad, ldc = cs.N + cs.pad;
  spartan::AlignedVector<float> A(std::size_t(ar) * lda), B(std::size_t(br) * ldb), C(std::size_t(cs.M) * ldc);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1, 1), p(0, 1);
  for (auto& v : A) v = cs.sp == sg::SparseOperand::A && p(rng) < 0.9f ? 0.0f : u(rng);
  for (auto& v : B) v = cs.sp == sg::SparseOperand::B && p(rng) < 0.9f ? 0.0f : u(rng);
  const sg::GemmCall c{cs.oa, cs.ob, cs.M, cs.N, cs.K, 1.0f, 0.0f, A.data(), lda, B.data(), ldb, C.data(), ldc, cs.sp};
  sg::TileSparseOptions opt;
  opt.num_threads = 1;
  sg::TileSparseEngine engine(opt);
  const spartan::format::TiledMatrix tm = engine.compact_operand(c);
  auto good = [&](const sg::GemmCall& v) { engine.run_compacted(v, tm, engine.compact_orientation(v)); };
  auto fresh = [&](const sg::GemmCall& v) { engine.run(v); };  // compacts v's own operands

  sg::bench::Check ok = sg::bench::check_bound(c, good, good);
  sg::bench::check_exact(ok, c, 7, fresh, fresh);
  EXPECT_TRUE(ok.ok()) << sg::bench::check_text(ok, {"a", "b"});
  ASSERT_EQ(ok.bound_bad.size(), 2u);
  ASSERT_EQ(ok.exact_bad.size(), 2u);
  EXPECT_LT(ok.worst, 1.0);

  // One element off by 2.5x its bound (the bound recomputed here from |A| |B|).
  const int ei = cs.M / 2, ej = cs.N - 1;
  double mag = 0;
  for (int k = 0; k < cs.K; ++k) {
    const float a = cs.oa == Op::N ? A[std::size_t(ei) * lda + k] : A[std::size_t(k) * lda + ei];
    const float b = cs.ob == Op::N ? B[std::size_t(k) * ldb + ej] : B[std::size_t(ej) * ldb + k];
    mag += std::fabs(double(a) * double(b));
  }
  ASSERT_GT(mag, 0.0) << "the chosen element must have a non-zero product";
  const double bound = 8.0 * cs.K * std::ldexp(1.0, -24) * mag;
  auto off = [&](const sg::GemmCall& v) {
    good(v);
    v.C[std::size_t(ei) * v.ldc + ej] += float(2.5 * bound);
  };
  const sg::bench::Check one = sg::bench::check_bound(c, good, off);
  EXPECT_EQ(one.bound_bad, (std::vector<std::size_t>{0, 1}));
  EXPECT_EQ(sg::bench::check_text(one, {"kernel", "kernel+pack"}), "WRONG: kernel+pack 1 outside the bound");
  // Within the bound: a change of a quarter of it still passes.
  auto near = [&](const sg::GemmCall& v) {
    good(v);
    v.C[std::size_t(ei) * v.ldc + ej] += float(0.25 * bound);
  };
  EXPECT_TRUE(sg::bench::check_bound(c, near).ok());
  // An element left unwritten (NaN from the check's fill).
  auto skip = [&](const sg::GemmCall& v) {
    good(v);
    v.C[std::size_t(ei) * v.ldc + ej] = std::nanf("");
  };
  EXPECT_EQ(sg::bench::check_bound(c, skip).bad(), 1u);
  // A whole wrong product: C = 0.
  auto zero = [&](const sg::GemmCall& v) {
    for (int i = 0; i < v.M; ++i)
      for (int j = 0; j < v.N; ++j) v.C[std::size_t(i) * v.ldc + j] = 0.0f;
  };
  EXPECT_GT(sg::bench::check_bound(c, zero).bad(), std::size_t(cs.M) * cs.N / 2);

  // A lost non-zero: the run computes with the first non-zero of the sparse operand it is given set to zero
  // (every element of one row or column of C misses one term). The exact check must fail it.
  auto drop = [&](const sg::GemmCall& v) {
    const bool sa = v.sparse == sg::SparseOperand::A;
    const std::size_t n = sa ? std::size_t(ar) * lda : std::size_t(br) * ldb;
    const float* src = sa ? v.A : v.B;
    spartan::AlignedVector<float> copy(src, src + n);
    for (auto& x : copy)
      if (!spartan::format::is_zero(x)) {
        x = 0.0f;
        break;
      }
    sg::GemmCall w = v;
    (sa ? w.A : w.B) = copy.data();
    engine.run(w);
  };
  sg::bench::Check lost = sg::bench::check_bound(c, good);
  sg::bench::check_exact(lost, c, 7, fresh, drop);
  ASSERT_EQ(lost.exact_bad.size(), 2u);
  EXPECT_EQ(lost.exact_bad[0], 0u);
  EXPECT_GE(lost.exact_bad[1], 1u);
  EXPECT_FALSE(lost.ok());

  // An Inf in the sparse operand: sgemm's and the kernel's results are Inf (or NaN) in the same elements.
  spartan::AlignedVector<float> A2 = A, B2 = B;
  float* S = cs.sp == sg::SparseOperand::A ? A2.data() : B2.data();
  const std::size_t ns = cs.sp == sg::SparseOperand::A ? A2.size() : B2.size();
  for (std::size_t i = 0; i < ns; ++i)
    if (!spartan::format::is_zero(S[i])) {
      S[i] = std::numeric_limits<float>::infinity();
      break;
    }
  sg::GemmCall ci = c;
  ci.A = A2.data(), ci.B = B2.data();
  const spartan::format::TiledMatrix tmi = engine.compact_operand(ci);
  const sg::bench::Check inf = sg::bench::check_bound(
      ci, [&](const sg::GemmCall& v) { engine.run_compacted(v, tmi, engine.compact_orientation(v)); });
  EXPECT_TRUE(inf.ok()) << sg::bench::check_text(inf, {"kernel"});
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, BenchVerify,
    ::testing::Values(Case{Op::T, Op::T, 49, 64, 576, 0, sg::SparseOperand::A, "train_fwd"},
                      Case{Op::N, Op::N, 49, 576, 64, 3, sg::SparseOperand::A, "train_bwd_data_padded"},
                      Case{Op::N, Op::N, 64, 49, 576, 0, sg::SparseOperand::B, "caffe_fwd"},
                      Case{Op::T, Op::N, 70, 33, 40, 5, sg::SparseOperand::B, "caffe_bwd_data_padded"},
                      Case{Op::N, Op::T, 33, 70, 49, 1, sg::SparseOperand::B, "caffe_bwd_weight_padded"},
                      Case{Op::N, Op::N, 8, 64, 4608, 0, sg::SparseOperand::A, "large_k"}),
    [](const ::testing::TestParamInfo<Case>& i) { return std::string(i.param.name); });

}  // namespace
