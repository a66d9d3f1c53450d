// AVX-512 version of the scatter micro-kernel (cpu_kernels.h): the loop of scatter_ell_u8_avx2 with 16-float
// vectors, so that every output element receives the same FMAs in the same order (results bit-identical to
// the AVX2 kernel) with half the vector loads, FMAs and stores per non-zero. Chosen at run time
// (cpu_has_avx512(), TileSparseOptions::isa), never at compile time. The row gathers have no AVX-512
// version: 16-float versions of them measured no faster than AVX2 (docs/bench/gemm.md, twenty-second session).
#include <algorithm>
#include <cstdint>

#include "cpu_kernels.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define SPARTAN_X86 1
#endif

namespace spartan::gemm::detail {

#ifdef SPARTAN_X86
bool cpu_has_avx512() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

namespace {
#define SPARTAN_AVX512 __attribute__((target("avx512f,avx2,fma")))

// Number of values before the first +-0.0 of an ELL row of w slots (its padding; NaN is non-zero).
SPARTAN_AVX512 inline std::uint32_t ell_row_length_avx512(const float* vv, std::uint32_t w) {
  const __m512 z = _mm512_setzero_ps();
  for (std::uint32_t j = 0; j < w; j += 16) {
    const std::uint32_t cnt = std::min<std::uint32_t>(16, w - j);
    const __mmask16 live = __mmask16((1u << cnt) - 1u);
    const __mmask16 nz = _mm512_mask_cmp_ps_mask(live, _mm512_maskz_loadu_ps(live, vv + j), z, _CMP_NEQ_UQ);
    const unsigned zero_slots = unsigned(~nz) & live;
    if (zero_slots != 0) return j + std::uint32_t(__builtin_ctz(zero_slots));
  }
  return w;
}

template <int NV>
SPARTAN_AVX512 inline void scatter_block512(const std::uint8_t* idx, const float* val, std::uint32_t re,
                                            std::uint32_t w, __m512 va, const float* D, std::size_t ldd,
                                            __mmask16 tail_mask, float* O, std::size_t ldo) {
  for (std::uint32_t lr = 0; lr < re; ++lr) {
    const float* dr = D + std::size_t(lr) * ldd;
    __m512 d[NV];
    for (int i = 0; i < NV; ++i)
      d[i] = _mm512_mul_ps(va, i == NV - 1 ? _mm512_maskz_loadu_ps(tail_mask, dr + 16 * i) : _mm512_loadu_ps(dr + 16 * i));
    const std::uint8_t* ix = idx + std::size_t(lr) * w;
    const float* vv = val + std::size_t(lr) * w;
    const std::uint32_t n = w >= kCountedRowMinW ? ell_row_length_avx512(vv, w) : w;
    for (std::uint32_t j = 0; j < n; ++j) {
      const float v = vv[j];
      if (v == 0.0f) break;  // ELL padding ends the row (short tiles; never taken after the count)
      const __m512 vb = _mm512_set1_ps(v);
      float* o = O + std::size_t(ix[j]) * ldo;
      for (int i = 0; i < NV; ++i) _mm512_storeu_ps(o + 16 * i, _mm512_fmadd_ps(vb, d[i], _mm512_loadu_ps(o + 16 * i)));
    }
  }
}
}  // namespace

SPARTAN_AVX512 void scatter_ell_u8_avx512(const std::uint8_t* idx, const float* val, std::uint32_t re, std::uint32_t w,
                                          float alpha, const float* D, std::size_t ldd, int qn, float* O,
                                          std::size_t ldo) {
  const int nv = (qn + 15) / 16, tail = qn % 16;
  const __mmask16 mask = tail == 0 ? __mmask16(0xFFFF) : __mmask16((1u << tail) - 1u);
  const __m512 va = _mm512_set1_ps(alpha);
  switch (nv) {
    case 1: scatter_block512<1>(idx, val, re, w, va, D, ldd, mask, O, ldo); break;
    case 2: scatter_block512<2>(idx, val, re, w, va, D, ldd, mask, O, ldo); break;
    case 3: scatter_block512<3>(idx, val, re, w, va, D, ldd, mask, O, ldo); break;
    default: scatter_block512<4>(idx, val, re, w, va, D, ldd, mask, O, ldo); break;
  }
}
#else
bool cpu_has_avx512() { return false; }
void scatter_ell_u8_avx512(const std::uint8_t* idx, const float* val, std::uint32_t re, std::uint32_t w, float alpha,
                           const float* D, std::size_t ldd, int qn, float* O, std::size_t ldo) {
  scatter_ell_u8_portable(idx, val, re, w, alpha, D, ldd, qn, O, ldo);
}
#endif

}  // namespace spartan::gemm::detail
