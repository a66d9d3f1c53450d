// Training: finite-difference gradient check on a tiny RadiX-Net body + softmax head (both bias modes),
// loss falls and beats a linear classifier on Fashion-MNIST, trace output.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <cstdio>
#include <random>

#include "spartan/common/error.h"
#include "spartan/sdnn/generate.h"
#include "spartan/sdnn/train.h"

using namespace spartan::sdnn;

namespace {

Partition single(const std::vector<Csr>& w) {
  Partition p;
  p.parts = 1;
  p.neurons = w[0].cols;
  p.part.assign(w.size(), std::vector<std::int32_t>(static_cast<std::size_t>(p.neurons), 0));
  return p;
}

LabelledSet tiny_data(int rows, std::int64_t n, int classes, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<Triple> t;
  LabelledSet d;
  for (int r = 0; r < rows; ++r) {
    for (std::int64_t c = 0; c < n; ++c)
      if (rng() % 2) t.push_back({r, c, 1.0f});
    d.labels.push_back(static_cast<int>(rng() % static_cast<unsigned>(classes)));
  }
  d.features = csr_from_triples(rows, n, std::move(t));
  return d;
}

void gradient_check(bool per_neuron) {
  RadixNetSpec spec;
  spec.neurons = 16;
  spec.layers = 3;
  spec.radices = {4, 4};
  spec.init = "he";
  spec.seed = 5;
  const auto w = generate_radixnet(spec);
  TrainConfig cfg;
  cfg.classes = 3;
  cfg.bias_per_neuron = per_neuron;
  cfg.bias_init = 0.05f;
  Trainer tr(w, single(w), 0, 1, false, cfg);
  const auto data = tiny_data(6, 16, 3, 9);
  const double l0 = tr.loss(data, 0, 6, true);
  ASSERT_TRUE(std::isfinite(l0));
  const auto gw = tr.grad_w();
  const auto gb = tr.grad_b();
  const auto gh = tr.grad_head();
  const float eps = 1e-3f;
  int checked = 0;
  auto check = [&](float& param, double analytic, const char* what, std::size_t idx) {
    const float saved = param;
    param = saved + eps;
    const double lp = tr.loss(data, 0, 6, false);
    param = saved - eps;
    const double lm = tr.loss(data, 0, 6, false);
    param = saved;
    const double fd = (lp - lm) / (2.0 * eps);
    EXPECT_NEAR(fd, analytic, 2e-3 + 3e-2 * std::fabs(analytic)) << what << " " << idx;
    ++checked;
  };
  for (int k = 0; k < 3; ++k) {
    auto& v = tr.body_values(k);
    for (std::size_t e = 0; e < v.size(); e += 7) check(v[e], gw[k][e], "W", e);
    auto& b = tr.body_bias(k);
    if (per_neuron) {
      for (std::size_t i = 0; i < b.size(); i += 3) check(b[i], gb[k][i], "b", i);
    } else {
      // One bias per layer: perturb all (they are one parameter); the gradient is stored in every entry.
      const float saved = b[0];
      for (auto& x : b) x = saved + eps;
      const double lp = tr.loss(data, 0, 6, false);
      for (auto& x : b) x = saved - eps;
      const double lm = tr.loss(data, 0, 6, false);
      for (auto& x : b) x = saved;
      EXPECT_NEAR((lp - lm) / (2.0 * eps), gb[k][0], 2e-3 + 3e-2 * std::fabs(gb[k][0])) << "layer bias " << k;
    }
  }
  auto& h = tr.head();
  for (std::size_t e = 0; e < h.size(); e += 5) check(h[e], gh[e], "head", e);
  EXPECT_GE(checked, 30);
  // The gradient is not trivially zero.
  double norm = 0;
  for (const auto& g : gw)
    for (float x : g) norm += std::fabs(x);
  EXPECT_GT(norm, 1e-3);
}

}  // namespace

TEST(SdnnTrain, FiniteDifferenceGradientPerNeuronBias) { gradient_check(true); }
TEST(SdnnTrain, FiniteDifferenceGradientPerLayerBias) { gradient_check(false); }

