// Internal: the 16 x 16 transposition of sixteen zmm registers, shared by the AVX-512 transposed store
// (cpu_kernels_avx512.cpp) and the AVX-512 transposed compaction (compact_fast.cpp). Include only from code built
// for x86-64 with GCC or Clang; callers are compiled for AVX-512F or a superset of it.
#pragma once
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

namespace spartan::gemm::detail {

// GCC 12's avx512fintrin.h builds these shuffles' unused pass-through operand from a self-initialised variable
// (_mm512_undefined_ps), which -Wuninitialized reports once they are inlined (GCC bug 105593, fixed in GCC 13).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
/// In place: on entry r[k] is row k of a 16 x 16 block, on return r[i] is its column i (r[i] lane k = the entry's
/// r[k] lane i). Four shuffle stages (unpack pairs of floats, then of doubles, then 128-bit lanes twice): the
/// values' bits are moved, never computed on (NaN payloads, -0.0 and denormals pass unchanged).
__attribute__((target("avx512f"))) inline void transpose16x16(__m512 r[16]) {
  __m512 t[16];
#pragma GCC unroll 8
  for (int k = 0; k < 8; ++k) {  // t[2k], t[2k + 1]: rows 2k, 2k + 1 interleaved (low / high pairs per lane)
    t[2 * k] = _mm512_unpacklo_ps(r[2 * k], r[2 * k + 1]);
    t[2 * k + 1] = _mm512_unpackhi_ps(r[2 * k], r[2 * k + 1]);
  }
#pragma GCC unroll 4
  for (int k = 0; k < 4; ++k) {  // r[4k + c]: rows 4k..4k + 3 of column c (+ 4 per 128-bit lane)
    const __m512d a = _mm512_castps_pd(t[4 * k]), b = _mm512_castps_pd(t[4 * k + 1]);
    const __m512d c = _mm512_castps_pd(t[4 * k + 2]), d = _mm512_castps_pd(t[4 * k + 3]);
    r[4 * k] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
    r[4 * k + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
    r[4 * k + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
    r[4 * k + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
  }
#pragma GCC unroll 4
  for (int c = 0; c < 4; ++c) {  // lanes: t[c] = lanes 0, 2 of rows 0-7, t[4 + c] = lanes 1, 3 (and rows 8-15)
    t[c] = _mm512_shuffle_f32x4(r[c], r[4 + c], 0x88);
    t[4 + c] = _mm512_shuffle_f32x4(r[c], r[4 + c], 0xdd);
    t[8 + c] = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0x88);
    t[12 + c] = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0xdd);
  }
#pragma GCC unroll 4
  for (int c = 0; c < 4; ++c) {  // r[i] = column i of the block, rows 0..15
    r[c] = _mm512_shuffle_f32x4(t[c], t[8 + c], 0x88);
    r[8 + c] = _mm512_shuffle_f32x4(t[c], t[8 + c], 0xdd);
    r[4 + c] = _mm512_shuffle_f32x4(t[4 + c], t[12 + c], 0x88);
    r[12 + c] = _mm512_shuffle_f32x4(t[4 + c], t[12 + c], 0xdd);
  }
}
#pragma GCC diagnostic pop

}  // namespace spartan::gemm::detail
#endif
