// Trace capture against the GEMMs that ran: the `dz_mask` of a layer must be the zero pattern of the sparse
// operand its backward-data GEMM received, also where a batch norm sits between the layer and its ReLU (the
// operand is then BN backward's output, dense) and where a max-pool follows the ReLU (the operand is then sparser
// than the ReLU's forward mask). Synthetic data and a small model: runs in well under a second, without the
// Fashion-MNIST package. Both the CPU path and the executor path (host reference executor) are checked.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <random>

#include "spartan/common/error.h"
#include "spartan/gemm/tile_sparse.h"
#include "spartan/trace/keys.h"
#include "spartan/trace/metadata.h"
#include "spartan/trace/sptrace.h"
#include "spartan/train/capture.h"
#include "spartan/train/executor.h"
#include "spartan/train/threads.h"
#include "spartan/train/trainer.h"

using namespace spartan::train;
namespace fs = std::filesystem;
namespace tr = spartan::trace;

namespace {

/// Dense engine that keeps a copy of the A operand of every call (row-major, op_a N calls only; the
/// backward-data GEMMs are op_a N with lda == K).
class RecordingEngine final : public spartan::gemm::GemmEngine {
 public:
  struct Call {
    int M, N, K;
    std::vector<float> a;
  };
  void run(const spartan::gemm::GemmCall& c) override {
    if (c.op_a == spartan::gemm::Op::N && c.lda == c.K) calls.push_back({c.M, c.N, c.K, std::vector<float>(c.A, c.A + std::size_t(c.M) * c.K)});
    dense_->run(c);
  }
  std::string name() const override { return "dense"; }
  std::vector<Call> calls;

 private:
  std::unique_ptr<spartan::gemm::GemmEngine> dense_ = spartan::gemm::make_dense_engine();
};

Dataset synthetic(int n, int side) {
  Dataset d;
  d.name = "synthetic";
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  for (DataSplit* s : {&d.train, &d.test}) {
    s->n = n;
    s->rows = s->cols = side;
    s->images.resize(std::size_t(n) * side * side);
    for (float& v : s->images) v = u(rng) < 0.5f ? 0.0f : u(rng);
    s->labels.resize(n);
    for (auto& l : s->labels) l = static_cast<std::uint8_t>(rng() % 10);
  }
  return d;
}

/// conv(1->4)-BN-ReLU-pool, conv(4->6)-ReLU-pool, fc(6*3*3 -> 10) on 12x12 inputs.
std::unique_ptr<Model> small_model() {
  std::mt19937_64 rng(3);
  auto m = std::make_unique<Model>("bn-test");
  m->add(std::make_unique<Conv2d>(1, 4, 3, 1, 1, false, rng));
  m->add(std::make_unique<BatchNorm>(4));
  m->add(std::make_unique<ReLU>());
  m->add(std::make_unique<MaxPool2d>(2, 2));
  m->add(std::make_unique<Conv2d>(4, 6, 3, 1, 1, true, rng));
  m->add(std::make_unique<ReLU>());
  m->add(std::make_unique<MaxPool2d>(2, 2));
  m->add(std::make_unique<Linear>(6 * 3 * 3, 10, rng));
  return m;
}

void check_masks_match_bwd_data_operands(Executor* ex) {
  set_num_threads(1);
  const fs::path path = fs::temp_directory_path() / ("spartan_capture_" + std::to_string(::getpid()) + ".sptrace");
  const Dataset data = synthetic(16, 12);
  auto model = small_model();
  RecordingEngine eng;
  GemmRunner runner(&eng, &eng);
  runner.set_repeats(1);
  TrainConfig cfg;
  cfg.batch = 8;
  cfg.iterations = 1;
  cfg.executor = ex;
  CaptureOptions opt;
  opt.path = path.string();
  opt.every = 1;
  opt.model = "bn-test";
  opt.dataset = "synthetic";
  opt.device = "cpu: test (1 thread)";
  opt.batch = cfg.batch;
  TraceCapture cap(opt, *model);
  const TrainResult res = train(*model, data, runner, cfg, {&cap});
  cap.finish(res);

  tr::TraceReader rd(path.string());
  tr::check_metadata(rd);
  const auto layers = tr::read_layers(rd);
  const auto sp = tr::read_sparsity(rd);
  ASSERT_EQ(layers.size(), 3u);
  ASSERT_TRUE(layers[0].relu_after);
  ASSERT_TRUE(layers[1].relu_after);
  for (int l = 0; l < 2; ++l) {
    const tr::LayerInfo& li = layers[l];
    const auto n = static_cast<std::size_t>(li.output[0] * li.output[1] * li.output[2] * li.output[3]);
    const auto mask = tr::unpack_bits(rd.view("it0/L" + std::to_string(l) + "/dz_mask"), n);
    // The backward-data GEMM of this layer: its recorded A operand is dY as (N*P) x Cout.
    const RecordingEngine::Call* bwd = nullptr;
    for (const auto& c : eng.calls)
      if (c.M == li.bwd_data.M && c.N == li.bwd_data.N && c.K == li.bwd_data.K) bwd = &c;
    ASSERT_NE(bwd, nullptr) << "layer " << l;
    const std::int64_t cout = li.output[1], p = li.output[2] * li.output[3];
    std::size_t mismatches = 0, ones = 0;
    for (std::int64_t b = 0; b < li.output[0]; ++b)
      for (std::int64_t co = 0; co < cout; ++co)
        for (std::int64_t i = 0; i < p; ++i) {
          const std::size_t e = static_cast<std::size_t>((b * cout + co) * p + i);
          const bool nz = bwd->a[static_cast<std::size_t>((b * p + i) * cout + co)] != 0.0f;
          mismatches += mask[e] != nz;
          ones += mask[e];
        }
    EXPECT_EQ(mismatches, 0u) << "layer " << l << ": dz_mask differs from the backward-data operand's zeros";
    // The density metadata and the train result describe the same mask.
    ASSERT_EQ(sp[l].dz_mask_density.size(), 1u);
    EXPECT_DOUBLE_EQ(sp[l].dz_mask_density[0], static_cast<double>(ones) / n) << "layer " << l;
    EXPECT_DOUBLE_EQ(res.sparsity[l].dz_mask_density[0], static_cast<double>(ones) / n) << "layer " << l;
    if (l == 0) {
      EXPECT_GT(static_cast<double>(ones) / n, 0.99) << "BN backward's output is dense";
    }
    if (l == 1) {
      EXPECT_LT(static_cast<double>(ones) / n, 0.4) << "behind a 2x2 max-pool at most 1 in 4 is non-zero";
    }
  }
  EXPECT_EQ(rd.find("it0/L2/dz_mask"), nullptr);
  fs::remove(path);
}

}  // namespace

