// The training path's CUDA kernels (sw/train/src/cuda_ops_kernels.h) run on the host by the CUDA emulation
// (spartan/common/simt.h, make_simt_executor), with the simt GEMM engines of spartan/gemm/simt.h:
//  - against the host reference executor, which does the kernels' per-element functions and reduction order in
//    plain loops, with the same OpenBLAS GEMMs: whole training runs must agree bit for bit (losses, step-0
//    activations and gradients, evaluation, final parameters and batch-norm statistics). This checks the
//    kernels' grid-stride loops, launch shapes, shared-memory trees and barriers, which the reference executor
//    does not have;
//  - against the CPU path with the emulated CUDA tile-sparse engine (device compaction of the activations), with
//    the tolerances of the GPU test (device_train_cases.h);
//  - the element-wise kernels' grid-stride loops on small grids (training tensors take one pass) against their
//    full grids, and the launch arithmetic;
//  - the executor's own operations: count_zeros over grids of 1 to 1024 blocks, NaN-filled fresh buffers.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <random>

#include "cuda_ops_kernels.h"
#include "device_train_cases.h"
#include "spartan/common/simt.h"
#include "spartan/gemm/simt.h"
#include "spartan/gemm/tile_sparse.h"
#include "spartan/train/executor.h"
#include "spartan/train/threads.h"

using namespace spartan::train;
using device_cases::compare_with_cpu;
using device_cases::RunResult;

namespace {

std::unique_ptr<spartan::gemm::GemmEngine> simt_engine(const std::string& name) {
  if (name == "cuda-dense") return spartan::gemm::make_simt_dense_engine();
  if (name == "cuda-tile-sparse") return spartan::gemm::make_simt_tile_sparse_engine();
  throw std::invalid_argument("no simt engine " + name);
}

const device_cases::DevicePath kSimt{make_simt_executor, simt_engine};

/// Index of the first element whose bits differ (sizes first), or -1.
long first_bit_difference(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0) return long(i);
  return -1;
}

/// Test images per evaluation in the bit-for-bit runs (evaluation is most of an emulated run's time).
constexpr int kTestImages = 64;

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof(double)) == 0; }

void expect_bit_identical_to_reference(const std::string& model, int batch, int iterations) {
  set_num_threads(1);
  const Dataset& data = device_cases::test_data();
  auto dense = spartan::gemm::make_dense_engine();
  auto ref_ex = make_reference_executor();
  const RunResult ref = device_cases::run(data, model, batch, iterations, *dense, *dense, ref_ex.get(), kTestImages);
  auto simt_dense = spartan::gemm::make_simt_dense_engine();
  auto simt_ex = make_simt_executor();
  const RunResult sim =
      device_cases::run(data, model, batch, iterations, *simt_dense, *simt_dense, simt_ex.get(), kTestImages);

  ASSERT_EQ(ref.rec.loss.size(), std::size_t(iterations));
  ASSERT_EQ(sim.rec.loss.size(), ref.rec.loss.size());
  for (int i = 0; i < iterations; ++i)
    EXPECT_TRUE(same_bits(ref.rec.loss[i], sim.rec.loss[i]))
        << model << " step " << i << ": reference " << ref.rec.loss[i] << ", simt " << sim.rec.loss[i];
  EXPECT_TRUE(std::isfinite(sim.rec.loss.back()));
  ASSERT_EQ(ref.rec.act0.size(), sim.rec.act0.size());
  ASSERT_FALSE(ref.rec.act0.empty());
  for (std::size_t l = 0; l < ref.rec.act0.size(); ++l)
    EXPECT_EQ(first_bit_difference(ref.rec.act0[l], sim.rec.act0[l]), -1) << model << " step-0 input of GEMM layer " << l;
  ASSERT_EQ(ref.rec.grad0.size(), sim.rec.grad0.size());
  ASSERT_FALSE(ref.rec.grad0.empty());
  for (std::size_t p = 0; p < ref.rec.grad0.size(); ++p)
    EXPECT_EQ(first_bit_difference(ref.rec.grad0[p], sim.rec.grad0[p]), -1)
        << model << " step-0 gradient of " << ref.rec.grad_names[p];
  ASSERT_EQ(ref.params.size(), sim.params.size());
  for (std::size_t p = 0; p < ref.params.size(); ++p)
    EXPECT_EQ(first_bit_difference(ref.params[p], sim.params[p]), -1)
        << model << " parameter " << ref.rec.grad_names[p] << " after training";
  ASSERT_EQ(ref.bn_mean.size(), sim.bn_mean.size());
  for (std::size_t b = 0; b < ref.bn_mean.size(); ++b) {
    EXPECT_EQ(first_bit_difference(ref.bn_mean[b], sim.bn_mean[b]), -1) << model << " batch norm " << b << " mean";
    EXPECT_EQ(first_bit_difference(ref.bn_var[b], sim.bn_var[b]), -1) << model << " batch norm " << b << " variance";
  }
  ASSERT_EQ(ref.rec.eval.size(), sim.rec.eval.size());
  ASSERT_FALSE(ref.rec.eval.empty());
  for (std::size_t i = 0; i < ref.rec.eval.size(); ++i) {
    EXPECT_EQ(ref.rec.eval[i].first, sim.rec.eval[i].first);
    EXPECT_TRUE(same_bits(ref.rec.eval[i].second, sim.rec.eval[i].second)) << model << " accuracy " << i;
  }
  EXPECT_TRUE(same_bits(ref.test_loss, sim.test_loss)) << model << ": " << ref.test_loss << " vs " << sim.test_loss;
  EXPECT_TRUE(same_bits(ref.test_accuracy, sim.test_accuracy));
  EXPECT_GT(sim.test_loss, 0.0);
}

}  // namespace

