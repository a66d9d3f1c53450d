// Shared cases of the device-resident training path (device_train_cases.h).
#include "device_train_cases.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <random>

#include "spartan/gemm/tile_sparse.h"
#include "spartan/train/device.h"
#include "spartan/train/threads.h"

namespace spartan::train::device_cases {

namespace {

Dataset load_test_data() {
  if (std::filesystem::exists(std::string(kDefaultFashionMnistDir) + "/train-images-idx3-ubyte.gz"))
    return load_idx_dataset(kDefaultFashionMnistDir);
  Dataset ds;  // synthetic: a class-dependent bright band on a mostly zero background
  ds.name = "synthetic";
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<float> u(0, 1);
  for (DataSplit* s : {&ds.train, &ds.test}) {
    s->n = s == &ds.train ? 4096 : 512;
    s->rows = s->cols = 28;
    s->images.resize(std::size_t(s->n) * 784);
    s->labels.resize(s->n);
    for (int i = 0; i < s->n; ++i) {
      const int label = int(rng() % 10);
      s->labels[i] = std::uint8_t(label);
      for (int p = 0; p < 784; ++p) {
        const bool band = (p / 28) / 3 == label || (p % 28) / 3 == label;
        s->images[std::size_t(i) * 784 + p] = band ? 0.5f + 0.5f * u(rng) : (u(rng) < 0.1f ? u(rng) : 0.0f);
      }
    }
  }
  return ds;
}

}  // namespace

const Dataset& test_data() {
  static const Dataset data = load_test_data();
  return data;
}

RunResult run(const Dataset& data, const std::string& model_name, int batch, int iterations,
              spartan::gemm::GemmEngine& engine, spartan::gemm::GemmEngine& dense, Executor* ex, int test_images) {
  auto model = build_model(model_name, 1, 28, 28, 10, 3);
  GemmRunner runner(&engine, &dense);
  runner.set_repeats(1);
  RunResult r;
  r.rec.ex = ex;
  TrainConfig cfg;
  cfg.iterations = iterations;
  cfg.batch = batch;
  cfg.seed = 3;
  cfg.test_limit = test_images;
  cfg.eval_every = std::max(1, iterations / 2);  // evaluation mid-run and at the end, on the training path
  cfg.executor = ex;
  r.train = train(*model, data, runner, cfg, {&r.rec});
  // train() downloaded the parameters and running statistics (Model::from_exec); evaluate once more on the same
  // path for the test loss (evaluate's mean cross-entropy).
  if (ex) model->to_exec(*ex);
  r.test_accuracy = evaluate(*model, data.test, runner, cfg.test_limit, 256, ex, &r.test_loss);
  if (ex) model->from_exec(*ex);
  for (Param* p : model->params()) r.params.emplace_back(p->value.begin(), p->value.end());
  for (const auto& l : model->layers()) {
    std::vector<const BatchNorm*> bns;
    if (auto* bn = dynamic_cast<const BatchNorm*>(l.get())) bns.push_back(bn);
    if (auto* blk = dynamic_cast<const BasicBlock*>(l.get())) bns = blk->batch_norms();
    for (const BatchNorm* bn : bns) {
      r.bn_mean.push_back(bn->running_mean);
      r.bn_var.push_back(bn->running_var);
    }
  }
  return r;
}

double rel_l2(const std::vector<float>& a, const std::vector<float>& b) {
  double d = 0, n = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    d += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    n += double(a[i]) * a[i];
  }
  return n > 0 ? std::sqrt(d / n) : std::sqrt(d);
}

