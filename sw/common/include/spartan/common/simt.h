// One source for a CUDA kernel and its host emulation. A kernel written with the macros below compiles as a
// CUDA __global__ function under nvcc and as a plain inline host function under the host compiler, where
// spartan::simt::launch() runs it as CUDA would: every block of the grid, every thread of a block as a fiber
// on the calling thread, __syncthreads() a barrier of the block's threads, shared memory one buffer per block. So the
// CUDA engines' exact kernel code is tested on machines without a GPU (sw/gemm/tests/test_cuda_simt.cpp):
// its indexing, its barriers and its shared-memory use, under AddressSanitizer too. It does not model warps,
// timing, memory ordering without a barrier, or float contraction (nvcc fuses a * b + c into an FMA by
// default, the host compiler here does not): results agree with the GPU's within rounding, not bit for bit.
//
// In a kernel (namespace scope, or a function of one):
//   SPARTAN_KERNEL void k(Params p) {                   // __global__ under nvcc
//     SPARTAN_DYNAMIC_SHARED(float, smem);              // extern __shared__ float smem[]
//     SPARTAN_SHARED unsigned counts[64];               // __shared__ (host: one static array, see below)
//     ... threadIdx.x, blockIdx.y, blockDim.x, gridDim.z ...
//     SPARTAN_SYNCTHREADS();                            // __syncthreads()
//     simt::popc(x), simt::ffs(x)                       // __popc, __ffs
//   }
// with SPARTAN_SIMT_NAMES at namespace scope before it (host: brings threadIdx, blockIdx, blockDim and gridDim
// into the namespace; nvcc: nothing, they are built in).
//
// Host emulation (one OS thread, a fixed order: deterministic). Between two barriers each thread runs in turn,
// in index order or in reverse order, alternating from one barrier interval to the next and from one block
// to the next (so each interval of a kernel runs both ways over a grid of two or more blocks): a thread
// reading another's shared-memory write without a barrier between them then sees a wrong value (the NaN
// fill, or a stale one) in one of the two orders. Checked
// (launch() throws spartan::Error when a kernel breaks them):
//  - every thread of a block reaches the same __syncthreads() calls: a barrier in divergent code (threads
//    leaving the kernel while others wait at a barrier, or waiting at different counts) is reported with the
//    block index;
//  - dynamic shared memory is filled with 0xFF bytes (a float NaN) before each block, so a kernel that reads
//    shared memory it did not write in that block gives NaN rather than the previous block's values;
//  - it lies between two inaccessible pages, its 16-byte-rounded end against the upper one: an access past
//    the rounding faults (the process dies with SIGSEGV, as a GPU run would report an illegal address), a
//    write into the rounding or below the start is reported after the block (that slack, under one page, is
//    checked), and an access further below faults.
// SPARTAN_SHARED arrays are function-local statics on the host: blocks run one after another and launch()
// serialises whole launches (a process-wide lock), so they behave as one block's shared memory, but they are
// not poisoned between blocks.
#pragma once
#include <cstddef>
#include <functional>

#include "spartan/common/hd.h"

#ifdef __CUDACC__

// Kernels and the code around them go in `inline namespace SPARTAN_SIMT_ABI { ... }`: the nvcc build and the
// host emulation of one header then have different symbols (nvcc's host launch stub of a __global__ function
// carries the kernel's own name; a library holding both builds would otherwise link the stub where the host
// emulation calls the kernel).
#define SPARTAN_SIMT_ABI cuda_device
#define SPARTAN_KERNEL __global__
#define SPARTAN_SYNCTHREADS() __syncthreads()
#define SPARTAN_SHARED __shared__
#define SPARTAN_DYNAMIC_SHARED(T, name) extern __shared__ T name[]
#define SPARTAN_SIMT_NAMES

namespace spartan::simt {
__device__ inline int popc(unsigned x) { return __popc(x); }
__device__ inline int ffs(unsigned x) { return __ffs(int(x)); }
}  // namespace spartan::simt

#else

namespace spartan::simt {

/// CUDA's dim3 / uint3 (x, y, z; unused dimensions 1).
struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};

/// The calling emulated thread's indices (valid inside a kernel run by launch()).
extern thread_local Dim3 threadIdx, blockIdx, blockDim, gridDim;

/// __syncthreads(): waits until every thread of the block has called it the same number of times in this
/// block. Throws std::logic_error outside launch().
void syncthreads();
/// The block's dynamic shared memory (launch()'s dynamic_shared_bytes; 0xFF-filled before each block).
/// Throws std::logic_error outside launch().
void* dynamic_shared();

inline int popc(unsigned x) { return __builtin_popcount(x); }
inline int ffs(unsigned x) { return __builtin_ffs(int(x)); }

/// Runs `kernel` as the CUDA launch kernel<<<grid, block, dynamic_shared_bytes>>>: blocks one after another
/// (x fastest, then y, then z), the block's threads as fibers between barriers (see above). Returns when the
/// grid has finished. `uses_syncthreads` false: the kernel promises not to call syncthreads() (it throws
/// std::logic_error if it does), and each block's threads run one after another as plain calls (faster).
/// Throws spartan::InputError for a block or grid outside CUDA's limits (1..1024 threads, blockDim.z <= 64;
/// gridDim 1..2^31-1 x 1..65535 x 1..65535); spartan::Error when a block's threads reached different barriers; rethrows the first
/// exception a kernel thread threw. Launches are serialised process-wide.
void launch(Dim3 grid, Dim3 block, std::size_t dynamic_shared_bytes, bool uses_syncthreads,
            const std::function<void()>& kernel);

}  // namespace spartan::simt

#define SPARTAN_SIMT_ABI host_emulation
#define SPARTAN_KERNEL inline
#define SPARTAN_SYNCTHREADS() ::spartan::simt::syncthreads()
#define SPARTAN_SHARED static
#define SPARTAN_DYNAMIC_SHARED(T, name) T* name = static_cast<T*>(::spartan::simt::dynamic_shared())
#define SPARTAN_SIMT_NAMES          \
  using ::spartan::simt::threadIdx; \
  using ::spartan::simt::blockIdx;  \
  using ::spartan::simt::blockDim;  \
  using ::spartan::simt::gridDim;

#endif
