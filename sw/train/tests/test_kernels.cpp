// The device-resident path's per-element functions (kernels_hd.h), run on the host by the reference executor,
// against the CPU layers, on random data with stride / padding / overlapping-window cases.
// Tolerances: element-wise work, im2col/col2im, pooling, softmax and SGD are bit-identical (the same float
// operations in the same order: col2im and max-pool backward gather in the CPU scatter's order). Reductions
// (batch-norm statistics, bias gradients) add the same double terms in another order (256 strided partials +
// a tree instead of one sequential sum), so results that depend on them are compared with a relative tolerance
// of 1e-5 (double sums rounded to float differ by at most a few float ulps).
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <random>

#include "spartan/gemm/tile_sparse.h"
#include "spartan/trace/sptrace.h"
#include "spartan/train/capture.h"
#include "spartan/train/executor.h"
#include "spartan/train/layer.h"
#include "spartan/train/model.h"
#include "spartan/train/threads.h"
#include "spartan/train/trainer.h"

using namespace spartan::train;

namespace {

Tensor random_tensor(int n, int c, int h, int w, std::mt19937_64& rng, double zero_prob = 0.3) {
  Tensor t(n, c, h, w);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::uniform_real_distribution<double> u(0, 1);
  for (float& v : t.v) v = u(rng) < zero_prob ? 0.0f : d(rng);
  return t;
}

std::vector<float> down(Executor& ex, Tensor t) {
  fetch_host(ex, t);
  return std::vector<float>(t.v.begin(), t.v.end());
}

template <class VecA, class VecB>  // std::vector<float> or AlignedVector<float> (Tensor::v, Param::value)
void expect_same(const VecA& cpu, const VecB& ref, double rel, const std::string& what) {
  ASSERT_EQ(cpu.size(), ref.size()) << what;
  std::size_t bad = 0;
  for (std::size_t i = 0; i < cpu.size(); ++i) {
    const bool ok = rel == 0 ? (cpu[i] == ref[i] || (std::isnan(cpu[i]) && std::isnan(ref[i])))
                             : std::fabs(cpu[i] - ref[i]) <= rel * std::max(1.0f, std::fabs(cpu[i]));
    if (!ok && bad++ < 5) ADD_FAILURE() << what << " [" << i << "]: cpu " << cpu[i] << " reference " << ref[i];
  }
  EXPECT_EQ(bad, 0u) << what;
}

struct Harness {
  std::unique_ptr<spartan::gemm::GemmEngine> dense = spartan::gemm::make_dense_engine();
  GemmRunner cpu_runner{dense.get(), dense.get()}, ref_runner{dense.get(), dense.get()};
  std::unique_ptr<Executor> ex = make_reference_executor();
  std::mt19937_64 cpu_rng{7}, ref_rng{7};
  Context cpu, ref;
  Harness() {
    cpu.gemm = &cpu_runner;
    cpu.rng = &cpu_rng;
    ref.gemm = &ref_runner;
    ref.rng = &ref_rng;
    ref.exec = ex.get();
    ref_runner.set_executor(ex.get());
  }
  /// forward + backward of two identically initialised layers, CPU and reference executor; compares y, dx and
  /// every parameter gradient (`rel` for the results that depend on reductions: param grads / everything).
  void check(Layer& a, Layer& b, const Tensor& x, std::mt19937_64& rng, double rel_y, double rel_dx,
             double rel_grad, const std::string& what, bool training = true) {
    cpu.training = ref.training = training;
    b.to_exec(*ex);
    const Tensor y = a.forward(x, cpu);
    const Tensor y2 = b.forward(upload_tensor(*ex, x), ref);
    expect_same(y.v, down(*ex, y2), rel_y, what + " forward");
    const Tensor dy = random_tensor(y.n, y.c, y.h, y.w, rng, 0.2);
    const Tensor dx = a.backward(dy, cpu);
    const Tensor dx2 = b.backward(upload_tensor(*ex, dy), ref);
    expect_same(dx.v, down(*ex, dx2), rel_dx, what + " backward");
    b.from_exec(*ex);
    const auto pa = a.params(), pb = b.params();
    ASSERT_EQ(pa.size(), pb.size());
    for (std::size_t i = 0; i < pa.size(); ++i) expect_same(pa[i]->grad, pb[i]->grad, rel_grad, what + " grad " + pa[i]->name);
  }
};

constexpr double kRed = 1e-5;  // tolerance of results that depend on a reduction

}  // namespace