// LeNet-5: convolutions, max-pool, bias-gradient reductions (channel_sum), softmax.
TEST(SimtTraining, Lenet5MatchesReferenceExecutorBitForBit) { expect_bit_identical_to_reference("lenet5", 16, 4); }
// Overlapping 3/2 max-pool and dropout.
TEST(SimtTraining, AlexnetSMatchesReferenceExecutorBitForBit) { expect_bit_identical_to_reference("alexnet-s", 8, 3); }
// 13 batch norms (bn_stats / bn_bwd_sums: two block reductions each) and dropout.
TEST(SimtTraining, VggSMatchesReferenceExecutorBitForBit) { expect_bit_identical_to_reference("vgg-s", 8, 3); }
// Basic blocks: residual add, projection shortcut, global average pool.
TEST(SimtTraining, ResnetSMatchesReferenceExecutorBitForBit) { expect_bit_identical_to_reference("resnet-s", 4, 3); }

// The emulated CUDA tile-sparse engine inside training: device compaction of every activation operand.
TEST(SimtTraining, Lenet5TileSparseMatchesCpu) { compare_with_cpu(kSimt, "lenet5", 32, "cuda-tile-sparse", 0.02, 10); }
TEST(SimtTraining, VggSTileSparseMatchesCpu) { compare_with_cpu(kSimt, "vgg-s", 8, "cuda-tile-sparse", 0.05, 4, 64); }

// count_zeros: per-thread counts, a shared-memory tree and one atomic add per block, over grids of 1 block up to
// the 1024-block cap (beyond which the grid-stride loop takes several elements per thread).
TEST(SimtExecutor, CountZerosIsExactAcrossGridSizes) {
  auto ex = make_simt_executor();
  std::mt19937_64 rng(11);
  for (std::size_t n : {std::size_t(1), std::size_t(255), std::size_t(256), std::size_t(257), std::size_t(70000),
                        std::size_t(256 * 1024), std::size_t(256 * 1024 + 3), std::size_t(600001)}) {
    std::vector<float> h(n);
    std::uint64_t zeros = 0;
    for (float& v : h) {
      const auto r = rng() % 4;
      v = r == 0 ? 0.0f : r == 1 ? -0.0f : r == 2 ? 1e-40f : -2.5f;  // +-0 are zero, a denormal is not
      zeros += r < 2;
    }
    auto buf = ex->alloc(n * sizeof(float));
    ex->upload(buf->ptr(), h.data(), n * sizeof(float));
    EXPECT_EQ(ex->count_zeros(buf->as<float>(), n), zeros) << "n = " << n;
  }
  EXPECT_EQ(ex->count_zeros(nullptr, 0), 0u);
}

// Fresh buffers hold NaN (0xFF bytes), like cudaMalloc's uninitialised memory in that nothing may rely on them.
TEST(SimtExecutor, FreshBuffersAreNaNAndDevicePointers) {
  auto ex = make_simt_executor();
  EXPECT_TRUE(ex->device_pointers());
  EXPECT_EQ(ex->name(), "cuda (simt)");
  auto buf = ex->alloc(64 * sizeof(float));
  std::vector<float> h(64, 1.0f);
  ex->download(h.data(), buf->ptr(), h.size() * sizeof(float));
  for (float v : h) EXPECT_TRUE(std::isnan(v));
  ex->fill_zero(buf->ptr(), 64 * sizeof(float));
  EXPECT_EQ(ex->count_zeros(buf->as<float>(), 64), 64u);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(buf->ptr()) % 256, 0u);
}

