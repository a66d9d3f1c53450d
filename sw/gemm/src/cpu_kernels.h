// Internal: sparse micro-kernels of the CPU tile-sparse GEMM.
#pragma once
#include <cstddef>
#include <cstdint>

namespace spartan::gemm::detail {

/// One non-zero of a band's row: the row index r of the dense operand D and the value (alpha folded in).
struct Entry {
  std::uint32_t r;
  float v;
};

/// Out[p][0..Q) += sum_{k in row p} e[k].v * D[e[k].r][0..Q) for p in [0, rows);
/// row p's entries are e[row_ptr[p] .. row_ptr[p+1]). Out and D are row-major with strides ldo, ldd.
using GatherFn = void (*)(const std::uint32_t* row_ptr, const Entry* e, int rows, const float* D, std::size_t ldd,
                          float* Out, std::size_t ldo, int Q);

void gather_portable(const std::uint32_t* row_ptr, const Entry* e, int rows, const float* D, std::size_t ldd,
                     float* Out, std::size_t ldo, int Q);
/// AVX2 + FMA version; only call when cpu_has_avx2_fma().
void gather_avx2(const std::uint32_t* row_ptr, const Entry* e, int rows, const float* D, std::size_t ldd, float* Out,
                 std::size_t ldo, int Q);
bool cpu_has_avx2_fma();

}  // namespace spartan::gemm::detail
