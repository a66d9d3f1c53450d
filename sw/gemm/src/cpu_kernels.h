// Internal: sparse micro-kernels of the CPU tile-sparse GEMM (loop structure: tile_sparse.cpp and
// sw/gemm/README.md).
#pragma once
#include <cstddef>
#include <cstdint>

#include "spartan/gemm/tile_sparse.h"

namespace spartan::gemm::detail {

/// Row-gather micro-kernel. For p in [0, rows):
///   Out[p][0..Q) (+)= sum_{k in [lo[p], hi[p])} e[k].v * D[e[k].r][0..Q)
/// `overwrite`: the accumulation starts from 0 and every row is written (also rows without entries);
/// otherwise it starts from Out and rows without entries are not touched. Out and D are row-major with
/// strides ldo, ldd (elements).
using GatherFn = void (*)(const std::uint32_t* lo, const std::uint32_t* hi, const Entry* e, int rows, const float* D,
                          std::size_t ldd, float* Out, std::size_t ldo, int Q, bool overwrite);

void gather_portable(const std::uint32_t* lo, const std::uint32_t* hi, const Entry* e, int rows, const float* D,
                     std::size_t ldd, float* Out, std::size_t ldo, int Q, bool overwrite);
/// AVX2 + FMA version; only call when cpu_has_avx2_fma().
void gather_avx2(const std::uint32_t* lo, const std::uint32_t* hi, const Entry* e, int rows, const float* D,
                 std::size_t ldd, float* Out, std::size_t ldo, int Q, bool overwrite);
bool cpu_has_avx2_fma();

/// C[i][j] = T[j][i] + (beta == 0 ? 0 : beta * C[i][j]) for i < w, j < rows (T row stride ldt, C row
/// stride ldc). beta == 0 never reads C (BLAS semantics); beta == 0 also serves as a plain transpose.
using TransposeStoreFn = void (*)(const float* T, std::size_t ldt, int rows, int w, float* C, std::size_t ldc,
                                  float beta);
void transpose_store_portable(const float* T, std::size_t ldt, int rows, int w, float* C, std::size_t ldc,
                              float beta);
void transpose_store_avx2(const float* T, std::size_t ldt, int rows, int w, float* C, std::size_t ldc, float beta);

}  // namespace spartan::gemm::detail

namespace spartan::gemm::detail {

/// Scatter micro-kernel (S = stored^T: one stored row r of a sparse tile spreads over rows p of Out).
/// For r in [0, nrows): with d = D + r * ldd (qn <= kScatterQ floats, held in registers),
///   for j in [0, w) until the first value == +-0.0 (ELL padding):  T[idx[j]][0..qn) += alpha * val[j] * d
/// where row r's slots are idx + r * w, val + r * w. T has rows of round_up(qn, 8) floats, 32-byte aligned.
inline constexpr int kScatterQ = 16;
template <class IdxT>
using ScatterFn = void (*)(const IdxT* idx, const float* val, std::uint32_t w, int nrows, const float* D,
                           std::size_t ldd, float alpha, float* T, int qn);
void scatter_portable(const std::uint8_t* idx, const float* val, std::uint32_t w, int nrows, const float* D,
                      std::size_t ldd, float alpha, float* T, int qn);
void scatter_portable(const std::uint16_t* idx, const float* val, std::uint32_t w, int nrows, const float* D,
                      std::size_t ldd, float alpha, float* T, int qn);
/// AVX2 + FMA versions; only call when cpu_has_avx2_fma().
void scatter_avx2(const std::uint8_t* idx, const float* val, std::uint32_t w, int nrows, const float* D,
                  std::size_t ldd, float alpha, float* T, int qn);
void scatter_avx2(const std::uint16_t* idx, const float* val, std::uint32_t w, int nrows, const float* D,
                  std::size_t ldd, float alpha, float* T, int qn);

}  // namespace spartan::gemm::detail
