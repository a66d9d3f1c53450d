// Finite-difference gradient checks for every layer type. Each check uses the scalar
// L = sum_i r_i * y_i (r fixed random, accumulated in double) so that dL/dy = r, and compares the
// analytic dL/dx and dL/dparam with central differences on a sample of entries.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>

#include "spartan/common/error.h"
#include "spartan/train/layer.h"
#include "spartan/train/model.h"

using namespace spartan::train;

namespace {

struct Harness {
  std::unique_ptr<spartan::gemm::GemmEngine> eng = spartan::gemm::make_dense_engine();
  GemmRunner runner{eng.get(), eng.get()};
  std::mt19937_64 rng{1};
  Context ctx;
  std::uint64_t dropout_seed = 99;
  Harness() {
    ctx.gemm = &runner;
    ctx.rng = &rng;
  }
  Tensor fwd(Layer& l, const Tensor& x) {
    rng.seed(dropout_seed);  // same dropout mask on every evaluation
    return l.forward(x, ctx);
  }
};

Tensor random_tensor(int n, int c, int h, int w, std::uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
  Tensor t(n, c, h, w);
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  for (float& v : t.v) v = d(g);
  return t;
}

double dot(const Tensor& y, const Tensor& r) {
  double s = 0;
  for (std::size_t i = 0; i < y.numel(); ++i) s += double(y.v[i]) * r.v[i];
  return s;
}

std::vector<std::size_t> sample(std::size_t n, std::size_t k, std::uint64_t seed) {
  std::vector<std::size_t> idx(n);
  std::iota(idx.begin(), idx.end(), 0);
  std::shuffle(idx.begin(), idx.end(), std::mt19937_64(seed));
  idx.resize(std::min(n, k));
  return idx;
}

void check_close(double num, double ana, const std::string& what, double rtol = 2e-2, double atol = 2e-3) {
  EXPECT_NEAR(num, ana, atol + rtol * std::max(std::fabs(num), std::fabs(ana))) << what;
}

/// Checks dx and every parameter gradient of `layer` at input `x`. With `kink_aware`, a sample
/// whose central differences at eps, eps/2 and eps/4 disagree (a ReLU/max kink lies within +-eps: common
/// after batch norm, which centres values at 0) is skipped; at most a quarter may be skipped.
void gradcheck(Layer& layer, Tensor x, float eps = 1e-2f, std::size_t samples = 40, double rtol = 2e-2,
               bool kink_aware = false) {
  Harness h;
  const Tensor y = h.fwd(layer, x);
  const Tensor r = random_tensor(y.n, y.c, y.h, y.w, 7);
  for (Param* p : layer.params()) std::fill(p->grad.begin(), p->grad.end(), 0.0f);
  const Tensor dx = layer.backward(r, h.ctx);
  ASSERT_TRUE(dx.same_shape(x));
  int checked = 0, skipped = 0;
  auto fd = [&](float& slot, float e) {
    const float keep = slot;
    slot = keep + e;
    const double lp = dot(h.fwd(layer, x), r);
    slot = keep - e;
    const double lm = dot(h.fwd(layer, x), r);
    slot = keep;
    return (lp - lm) / (2.0 * e);
  };
  auto check = [&](float& slot, double ana, const std::string& what) {
    const double d1 = fd(slot, eps);
    if (kink_aware) {
      const double d2 = fd(slot, eps / 2), d4 = fd(slot, eps / 4);
      const double tol = 2e-3 + 5e-3 * std::fabs(d2);
      if (std::fabs(d1 - d2) > tol || std::fabs(d2 - d4) > 2 * tol) {
        ++skipped;
        return;
      }
    }
    ++checked;
    check_close(d1, ana, layer.describe() + " " + what, rtol);
  };
  for (std::size_t i : sample(x.numel(), samples, 3)) check(x.v[i], dx.v[i], "dx[" + std::to_string(i) + "]");
  int pi = 0;
  for (Param* p : layer.params()) {
    ++pi;
    const spartan::AlignedVector<float> grad = p->grad;
    for (std::size_t i : sample(p->value.size(), samples, 5))
      check(p->value[i], grad[i], "param#" + std::to_string(pi) + " " + p->name + "[" + std::to_string(i) + "]");
  }
  EXPECT_LE(skipped, (checked + skipped) / 4) << layer.describe() << ": too many samples near a kink";
}

/// Inputs bounded away from 0 so that a ReLU kink is never crossed by +-eps.
Tensor away_from_zero(Tensor t, float margin) {
  for (float& v : t.v)
    if (std::fabs(v) < margin) v = v < 0 ? v - margin : v + margin;
  return t;
}

}  // namespace

