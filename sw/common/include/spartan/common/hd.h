// SPARTAN_HD marks a function compiled for both the host and the device: `__host__ __device__` under nvcc,
// nothing for the host compiler. Used by the shared per-element functions whose CUDA kernels and CPU
// reference twins must be the same code (sw/train kernels_hd.h, sw/gemm tile_compact_hd.h).
#pragma once

#ifndef SPARTAN_HD
#ifdef __CUDACC__
#define SPARTAN_HD __host__ __device__
#else
#define SPARTAN_HD
#endif
#endif
