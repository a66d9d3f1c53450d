// AVX-512 micro-kernels (cpu_kernels.h), chosen at run time (cpu_has_avx512(), TileSparseOptions::isa), never
// at compile time:
// - the scatter kernel: the loop of scatter_ell_u8_avx2 with 16-float vectors, so that every output element
//   receives the same FMAs in the same order (results bit-identical to the AVX2 kernel) with half the vector
//   loads, FMAs and stores per non-zero;
// - the direct row gather in wide panels (up to kWideGatherQ = 384 floats, 24 zmm accumulators per output
//   row): each ELL row is walked once per panel instead of once per 64-float panel; bit-identical to
//   gather_ell_u8_avx2. The list-based row gather has no AVX-512 version: 16-float versions of it measured
//   no faster than AVX2 (docs/bench/gemm.md, twenty-second session).
// - the transposed store (16x16 blocks; packs of a transposed dense operand and stores of C^T), bit-identical to
//   transpose_store_avx2.
#include <algorithm>
#include <cassert>
#include <cstdint>
#include <type_traits>

#include "cpu_kernels.h"
#include "payload_prefetch.h"
#include "transpose16_avx512.h"

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
    for (int i = 0; i < NV; ++i) _mm_prefetch(scatter_prefetch_address(dr, ldd, i), _MM_HINT_T0);
    if (val[std::size_t(lr) * w] == 0.0f) continue;  // an empty row (ELL padding first): its D row is not read
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

// The wide gather's payload prefetch (payload_prefetch.h) with the x86 prefetch into L1.
class PayloadPrefetch {
 public:
  PayloadPrefetch(const EllTileRef* t, int nt, int rows, int steps) : walk_(t, nt, rows, steps) {}
  SPARTAN_AVX512 void step() {
    walk_.step([](std::uintptr_t a) { _mm_prefetch(reinterpret_cast<const char*>(a), _MM_HINT_T0); });
  }

 private:
  PayloadLineWalk walk_;
};

// PayloadPrefetch's stand-in where the gather prefetches nothing (the kernel's code as before the prefetch).
struct NoPrefetch {
  NoPrefetch(const EllTileRef*, int, int, int) {}
  void step() {}
};