// The layers hand the GEMM engine operands that start on 64-byte lines (Tensor, Param and Conv2d's buffers are
// AlignedVector): the tile-sparse wide row gather reads a one-panel dense operand (backward-weight's dY) in place
// only then, and copies it on every call otherwise. Buffers of 1-2 MB here: glibc would map them 16 bytes into a
// page.
TEST(GemmOperands, LayersPassCacheLineAlignedOperands) {
  struct Spy final : spartan::gemm::GemmEngine {
    std::unique_ptr<spartan::gemm::GemmEngine> dense = spartan::gemm::make_dense_engine();
    int calls = 0, misaligned = 0;
    void run(const spartan::gemm::GemmCall& c) override {
      ++calls;
      for (const void* p : {static_cast<const void*>(c.A), static_cast<const void*>(c.B), static_cast<const void*>(c.C)})
        misaligned += reinterpret_cast<std::uintptr_t>(p) % 64 != 0;
      dense->run(c);
    }
    std::string name() const override { return "dense"; }
  } spy;
  GemmRunner runner(&spy, &spy);
  std::mt19937_64 rng{3};
  Context ctx;
  ctx.gemm = &runner;
  ctx.rng = &rng;
  Conv2d conv(16, 32, 3, 1, 1, true, rng);
  Linear fc(16 * 32 * 32, 64, rng);
  const Tensor x = random_tensor(4, 16, 32, 32, 5);
  const Tensor y = conv.forward(x, ctx);
  conv.backward(random_tensor(y.n, y.c, y.h, y.w, 6), ctx);
  const Tensor z = fc.forward(x, ctx);
  fc.backward(random_tensor(z.n, z.c, z.h, z.w, 7), ctx);
  EXPECT_EQ(spy.calls, 6);
  EXPECT_EQ(spy.misaligned, 0);
}

TEST(GradCheck, Conv2dStride1Pad1) {
  std::mt19937_64 rng(11);
  Conv2d conv(3, 4, 3, 1, 1, true, rng);
  gradcheck(conv, random_tensor(2, 3, 5, 6, 1));
}

TEST(GradCheck, Conv2dStride2Pad2NoBias) {
  std::mt19937_64 rng(12);
  Conv2d conv(2, 3, 5, 2, 2, false, rng);
  gradcheck(conv, random_tensor(3, 2, 7, 7, 2));
}

TEST(GradCheck, Conv2d1x1Projection) {
  std::mt19937_64 rng(13);
  Conv2d conv(3, 5, 1, 2, 0, false, rng);
  gradcheck(conv, random_tensor(2, 3, 6, 6, 3));
}

TEST(GradCheck, Linear) {
  std::mt19937_64 rng(14);
  Linear fc(12, 5, rng);
  gradcheck(fc, random_tensor(4, 3, 2, 2, 4));
}

TEST(GradCheck, ReLU) {
  ReLU relu;
  gradcheck(relu, away_from_zero(random_tensor(2, 3, 4, 4, 5), 0.05f));
}

TEST(GradCheck, MaxPool) {
  // Distinct values with gaps >> eps so that the argmax never changes under perturbation.
  Tensor x(2, 2, 6, 6);
  std::vector<float> vals(x.numel());
  for (std::size_t i = 0; i < vals.size(); ++i) vals[i] = 0.1f * static_cast<float>(i) - 7.0f;
  std::shuffle(vals.begin(), vals.end(), std::mt19937_64(6));
  x.v.assign(vals.begin(), vals.end());
  MaxPool2d pool2(2, 2), pool3(3, 2);
  gradcheck(pool2, x, 1e-2f);
  gradcheck(pool3, x, 1e-2f);
}

TEST(GradCheck, GlobalAvgPool) {
  GlobalAvgPool gap;
  gradcheck(gap, random_tensor(3, 4, 3, 3, 7));
}

TEST(GradCheck, BatchNormTrain4D) {
  BatchNorm bn(3);
  std::mt19937_64 g(8);
  for (float& v : bn.gamma.value) v = std::uniform_real_distribution<float>(0.5f, 1.5f)(g);
  for (float& v : bn.beta.value) v = std::uniform_real_distribution<float>(-0.5f, 0.5f)(g);
  gradcheck(bn, random_tensor(4, 3, 3, 3, 9, -2.0f, 2.0f), 1e-2f, 40, 3e-2);
}

