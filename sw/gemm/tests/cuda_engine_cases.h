// The CUDA engines' test cases, written once against a backend: the GPU (test_cuda.cpp, where a usable GPU
// exists) and the host emulation of the same driver and kernels (test_cuda_simt.cpp, everywhere; see
// spartan/gemm/simt.h). Each binary instantiates CudaEngineCases with its backend.
#pragma once
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "spartan/gemm/gemm.h"
#include "spartan/gemm/tile_sparse.h"

namespace spartan::gemm::cuda_cases {

/// A float array in the backend's device memory.
struct DeviceArray {
  virtual ~DeviceArray() = default;
  float* p = nullptr;
  virtual std::vector<float> host() const = 0;
};

struct CudaBackend {
  std::string name;
  std::function<std::string()> unusable_reason;  ///< empty when the backend can run here
  std::function<std::unique_ptr<GemmEngine>()> dense;
  std::function<std::unique_ptr<GemmEngine>(const TileSparseOptions&)> tile;
  std::function<const TileSparseStats*(const GemmEngine&)> stats;
  std::function<std::shared_ptr<DeviceArray>(const std::vector<float>&)> upload;  ///< device copy
};

class CudaEngineCases : public ::testing::TestWithParam<CudaBackend> {
 protected:
  const CudaBackend& be() const { return GetParam(); }
};

/// How GoogleTest prints a backend (its name, instead of the struct's bytes).
inline void PrintTo(const CudaBackend& b, std::ostream* os) { *os << b.name; }

/// GoogleTest's name of an instantiation: the backend's name.
inline std::string backend_name(const ::testing::TestParamInfo<CudaBackend>& info) { return info.param.name; }

/// Tiles of every kind the CUDA engine allows (sides 1..1024, <= 4096 elements): extreme aspect ratios, the
/// default and its transpose.
struct TileShape {
  std::uint32_t r, c;
};
inline const std::vector<TileShape> kAllowedTileExamples = {{1, 1024}, {1024, 1}, {4, 1024}, {64, 64}, {16, 256}, {256, 16}};

/// Checks `e` against OpenBLAS on random operands (the sparse one with zeros at `sparsity`), alpha 1.5,
/// beta 0.5. Tolerance as in test_tile_sparse.cpp: 8 K 2^-24 (|alpha| sum_k |a_ik b_kj| + |beta c0_ij|).
void check_engine(GemmEngine& e, SparseOperand sp, Op oa, Op ob, int M, int N, int K, double sparsity,
                  std::mt19937& rng);

}  // namespace spartan::gemm::cuda_cases
