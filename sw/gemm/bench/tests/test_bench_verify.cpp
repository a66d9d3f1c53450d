// bench-gemm's result check (bench/verify.h): a correct tile-sparse result passes, and a result that is wrong in
// one element, by a little more than the fp32 bound, or left unwritten, or computed with one operand transposed,
// fails; every layout the bench times (op T T, sparse A and sparse B), with padded leading dimensions (whose
// padding columns of C the check leaves out).
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "../verify.h"
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

  const sg::bench::Check ok = sg::bench::verify_row(c, good, good);
  EXPECT_EQ(ok.bad, 0u);
  EXPECT_LT(ok.worst, 1.0);

  // One element off by twice its bound (the bound recomputed here from |A| |B|).
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
  EXPECT_EQ(sg::bench::verify_row(c, good, off).bad, 1u);
  // Within the bound: a change of a quarter of it still passes.
  auto near = [&](const sg::GemmCall& v) {
    good(v);
    v.C[std::size_t(ei) * v.ldc + ej] += float(0.25 * bound);
  };
  EXPECT_EQ(sg::bench::verify_row(c, near).bad, 0u);
  // An element left unwritten (NaN from the check's fill).
  auto skip = [&](const sg::GemmCall& v) {
    good(v);
    v.C[std::size_t(ei) * v.ldc + ej] = std::nanf("");
  };
  EXPECT_EQ(sg::bench::verify_row(c, skip).bad, 1u);
  // A whole wrong product: C = 0.
  auto zero = [&](const sg::GemmCall& v) {
    for (int i = 0; i < v.M; ++i)
      for (int j = 0; j < v.N; ++j) v.C[std::size_t(i) * v.ldc + j] = 0.0f;
  };
  EXPECT_GT(sg::bench::verify_row(c, zero).bad, std::size_t(cs.M) * cs.N / 2);
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, BenchVerify,
    ::testing::Values(Case{Op::T, Op::T, 49, 64, 576, 0, sg::SparseOperand::A, "train_fwd"},
                      Case{Op::N, Op::N, 49, 576, 64, 3, sg::SparseOperand::A, "train_bwd_data_padded"},
                      Case{Op::N, Op::N, 64, 49, 576, 0, sg::SparseOperand::B, "caffe_fwd"},
                      Case{Op::T, Op::N, 70, 33, 40, 5, sg::SparseOperand::B, "caffe_bwd_data_padded"},
                      Case{Op::N, Op::T, 33, 70, 49, 1, sg::SparseOperand::B, "caffe_bwd_weight_padded"}),
    [](const ::testing::TestParamInfo<Case>& i) { return std::string(i.param.name); });

}  // namespace
