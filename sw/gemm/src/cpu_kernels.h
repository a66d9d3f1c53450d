// Internal: sparse micro-kernels of the CPU tile-sparse GEMM.
#pragma once
#include <cstddef>
#include <cstdint>

#include "spartan/gemm/tile_sparse.h"

namespace spartan::gemm::detail {


/// Out[p][0..Q) += sum_{k in [lo[p], hi[p])} e[k].v * D[e[k].r][0..Q) for p in [0, rows).
/// Out and D are row-major with strides ldo, ldd.
using GatherFn = void (*)(const std::uint32_t* lo, const std::uint32_t* hi, const Entry* e, int rows, const float* D,
                          std::size_t ldd, float* Out, std::size_t ldo, int Q);

void gather_portable(const std::uint32_t* lo, const std::uint32_t* hi, const Entry* e, int rows, const float* D,
                     std::size_t ldd, float* Out, std::size_t ldo, int Q);
/// AVX2 + FMA version; only call when cpu_has_avx2_fma().
void gather_avx2(const std::uint32_t* lo, const std::uint32_t* hi, const Entry* e, int rows, const float* D,
                 std::size_t ldd, float* Out, std::size_t ldo, int Q);
bool cpu_has_avx2_fma();

/// C[i][j] += T[j][i] for i < w, j < rows (T row stride ldt, C row stride ldc).
using TransposeAddFn = void (*)(const float* T, std::size_t ldt, int rows, int w, float* C, std::size_t ldc);
void transpose_add_portable(const float* T, std::size_t ldt, int rows, int w, float* C, std::size_t ldc);
void transpose_add_avx2(const float* T, std::size_t ldt, int rows, int w, float* C, std::size_t ldc);

}  // namespace spartan::gemm::detail
