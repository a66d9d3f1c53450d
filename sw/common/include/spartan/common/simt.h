// One source for a CUDA kernel and its host emulation. A kernel written with the macros below compiles as a
// CUDA __global__ function under nvcc and as a plain inline host function under the host compiler, where
// spartan::simt::launch() runs it as CUDA would: every block of the grid, every thread of a block as a fiber
// on the calling thread, __syncthreads() a barrier of the block's threads, shared memory one buffer per block.
// So a kernel's exact code is tested on machines without a GPU: its indexing, its barriers and its
// shared-memory use, under AddressSanitizer too. First user: the CUDA tile-sparse GEMM
// (sw/gemm/src/cuda_tile_kernels.h, simt_engines.cpp; tests in sw/gemm/tests/test_cuda_simt.cpp, which also
// hold this emulator's own tests). The host build never compiles the kernel for a device: keep building it
// with nvcc too (code the host accepts, std:: calls or exceptions in a kernel, nvcc rejects).
//
// Writing a kernel (in a header included by the .cu file and by a host .cpp file):
//   namespace mine {
//   inline namespace SPARTAN_SIMT_ABI {       // required: nvcc's launch stub and the host function of one
//   SPARTAN_SIMT_NAMES                        // kernel must not share a symbol (see below)
//   SPARTAN_KERNEL void k(Params p) {                   // __global__ under nvcc
//     SPARTAN_DYNAMIC_SHARED(float, smem);              // extern __shared__ float smem[] (one buffer, 16-byte
//                                                       // aligned; carve several arrays out of it by hand)
//     SPARTAN_SHARED_ARRAY(unsigned, counts, 64);       // __shared__ unsigned counts[64] (host: see below)
//     ... threadIdx.x, blockIdx.y, blockDim.x, gridDim.z ...
//     SPARTAN_SYNCTHREADS();                            // __syncthreads()
//     simt::popc(x), simt::ffs(x)                       // __popc, __ffs (device-only under nvcc)
//     simt::atomic_add(&counter, v)                     // atomicAdd (returns the old value)
//   }
//   SPARTAN_DEVICE float helper(...);                   // a __device__ function called from kernels
//   }}
// and launch it with k<<<grid, block, smem>>>(p) in the .cu file, and on the host with
//   simt::launch({gx, gy, gz}, {bx, by, bz}, smem, uses_syncthreads, [&] { k(p); });
// (Dim3 is an aggregate: unsigned values, unused dimensions 1). Not provided: atomics other than atomic_add,
// warp functions (__shfl*, __ballot_sync, __syncwarp), __syncthreads_count / _and / _or, cooperative groups,
// streams, device math intrinsics, and any limit on dynamic shared memory (the engine checks its own, e.g. the
// 48 KiB opt-in). Second user: the training path's CUDA executor (sw/train/src/cuda_ops_kernels.h).
//
// Host emulation (one OS thread, a fixed order: deterministic; threads switch only at barriers, so races
// between threads that no barrier separates are exposed only through the orders below). Blocks run one after
// another, in index order (x fastest, then y, then z) in the process's even-numbered launches and in reverse
// order in its odd-numbered ones: a kernel whose blocks read one another's writes, or write the same element,
// gives results that change from one launch to the next (a block cannot wait for another on a GPU either).
// Not exposed: a read-modify-write of one element by two blocks without an atomic (blocks never overlap here,
// so no update is lost). Between two barriers each thread runs in turn, in
// index order or in reverse order, alternating from one barrier interval to the next and from one block to
// the next; launches without barriers alternate per block. Over a grid of two or more blocks each interval
// thus runs both ways, and a thread reading another's shared-memory write without a barrier between them sees
// a wrong value (the 0xFF fill below, or a stale value) in one of the two orders; a one-block launch runs
// each interval one way only. Such a wrong value is not reported by itself: it shows in the kernel's results.
// Checked (launch() throws spartan::Error, exit_code() 1, when a kernel breaks them):
//  - barriers in divergent code: threads that end while others wait at a barrier, or that wait at different
//    SPARTAN_SYNCTHREADS() call sites, are reported with the block index and the barriers' file:line;
//  - shared memory, dynamic and SPARTAN_SHARED_ARRAY, is filled with 0xFF bytes (a float or double NaN, an
//    all-ones integer) before each block, so a kernel that reads shared memory it did not write in that block
//    gives NaN rather than zeros or the previous block's values;
//  - it lies between two inaccessible pages, its 16-byte-rounded end against the upper one: an access past
//    the rounding faults (the process dies with SIGSEGV, as a GPU run would report an illegal address); the
//    rounding and the slack below the start (under one page) hold 0xFF bytes, so a read there gives NaN and a
//    write there is reported after the block (unless it wrote 0xFF bytes); an access further below faults.
//    (In a launch with no dynamic shared memory, the slack is checked only after blocks that called
//    dynamic_shared(), as SPARTAN_DYNAMIC_SHARED does.)
// SPARTAN_SHARED_ARRAY arrays are function-local statics on the host: blocks run one after another and
// launch() serialises whole launches (a process-wide lock), so they behave as one block's shared memory; the
// first thread of a block to reach the declaration fills the array (static_shared()); threads that reach it
// later in the same block leave it as it is.
// Atomics: atomic_add runs in the emulation's fixed thread order (threads run one at a time, so a plain
// read-modify-write is atomic there): integer sums are exact as on a GPU, but a float or double atomic sum is
// deterministic here and not on a GPU, whose order varies from run to run.
// Floating point: whether a * b + c is fused depends on the compilers' settings (nvcc fuses by default, unless
// built with --fmad=false; the host build, for baseline x86-64 without FMA, does not), so results agree with
// a GPU's within rounding unless both sides are kept from fusing. Cost: a plain call per thread per block
// without barriers; with barriers a few stack switches per thread per interval (test_gemm_simt takes about
// 12 s on one core; builds with CET shadow stacks use ucontext, a system call per switch: several times
// slower).
#pragma once
#include <cstddef>
#include <functional>
#include <type_traits>

