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
// few steps. Additionally the step-0 captured activations (identical weights and input) must agree to 1e-3.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <random>

#include "spartan/gemm/tile_sparse.h"
#include "spartan/train/device.h"
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
  std::vector<double> loss;
  std::vector<std::vector<float>> act0;  ///< step 0: each GEMM layer's input
  std::vector<GemmTiming> timings0;
  bool wants_capture(std::int64_t it) override { return it == 0; }
  void on_capture(std::int64_t, Model& m, const std::vector<GemmTiming>& t) override {
    for (const GemmLayer* g : m.gemm_layers()) act0.push_back(g->input().v);
    timings0 = t;
  }
  void on_iteration(const IterationInfo& i) override { loss.push_back(i.loss); }
};

Recorder run(const Dataset& data, const std::string& model_name, int batch, const char* engine_name, bool cuda) {
  auto engine = spartan::gemm::make_engine(engine_name);
  auto dense = spartan::gemm::make_engine(cuda ? "cuda-dense" : "dense");
  std::unique_ptr<Executor> ex;
  if (cuda) ex = make_cuda_executor();
  auto model = build_model(model_name, 1, 28, 28, 10, 3);
  GemmRunner runner(engine.get(), dense.get());
  runner.set_repeats(1);
  Recorder rec;
  TrainConfig cfg;
  cfg.iterations = 50;
  cfg.batch = batch;
  cfg.seed = 3;
  cfg.test_limit = 256;
  cfg.executor = ex.get();
  train(*model, data, runner, cfg, {&rec});
  return rec;
}

void compare(const std::string& model_name, int batch, const char* cuda_engine, double rel) {
  set_num_threads(1);
  const Dataset data = test_data();
  const Recorder cpu = run(data, model_name, batch, "dense", false);
  const Recorder gpu = run(data, model_name, batch, cuda_engine, true);
  ASSERT_EQ(cpu.loss.size(), 50u);
  ASSERT_EQ(gpu.loss.size(), 50u);
  for (std::size_t i = 0; i < 50; ++i)
    EXPECT_NEAR(cpu.loss[i], gpu.loss[i], 1e-3 + rel * std::fabs(cpu.loss[i])) << model_name << " " << cuda_engine << " step " << i;
  EXPECT_LT(gpu.loss.back(), gpu.loss.front());
  ASSERT_EQ(cpu.act0.size(), gpu.act0.size());
  for (std::size_t l = 0; l < cpu.act0.size(); ++l) {
    ASSERT_EQ(cpu.act0[l].size(), gpu.act0[l].size()) << "layer " << l;
    std::size_t bad = 0;
    for (std::size_t i = 0; i < cpu.act0[l].size(); ++i)
      bad += !(std::fabs(cpu.act0[l][i] - gpu.act0[l][i]) <= 1e-3f * std::max(1.0f, std::fabs(cpu.act0[l][i])));
    EXPECT_EQ(bad, 0u) << model_name << " step-0 input of GEMM layer " << l;
  }
  ASSERT_FALSE(gpu.timings0.empty());
  for (const GemmTiming& t : gpu.timings0) {
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