// The launch arithmetic: ceil(n / 256) blocks, at least 1, at most 2^20 (the grid-stride loop covers the rest).
TEST(SimtExecutor, LaunchArithmetic) {
  using namespace spartan::train::cudaops;
  EXPECT_EQ(blocks_for(0), 1u);
  EXPECT_EQ(blocks_for(1), 1u);
  EXPECT_EQ(blocks_for(256), 1u);
  EXPECT_EQ(blocks_for(257), 2u);
  EXPECT_EQ(blocks_for(std::int64_t(256) << 20), 1u << 20);
  EXPECT_EQ(blocks_for((std::int64_t(256) << 20) + 1), 1u << 20);
  EXPECT_EQ(blocks_for(std::int64_t(1) << 40), 1u << 20);
  EXPECT_EQ(count_zeros_blocks(256 * 1024), 1024u);
  EXPECT_EQ(count_zeros_blocks(256 * 1024 + 1), 1024u);
  EXPECT_EQ(count_zeros_blocks(1000), 4u);
}

// Training tensors fit the grids of blocks_for() with one element per thread, so the grid-stride loops of the
// element-wise kernels never take a second pass there. Here kernels run on grids of 1 and 3 blocks (many passes
// per thread, a partial last pass) and must give their full grid's bits.
TEST(SimtExecutor, GridStrideLoopsOnSmallGridsGiveTheFullGridsBits) {
  using namespace spartan::train::cudaops;
  namespace simt = spartan::simt;
  std::mt19937_64 rng(21);
  std::uniform_real_distribution<float> u(-1, 1);
  auto random = [&](std::size_t n) {
    std::vector<float> v(n);
    for (float& x : v) x = rng() % 3 == 0 ? 0.0f : u(rng);
    return v;
  };
  // Each case runs `kernel(grid)` into fresh NaN-filled outputs and returns them, concatenated as bits.
  auto check = [&](const char* what, unsigned full_grid, const std::function<std::vector<float>(unsigned)>& run) {
    const std::vector<float> full = run(full_grid);
    ASSERT_FALSE(full.empty());
    for (float v : full) ASSERT_FALSE(std::isnan(v)) << what << ": an output left unwritten on the full grid";
    for (unsigned grid : {1u, 3u}) {
      const std::vector<float> small = run(grid);
      ASSERT_EQ(small.size(), full.size());
      EXPECT_EQ(std::memcmp(small.data(), full.data(), full.size() * sizeof(float)), 0) << what << ", grid " << grid;
    }
  };
  const hd::ConvGeom g{8, 4, 13, 11, 3, 2, 1, 7, 6};  // N C H W k stride pad OH OW: every output > 768 elements
  const std::vector<float> x = random(std::size_t(g.n) * g.c * g.h * g.w);
  check("im2col", blocks_for(g.np() * g.kdim()), [&](unsigned grid) {
    std::vector<float> col(std::size_t(g.np()) * g.kdim(), std::nanf(""));
    simt::launch({grid, 1, 1}, {kThreads, 1, 1}, 0, false, [&] { im2col_kernel(x.data(), g, col.data()); });
    return col;
  });
  const std::vector<float> dcolt = random(std::size_t(g.np()) * g.kdim());
  const std::int64_t xn = std::int64_t(x.size());
  check("col2im", blocks_for(xn), [&](unsigned grid) {
    std::vector<float> dx(x.size(), std::nanf(""));
    simt::launch({grid, 1, 1}, {kThreads, 1, 1}, 0, false, [&] { col2im_kernel(dcolt.data(), g, dx.data(), xn); });
    return dx;
  });
  check("relu_fwd", blocks_for(xn), [&](unsigned grid) {
    std::vector<float> y(x.size(), std::nanf(""));
    simt::launch({grid, 1, 1}, {kThreads, 1, 1}, 0, false, [&] { relu_fwd_kernel(x.data(), y.data(), xn); });
    return y;
  });
  const int planes = g.n * g.c, k = 3, st = 2, oh = (g.h - k) / st + 1, ow = (g.w - k) / st + 1;
  const std::int64_t pooled = std::int64_t(planes) * oh * ow;
  check("maxpool_fwd", blocks_for(pooled), [&](unsigned grid) {
    std::vector<float> y(std::size_t(pooled), std::nanf(""));
    std::vector<std::int32_t> argmax(std::size_t(pooled), -7);
    simt::launch({grid, 1, 1}, {kThreads, 1, 1}, 0, false, [&] {
      maxpool_fwd_kernel(x.data(), g.h, g.w, k, st, oh, ow, y.data(), argmax.data(), pooled);
    });
    for (std::int32_t a : argmax) y.push_back(float(a));  // compared too
    return y;
  });
  EXPECT_GT(pooled, 3 * kThreads);  // so that a grid of 3 blocks also takes a second pass
}