#include "spartan/common/hd.h"

#ifdef __CUDACC__

// Kernels and the code around them go in `inline namespace SPARTAN_SIMT_ABI { ... }`: the nvcc build and the
// host emulation of one header then have different symbols (nvcc's host launch stub of a __global__ function
// carries the kernel's own name; a library holding both builds would otherwise link the stub where the host
// emulation calls the kernel).
#define SPARTAN_SIMT_ABI cuda_device
#define SPARTAN_KERNEL __global__
#define SPARTAN_SYNCTHREADS() __syncthreads()
#define SPARTAN_SHARED_ARRAY(T, name, n) __shared__ T name[n]
#define SPARTAN_DYNAMIC_SHARED(T, name) extern __shared__ T name[]
#define SPARTAN_SIMT_NAMES
#define SPARTAN_DEVICE __device__ inline

namespace spartan::simt {
__device__ inline int popc(unsigned x) { return __popc(x); }
__device__ inline int ffs(unsigned x) { return __ffs(int(x)); }
/// atomicAdd for the types CUDA has it for (int, unsigned, unsigned long long, float, double on sm_60+).
template <class T>
__device__ inline T atomic_add(T* p, T v) {
  return atomicAdd(p, v);
}
}  // namespace spartan::simt

#else

namespace spartan::simt {

/// CUDA's dim3 / uint3 (x, y, z; unused dimensions 1).
struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};

/// The calling emulated thread's indices (valid inside a kernel run by launch()).
extern thread_local Dim3 threadIdx, blockIdx, blockDim, gridDim;

