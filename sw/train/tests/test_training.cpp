// End-to-end training on the real Fashion-MNIST files of the Debian package dataset-fashion-mnist
// (installed by scripts/install-deps.sh; the tests skip with a message when it is absent).
#include <gtest/gtest.h>

#include <filesystem>

#include "spartan/common/error.h"
#include "spartan/train/threads.h"
#include "spartan/train/trainer.h"

using namespace spartan::train;

namespace {

// One thread: the CI machine has 2 cores shared by other jobs; spinning pools only slow it down.
const Dataset* fashion() {
  static std::unique_ptr<Dataset> ds;
  static bool tried = false;
  if (!tried) {
    tried = true;
    set_num_threads(1);
    if (std::filesystem::exists(std::string(kDefaultFashionMnistDir) + "/train-images-idx3-ubyte.gz"))
      ds = std::make_unique<Dataset>(load_idx_dataset(kDefaultFashionMnistDir));
  }
  return ds.get();
}

#define REQUIRE_FASHION()                                                                           \
  if (!fashion()) GTEST_SKIP() << "Fashion-MNIST not installed at " << kDefaultFashionMnistDir \
                               << " (apt-get install dataset-fashion-mnist)"

Dataset subset(const Dataset& d, int n_train, int n_test) {
  Dataset s;
  s.name = d.name;
  s.classes = d.classes;
  for (auto [src, dst, n] : {std::tuple{&d.train, &s.train, n_train}, std::tuple{&d.test, &s.test, n_test}}) {
    dst->n = n;
    dst->rows = src->rows;
    dst->cols = src->cols;
    dst->images.assign(src->images.begin(), src->images.begin() + std::ptrdiff_t(n) * src->rows * src->cols);
    dst->labels.assign(src->labels.begin(), src->labels.begin() + n);
  }
  return s;
}

}  // namespace

TEST(Training, DatasetShape) {
  REQUIRE_FASHION();
  EXPECT_EQ(fashion()->train.n, 60000);
  EXPECT_EQ(fashion()->test.n, 10000);
  EXPECT_EQ(fashion()->train.rows, 28);
  EXPECT_EQ(fashion()->classes, 10);
}

// LeNet-5, 400 steps of batch 64 (25.6k images, under half an epoch), evaluated on the first 2000
// test images (a subset, to keep the test short).
TEST(Training, LeNet5LearnsFashionMnist) {
  REQUIRE_FASHION();
  auto model = build_model("lenet5", 1, 28, 28, 10, 1);
  auto dense = spartan::gemm::make_dense_engine();
  GemmRunner runner(dense.get(), dense.get());
  TrainConfig cfg;
  cfg.iterations = 400;
  cfg.batch = 64;
  cfg.lr = 0.05f;
  cfg.test_limit = 2000;
  const TrainResult r = train(*model, *fashion(), runner, cfg);
  EXPECT_EQ(r.iterations, 400);
  EXPECT_LT(r.final_train_loss, 0.6 * r.first_train_loss) << "first " << r.first_train_loss;
  EXPECT_GT(r.test_accuracy, 0.80);
  EXPECT_EQ(r.test_images, 2000);
  // ReLU activations: the layers after the first are genuinely sparse, and not all alike.
  ASSERT_EQ(r.sparsity.size(), 5u);
  for (std::size_t l = 1; l < r.sparsity.size(); ++l) {
    EXPECT_GT(r.sparsity[l].mean_act_sparsity(), 0.05) << l;
    EXPECT_LT(r.sparsity[l].mean_act_sparsity(), 0.99) << l;
  }
}

TEST(Training, DeterministicForASeed) {
  REQUIRE_FASHION();
  const Dataset small = subset(*fashion(), 1024, 256);
  auto dense = spartan::gemm::make_dense_engine();
  std::vector<double> losses[2];
  for (int run = 0; run < 2; ++run) {
    auto model = build_model("alexnet-s", 1, 28, 28, 10, 7);  // has dropout
    GemmRunner runner(dense.get(), dense.get());
    struct Rec : TrainObserver {
      std::vector<double>* out;
      void on_iteration(const IterationInfo& i) override { out->push_back(i.loss); }
    } rec;
    rec.out = &losses[run];
    TrainConfig cfg;
    cfg.iterations = 6;
    cfg.batch = 32;
    cfg.seed = 7;
    train(*model, small, runner, cfg, {&rec});
  }
  ASSERT_EQ(losses[0].size(), 6u);
  EXPECT_EQ(losses[0], losses[1]);
}

TEST(Training, RejectsBadConfig) {
  REQUIRE_FASHION();
  const Dataset small = subset(*fashion(), 100, 10);
  auto model = build_model("lenet5", 1, 28, 28, 10, 1);
  auto dense = spartan::gemm::make_dense_engine();
  GemmRunner runner(dense.get(), dense.get());
  TrainConfig cfg;
  cfg.batch = 101;
  EXPECT_THROW(train(*model, small, runner, cfg), spartan::InputError);
  cfg.batch = 10;
  cfg.lr_schedule = "step";
  EXPECT_THROW(train(*model, small, runner, cfg), spartan::InputError);
}

TEST(Training, SgdMomentumAndWeightDecay) {
  Param p("w", 1);
  p.value[0] = 1.0f;
  p.grad[0] = 0.5f;
  sgd_step({&p}, 0.1f, 0.9f, 0.1f);  // v = 0.5 + 0.1 = 0.6; w = 1 - 0.06
  EXPECT_FLOAT_EQ(p.value[0], 0.94f);
  sgd_step({&p}, 0.1f, 0.9f, 0.1f);  // v = 0.54 + 0.5 + 0.094 = 1.134
  EXPECT_NEAR(p.value[0], 0.94f - 0.1134f, 1e-6);
  EXPECT_FLOAT_EQ(learning_rate("cosine", 1.0f, 50, 100), 0.5f);
  EXPECT_FLOAT_EQ(learning_rate("constant", 0.3f, 50, 100), 0.3f);
}