TEST(SdnnTrain, SgdStepsReduceLossOnFixedBatch) {
  RadixNetSpec spec;
  spec.neurons = 64;
  spec.layers = 4;
  spec.init = "he";
  spec.nnz_per_row = 8;
  const auto w = generate_radixnet(spec);
  TrainConfig cfg;
  cfg.classes = 4;
  cfg.lr = 0.05f;
  Trainer tr(w, single(w), 0, 1, false, cfg);
  const auto data = tiny_data(32, 64, 4, 3);
  const double first = tr.loss(data, 0, 32, true);
  double last = first;
  for (int i = 0; i < 150; ++i) {
    tr.step();
    last = tr.loss(data, 0, 32, true);
  }
  EXPECT_LT(last, 0.7 * first);  // random labels: the body + head memorises the batch
  // Sparsity pattern is fixed: the engine's structure is untouched by training.
  EXPECT_EQ(tr.engine().plan()[0].values.size(), static_cast<std::size_t>(w[0].nnz()));
}

TEST(SdnnTrain, FashionMnistBeatsLinearClassifier) {
  const std::string dir = "/usr/share/datasets/fashion-mnist";
  if (!std::filesystem::exists(dir + "/train-images-idx3-ubyte.gz")) GTEST_SKIP() << "Fashion-MNIST not installed at " << dir;
  const std::int64_t n = 1024;  // 32 x 32 inputs, as in the challenge
  const auto train = load_fashion_mnist(dir, "train", n, 5000);
  const auto test = load_fashion_mnist(dir, "t10k", n, 2000);
  ASSERT_EQ(train.features.cols, n);
  RadixNetSpec spec;
  spec.neurons = n;
  spec.layers = 2;
  spec.init = "identity";
  const auto w = generate_radixnet(spec);
  TrainConfig cfg;
  cfg.batch = 32;
  cfg.lr = 0.1f;
  Trainer tr(w, single(w), 0, 1, false, cfg);
  const int epochs = 2;
  EpochStats first, last;
  for (int e = 0; e < epochs; ++e) {
    last = tr.epoch(train, test);
    if (e == 0) first = last;
  }
  // The baseline gets its best learning rate of a small sweep (the sparse model uses one fixed rate).
  double linear = 0;
  for (float lr : {0.003f, 0.01f, 0.03f, 0.1f}) linear = std::max(linear, train_linear(train, test, epochs, cfg.batch, lr, 10));
  RecordProperty("sparse_test_acc", std::to_string(last.test_acc));
  RecordProperty("linear_test_acc", std::to_string(linear));
  std::printf("sparse DNN test_acc %.4f (first batch loss %.3f, last %.3f), linear %.4f\n", last.test_acc, first.batch_loss.front(),
              last.batch_loss.back(), linear);
  EXPECT_LT(last.batch_loss.back(), 0.6 * first.batch_loss.front());
  EXPECT_GT(last.test_acc, linear);
}

TEST(SdnnTrain, FashionMnistLoaderErrors) {
  EXPECT_THROW(load_fashion_mnist("/nonexistent", "train", 1024, 10), spartan::IoError);
  EXPECT_THROW(load_fashion_mnist("/usr/share/datasets/fashion-mnist", "train", 1000, 10), spartan::InputError);
}

#ifdef SPARTAN_SDNN_HAVE_TRACE
#include <cstdlib>

#include "spartan/trace/sptrace.h"

TEST(SdnnTrain, TraceHasPerLayerActivationsAndMasks) {
  const std::string dir = "/usr/share/datasets/fashion-mnist";
  if (!std::filesystem::exists(dir + "/train-images-idx3-ubyte.gz")) GTEST_SKIP() << "Fashion-MNIST not installed at " << dir;
  const std::string out = (std::filesystem::temp_directory_path() / ("sdnn_trace_" + std::to_string(::getpid()) + ".sptrace")).string();
  const std::string cmd = std::string(SDNN_BIN) + " train --neurons 256 --layers 3 --init he --train-limit 64 --test-limit 32 --batch 16 --trace " + out + " >/dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  spartan::trace::TraceReader r(out);
  EXPECT_EQ(r.metadata().at("format_version"), "1");
  EXPECT_EQ(r.metadata().at("batch"), "16");
  const auto keys = r.keys();
  ASSERT_EQ(keys.size(), 7u);  // act for L0..L3 (L3 = head input), dz_mask for L0..L2
  for (int k = 0; k < 3; ++k) {
    const std::string it = "it4/L";
    const auto next = r.to_f32(it + std::to_string(k + 1) + "/act");
    ASSERT_EQ(next.size(), 16u * 256u);
    const auto mask = spartan::trace::unpack_bits(r.view(it + std::to_string(k) + "/dz_mask"), next.size());
    for (std::size_t e = 0; e < next.size(); ++e) ASSERT_EQ(mask[e] != 0, next[e] > 0.0f && next[e] < 32.0f) << k << " " << e;
  }
  std::filesystem::remove(out);
}
#endif