TEST(Capture, DzMaskIsTheBackwardDataOperandsZeroPatternCpu) { check_masks_match_bwd_data_operands(nullptr); }

TEST(Capture, DzMaskIsTheBackwardDataOperandsZeroPatternExecutor) {
  auto ex = make_reference_executor();
  check_masks_match_bwd_data_operands(ex.get());
}

// The reference a GEMM engine is timed against runs on the engine's device: cuBLAS beside a CUDA engine (also when
// the layers run on the CPU, spartan-train --device cpu --gemm cuda-tile-sparse), OpenBLAS beside a CPU engine.
TEST(GemmTimingDevice, ReferenceEngineFollowsTheEngine) {
  EXPECT_EQ(reference_engine_name("cuda-tile-sparse"), "cuda-dense");
  EXPECT_EQ(reference_engine_name("cuda-dense"), "cuda-dense");
  EXPECT_EQ(reference_engine_name("tile-sparse"), "dense");
  EXPECT_EQ(reference_engine_name("dense"), "dense");
  EXPECT_TRUE(is_cuda_engine("cuda-tile-sparse"));
  EXPECT_FALSE(is_cuda_engine("tile-sparse"));
  EXPECT_FALSE(is_cuda_engine("dense"));
  // Every engine of this build gets a reference this build has.
  const auto names = spartan::gemm::engine_names();
  for (const std::string& e : names)
    EXPECT_NE(std::find(names.begin(), names.end(), reference_engine_name(e)), names.end()) << e;
}

namespace {
/// Host dense engine under another name (a CUDA engine's name without a GPU).
class RenamedEngine final : public spartan::gemm::GemmEngine {
 public:
  explicit RenamedEngine(std::string name) : name_(std::move(name)) {}
  void run(const spartan::gemm::GemmCall& c) override { dense_->run(c); }
  std::string name() const override { return name_; }

 private:
  std::string name_;
  std::unique_ptr<spartan::gemm::GemmEngine> dense_ = spartan::gemm::make_dense_engine();
};

spartan::gemm::GemmCall small_call(std::vector<float>& a, std::vector<float>& b, std::vector<float>& c) {
  a.assign(6, 1.0f), b.assign(6, 2.0f), c.assign(4, 0.0f);
  spartan::gemm::GemmCall call;
  call.M = 2, call.N = 2, call.K = 3;
  call.A = a.data(), call.lda = 3, call.B = b.data(), call.ldb = 2, call.C = c.data(), call.ldc = 2;
  call.sparse = spartan::gemm::SparseOperand::A;
  return call;
}
}  // namespace

