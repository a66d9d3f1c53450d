// CPU and CUDA training agree: LeNet-5 for 50 steps on Fashion-MNIST with the conv/FC GEMMs on
// OpenBLAS versus cuBLAS ("cuda-dense"). Skipped without a GPU (or in builds without CUDA).
// Tolerance: every step's loss within 2% (relative) + 1e-3; float GEMMs differ in summation order, and
// SGD amplifies such differences slowly over 50 steps (no dropout or batch norm in LeNet-5).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "spartan/gemm/tile_sparse.h"
#include "spartan/train/device.h"
#include "spartan/train/threads.h"
#include "spartan/train/trainer.h"

using namespace spartan::train;

TEST(CudaTraining, LossesMatchCpuOver50Steps) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA GPU (or build without CUDA): CPU/CUDA agreement not checked";
  if (!std::filesystem::exists(std::string(kDefaultFashionMnistDir) + "/train-images-idx3-ubyte.gz"))
    GTEST_SKIP() << "Fashion-MNIST not installed";
  set_num_threads(1);
  const Dataset data = load_idx_dataset(kDefaultFashionMnistDir);
  std::vector<double> losses[2];
  const char* engines[2] = {"dense", "cuda-dense"};
  for (int e = 0; e < 2; ++e) {
    auto engine = spartan::gemm::make_engine(engines[e]);
    auto model = build_model("lenet5", 1, 28, 28, 10, 3);
    GemmRunner runner(engine.get(), engine.get());
    struct Rec : TrainObserver {
      std::vector<double>* out = nullptr;
      void on_iteration(const IterationInfo& i) override { out->push_back(i.loss); }
    } rec;
    rec.out = &losses[e];
    TrainConfig cfg;
    cfg.iterations = 50;
    cfg.batch = 64;
    cfg.seed = 3;
    cfg.test_limit = 256;
    train(*model, data, runner, cfg, {&rec});
  }
  ASSERT_EQ(losses[0].size(), 50u);
  ASSERT_EQ(losses[1].size(), 50u);
  for (std::size_t i = 0; i < 50; ++i)
    EXPECT_NEAR(losses[0][i], losses[1][i], 1e-3 + 0.02 * std::fabs(losses[0][i])) << "step " << i;
  EXPECT_LT(losses[1].back(), losses[1].front());
}
