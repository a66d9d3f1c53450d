// Thread control for the training engine: OpenMP (im2col, col2im, element-wise loops) and OpenBLAS
// (dense GEMMs; Debian's pthread build) use the same count. The two pools take turns, never nest.
// Idle OpenMP threads spin for a while after each loop (libgomp's default); see use_passive_openmp_wait().
#pragma once

namespace spartan::train {

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