// A timed call whose engine and reference run on different devices (CUDA events vs steady_clock) is refused instead
// of recording a dense_ms / engine_ms ratio across a CPU and a GPU.
TEST(GemmTimingDevice, RunnerRefusesReferenceOnAnotherDevice) {
  std::vector<float> a, b, c;
  const spartan::gemm::GemmCall call = small_call(a, b, c);
  RenamedEngine cuda_named("cuda-tile-sparse"), cuda_dense_named("cuda-dense");
  auto dense = spartan::gemm::make_dense_engine();
  for (const auto& [engine, reference] : {std::pair<spartan::gemm::GemmEngine*, spartan::gemm::GemmEngine*>{&cuda_named, dense.get()},
                                          {dense.get(), &cuda_dense_named}}) {
    GemmRunner runner(engine, reference);
    runner.set_repeats(1);
    runner.run(0, GemmPass::Forward, call);  // untimed: nothing to compare
    EXPECT_EQ(c[0], 6.0f);
    runner.set_timing(true);
    try {
      runner.run(0, GemmPass::Forward, call);
      ADD_FAILURE() << engine->name() << " beside " << reference->name() << ": no throw";
    } catch (const spartan::Error& e) {
      EXPECT_NE(std::string(e.what()).find("different devices"), std::string::npos) << e.what();
    }
    EXPECT_TRUE(runner.take_timings().empty());
  }
  // Same device: timed, host clock.
  auto dense2 = spartan::gemm::make_dense_engine();
  GemmRunner ok(dense.get(), dense2.get());
  ok.set_repeats(2);
  ok.set_timing(true);
  ok.run(3, GemmPass::BackwardData, call);
  const auto t = ok.take_timings();
  ASSERT_EQ(t.size(), 1u);
  EXPECT_FALSE(t[0].device_timer);
  EXPECT_GE(t[0].dense_ms, 0.0);
  EXPECT_EQ(t[0].layer, 3);
}

// A trace record names the device that measured its times: CaptureOptions::gemm_device (the GPU of a CUDA engine
// beside CPU layers) and never a CPU for CUDA-event times.
TEST(GemmTimingDevice, CaptureRecordsTheMeasuringDevice) {
  set_num_threads(1);
  std::mt19937_64 rng(1);
  Model model("fc-test");
  model.add(std::make_unique<Linear>(12, 3, rng));
  auto dense = spartan::gemm::make_dense_engine();
  GemmRunner runner(dense.get(), dense.get());
  Context ctx;
  ctx.gemm = &runner;
  ctx.rng = &rng;
  model.forward(Tensor(2, 1, 3, 4), ctx);
  GemmTiming t;
  t.layer = 0;
  t.engine_ms = 1.0, t.dense_ms = 2.0;
  t.device_timer = true;  // CUDA events
  const fs::path path = fs::temp_directory_path() / ("spartan_capture_dev_" + std::to_string(::getpid()) + ".sptrace");
  CaptureOptions opt;
  opt.path = path.string();
  opt.every = 1;
  opt.model = "fc-test";
  opt.dataset = "synthetic";
  opt.device = "cpu: test (1 thread)";  // the layers ran on the CPU
  {
    TraceCapture cap(opt, model);  // no gemm_device: CUDA-event times would be labelled "cpu: ..."
    EXPECT_THROW(cap.on_capture(0, model, {t}), spartan::Error);
    t.device_timer = false;
    EXPECT_NO_THROW(cap.on_capture(1, model, {t}));
  }
  opt.gemm_device = "cuda: Test GPU (sm_90)";
  {
    TraceCapture cap(opt, model);
    t.device_timer = false;  // steady_clock times cannot come from the GPU either
    EXPECT_THROW(cap.on_capture(0, model, {t}), spartan::Error);
    t.device_timer = true;
    cap.on_capture(0, model, {t});
    cap.finish(TrainResult{});
  }
  tr::TraceReader rd(path.string());
  EXPECT_EQ(rd.metadata().at(tr::keys::kDevice), "cpu: test (1 thread)");
  const auto times = tr::read_gemm_times(rd);
  ASSERT_EQ(times.size(), 1u);
  EXPECT_EQ(times[0].device, "cuda: Test GPU (sm_90)");
  EXPECT_EQ(times[0].timer, "cuda-events");
  EXPECT_DOUBLE_EQ(times[0].fwd.dense_ms, 2.0);
  fs::remove(path);
}
