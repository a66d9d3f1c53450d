// Trace capture against the GEMMs that ran: the `dz_mask` of a layer must be the zero pattern of the sparse
// operand its backward-data GEMM received, also where a batch norm sits between the layer and its ReLU (the
// operand is then BN backward's output, dense) and where a max-pool follows the ReLU (the operand is then sparser
// than the ReLU's forward mask). Synthetic data and a small model: runs in well under a second, without the
// Fashion-MNIST package. Both the CPU path and the executor path (host reference executor) are checked.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <random>

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
    if (l == 0) EXPECT_GT(static_cast<double>(ones) / n, 0.99) << "BN backward's output is dense";
    if (l == 1) EXPECT_LT(static_cast<double>(ones) / n, 0.4) << "behind a 2x2 max-pool at most 1 in 4 is non-zero";
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