TEST(TrainKernels, Conv2dStridePaddingBitIdentical) {
  set_num_threads(1);
  struct Case { int n, cin, h, w, cout, k, s, p; bool bias; };
  const Case cases[] = {{2, 3, 9, 9, 4, 3, 1, 1, true},  {2, 2, 11, 8, 3, 3, 2, 1, false}, {1, 3, 10, 10, 5, 5, 1, 2, true},
                        {2, 4, 7, 7, 3, 1, 2, 0, false}, {1, 2, 9, 12, 2, 3, 3, 0, true},  {3, 1, 6, 6, 2, 4, 2, 2, false}};
  for (const Case& c : cases) {
    Harness h;
    std::mt19937_64 init_a(11), init_b(11), rng(5);
    Conv2d a(c.cin, c.cout, c.k, c.s, c.p, c.bias, init_a), b(c.cin, c.cout, c.k, c.s, c.p, c.bias, init_b);
    const Tensor x = random_tensor(c.n, c.cin, c.h, c.w, rng);
    const std::string what = "conv k" + std::to_string(c.k) + " s" + std::to_string(c.s) + " p" + std::to_string(c.p);
    // y, dx and the weight gradient are bit-identical; the bias gradient is a reduction.
    h.check(a, b, x, rng, 0, 0, c.bias ? kRed : 0, what);
    expect_same(a.weight.grad, b.weight.grad, 0, what + " weight grad (exact)");
  }
}

TEST(TrainKernels, LinearBitIdenticalExceptBiasGradient) {
  set_num_threads(1);
  Harness h;
  std::mt19937_64 init_a(3), init_b(3), rng(4);
  Linear a(24, 7, init_a), b(24, 7, init_b);
  const Tensor x = random_tensor(5, 6, 2, 2, rng);
  h.check(a, b, x, rng, 0, 0, kRed, "fc");
  expect_same(a.weight.grad, b.weight.grad, 0, "fc weight grad (exact)");
}

TEST(TrainKernels, ReluPoolingDropoutBitIdentical) {
  set_num_threads(1);
  Harness h;
  std::mt19937_64 rng(9);
  {
    ReLU a, b;
    h.check(a, b, random_tensor(2, 3, 5, 7, rng, 0.2), rng, 0, 0, 0, "relu");
  }
  const int pools[][2] = {{2, 2}, {3, 2}, {3, 3}, {2, 1}, {7, 7}};
  for (const auto& pk : pools) {
    MaxPool2d a(pk[0], pk[1]), b(pk[0], pk[1]);
    // Ties (zeros) exercise the first-maximum rule and overlapping windows the gather order.
    h.check(a, b, random_tensor(2, 3, 7, 9, rng, 0.5), rng, 0, 0, 0, "maxpool " + std::to_string(pk[0]) + "s" + std::to_string(pk[1]));
  }
  {
    GlobalAvgPool a, b;
    h.check(a, b, random_tensor(3, 4, 3, 5, rng), rng, 0, 0, 0, "global-avg-pool");
  }
  {
    Dropout a(0.5f), b(0.5f);  // same generator state in both contexts: same mask
    h.check(a, b, random_tensor(4, 6, 3, 3, rng, 0.1), rng, 0, 0, 0, "dropout");
    Dropout c(0.5f), d(0.5f);
    h.check(c, d, random_tensor(4, 6, 3, 3, rng, 0.1), rng, 0, 0, 0, "dropout eval", false);
  }
}

TEST(TrainKernels, BatchNormWithinReductionTolerance) {
  set_num_threads(1);
  for (bool training : {true, false}) {
    Harness h;
    std::mt19937_64 rng(21);
    BatchNorm a(5), b(5);
    for (int i = 0; i < 5; ++i) a.running_mean[i] = b.running_mean[i] = 0.1f * i, a.running_var[i] = b.running_var[i] = 1.0f + i;
    h.check(a, b, random_tensor(3, 5, 6, 7, rng), rng, training ? kRed : 0, training ? kRed : 0, kRed,
            training ? "batchnorm train" : "batchnorm eval", training);
    b.from_exec(*h.ex);
    expect_same(a.running_mean, b.running_mean, kRed, "running mean");
    expect_same(a.running_var, b.running_var, kRed, "running var");
    // Per-feature (N x F x 1 x 1) inputs, as after an FC layer.
    BatchNorm c(9), d(9);
    h.check(c, d, random_tensor(6, 9, 1, 1, rng), rng, training ? kRed : 0, training ? kRed : 0, kRed, "batchnorm fc", training);
  }
}

