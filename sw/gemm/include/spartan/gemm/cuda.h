// CUDA GEMM engines (built only with SPARTAN_HAVE_CUDA): cuBLAS SGEMM and the tile-sparse GEMM on the
// one tile-sparse format (spartan/format/tile_format.h), with the same per-tile dispatch as the CPU
// engine: nnz == 0 skipped, DENSE tiles through a shared-memory dense tile kernel, ELL/BITMAP tiles
// decoded into a shared-memory non-zero list and multiplied non-zero by non-zero. Like the CPU engine, a
// call (alpha != 0) whose tiles are all DENSE, or (TileSparseOptions::whole_call_guard) whose sparse operand
// has density >= guard_fraction * threshold, is one cuBLAS SGEMM of the whole call (TileSparseStats::
// full_dense); so zeros of the sparse operand meet Inf / NaN of the dense one as in the CPU engine: NaN from
// the SGEMM and from DENSE tiles, nothing from zero tiles and the zeros of ELL/BITMAP tiles (skipped).
// The CPU-kernel choices isa, num_threads, transposed_kernel, rows_kernel and store_runs_min_bytes are
// ignored (the CUDA kernel has one variant); dense_calls is 1 for the whole-call SGEMM, else 0.
// The tile kernel's blocks each hold up to 32 rows of P by 128 columns of accumulators: an 8 x 256 tile needs
// 45,060 bytes of shared memory per block (all GPUs), a 4096-element tile such as the default 16 x 256 up to
// 69,636 (opted in above 48 KiB; fewer rows per block where the GPU allows less, e.g. 64 KiB on sm_75).
//
// GemmCall pointers are host pointers (as for the CPU engines) unless GemmCall::device_pointers is set:
//  - host pointers: each run() copies operands to the device and C back; the tile-sparse engine compacts the
//    sparse operand on the host (format::compact) and uploads it; compact_s is that host time.
//  - device pointers (the device-resident training path): nothing is copied; the tile-sparse engine compacts
//    the sparse operand on the device into exactly format::compact()'s bytes (DENSE tiles in place; per-tile
//    functions in sw/gemm/src/tile_compact_hd.h, one thread per tile, CUB exclusive scan of the payload sizes)
//    and compact_s is the device time of that compaction (CUDA events). The tile headers are copied back for
//    the tile statistics.
// compute_s is the device time of the GEMM kernels only (CUDA events), excluding transfers and compaction.
// All work is issued on the legacy default stream; run() returns after the GEMM has finished.
// The tile-sparse engine's kernels and host steps (src/cuda_tile_kernels.h, src/cuda_tile_driver.h) also run
// on the host, without a GPU, under spartan::simt (spartan/gemm/simt.h; tests/test_cuda_simt.cpp).
#pragma once
#include <cstddef>
#include <memory>
#include <string>

#include "spartan/gemm/tile_sparse.h"

namespace spartan::gemm {

/// Elements a row-major BLAS operand of `rows` x `cols` with row stride `ld` (>= cols) occupies:
/// (rows - 1) * ld + cols, 0 when rows or cols is 0. BLAS guarantees only this span (the last row need not be
/// padded to ld), so the host-pointer path copies exactly it. Host function (no GPU needed).
inline std::size_t blas_stored_elems(int rows, int cols, int ld) {
  return rows > 0 && cols > 0 ? std::size_t(rows - 1) * std::size_t(ld) + std::size_t(cols) : 0;
}

/// Number of CUDA devices; 0 when the driver/runtime reports none or fails (no exception).
int cuda_device_count();
/// Empty when a CUDA GPU is present and this build has kernels for its architecture (the CUDA engines and
/// the training executor can run); otherwise why not ("no CUDA GPU available", or "unsupported GPU
/// architecture sm_XY ..." when CMAKE_CUDA_ARCHITECTURES has no image for device 0). No exception.
std::string cuda_unusable_reason();

/// cuBLAS SGEMM engine ("cuda-dense"). Throws spartan::Error when no GPU is usable (cuda_unusable_reason()).
std::unique_ptr<GemmEngine> make_cuda_dense_engine();
/// CUDA tile-sparse engine ("cuda-tile-sparse"); options as for the CPU engine (the CPU-kernel choices
/// ignored, see above). Throws spartan::Error when no GPU is usable, spartan::InputError on bad options
/// (tiles over 4096 elements or a side over 1024, a format other than ELL/BITMAP, or a tile whose block does
/// not fit the GPU's shared memory even with one row of P; checked here, before any call).
std::unique_ptr<GemmEngine> make_cuda_tile_sparse_engine(const TileSparseOptions& opt = {});
/// Stats of the last call of a CUDA engine (tile counts for the tile-sparse one, compute_s for both);
/// nullptr when `e` is not a CUDA engine.
const TileSparseStats* cuda_last_tile_stats(const GemmEngine& e);

/// Times C = op(A) * B_sparse with cuSPARSE SpMM (CSR of the activation operand B, op(B) = N, row-major
/// A [M x K], B [K x N], C [M x N]); returns device seconds per call (CUDA events, best of `repeats`).
/// For the benchmark's comparison. Throws spartan::Error on CUDA/cuSPARSE failure.
double cusparse_spmm_seconds(const float* A, const float* B, float* C, int M, int N, int K, int repeats);

}  // namespace spartan::gemm
