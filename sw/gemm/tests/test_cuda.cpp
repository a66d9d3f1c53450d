// The CUDA engines on a GPU: the shared cases (cuda_engine_cases.cpp) with cuBLAS and the CUDA tile-sparse
// engine, skipped (GTEST_SKIP) when no CUDA GPU is present or this build has no kernels for its architecture
// (cuda_unusable_reason()); and the GPU engines' own factory and no-GPU paths. The same cases run on the
// host emulation of the kernels in test_cuda_simt.cpp.
#include <gtest/gtest.h>
#include <cuda_runtime_api.h>

#include <string>
#include <vector>

#include "cuda_engine_cases.h"
#include "spartan/common/error.h"
#include "spartan/gemm/cuda.h"

using namespace spartan::gemm;

namespace {

/// Device copy of a host vector (freed on destruction).
struct GpuArray final : cuda_cases::DeviceArray {
  std::size_t n = 0;
  explicit GpuArray(const std::vector<float>& h) : n(h.size()) {
    if (cudaMalloc(reinterpret_cast<void**>(&p), n * sizeof(float)) != cudaSuccess) throw spartan::Error("cudaMalloc failed");
    if (cudaMemcpy(p, h.data(), n * sizeof(float), cudaMemcpyHostToDevice) != cudaSuccess) {
      cudaFree(p);  // the destructor does not run when the constructor throws
      throw spartan::Error("cudaMemcpy H2D failed");
    }
  }
  ~GpuArray() override { cudaFree(p); }
  GpuArray(const GpuArray&) = delete;
  GpuArray& operator=(const GpuArray&) = delete;
  std::vector<float> host() const override {
    std::vector<float> h(n);
    if (cudaMemcpy(h.data(), p, n * sizeof(float), cudaMemcpyDeviceToHost) != cudaSuccess)
      throw spartan::Error("cudaMemcpy D2H failed");
    return h;
  }
};

cuda_cases::CudaBackend gpu_backend() {
  cuda_cases::CudaBackend b;
  b.name = "Gpu";
  b.unusable_reason = [] { return cuda_unusable_reason(); };
  b.dense = [] { return make_cuda_dense_engine(); };
  b.tile = [](const TileSparseOptions& o) { return make_cuda_tile_sparse_engine(o); };
  b.stats = [](const GemmEngine& e) { return cuda_last_tile_stats(e); };
  b.upload = [](const std::vector<float>& h) -> std::shared_ptr<cuda_cases::DeviceArray> {
    return std::make_shared<GpuArray>(h);
  };
  return b;
}

}  // namespace

namespace spartan::gemm::cuda_cases {
INSTANTIATE_TEST_SUITE_P(Cuda, CudaEngineCases, ::testing::Values(gpu_backend()), backend_name);
}  // namespace spartan::gemm::cuda_cases

TEST(CudaGemm, FactoryNamesAndBadOptions) {
  if (const std::string why = cuda_unusable_reason(); !why.empty()) GTEST_SKIP() << why;
  EXPECT_EQ(make_engine("cuda-dense")->name(), "cuda-dense");
  EXPECT_EQ(make_engine("cuda-tile-sparse")->name(), "cuda-tile-sparse");
  TileSparseOptions bad;
  bad.tile_rows = 128;
  bad.tile_cols = 128;
  EXPECT_THROW(make_cuda_tile_sparse_engine(bad), spartan::InputError);
}

TEST(CudaGemm, NoGpuIsReportedNotCrashed) {
  // Holds on every machine: without a GPU the engines throw spartan::Error instead of crashing.
  if (cuda_device_count() > 0) GTEST_SKIP() << "a GPU is present; this checks the no-GPU path";
  EXPECT_THROW(make_cuda_dense_engine(), spartan::Error);
  EXPECT_THROW(make_cuda_tile_sparse_engine(), spartan::Error);
}

// Host function (runs without a GPU): the BLAS span of a row-major operand is (rows - 1) * ld + cols.
TEST(CudaGemm, BlasStoredElemsIsTheBlasSpan) {
  EXPECT_EQ(blas_stored_elems(0, 5, 8), 0u);
  EXPECT_EQ(blas_stored_elems(3, 0, 8), 0u);
  EXPECT_EQ(blas_stored_elems(1, 5, 8), 5u);       // one row: no padding needed
  EXPECT_EQ(blas_stored_elems(3, 5, 8), 21u);      // 2 * 8 + 5, not 3 * 8
  EXPECT_EQ(blas_stored_elems(3, 5, 5), 15u);      // tight
  EXPECT_EQ(blas_stored_elems(70000, 70000, 70000), std::size_t(69999) * 70000 + 70000);  // no int overflow
}