// Backward on the executor path without a forward on that executor is a clear error, not a null dereference.
TEST(TrainKernels, BatchNormBackwardWithoutForwardThrows) {
  auto ex = make_reference_executor();
  BatchNorm bn(3);
  bn.to_exec(*ex);
  Context ctx;
  ctx.exec = ex.get();
  std::mt19937_64 rng(4);
  const Tensor dy = upload_tensor(*ex, random_tensor(2, 3, 4, 4, rng));
  EXPECT_THROW(bn.backward(dy, ctx), spartan::Error);
}

// A window larger than the (padded) input is refused on both paths. (x - k) / s + 1 truncates toward zero, so for
// k - s < x < k it gave 1, and max-pool then read (and its backward wrote) past the end of every plane.
TEST(TrainKernels, WindowLargerThanInputThrowsOnBothPaths) {
  EXPECT_EQ(window_output_size(1, 2, 2), 0);
  EXPECT_EQ(window_output_size(2, 3, 2), 0);
  EXPECT_EQ(window_output_size(4, 5, 2), 0);
  EXPECT_EQ(window_output_size(3, 5, 2, 1), 1);
  EXPECT_EQ(window_output_size(7, 2, 2), 3);
  EXPECT_EQ(window_output_size(28, 5, 1, 2), 28);
  auto ex = make_reference_executor();
  auto dense = spartan::gemm::make_dense_engine();
  GemmRunner runner(dense.get(), dense.get());
  std::mt19937_64 rng(6);
  for (Executor* e : {static_cast<Executor*>(nullptr), ex.get()}) {
    const std::string path = e ? "executor" : "cpu";
    Context ctx;
    ctx.gemm = &runner;
    ctx.exec = e;
    auto in = [&](int c, int h, int w) {
      const Tensor t = random_tensor(2, c, h, w, rng);
      return e ? upload_tensor(*e, t) : t;
    };
    MaxPool2d pool(2, 2);
    EXPECT_THROW(pool.forward(in(3, 1, 1), ctx), spartan::InputError) << path;  // N x C x 1 x 1
    EXPECT_THROW(pool.forward(in(3, 1, 4), ctx), spartan::InputError) << path;  // too few rows only
    EXPECT_THROW(pool.forward(in(3, 4, 1), ctx), spartan::InputError) << path;  // too few columns only
    MaxPool2d overlap(3, 2);
    EXPECT_THROW(overlap.forward(in(1, 2, 2), ctx), spartan::InputError) << path;
    const Tensor y = pool.forward(in(3, 2, 3), ctx);  // smallest accepted: one window, the last column unused
    EXPECT_EQ(y.h, 1) << path;
    EXPECT_EQ(y.w, 1) << path;
    Conv2d conv(1, 2, 5, 2, 0, true, rng);  // (4 - 5) / 2 + 1 == 1
    if (e) conv.to_exec(*e);
    EXPECT_THROW(conv.forward(in(1, 4, 4), ctx), spartan::InputError) << path;
    EXPECT_THROW(conv.forward(in(1, 4, 9), ctx), spartan::InputError) << path;
    EXPECT_THROW(conv.forward(in(1, 9, 4), ctx), spartan::InputError) << path;
    Conv2d padded(1, 2, 5, 2, 1, true, rng);  // 3 + 2 * 1 == 5: fits exactly
    if (e) padded.to_exec(*e);
    const Tensor z = padded.forward(in(1, 3, 3), ctx);
    EXPECT_EQ(z.h, 1) << path;
    EXPECT_EQ(z.w, 1) << path;
  }
}