/// __syncthreads(): waits until every thread of the block has reached a barrier; they must all wait at the
/// same call (`file`, `line`: SPARTAN_SYNCTHREADS passes __FILE__ and __LINE__; null / 0 for calls without
/// them, which compare equal among themselves), else launch() reports a barrier in divergent code. Throws
/// std::logic_error outside launch() or in a launch without uses_syncthreads.
void syncthreads(const char* file = nullptr, int line = 0);
/// SPARTAN_SHARED_ARRAY's host side: fills `array` (`bytes`) with 0xFF bytes the first time a thread of the
/// current block reaches it, then never again in that block. Throws std::logic_error outside launch().
void static_shared(void* array, std::size_t bytes);
/// The block's dynamic shared memory (launch()'s dynamic_shared_bytes; 0xFF-filled before each block).
/// Throws std::logic_error outside launch().
void* dynamic_shared();

inline int popc(unsigned x) { return __builtin_popcount(x); }
inline int ffs(unsigned x) { return __builtin_ffs(int(x)); }
/// atomicAdd: adds v to *p and returns the old value. The emulated threads run one at a time on one OS thread
/// and launches are serialised, so a plain read-modify-write is atomic here (see the header on float sums).
/// Only CUDA's atomicAdd types are accepted, so that code that builds here builds under nvcc
/// (std::uint64_t is unsigned long on Linux: use unsigned long long).
template <class T>
inline T atomic_add(T* p, T v) {
  static_assert(std::is_same_v<T, int> || std::is_same_v<T, unsigned> || std::is_same_v<T, unsigned long long> ||
                    std::is_same_v<T, float> || std::is_same_v<T, double>,
                "simt::atomic_add: CUDA's atomicAdd takes int, unsigned, unsigned long long, float or double");
  const T old = *p;
  *p = old + v;
  return old;
}

/// Runs `kernel` as the CUDA launch kernel<<<grid, block, dynamic_shared_bytes>>>: blocks one after another
/// (x fastest, then y, then z; reversed in every other launch), the block's threads as fibers between barriers
/// (see above). Returns when the
/// grid has finished. `uses_syncthreads` false: the kernel promises not to call syncthreads() (it throws
/// std::logic_error if it does), and each block's threads run one after another as plain calls (faster).
/// Throws spartan::InputError for a block or grid outside CUDA's limits (1..1024 threads, blockDim.z <= 64;
/// gridDim 1..2^31-1 x 1..65535 x 1..65535); spartan::Error (exit_code() 1: a kernel bug) when a block's
/// threads reached different barriers or a block wrote outside its dynamic shared memory; std::logic_error when
/// called from a kernel or when a kernel of a launch without uses_syncthreads reaches a barrier; rethrows
/// the first exception a kernel thread threw. After an error the block's other threads are abandoned where
/// they stopped (their locals' destructors do not run). Each thread of a launch with barriers has a stack of
/// 256 KiB (1 MiB under AddressSanitizer) above an inaccessible page, so an overflow faults; fibers start with
/// the caller's MXCSR and x87 control word (rounding and denormal modes). Launches are serialised
/// process-wide.
void launch(Dim3 grid, Dim3 block, std::size_t dynamic_shared_bytes, bool uses_syncthreads,
            const std::function<void()>& kernel);

}  // namespace spartan::simt

#define SPARTAN_SIMT_ABI host_emulation
#define SPARTAN_KERNEL inline
#define SPARTAN_DEVICE inline
#define SPARTAN_SYNCTHREADS() ::spartan::simt::syncthreads(__FILE__, __LINE__)
#define SPARTAN_SHARED_ARRAY(T, name, n) \
  static T name[n];                       \
  ::spartan::simt::static_shared(name, sizeof(name))
#define SPARTAN_DYNAMIC_SHARED(T, name) T* name = static_cast<T*>(::spartan::simt::dynamic_shared())
#define SPARTAN_SIMT_NAMES          \
  using ::spartan::simt::threadIdx; \
  using ::spartan::simt::blockIdx;  \
  using ::spartan::simt::blockDim;  \
  using ::spartan::simt::gridDim;

#endif
