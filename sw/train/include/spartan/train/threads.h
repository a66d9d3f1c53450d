// Thread control for the training engine: OpenMP (im2col, col2im, element-wise loops) and OpenBLAS
// (dense GEMMs; Debian's pthread build) use the same count. The two pools take turns, never nest.
// Idle OpenMP threads spin for a while after each loop (libgomp's default); see use_passive_openmp_wait().
#pragma once

#include <cstddef>

namespace spartan::train {

/// Smallest loop, in elements read or written, for which a training layer's OpenMP region uses more than one
/// thread; smaller loops run on the calling thread alone (the `if` clause: a team of one, no join with other
/// threads, about 1-2 us of libgomp bookkeeping). A fork/join costs microseconds, and on an oversubscribed machine
/// every join can wait a scheduler time slice for a descheduled team member: four copies of the BasicBlock
/// finite-difference check (tensors of 3 x 3 x 4 x 4, 12 991 regions per run, counted) took 30-77 s side by side
/// on the 2-vCPU VM with two-thread regions and 4.6-4.8 s with one thread (docs/reliability.md, finding 115).
/// The crossover on that VM (probe, median of 2001 calls, load average about 6): a ReLU over 16 384 floats took
/// 6.6 us serially and 6.9 us in a two-thread region, over 32 768 floats 11.9 and 7.8 us. Results do not depend
/// on the threshold: every guarded loop writes disjoint elements, or sums per element in a fixed order (the
/// integer zero count of zero_fraction() is exact in any order).
inline constexpr std::size_t kMinParallelElements = std::size_t(1) << 15;
/// True when a loop over `elements` elements is worth a parallel region (elements >= kMinParallelElements).
inline bool parallel_worth(std::size_t elements) { return elements >= kMinParallelElements; }

/// Sets the OpenMP and OpenBLAS thread counts (1 <= n <= spartan::kMaxThreads = 1024). Throws
/// spartan::InputError otherwise.
void set_num_threads(int n);
/// Current OpenMP thread count.
int num_threads();

/// libgomp's idle threads spin after each parallel loop and keep their cores from OpenBLAS's pthread
/// workers: on the 2-core VM a dense OpenBLAS GEMM timed after a tile-sparse one took 2-4 ms instead of
/// 0.06-0.09 ms, and vgg-s training ran 1.4-1.7x slower (docs/bench/train.md, 2026-12-01). libgomp reads
/// OMP_WAIT_POLICY when it is loaded, before main(), so when neither OMP_WAIT_POLICY nor GOMP_SPINCOUNT is
/// set this re-executes the program once (/proc/self/exe, the same argv) with OMP_WAIT_POLICY=passive. It
/// returns when either variable is set (the user's choice is kept) or the re-execution fails.
void use_passive_openmp_wait(char** argv);

}  // namespace spartan::train
