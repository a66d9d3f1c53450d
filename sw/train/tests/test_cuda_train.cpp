// CPU and CUDA training agree over 50 steps: the shared cases of device_train_cases.h on the GPU (the CUDA
// executor, GEMMs on cuBLAS "cuda-dense" or "cuda-tile-sparse" on device pointers). Skipped without a GPU (or in
// builds without CUDA); test_simt_train runs the same kernels on the host. resnet-s and alexnet-s run a few
// steps; vgg-s also on cuda-tile-sparse.
#include <gtest/gtest.h>

#include "device_train_cases.h"
#include "spartan/gemm/tile_sparse.h"
#include "spartan/train/device.h"

using namespace spartan::train;
using device_cases::compare_with_cpu;

namespace {

const device_cases::DevicePath kCuda{make_cuda_executor,
                                     [](const std::string& name) { return spartan::gemm::make_engine(name); }};

bool have_gpu() { return cuda_available(); }

}  // namespace

TEST(CudaTraining, Lenet5LossesMatchCpuOver50Steps) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA GPU (or build without CUDA): CPU/CUDA agreement not checked";
  compare_with_cpu(kCuda, "lenet5", 64, "cuda-dense", 0.02, 50);
}

TEST(CudaTraining, Lenet5TileSparseLossesMatchCpuOver50Steps) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA GPU (or build without CUDA): CPU/CUDA agreement not checked";
  compare_with_cpu(kCuda, "lenet5", 64, "cuda-tile-sparse", 0.02, 50);  // device compaction of the activation operand
}

TEST(CudaTraining, VggSBatchNormDropoutLossesMatchCpuOver50Steps) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA GPU (or build without CUDA): CPU/CUDA agreement not checked";
  compare_with_cpu(kCuda, "vgg-s", 32, "cuda-dense", 0.05, 50);
}

// Residual add, projection shortcut (1x1 conv + BN), global average pool: a few steps.
TEST(CudaTraining, ResnetSLossesGradientsAndEvalMatchCpu) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA GPU (or build without CUDA): CPU/CUDA agreement not checked";
  compare_with_cpu(kCuda, "resnet-s", 16, "cuda-dense", 0.05, 8);
}

// Overlapping 3/2 max-pool: a few steps.
TEST(CudaTraining, AlexnetSLossesGradientsAndEvalMatchCpu) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA GPU (or build without CUDA): CPU/CUDA agreement not checked";
  compare_with_cpu(kCuda, "alexnet-s", 32, "cuda-dense", 0.05, 10);
}

// The tile-sparse engine (device compaction) on a model with batch norm and dropout.
TEST(CudaTraining, VggSTileSparseLossesMatchCpu) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA GPU (or build without CUDA): CPU/CUDA agreement not checked";
  compare_with_cpu(kCuda, "vgg-s", 32, "cuda-tile-sparse", 0.05, 20);
}