// build_model refuses inputs whose feature maps become smaller than a later window instead of building a model that
// pools out of bounds (lenet5 at 10x10: the second pool saw 1x1; vgg-s at 7x7; alexnet-s at 11x11), and vgg-s, whose
// last pool covers the whole (square) map, refuses non-square inputs (28 x 20: the last pool ran over width 2).
TEST(TrainKernels, BuildModelRefusesTooSmallOrNonSquareInputs) {
  EXPECT_THROW(build_model("lenet5", 1, 10, 10, 10, 1), spartan::InputError);
  EXPECT_THROW(build_model("lenet5", 1, 11, 11, 10, 1), spartan::InputError);
  EXPECT_THROW(build_model("lenet5", 1, 28, 11, 10, 1), spartan::InputError);
  EXPECT_NO_THROW(build_model("lenet5", 1, 12, 12, 10, 1));
  EXPECT_THROW(build_model("vgg-s", 1, 7, 7, 10, 1), spartan::InputError);
  EXPECT_THROW(build_model("vgg-s", 1, 28, 20, 10, 1), spartan::InputError);
  EXPECT_THROW(build_model("vgg-s", 1, 20, 28, 10, 1), spartan::InputError);
  EXPECT_NO_THROW(build_model("vgg-s", 1, 8, 8, 10, 1));
  EXPECT_THROW(build_model("alexnet-s", 1, 11, 11, 10, 1), spartan::InputError);
  EXPECT_THROW(build_model("alexnet-s", 1, 14, 14, 10, 1), spartan::InputError);
  EXPECT_NO_THROW(build_model("alexnet-s", 1, 15, 15, 10, 1));
  EXPECT_NO_THROW(build_model("resnet-s", 1, 1, 1, 10, 1));
  EXPECT_THROW(build_model("resnet-s", 1, 0, 28, 10, 1), spartan::InputError);
  try {
    build_model("lenet5", 1, 10, 10, 10, 1);
    ADD_FAILURE() << "no throw";
  } catch (const spartan::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("10x10 input too small"), std::string::npos) << e.what();
  }
  // The models that are built run a forward pass at their smallest size (the shapes the builder derived hold).
  auto dense = spartan::gemm::make_dense_engine();
  GemmRunner runner(dense.get(), dense.get());
  std::mt19937_64 rng(2);
  for (const auto& [name, side] : {std::pair<const char*, int>{"lenet5", 12}, {"vgg-s", 8}, {"alexnet-s", 15}}) {
    auto m = build_model(name, 1, side, side, 10, 1);
    Context ctx;
    ctx.gemm = &runner;
    ctx.rng = &rng;
    const Tensor y = m->forward(random_tensor(2, 1, side, side, rng), ctx);
    EXPECT_EQ(y.numel(), 20u) << name;
  }
}

TEST(TrainKernels, BasicBlockProjectionAndIdentity) {
  set_num_threads(1);
  for (int stride : {1, 2}) {
    Harness h;
    std::mt19937_64 init_a(13), init_b(13), rng(17);
    const int cout = stride == 1 ? 4 : 6;
    BasicBlock a(4, cout, stride, init_a), b(4, cout, stride, init_b);
    h.check(a, b, random_tensor(2, 4, 7, 7, rng), rng, kRed, kRed, kRed, stride == 1 ? "block identity" : "block projection");
  }
}

TEST(TrainKernels, SoftmaxCrossEntropyAndSgdBitIdentical) {
  set_num_threads(1);
  auto ex = make_reference_executor();
  std::mt19937_64 rng(2);
  const Tensor z = random_tensor(9, 10, 1, 1, rng, 0.0);
  std::vector<std::uint8_t> labels(9);
  std::vector<std::int32_t> l32(9);
  for (int i = 0; i < 9; ++i) labels[i] = std::uint8_t(rng() % 10), l32[i] = labels[i];
  Tensor dz, dz2;
  int hits = 0, hits2 = 0;
  const double loss = softmax_cross_entropy(z, labels.data(), dz, &hits);
  auto lb = ex->alloc(l32.size() * 4);
  ex->upload(lb->ptr(), l32.data(), l32.size() * 4);
  const double loss2 = softmax_cross_entropy_exec(*ex, upload_tensor(*ex, z), lb->as<std::int32_t>(), dz2, &hits2);
  EXPECT_EQ(loss, loss2);
  EXPECT_EQ(hits, hits2);
  expect_same(dz.v, down(*ex, dz2), 0, "dlogits");

  Param p("w", 1000, true), q("w", 1000, true);
  std::normal_distribution<float> d(0.0f, 1.0f);
  for (std::size_t i = 0; i < 1000; ++i) p.value[i] = q.value[i] = d(rng), p.velocity[i] = q.velocity[i] = d(rng);
  struct Holder : Layer {
    Param* p;
    Tensor forward(const Tensor& x, Context&) override { return x; }
    Tensor backward(const Tensor& x, Context&) override { return x; }
    std::vector<Param*> params() override { return {p}; }
    std::string describe() const override { return "holder"; }
  } hq;
  hq.p = &q;
  hq.to_exec(*ex);
  for (int step = 0; step < 3; ++step) {
    for (std::size_t i = 0; i < 1000; ++i) p.grad[i] = q.grad[i] = d(rng);
    ex->upload(q.d_grad->ptr(), q.grad.data(), 4000);
    sgd_step({&p}, 0.05f, 0.9f, 5e-4f);
    sgd_step_exec(*ex, {&q}, 0.05f, 0.9f, 5e-4f);
  }
  hq.from_exec(*ex);
  expect_same(p.value, q.value, 0, "sgd value");
  expect_same(p.velocity, q.velocity, 0, "sgd velocity");
}