TEST(GradCheck, BatchNormTrain2D) {
  BatchNorm bn(5);
  gradcheck(bn, random_tensor(6, 5, 1, 1, 10, -2.0f, 2.0f), 1e-2f, 40, 3e-2);
}

TEST(GradCheck, BatchNormEval) {
  BatchNorm bn(3);
  bn.running_mean = {0.1f, -0.2f, 0.3f};
  bn.running_var = {0.5f, 1.5f, 2.0f};
  Harness h;
  h.ctx.training = false;
  Tensor x = random_tensor(2, 3, 2, 2, 11);
  const Tensor y = bn.forward(x, h.ctx);
  const Tensor r = random_tensor(2, 3, 2, 2, 12);
  const Tensor dx = bn.backward(r, h.ctx);
  for (std::size_t i = 0; i < x.numel(); ++i) {
    const float keep = x.v[i];
    x.v[i] = keep + 1e-2f;
    const double lp = dot(bn.forward(x, h.ctx), r);
    x.v[i] = keep - 1e-2f;
    const double lm = dot(bn.forward(x, h.ctx), r);
    x.v[i] = keep;
    check_close((lp - lm) / 2e-2, dx.v[i], "bn eval dx");
  }
  (void)y;
}

TEST(GradCheck, DropoutSeededMask) {
  Dropout d(0.5f);
  gradcheck(d, random_tensor(4, 3, 2, 2, 13));
  // The mask really drops about half and is reproducible for a seed.
  Harness h;
  Tensor ones(1, 1, 1, 1000);
  std::fill(ones.v.begin(), ones.v.end(), 1.0f);
  const Tensor a = h.fwd(d, ones), b = h.fwd(d, ones);
  EXPECT_EQ(a.v, b.v);
  const auto zeros = std::count(a.v.begin(), a.v.end(), 0.0f);
  EXPECT_GT(zeros, 400);
  EXPECT_LT(zeros, 600);
  h.ctx.training = false;
  EXPECT_EQ(d.forward(ones, h.ctx).v, ones.v);
}

TEST(GradCheck, BasicBlockIdentityAndProjection) {
  std::mt19937_64 rng(15);
  BasicBlock id(3, 3, 1, rng);
  ASSERT_FALSE(id.projection());
  gradcheck(id, random_tensor(3, 3, 4, 4, 14), 2e-3f, 30, 3e-2, true);
  BasicBlock proj(2, 4, 2, rng);
  ASSERT_TRUE(proj.projection());
  gradcheck(proj, random_tensor(3, 2, 5, 5, 15), 2e-3f, 30, 3e-2, true);
}

TEST(GradCheck, SoftmaxCrossEntropy) {
  Tensor z = random_tensor(4, 6, 1, 1, 16, -3.0f, 3.0f);
  const std::uint8_t labels[4] = {0, 5, 2, 2};
  Tensor dz;
  int correct = 0;
  const double loss = softmax_cross_entropy(z, labels, dz, &correct);
  EXPECT_GT(loss, 0.0);
  for (std::size_t i = 0; i < z.numel(); ++i) {
    Tensor tmp;
    const float keep = z.v[i];
    z.v[i] = keep + 1e-2f;
    const double lp = softmax_cross_entropy(z, labels, tmp, nullptr);
    z.v[i] = keep - 1e-2f;
    const double lm = softmax_cross_entropy(z, labels, tmp, nullptr);
    z.v[i] = keep;
    check_close((lp - lm) / 2e-2, dz.v[i], "softmax-ce dz[" + std::to_string(i) + "]", 1e-2, 1e-4);
  }
}

TEST(GradCheck, GemmShapesAndReluLinking) {
  auto m = build_model("resnet-s", 1, 28, 28, 10, 1);
  const auto& g = m->gemm_layers();
  ASSERT_EQ(g.size(), 1u + 8 * 2 + 3 + 1);  // stem, 8 blocks x 2 convs, 3 projections, fc
  for (std::size_t i = 0; i < g.size(); ++i) EXPECT_EQ(g[i]->id, static_cast<int>(i));
  for (std::size_t i = 0; i + 1 < g.size(); ++i) EXPECT_NE(g[i]->next_relu, nullptr) << i;
  EXPECT_EQ(g.back()->next_relu, nullptr);
  for (const auto& name : model_names()) EXPECT_NO_THROW(build_model(name, 1, 28, 28, 10, 1)) << name;
  EXPECT_THROW(build_model("nope", 1, 28, 28, 10, 1), spartan::InputError);
}