// Wide direct row gather: NV zmm accumulators per output row (the last one masked to qn), the row's ELL
// entries walked once for the whole panel; each element receives the FMAs of gather_ell_u8_avx2 in the same
// order (one chain per element, alpha applied at the end), so results are bit-identical to it. PF: prefetch
// the payload of `next` (PayloadPrefetch); without it the kernel has no prefetch state at all.
template <int NV, bool PF>
SPARTAN_AVX512 inline void gather_ell_wide(const EllTileRef* t, int nt, int rows, float alpha, const float* D,
                                           std::size_t ldd, float* Out, std::size_t ldo, __mmask16 mask,
                                           bool overwrite, const EllTileRef* next, int next_nt, int next_rows) {
  const __m512 va = _mm512_set1_ps(alpha);
  std::conditional_t<PF, PayloadPrefetch, NoPrefetch> pf(next, next_nt, next_rows, rows);
  for (int lr = 0; lr < rows; ++lr) {
    pf.step();
    __m512 acc[NV];
#pragma GCC unroll 32
    for (int i = 0; i < NV; ++i) acc[i] = _mm512_setzero_ps();
    bool any = false;
    for (int ti = 0; ti < nt; ++ti) {
      const std::uint32_t w = t[ti].w;
      const std::uint8_t* ix = t[ti].idx + std::size_t(lr) * w;
      const float* vv = t[ti].val + std::size_t(lr) * w;
      const float* Db = D + std::size_t(t[ti].base) * ldd;
      const std::uint32_t n = w >= kCountedRowMinW ? ell_row_length_avx512(vv, w) : w;
      for (std::uint32_t j = 0; j < n; ++j) {
        const float v = vv[j];
        if (v == 0.0f) break;  // ELL padding ends the row (short tiles; never taken after the count)
        any = true;
        const __m512 vb = _mm512_set1_ps(v);
        const float* d = Db + std::size_t(ix[j]) * ldd;
#pragma GCC unroll 32
        for (int i = 0; i < NV - 1; ++i) acc[i] = _mm512_fmadd_ps(vb, _mm512_loadu_ps(d + 16 * i), acc[i]);
        acc[NV - 1] = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(mask, d + 16 * (NV - 1)), acc[NV - 1]);
      }
    }
    float* out = Out + std::size_t(lr) * ldo;
    if (!overwrite && !any) continue;
#pragma GCC unroll 32
    for (int i = 0; i < NV; ++i) {
      const __mmask16 m = i == NV - 1 ? mask : __mmask16(0xFFFF);
      // The masked forms are opaque to the compiler's mul + add contraction into an FMA (the AVX2 kernel's
      // multiply and add stay separate), which would change the last bit.
      __m512 r = _mm512_maskz_mul_ps(__mmask16(0xFFFF), va, acc[i]);
      if (!overwrite) r = _mm512_maskz_add_ps(__mmask16(0xFFFF), r, _mm512_maskz_loadu_ps(m, out + 16 * i));
      _mm512_mask_storeu_ps(out + 16 * i, m, r);
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
// The wide gather over nb bands (gather_ell_u8_avx512_bands' contract), the panel width dispatched once.
SPARTAN_AVX512 inline void wide_gather_bands(const EllTileRef* t, const std::size_t* off, int nb, int band_rows,
                                             int total_rows, float alpha, const float* D, std::size_t ldd, float* Out,
                                             std::size_t ldo, int qn, bool overwrite, const EllTileRef* next,
                                             int next_nt, int next_rows, bool prefetch_next) {
  const int nv = (qn + 15) / 16, tail = qn % 16;
  assert(nv >= 1 && nv <= kWideGatherQ / 16);
  const __mmask16 m = tail == 0 ? __mmask16(0xFFFF) : __mmask16((1u << tail) - 1u);
  const bool pf = prefetch_next || next_nt > 0;
  auto bands = [&](auto nv_const) {
    constexpr int NV = decltype(nv_const)::value;
    for (int i = 0; i < nb; ++i) {
      const int rows = std::min(band_rows, total_rows - i * band_rows);
      float* out = Out + std::size_t(i) * std::size_t(band_rows) * ldo;
      if (!pf) {
        gather_ell_wide<NV, false>(t + off[i], int(off[i + 1] - off[i]), rows, alpha, D, ldd, out, ldo, m, overwrite,
                                   nullptr, 0, 0);
        continue;
      }
      const bool last = i + 1 == nb || !prefetch_next;
      gather_ell_wide<NV, true>(t + off[i], int(off[i + 1] - off[i]), rows, alpha, D, ldd, out, ldo, m, overwrite,
                                last ? next : t + off[i + 1], last ? next_nt : int(off[i + 2] - off[i + 1]),
                                last ? next_rows : std::min(band_rows, total_rows - (i + 1) * band_rows));
    }
  };
  switch (nv) {
#define SPARTAN_WIDE_CASE(N) \
  case N: bands(std::integral_constant<int, N>{}); break;
    SPARTAN_WIDE_CASE(1) SPARTAN_WIDE_CASE(2) SPARTAN_WIDE_CASE(3) SPARTAN_WIDE_CASE(4) SPARTAN_WIDE_CASE(5)
    SPARTAN_WIDE_CASE(6) SPARTAN_WIDE_CASE(7) SPARTAN_WIDE_CASE(8) SPARTAN_WIDE_CASE(9) SPARTAN_WIDE_CASE(10)
    SPARTAN_WIDE_CASE(11) SPARTAN_WIDE_CASE(12) SPARTAN_WIDE_CASE(13) SPARTAN_WIDE_CASE(14) SPARTAN_WIDE_CASE(15)
    SPARTAN_WIDE_CASE(16) SPARTAN_WIDE_CASE(17) SPARTAN_WIDE_CASE(18) SPARTAN_WIDE_CASE(19) SPARTAN_WIDE_CASE(20)
    SPARTAN_WIDE_CASE(21) SPARTAN_WIDE_CASE(22) SPARTAN_WIDE_CASE(23)
    default: SPARTAN_WIDE_CASE(24)
#undef SPARTAN_WIDE_CASE
  }
}
namespace {
// One 16x16 block: C[i][j] = T[j][i] (+ beta * C[i][j]) for i, j < 16, transposed in registers
// (transpose16x16); the stores are as in the AVX2 kernel (beta 1: C + T; other non-zero beta: one FMA
// beta * C + T), so C is bit-identical to transpose_store_avx2's.
template <int Beta>  // 0: beta 0, 1: beta 1, 2: any other beta
SPARTAN_AVX512 inline void transpose16_block(const float* T, std::size_t ldt, float* C, std::size_t ldc, __m512 vb) {
  __m512 r[16];
#pragma GCC unroll 16
  for (int k = 0; k < 16; ++k) r[k] = _mm512_loadu_ps(T + std::size_t(k) * ldt);
  transpose16x16(r);
#pragma GCC unroll 16
  for (int i = 0; i < 16; ++i) {
    float* c = C + std::size_t(i) * ldc;
    if (Beta == 0)
      _mm512_storeu_ps(c, r[i]);
    else if (Beta == 1)
      _mm512_storeu_ps(c, _mm512_add_ps(_mm512_loadu_ps(c), r[i]));
    else
      _mm512_storeu_ps(c, _mm512_fmadd_ps(vb, _mm512_loadu_ps(c), r[i]));
  }
}
template <int Beta>
SPARTAN_AVX512 void transpose_store_blocks16(const float* T, std::size_t ldt, int rows16, int w16, float* C,
                                             std::size_t ldc, __m512 vb, bool long_t) {
  // The loop orders of transpose_store_avx2: long T (long_t: rows > 64) sixteen C rows at a time, each written
  // front to back; otherwise T's rows outer.
  if (long_t) {
    for (int i0 = 0; i0 < w16; i0 += 16)
      for (int j0 = 0; j0 < rows16; j0 += 16)
        transpose16_block<Beta>(T + std::size_t(j0) * ldt + i0, ldt, C + std::size_t(i0) * ldc + j0, ldc, vb);
  } else {
    for (int j0 = 0; j0 < rows16; j0 += 16)
      for (int i0 = 0; i0 < w16; i0 += 16)
        transpose16_block<Beta>(T + std::size_t(j0) * ldt + i0, ldt, C + std::size_t(i0) * ldc + j0, ldc, vb);
  }
}
}  // namespace

SPARTAN_AVX512 void transpose_store_avx512(const float* T, std::size_t ldt, int rows, int w, float* C, std::size_t ldc,
                                           float beta) {
  const int rows16 = rows / 16 * 16, w16 = w / 16 * 16;
  const __m512 vb = _mm512_set1_ps(beta);
  if (beta == 0.0f)
    transpose_store_blocks16<0>(T, ldt, rows16, w16, C, ldc, vb, rows > 64);
  else if (beta == 1.0f)
    transpose_store_blocks16<1>(T, ldt, rows16, w16, C, ldc, vb, rows > 64);
  else
    transpose_store_blocks16<2>(T, ldt, rows16, w16, C, ldc, vb, rows > 64);
  // Edges (C columns j >= rows16 of every row; C rows i >= w16 of the first rows16 columns) by the AVX2 kernel,
  // whose arithmetic is the same.
  if (rows16 < rows) transpose_store_avx2(T + std::size_t(rows16) * ldt, ldt, rows - rows16, w, C + rows16, ldc, beta);
  if (w16 < w && rows16 > 0) transpose_store_avx2(T + w16, ldt, rows16, w - w16, C + std::size_t(w16) * ldc, ldc, beta);
}
SPARTAN_AVX512 void gather_ell_u8_avx512_bands(const EllTileRef* t, const std::size_t* off, int nb, int band_rows,
                                               int total_rows, float alpha, const float* D, std::size_t ldd, float* Out,
                                               std::size_t ldo, int qn, bool overwrite, bool prefetch_next) {
  wide_gather_bands(t, off, nb, band_rows, total_rows, alpha, D, ldd, Out, ldo, qn, overwrite, nullptr, 0, 0,
                    prefetch_next);
}
SPARTAN_AVX512 void gather_ell_u8_avx512(const EllTileRef* t, int nt, int rows, float alpha, const float* D,
                                         std::size_t ldd, float* Out, std::size_t ldo, int qn, bool overwrite,
                                         const EllTileRef* next, int next_nt, int next_rows) {
  const std::size_t off[2] = {0, std::size_t(nt)};  // one band
  wide_gather_bands(t, off, 1, rows, rows, alpha, D, ldd, Out, ldo, qn, overwrite, next, next_nt, next_rows, false);
}
#else
bool cpu_has_avx512() { return false; }
void transpose_store_avx512(const float* T, std::size_t ldt, int rows, int w, float* C, std::size_t ldc, float beta) {
  transpose_store_portable(T, ldt, rows, w, C, ldc, beta);
}
void scatter_ell_u8_avx512(const std::uint8_t* idx, const float* val, std::uint32_t re, std::uint32_t w, float alpha,
                           const float* D, std::size_t ldd, int qn, float* O, std::size_t ldo) {
  scatter_ell_u8_portable(idx, val, re, w, alpha, D, ldd, qn, O, ldo);
}
void gather_ell_u8_avx512(const EllTileRef* t, int nt, int rows, float alpha, const float* D, std::size_t ldd,
                          float* Out, std::size_t ldo, int qn, bool overwrite, const EllTileRef*, int, int) {
  for (int q0 = 0; q0 < qn; q0 += kGatherQ)  // the portable kernel takes at most kGatherQ columns
    gather_ell_u8_portable(t, nt, rows, alpha, D + q0, ldd, Out + q0, ldo, std::min(kGatherQ, qn - q0), overwrite);
}
void gather_ell_u8_avx512_bands(const EllTileRef* t, const std::size_t* off, int nb, int band_rows, int total_rows,
                                float alpha, const float* D, std::size_t ldd, float* Out, std::size_t ldo, int qn,
                                bool overwrite, bool) {
  for (int i = 0; i < nb; ++i)
    gather_ell_u8_avx512(t + off[i], int(off[i + 1] - off[i]), std::min(band_rows, total_rows - i * band_rows), alpha, D,
                         ldd, Out + std::size_t(i) * std::size_t(band_rows) * ldo, ldo, qn, overwrite);
}
#endif

}  // namespace spartan::gemm::detail
