// The CUDA tile-sparse engine run on the host: its driver (src/cuda_tile_driver.h) and its kernels
// (src/cuda_tile_kernels.h) as the CUDA engine runs them, with host memory standing for device memory, OpenBLAS for
// cuBLAS, std::exclusive_scan for CUB, and spartan::simt::launch (spartan/common/simt.h) for the launches.
// Built in every configuration, with or without nvcc, for the tests (tests/test_cuda_simt.cpp; the training
// path's emulated CUDA executor pairs with them in sw/train/tests/test_simt_train.cpp): the emulation checks
// the kernels' indexing, barriers, shared-memory use and results on machines without a GPU. Not in
// engine_names() / make_engine(); gemm::last_tile_stats() returns their stats. Their
// compute_s / compact_s are host wall time of the emulation, not a model of a GPU's.
#pragma once
#include <memory>

#include "spartan/gemm/gemm.h"
#include "spartan/gemm/tile_sparse.h"

namespace spartan::gemm {

/// Opt-in shared memory per block of compute capability 9.0 (H100, H200): 227 KiB (CUDA C++ Programming
/// Guide, "Technical Specifications per Compute Capability"), what cudaDevAttrMaxSharedMemoryPerBlockOptin
/// reports there.
constexpr int kSm90SharedMemoryPerBlockOptinBytes = 232448;

/// "cuda-tile-sparse (simt)": the CUDA tile-sparse engine's code on the host, for a GPU that allows
/// `smem_max_bytes` of shared memory per block (which sets the P rows per block, so smaller values exercise
/// more chunks per band: gridDim.z). GemmCall::device_pointers calls take host pointers (the emulation's
/// device memory is the host's) and run the device compaction's kernels. Throws spartan::InputError on the
/// CUDA engine's bad options, or when the tile does not fit `smem_max_bytes` with one row of P.
std::unique_ptr<GemmEngine> make_simt_tile_sparse_engine(const TileSparseOptions& opt = {},
                                                         int smem_max_bytes = kSm90SharedMemoryPerBlockOptinBytes);
/// "cuda-dense (simt)": what the CUDA dense engine computes, OpenBLAS on host memory; accepts
/// GemmCall::device_pointers (host pointers, as above).
std::unique_ptr<GemmEngine> make_simt_dense_engine();
/// Stats of the last call of a simt engine; nullptr when `e` is not one.
const TileSparseStats* simt_last_tile_stats(const GemmEngine& e);

}  // namespace spartan::gemm