TEST(TrainKernels, CountZerosMatchesZeroFraction) {
  auto ex = make_reference_executor();
  std::mt19937_64 rng(8);
  Tensor t = random_tensor(3, 5, 7, 7, rng, 0.6);
  t.v[3] = -0.0f;
  const Tensor d = upload_tensor(*ex, t);
  EXPECT_DOUBLE_EQ(static_cast<double>(ex->count_zeros(exec_ptr(d), d.count())) / double(d.count()),
                   zero_fraction(t.data(), t.numel()));
}

namespace {

Dataset synthetic_dataset(int n_train, int n_test, std::uint64_t seed) {
  Dataset ds;
  ds.name = "synthetic";
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(0, 1);
  for (DataSplit* s : {&ds.train, &ds.test}) {
    s->n = s == &ds.train ? n_train : n_test;
    s->rows = s->cols = 28;
    s->images.resize(std::size_t(s->n) * 28 * 28);
    s->labels.resize(s->n);
    for (int i = 0; i < s->n; ++i) {
      const int label = int(rng() % 10);
      s->labels[i] = std::uint8_t(label);
      for (int p = 0; p < 28 * 28; ++p) {  // a class-dependent bright band on a zero background
        const bool band = (p / 28) / 3 == label || (p % 28) / 3 == label;
        s->images[std::size_t(i) * 784 + p] = band ? 0.5f + 0.5f * u(rng) : (u(rng) < 0.1f ? u(rng) : 0.0f);
      }
    }
  }
  return ds;
}

struct LossRecorder : TrainObserver {
  std::vector<double> loss;
  /// Step 0: every GEMM layer's input and (layers with a ReLU after them) its backward-data operand's non-zero mask.
  std::vector<std::vector<float>> captured;
  bool wants_capture(std::int64_t it) override { return it == 0; }
  void on_capture(std::int64_t, Model& m, const std::vector<GemmTiming>& t) override {
    EXPECT_EQ(t.size(), 3 * m.gemm_layers().size());
    for (const GemmLayer* g : m.gemm_layers()) {
      captured.emplace_back(g->input().v.begin(), g->input().v.end());
      if (g->next_relu) captured.emplace_back(g->bwd_operand_mask().begin(), g->bwd_operand_mask().end());
    }
  }
  void on_iteration(const IterationInfo& i) override { loss.push_back(i.loss); }
};

void compare_models(const std::string& name, int batch, int steps, double rel, const char* engine = "dense") {
  set_num_threads(1);
  const Dataset data = synthetic_dataset(batch * steps, 32, 5);
  auto dense = spartan::gemm::make_engine(engine);
  auto ex = make_reference_executor();
  LossRecorder rec[2];
  TrainResult res[2];
  std::unique_ptr<Model> models[2];
  for (int e = 0; e < 2; ++e) {
    models[e] = build_model(name, 1, 28, 28, 10, 3);
    GemmRunner runner(dense.get(), dense.get());
    runner.set_repeats(1);
    TrainConfig cfg;
    cfg.iterations = steps;
    cfg.batch = batch;
    cfg.seed = 3;
    cfg.test_limit = 32;
    cfg.executor = e ? ex.get() : nullptr;
    res[e] = train(*models[e], data, runner, cfg, {&rec[e]});
  }
  ASSERT_EQ(rec[0].loss.size(), std::size_t(steps));
  ASSERT_EQ(rec[1].loss.size(), std::size_t(steps));
  for (int i = 0; i < steps; ++i) EXPECT_NEAR(rec[0].loss[i], rec[1].loss[i], rel * std::fabs(rec[0].loss[i])) << name << " step " << i;
  EXPECT_NEAR(res[0].test_accuracy, res[1].test_accuracy, 1.0 / 32 + 1e-9) << name;
  // Step 0's captured tensors came down from the executor.
  ASSERT_EQ(rec[0].captured.size(), rec[1].captured.size());
  for (std::size_t i = 0; i < rec[0].captured.size(); ++i)
    expect_same(rec[0].captured[i], rec[1].captured[i], rel, name + " captured tensor " + std::to_string(i));
  // Parameters came back to the host after training.
  const auto pa = models[0]->params(), pb = models[1]->params();
  for (std::size_t i = 0; i < pa.size(); ++i) expect_same(pa[i]->value, pb[i]->value, 1e-4, name + " final " + pa[i]->name);
  for (std::size_t l = 0; l < res[0].sparsity.size(); ++l) {
    EXPECT_NEAR(res[0].sparsity[l].mean_act_sparsity(), res[1].sparsity[l].mean_act_sparsity(), 1e-3) << name << " layer " << l;
    EXPECT_NEAR(res[0].sparsity[l].mean_dz_sparsity(), res[1].sparsity[l].mean_dz_sparsity(), 1e-3) << name << " layer " << l;
  }
}

}  // namespace

