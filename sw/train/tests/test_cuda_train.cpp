// CPU and CUDA training agree over 50 steps: the CPU path (OpenBLAS "dense", host layers) against the
// device-resident CUDA path (CUDA executor: every layer as CUDA kernels, parameters and activations in device
// memory, GEMMs on cuBLAS "cuda-dense" or "cuda-tile-sparse" on device pointers). Skipped without a GPU (or in
// builds without CUDA). Data: Fashion-MNIST when installed, else a synthetic 28x28 set (the GPU machine may not
// have the Debian package).
//
// Tolerance, per step: |loss_cpu - loss_cuda| <= 1e-3 + 2% of the CPU loss for lenet5, 1e-3 + 5% for vgg-s.
// Why: the element-wise kernels do the CPU's float operations in the CPU's order (kernels_hd.h, built with
// --fmad=false; test_train_kernels checks the same functions bit for bit on the host), and the dropout masks
// are the CPU's (drawn on the host from the same generator and uploaded). What differs is the summation order of
// the GEMMs (cuBLAS vs OpenBLAS; both plain FP32, cuBLAS's default math mode uses no TF32) and of the reductions
// (batch-norm statistics, bias gradients: 256 partials + tree vs one sequential double sum): relative
// differences of ~1e-6 per step, which SGD with momentum amplifies slowly (a ReLU or max-pool decision that
// flips changes a few gradient elements). vgg-s has 13 batch-norm layers and two dropout layers, so it gets the
// wider bound. A real divergence (a wrong index, a missing synchronisation) moves the loss by far more within a
// few steps. Additionally, at step 0 (identical weights and input) the captured activations must agree to 1e-3
// and every parameter gradient of the first backward to 1e-4 relative L2 (see compare()); evaluation (on_eval,
// the final test accuracy and loss) and the batch-norm running statistics after training are compared too.
// resnet-s and alexnet-s run a few steps; vgg-s also on cuda-tile-sparse.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <random>

#include "spartan/gemm/tile_sparse.h"
#include "spartan/train/device.h"
#include "spartan/train/executor.h"
#include "spartan/train/threads.h"
#include "spartan/train/trainer.h"

using namespace spartan::train;

namespace {

Dataset test_data() {
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

struct Recorder : TrainObserver {
  Executor* ex = nullptr;  ///< the CUDA executor (gradients are downloaded from it), null on the CPU path
  std::vector<double> loss;
  std::vector<std::pair<std::int64_t, double>> eval;  ///< on_eval: (iteration, test accuracy)
  std::vector<std::vector<float>> act0;   ///< step 0: each GEMM layer's input
  std::vector<std::vector<float>> grad0;  ///< step 0: every parameter's gradient after the first backward
  std::vector<std::string> grad_names;
  std::vector<GemmTiming> timings0;
  bool wants_capture(std::int64_t it) override { return it == 0; }
  void on_capture(std::int64_t, Model& m, const std::vector<GemmTiming>& t) override {
    for (const GemmLayer* g : m.gemm_layers()) act0.emplace_back(g->input().v.begin(), g->input().v.end());
    for (Param* p : m.params()) {  // before the weight update: the gradients of identical weights and input
      std::vector<float> g(p->grad.size());
      if (ex)
        ex->download(g.data(), p->d_grad->ptr(), g.size() * sizeof(float));
      else
        g.assign(p->grad.begin(), p->grad.end());
      grad0.push_back(std::move(g));
      grad_names.push_back(p->name);
    }
    timings0 = t;
  }
  void on_iteration(const IterationInfo& i) override { loss.push_back(i.loss); }
  void on_eval(std::int64_t it, double acc) override { eval.emplace_back(it, acc); }
};

struct RunResult {
  Recorder rec;
  TrainResult train;
  double test_loss = 0, test_accuracy = 0;  ///< evaluate() after training, on the path that trained
  std::vector<std::vector<float>> bn_mean, bn_var;  ///< every batch norm's running statistics after training
};

RunResult run(const Dataset& data, const std::string& model_name, int batch, int iterations, const char* engine_name,
              bool cuda) {
  auto engine = spartan::gemm::make_engine(engine_name);
  auto dense = spartan::gemm::make_engine(cuda ? "cuda-dense" : "dense");
  std::unique_ptr<Executor> ex;
  if (cuda) ex = make_cuda_executor();
  auto model = build_model(model_name, 1, 28, 28, 10, 3);
  GemmRunner runner(engine.get(), dense.get());
  runner.set_repeats(1);
  RunResult r;
  r.rec.ex = ex.get();
  TrainConfig cfg;
  cfg.iterations = iterations;
  cfg.batch = batch;
  cfg.seed = 3;
  cfg.test_limit = 256;
  cfg.eval_every = std::max(1, iterations / 2);  // evaluation mid-run and at the end, on the training path
  cfg.executor = ex.get();
  r.train = train(*model, data, runner, cfg, {&r.rec});
  // train() downloaded the parameters and running statistics (Model::from_exec); evaluate once more on the same
  // path for the test loss (evaluate's mean cross-entropy).
  if (ex) model->to_exec(*ex);
  r.test_accuracy = evaluate(*model, data.test, runner, cfg.test_limit, 256, ex.get(), &r.test_loss);
  if (ex) model->from_exec(*ex);
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

/// ||a - b||_2 / ||a||_2 (0 when both are zero).
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
/// weights; test accuracies (256 images) may differ by `rel` + 2/256 (a few images near a decision boundary).
void compare(const std::string& model_name, int batch, const char* cuda_engine, double rel, int iterations = 50) {
  set_num_threads(1);
  const Dataset data = test_data();
  const RunResult cpu = run(data, model_name, batch, iterations, "dense", false);
  const RunResult gpu = run(data, model_name, batch, iterations, cuda_engine, true);
  const std::string what = model_name + " " + cuda_engine;
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
  const double acc_tol = rel + 2.0 / 256;
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

bool have_gpu() { return cuda_available(); }

}  // namespace

TEST(CudaTraining, Lenet5LossesMatchCpuOver50Steps) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA GPU (or build without CUDA): CPU/CUDA agreement not checked";
  compare("lenet5", 64, "cuda-dense", 0.02);
}

TEST(CudaTraining, Lenet5TileSparseLossesMatchCpuOver50Steps) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA GPU (or build without CUDA): CPU/CUDA agreement not checked";
  compare("lenet5", 64, "cuda-tile-sparse", 0.02);  // device compaction of the activation operand
}

TEST(CudaTraining, VggSBatchNormDropoutLossesMatchCpuOver50Steps) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA GPU (or build without CUDA): CPU/CUDA agreement not checked";
  compare("vgg-s", 32, "cuda-dense", 0.05);
}

// Residual add, projection shortcut (1x1 conv + BN), global average pool: a few steps.
TEST(CudaTraining, ResnetSLossesGradientsAndEvalMatchCpu) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA GPU (or build without CUDA): CPU/CUDA agreement not checked";
  compare("resnet-s", 16, "cuda-dense", 0.05, 8);
}

// Overlapping 3/2 max-pool: a few steps.
TEST(CudaTraining, AlexnetSLossesGradientsAndEvalMatchCpu) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA GPU (or build without CUDA): CPU/CUDA agreement not checked";
  compare("alexnet-s", 32, "cuda-dense", 0.05, 10);
}

// The tile-sparse engine (device compaction) on a model with batch norm and dropout.
TEST(CudaTraining, VggSTileSparseLossesMatchCpu) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA GPU (or build without CUDA): CPU/CUDA agreement not checked";
  compare("vgg-s", 32, "cuda-tile-sparse", 0.05, 20);
}