/// `rel`: the per-step loss tolerance (see the header). The same bound (plus 1e-3 absolute) applies to the final
/// test loss and to the batch-norm running statistics, which drift from the CPU's by the same mechanism as the
/// weights; test accuracies (of `test_images` images) may differ by `rel` + 2 images (a few images near a
/// decision boundary).
void compare_with_cpu(const DevicePath& device, const std::string& model_name, int batch, const std::string& cuda_engine,
                      double rel, int iterations, int test_images) {
  set_num_threads(1);
  const Dataset& data = test_data();
  auto cpu_engine = spartan::gemm::make_engine("dense"), cpu_dense = spartan::gemm::make_engine("dense");
  const RunResult cpu = run(data, model_name, batch, iterations, *cpu_engine, *cpu_dense, nullptr, test_images);
  auto engine = device.engine(cuda_engine);
  auto dense = device.engine("cuda-dense");
  auto ex = device.executor();
  const RunResult gpu = run(data, model_name, batch, iterations, *engine, *dense, ex.get(), test_images);
  const std::string what = model_name + " " + engine->name() + " on " + ex->name();
  ASSERT_EQ(cpu.rec.loss.size(), std::size_t(iterations));
  ASSERT_EQ(gpu.rec.loss.size(), std::size_t(iterations));
  for (int i = 0; i < iterations; ++i)
    EXPECT_NEAR(cpu.rec.loss[i], gpu.rec.loss[i], 1e-3 + rel * std::fabs(cpu.rec.loss[i])) << what << " step " << i;
  if (iterations >= 20) {
    EXPECT_LT(gpu.rec.loss.back(), gpu.rec.loss.front()) << what;
  }

  // Step 0: identical weights and input, so the captured activations and the first backward's gradients differ
  // only by GEMM / reduction summation order. Activations: 1e-3 of max(1, |x|) per element. Gradients: relative
  // L2 error <= 1e-4 per parameter tensor. Why 1e-4: FP32 sums of K <= ~5000 products in different orders differ
  // by ~sqrt(K) 2^-24 ~ 1e-5 relative at most typically, and a ReLU / max-pool decision flipped by such a
  // difference changes single elements only, well under 1e-4 of the tensor's norm; a wrong index or a missed
  // term in a backward kernel gives an O(1) error. An element-wise check would fail on sums that cancel.
  ASSERT_EQ(cpu.rec.act0.size(), gpu.rec.act0.size());
  for (std::size_t l = 0; l < cpu.rec.act0.size(); ++l) {
    ASSERT_EQ(cpu.rec.act0[l].size(), gpu.rec.act0[l].size()) << "layer " << l;
    std::size_t bad = 0;
    for (std::size_t i = 0; i < cpu.rec.act0[l].size(); ++i)
      bad += !(std::fabs(cpu.rec.act0[l][i] - gpu.rec.act0[l][i]) <= 1e-3f * std::max(1.0f, std::fabs(cpu.rec.act0[l][i])));
    EXPECT_EQ(bad, 0u) << what << " step-0 input of GEMM layer " << l;
  }
  ASSERT_EQ(cpu.rec.grad0.size(), gpu.rec.grad0.size());
  ASSERT_FALSE(cpu.rec.grad0.empty());
  for (std::size_t p = 0; p < cpu.rec.grad0.size(); ++p) {
    ASSERT_EQ(cpu.rec.grad0[p].size(), gpu.rec.grad0[p].size()) << cpu.rec.grad_names[p];
    EXPECT_TRUE(std::any_of(cpu.rec.grad0[p].begin(), cpu.rec.grad0[p].end(), [](float g) { return g != 0.0f; }))
        << what << " step-0 CPU gradient of " << cpu.rec.grad_names[p] << " is all zero (nothing compared)";
    EXPECT_LE(rel_l2(cpu.rec.grad0[p], gpu.rec.grad0[p]), 1e-4)
        << what << " step-0 gradient of " << cpu.rec.grad_names[p] << " (parameter " << p << ")";
  }

  // Evaluation (eval mode: batch norm on running statistics, no dropout) on the path that trained.
  ASSERT_EQ(cpu.rec.eval.size(), gpu.rec.eval.size());
  ASSERT_FALSE(gpu.rec.eval.empty());
  const double acc_tol = rel + 2.0 / test_images;
  for (std::size_t i = 0; i < cpu.rec.eval.size(); ++i) {
    EXPECT_EQ(cpu.rec.eval[i].first, gpu.rec.eval[i].first);
    EXPECT_NEAR(cpu.rec.eval[i].second, gpu.rec.eval[i].second, acc_tol) << what << " test accuracy at " << cpu.rec.eval[i].first;
  }
  EXPECT_NEAR(cpu.train.test_accuracy, gpu.train.test_accuracy, acc_tol) << what;
  EXPECT_NEAR(cpu.test_accuracy, gpu.test_accuracy, acc_tol) << what;
  EXPECT_NEAR(cpu.test_loss, gpu.test_loss, 1e-3 + rel * cpu.test_loss) << what << " final test loss";
  EXPECT_GT(gpu.test_loss, 0.0);
  ASSERT_EQ(cpu.bn_mean.size(), gpu.bn_mean.size());
  for (std::size_t b = 0; b < cpu.bn_mean.size(); ++b)
    for (std::size_t c = 0; c < cpu.bn_mean[b].size(); ++c) {
      EXPECT_NEAR(cpu.bn_mean[b][c], gpu.bn_mean[b][c], 1e-3 + rel * std::fabs(cpu.bn_mean[b][c]))
          << what << " batch norm " << b << " running mean, channel " << c;
      EXPECT_NEAR(cpu.bn_var[b][c], gpu.bn_var[b][c], 1e-3 + rel * std::fabs(cpu.bn_var[b][c]))
          << what << " batch norm " << b << " running variance, channel " << c;
    }

  ASSERT_FALSE(gpu.rec.timings0.empty());
  for (const GemmTiming& t : gpu.rec.timings0) {
    EXPECT_TRUE(t.device_timer);
    EXPECT_GE(t.engine_ms, 0.0);
  }
}

}  // namespace spartan::train::device_cases