// Whole training runs through the reference executor versus the CPU path. LeNet-5's only reductions are the
// bias gradients; alexnet-s adds dropout; vgg-s adds batch norm and dropout; resnet-s basic blocks and global
// average pooling. 1e-4 relative on the losses over a few steps (reduction-order differences grow slowly).
TEST(TrainKernels, Lenet5TrainingMatchesCpu) { compare_models("lenet5", 16, 6, 1e-4); }
TEST(TrainKernels, Lenet5TileSparseEngineTrainingMatchesCpu) { compare_models("lenet5", 16, 4, 1e-4, "tile-sparse"); }
TEST(TrainKernels, AlexnetSTrainingMatchesCpu) { compare_models("alexnet-s", 8, 3, 1e-4); }
TEST(TrainKernels, VggSTrainingMatchesCpu) { compare_models("vgg-s", 8, 3, 1e-4); }
TEST(TrainKernels, ResnetSTrainingMatchesCpu) { compare_models("resnet-s", 4, 3, 1e-4); }


// The trace written from the executor path (what `spartan-train --device cuda --trace` does) holds the same
// tensors as the CPU path's trace: step-0 activations and ReLU masks come down from the executor.
TEST(TrainKernels, TraceCaptureFromExecutorMatchesCpuTrace) {
  set_num_threads(1);
  const Dataset data = synthetic_dataset(64, 32, 9);
  auto dense = spartan::gemm::make_dense_engine();
  auto ex = make_reference_executor();
  const auto dir = std::filesystem::temp_directory_path() / ("spartan_kernels_trace_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::string paths[2];
  for (int e = 0; e < 2; ++e) {
    auto model = build_model("lenet5", 1, 28, 28, 10, 3);
    GemmRunner runner(dense.get(), dense.get());
    runner.set_repeats(1);
    CaptureOptions co;
    paths[e] = (dir / (e ? "exec.sptrace" : "cpu.sptrace")).string();
    co.path = paths[e];
    co.every = 2;
    co.model = "lenet5";
    co.dataset = "synthetic";
    co.device = "test";
    co.batch = 16;
    TraceCapture cap(co, *model);
    TrainConfig cfg;
    cfg.iterations = 3;
    cfg.batch = 16;
    cfg.test_limit = 16;
    cfg.executor = e ? ex.get() : nullptr;
    const TrainResult res = train(*model, data, runner, cfg, {&cap});
    cap.finish(res);
    EXPECT_EQ(cap.captures(), 2);
  }
  spartan::trace::TraceReader a(paths[0]), b(paths[1]);
  ASSERT_EQ(a.tensors().size(), b.tensors().size());
  ASSERT_FALSE(a.tensors().empty());
  for (const auto& t : a.tensors()) {
    if (t.dtype == spartan::trace::DType::U8) {
      EXPECT_EQ(a.copy_as<std::uint8_t>(t.name), b.copy_as<std::uint8_t>(t.name)) << t.name;
    } else {
      // Step 2 follows two updates whose bias gradients are reductions: 1e-4 relative.
      expect_same(a.to_f32(t.name), b.to_f32(t.name), t.name.rfind("it0/", 0) == 0 ? 0 : 1e-4, t.name);
    }
  }
  std::filesystem::remove_all(dir);
}
