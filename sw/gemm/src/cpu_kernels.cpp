// Sparse micro-kernels: row gather over the dense operand, vectorised along the output row.
// The AVX2 path keeps up to 64 output floats in 8 ymm accumulators per row and issues one broadcast,
// NV loads and NV FMAs per non-zero; the portable path is plain C++ the compiler vectorises for the
// baseline ISA. The ISA is chosen at run time (__builtin_cpu_supports), never at compile time.
#include "cpu_kernels.h"

#include <algorithm>
#include <cassert>
#include <cstdint>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define SPARTAN_X86 1
#endif

namespace spartan::gemm::detail {

/// Look-ahead (entries) of the software prefetch of D rows in the AVX2 gather: D rows are visited in
/// data-dependent order, so the hardware prefetchers cannot follow them (chosen by bench-gemm: 4..16 were
/// within noise, 0 was ~10 % slower).
constexpr std::size_t kPrefetch = 8;
static_assert(kPrefetch < kEntrySlack, "the prefetch look-ahead must stay inside the Entry slack");

void gather_portable(const std::uint32_t* lo, const std::uint32_t* hi, const Entry* e, int rows, const float* D,
                     std::size_t ldd, float* Out, std::size_t ldo, int Q, bool overwrite) {
  constexpr int QB = 64;
  for (int q0 = 0; q0 < Q; q0 += QB) {
    const int qn = Q - q0 < QB ? Q - q0 : QB;
    for (int p = 0; p < rows; ++p) {
      if (lo[p] == hi[p] && !overwrite) continue;
      float acc[QB];
      float* out = Out + std::size_t(p) * ldo + q0;
      for (int q = 0; q < qn; ++q) acc[q] = overwrite ? 0.0f : out[q];
      for (std::uint32_t k = lo[p]; k < hi[p]; ++k) {
        const float v = e[k].v;
        const float* d = D + std::size_t(e[k].r) * ldd + q0;
        for (int q = 0; q < qn; ++q) acc[q] += v * d[q];
      }
      for (int q = 0; q < qn; ++q) out[q] = acc[q];
    }
  }
}

void scatter_ell_u8_portable(const std::uint8_t* idx, const float* val, std::uint32_t re, std::uint32_t w, float alpha,
                             const float* D, std::size_t ldd, int qn, float* O, std::size_t ldo) {
  assert(ldo <= std::size_t(kScatterQ));  // (its whole-row updates: O is a block, never C)
  const int QS = int(ldo);
  float d[kScatterQ];
  for (std::uint32_t lr = 0; lr < re; ++lr) {
    if (val[std::size_t(lr) * w] == 0.0f) continue;  // an empty row (ELL padding first)
    const float* dr = D + std::size_t(lr) * ldd;
    for (int q = 0; q < QS; ++q) d[q] = q < qn ? alpha * dr[q] : 0.0f;
    const std::uint8_t* ix = idx + std::size_t(lr) * w;
    const float* vv = val + std::size_t(lr) * w;
    for (std::uint32_t j = 0; j < w; ++j) {
      const float v = vv[j];
      if (v == 0.0f) break;  // ELL padding ends the row (+-0.0 are the format's zeros)
      float* o = O + std::size_t(ix[j]) * ldo;
      for (int q = 0; q < QS; ++q) o[q] += v * d[q];
    }
  }
}

void gather_ell_u8_portable(const EllTileRef* t, int nt, int rows, float alpha, const float* D, std::size_t ldd,
                            float* Out, std::size_t ldo, int qn, bool overwrite) {
  float acc[kGatherQ];
  for (int lr = 0; lr < rows; ++lr) {
    bool any = false;
    for (int q = 0; q < qn; ++q) acc[q] = 0.0f;
    for (int ti = 0; ti < nt; ++ti) {
      const std::uint8_t* ix = t[ti].idx + std::size_t(lr) * t[ti].w;
      const float* vv = t[ti].val + std::size_t(lr) * t[ti].w;
      for (std::uint32_t j = 0; j < t[ti].w; ++j) {
        const float v = vv[j];
        if (v == 0.0f) break;  // ELL padding ends the row
        any = true;
        const float* d = D + std::size_t(t[ti].base + ix[j]) * ldd;
        for (int q = 0; q < qn; ++q) acc[q] += v * d[q];
      }
    }
    float* out = Out + std::size_t(lr) * ldo;
    if (overwrite)
      for (int q = 0; q < qn; ++q) out[q] = alpha * acc[q];
    else if (any)
      for (int q = 0; q < qn; ++q) out[q] += alpha * acc[q];
  }
}

namespace {
inline void store_elem(float* c, float t, float beta) { *c = beta == 0.0f ? t : beta == 1.0f ? *c + t : beta * *c + t; }
}  // namespace

void transpose_store_portable(const float* T, std::size_t ldt, int rows, int w, float* C, std::size_t ldc,
                              float beta) {
  for (int i = 0; i < w; ++i) {
    float* crow = C + std::size_t(i) * ldc;
    for (int j = 0; j < rows; ++j) store_elem(crow + j, T[std::size_t(j) * ldt + i], beta);
  }
}

#ifdef SPARTAN_X86
__attribute__((target("avx2,fma"))) void transpose_store_avx2(const float* T, std::size_t ldt, int rows, int w,
                                                              float* C, std::size_t ldc, float beta) {
  const int rows8 = rows / 8 * 8, w8 = w / 8 * 8;
  const __m256 vb = _mm256_set1_ps(beta);
  auto block8 = [&](int j0, int i0) __attribute__((target("avx2,fma"))) {
    __m256 r[8], t[8];
    // 8x8 transpose with the 128-bit lane crossing done by the loads (rows j and j + 4 share a register:
    // low lane row j, high lane row j + 4), then an in-lane 4x4 transpose (unpack pairs, shuffle quads).
    // Shuffle-port work is 16 in-lane shuffles per block instead of 16 + 8 lane-crossing permutes.
    auto ld2 = [&](int k, int h) __attribute__((target("avx2,fma"))) {
      return _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(T + std::size_t(j0 + k) * ldt + i0 + h)),
                                  _mm_loadu_ps(T + std::size_t(j0 + k + 4) * ldt + i0 + h), 1);
    };
    for (int k = 0; k < 4; ++k) r[k] = ld2(k, 0), r[k + 4] = ld2(k, 4);
    t[0] = _mm256_unpacklo_ps(r[0], r[1]);
    t[1] = _mm256_unpackhi_ps(r[0], r[1]);
    t[2] = _mm256_unpacklo_ps(r[2], r[3]);
    t[3] = _mm256_unpackhi_ps(r[2], r[3]);
    t[4] = _mm256_unpacklo_ps(r[4], r[5]);
    t[5] = _mm256_unpackhi_ps(r[4], r[5]);
    t[6] = _mm256_unpacklo_ps(r[6], r[7]);
    t[7] = _mm256_unpackhi_ps(r[6], r[7]);
    r[0] = _mm256_shuffle_ps(t[0], t[2], _MM_SHUFFLE(1, 0, 1, 0));
    r[1] = _mm256_shuffle_ps(t[0], t[2], _MM_SHUFFLE(3, 2, 3, 2));
    r[2] = _mm256_shuffle_ps(t[1], t[3], _MM_SHUFFLE(1, 0, 1, 0));
    r[3] = _mm256_shuffle_ps(t[1], t[3], _MM_SHUFFLE(3, 2, 3, 2));
    r[4] = _mm256_shuffle_ps(t[4], t[6], _MM_SHUFFLE(1, 0, 1, 0));
    r[5] = _mm256_shuffle_ps(t[4], t[6], _MM_SHUFFLE(3, 2, 3, 2));
    r[6] = _mm256_shuffle_ps(t[5], t[7], _MM_SHUFFLE(1, 0, 1, 0));
    r[7] = _mm256_shuffle_ps(t[5], t[7], _MM_SHUFFLE(3, 2, 3, 2));
    for (int k = 0; k < 8; ++k) t[k] = r[k];
    if (beta == 0.0f) {
      for (int k = 0; k < 8; ++k) _mm256_storeu_ps(C + std::size_t(i0 + k) * ldc + j0, t[k]);
    } else if (beta == 1.0f) {
      for (int k = 0; k < 8; ++k) {
        float* c = C + std::size_t(i0 + k) * ldc + j0;
        _mm256_storeu_ps(c, _mm256_add_ps(_mm256_loadu_ps(c), t[k]));
      }
    } else {
      for (int k = 0; k < 8; ++k) {
        float* c = C + std::size_t(i0 + k) * ldc + j0;
        _mm256_storeu_ps(c, _mm256_fmadd_ps(vb, _mm256_loadu_ps(c), t[k]));
      }
    }
  };
  // Long T (rows > 64): eight C rows at a time, each written front to back over all of T's rows, so that C
  // is written in long contiguous runs (few concurrent streams for the prefetchers); otherwise T's rows
  // in the outer loop.
  if (rows > 64) {
    for (int i0 = 0; i0 < w8; i0 += 8)
      for (int j0 = 0; j0 < rows8; j0 += 8) block8(j0, i0);
  } else {
    for (int j0 = 0; j0 < rows8; j0 += 8)
      for (int i0 = 0; i0 < w8; i0 += 8) block8(j0, i0);
  }
  // Edges: columns i >= w8 for all rows, rows j >= rows8 for i < w8.
  for (int i = w8; i < w; ++i)
    for (int j = 0; j < rows; ++j) store_elem(C + std::size_t(i) * ldc + j, T[std::size_t(j) * ldt + i], beta);
  for (int i = 0; i < w8; ++i)
    for (int j = rows8; j < rows; ++j) store_elem(C + std::size_t(i) * ldc + j, T[std::size_t(j) * ldt + i], beta);
}

__attribute__((target("avx2,fma"))) void transpose_store_stream_avx2(const float* T, std::size_t ldt, int rows,
                                                                     int w, float* C, std::size_t ldc) {
  // Transpose into an L1 buffer first, so that each C row segment can be written front to back in whole
  // 64-byte lines (half-line non-temporal writes are far slower than ordinary stores).
  alignas(64) float buf[64 * 64];
  transpose_store_avx2(T, ldt, rows, w, buf, 64, 0.0f);
  for (int i = 0; i < w; ++i) {
    float* c = C + std::size_t(i) * ldc;
    const float* b = buf + std::size_t(i) * 64;
    int j = 0;
    const int head = int(((64 - reinterpret_cast<std::uintptr_t>(c) % 64) % 64) / sizeof(float));
    if (reinterpret_cast<std::uintptr_t>(c) % sizeof(float) != 0) {  // not float-aligned: plain copy
      for (; j < rows; ++j) c[j] = b[j];
      continue;
    }
    for (; j < std::min(head, rows); ++j) c[j] = b[j];
    for (; j + 16 <= rows; j += 16) {
      _mm256_stream_ps(c + j, _mm256_loadu_ps(b + j));
      _mm256_stream_ps(c + j + 8, _mm256_loadu_ps(b + j + 8));
    }
    for (; j < rows; ++j) c[j] = b[j];
  }
  _mm_sfence();  // order the non-temporal stores before later (other threads') reads
}

bool cpu_has_avx2_fma() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

namespace {

// NV full ymm vectors, plus (when TAIL) one masked vector of `tail` lanes. With few vectors per row the
// FMA latency (4-5 cycles) would bound one accumulator chain, so narrow blocks keep two accumulator sets
// (even / odd non-zeros) and add them at the end.
// acc[0..NV) += v * d[0..8 NV), and with TAIL acc[NV] += v * d[8 NV..) under the tail mask.
template <int NV, bool TAIL>
__attribute__((target("avx2,fma"))) inline void fma_row(__m256* acc, __m256 v, const float* d, __m256i mask) {
  for (int i = 0; i < NV; ++i) acc[i] = _mm256_fmadd_ps(v, _mm256_loadu_ps(d + 8 * i), acc[i]);
  if (TAIL) acc[NV] = _mm256_fmadd_ps(v, _mm256_maskload_ps(d + 8 * NV, mask), acc[NV]);
}

template <int NV, bool TAIL>
__attribute__((target("avx2,fma"))) inline void gather_block(const std::uint32_t* lo, const std::uint32_t* hi,
                                                             const Entry* e, int rows, const float* D, std::size_t ldd,
                                                             float* Out, std::size_t ldo, int q0, __m256i mask,
                                                             bool overwrite) {
  constexpr int NA = NV + (TAIL ? 1 : 0);
  constexpr bool TWO = NA <= 4;
  constexpr bool PF = !TWO;
  for (int p = 0; p < rows; ++p) {
    const std::uint32_t kb = lo[p], ke = hi[p];
    if (kb == ke && !overwrite) continue;
    float* out = Out + std::size_t(p) * ldo + q0;
    __m256 acc[NA], acc2[NA];
    for (int i = 0; i < NA; ++i) acc[i] = acc2[i] = _mm256_setzero_ps();
    if (!overwrite) {
      for (int i = 0; i < NV; ++i) acc[i] = _mm256_loadu_ps(out + 8 * i);
      if (TAIL) acc[NV] = _mm256_maskload_ps(out + 8 * NV, mask);
    }
    std::uint32_t k = kb;
    if (TWO) {
      for (; k + 1 < ke; k += 2) {
        fma_row<NV, TAIL>(acc, _mm256_set1_ps(e[k].v), D + std::size_t(e[k].r) * ldd + q0, mask);
        fma_row<NV, TAIL>(acc2, _mm256_set1_ps(e[k + 1].v), D + std::size_t(e[k + 1].r) * ldd + q0, mask);
      }
    }
    for (; k < ke; ++k) {
      if (PF) {  // D rows are random in L2: prefetch the row kPrefetch entries ahead (Entry arrays carry slack)
        const char* pf = reinterpret_cast<const char*>(D + std::size_t(e[k + kPrefetch].r) * ldd + q0);
        for (int l = 0; l < (NA * 32 + 63) / 64; ++l) _mm_prefetch(pf + 64 * l, _MM_HINT_T0);
      }
      const __m256 v = _mm256_set1_ps(e[k].v);
      const float* d = D + std::size_t(e[k].r) * ldd + q0;
      for (int i = 0; i < NV; ++i) acc[i] = _mm256_fmadd_ps(v, _mm256_loadu_ps(d + 8 * i), acc[i]);
      if (TAIL) acc[NV] = _mm256_fmadd_ps(v, _mm256_maskload_ps(d + 8 * NV, mask), acc[NV]);
    }
    if (TWO)
      for (int i = 0; i < NA; ++i) acc[i] = _mm256_add_ps(acc[i], acc2[i]);
    for (int i = 0; i < NV; ++i) _mm256_storeu_ps(out + 8 * i, acc[i]);
    if (TAIL) _mm256_maskstore_ps(out + 8 * NV, mask, acc[NV]);
  }
}

template <bool TAIL>
__attribute__((target("avx2,fma"))) void gather_nv(int nv, const std::uint32_t* lo, const std::uint32_t* hi,
                                                    const Entry* e, int rows,
                                                    const float* D, std::size_t ldd, float* Out, std::size_t ldo,
                                                    int q0, __m256i mask, bool ow) {
  switch (nv) {
    case 0: gather_block<0, TAIL>(lo, hi, e, rows, D, ldd, Out, ldo, q0, mask, ow); break;
    case 1: gather_block<1, TAIL>(lo, hi, e, rows, D, ldd, Out, ldo, q0, mask, ow); break;
    case 2: gather_block<2, TAIL>(lo, hi, e, rows, D, ldd, Out, ldo, q0, mask, ow); break;
    case 3: gather_block<3, TAIL>(lo, hi, e, rows, D, ldd, Out, ldo, q0, mask, ow); break;
    case 4: gather_block<4, TAIL>(lo, hi, e, rows, D, ldd, Out, ldo, q0, mask, ow); break;
    case 5: gather_block<5, TAIL>(lo, hi, e, rows, D, ldd, Out, ldo, q0, mask, ow); break;
    case 6: gather_block<6, TAIL>(lo, hi, e, rows, D, ldd, Out, ldo, q0, mask, ow); break;
    default: gather_block<7, TAIL>(lo, hi, e, rows, D, ldd, Out, ldo, q0, mask, ow); break;
  }
}

}  // namespace

namespace {
// Length of an ELL row of w value slots: the number of values before the first zero (+-0.0; NaN counts as
// non-zero), i.e. where the row's padding starts (docs/tile-format.md). Computed from compare masks
// without a branch per slot, so that the loop over the row is a counted loop whose exit does not wait for
// a value load (the zero-test exit resolved only when each value's load completed).
__attribute__((target("avx2,fma"))) inline std::uint32_t ell_row_length_avx2(const float* vv, std::uint32_t w) {
  alignas(32) static const int ramp[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
  const __m256 z = _mm256_setzero_ps();
  for (std::uint32_t base = 0; base < w; base += 64) {
    const std::uint32_t cnt = std::min<std::uint32_t>(64, w - base);
    const float* v = vv + base;
    std::uint64_t m = 0;  // bit j: slot base + j holds a non-zero
    std::uint32_t j = 0;
    for (; j + 8 <= cnt; j += 8)
      m |= std::uint64_t(unsigned(_mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(v + j), z, _CMP_NEQ_UQ)))) << j;
    if (j < cnt) {
      const __m256i lanes = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ramp + 8 - (cnt - j)));
      const __m256 nz = _mm256_cmp_ps(_mm256_maskload_ps(v + j, lanes), z, _CMP_NEQ_UQ);
      m |= std::uint64_t(unsigned(_mm256_movemask_ps(_mm256_and_ps(nz, _mm256_castsi256_ps(lanes))))) << j;
    }
    const std::uint64_t inv = ~m;
    const std::uint32_t lead = inv == 0 ? 64u : std::uint32_t(__builtin_ctzll(inv));
    if (lead < cnt) return base + lead;
  }
  return w;
}

template <int NV>
__attribute__((target("avx2,fma"))) inline void scatter_block(const std::uint8_t* idx, const float* val,
                                                              std::uint32_t re, std::uint32_t w, __m256 va,
                                                              const float* D, std::size_t ldd, __m256i tail_mask,
                                                              bool tail, float* O, std::size_t ldo) {
  for (std::uint32_t lr = 0; lr < re; ++lr) {
    const float* dr = D + std::size_t(lr) * ldd;
    for (int i = 0; i < (NV + 1) / 2; ++i) _mm_prefetch(scatter_prefetch_address(dr, ldd, i), _MM_HINT_T0);
    if (val[std::size_t(lr) * w] == 0.0f) continue;  // an empty row (ELL padding first): its D row is not read
    __m256 d[NV];
    for (int i = 0; i < NV; ++i)
      d[i] = _mm256_mul_ps(va, (tail && i == NV - 1) ? _mm256_maskload_ps(dr + 8 * i, tail_mask)
                                                      : _mm256_loadu_ps(dr + 8 * i));
    const std::uint8_t* ix = idx + std::size_t(lr) * w;
    const float* vv = val + std::size_t(lr) * w;
    const std::uint32_t n = w >= kCountedRowMinW ? ell_row_length_avx2(vv, w) : w;
    for (std::uint32_t j = 0; j < n; ++j) {
      const float v = vv[j];
      if (v == 0.0f) break;  // ELL padding ends the row (short tiles; never taken after the count)
      const __m256 vb = _mm256_set1_ps(v);
      float* o = O + std::size_t(ix[j]) * ldo;
      for (int i = 0; i < NV; ++i) _mm256_store_ps(o + 8 * i, _mm256_fmadd_ps(vb, d[i], _mm256_load_ps(o + 8 * i)));
    }
  }
}
}  // namespace

__attribute__((target("avx2,fma"))) void scatter_ell_u8_avx2(const std::uint8_t* idx, const float* val,
                                                             std::uint32_t re, std::uint32_t w, float alpha,
                                                             const float* D, std::size_t ldd, int qn, float* O,
                                                             std::size_t ldo) {
  const int nv = (qn + 7) / 8, tail = qn % 8;
  alignas(32) int m[8];
  for (int i = 0; i < 8; ++i) m[i] = (tail == 0 || i < tail) ? -1 : 0;
  const __m256i mask = _mm256_load_si256(reinterpret_cast<const __m256i*>(m));
  const __m256 va = _mm256_set1_ps(alpha);
  switch (nv) {
    case 1: scatter_block<1>(idx, val, re, w, va, D, ldd, mask, tail != 0, O, ldo); break;
    case 2: scatter_block<2>(idx, val, re, w, va, D, ldd, mask, tail != 0, O, ldo); break;
    case 3: scatter_block<3>(idx, val, re, w, va, D, ldd, mask, tail != 0, O, ldo); break;
    case 4: scatter_block<4>(idx, val, re, w, va, D, ldd, mask, tail != 0, O, ldo); break;
    case 5: scatter_block<5>(idx, val, re, w, va, D, ldd, mask, tail != 0, O, ldo); break;
    case 6: scatter_block<6>(idx, val, re, w, va, D, ldd, mask, tail != 0, O, ldo); break;
    case 7: scatter_block<7>(idx, val, re, w, va, D, ldd, mask, tail != 0, O, ldo); break;
    default: scatter_block<8>(idx, val, re, w, va, D, ldd, mask, tail != 0, O, ldo); break;
  }
}

namespace {
template <int NV, bool TAIL, bool PAIRS>
__attribute__((target("avx2,fma"))) inline void gather_ell_block(const EllTileRef* t, int nt, int rows, float alpha,
                                                                 const float* D, std::size_t ldd, float* Out,
                                                                 std::size_t ldo, __m256i mask, bool overwrite) {
  constexpr int NA = NV + (TAIL ? 1 : 0);
  constexpr bool PF = NA > 4;  // wide rows: prefetch the D row kPrefetch non-zeros ahead (same tile row)
  // PAIRS (gather_ell_u8_avx2_pairs, narrow panels only): two accumulator sets, the even and the odd
  // non-zeros of each tile row, added at the end (cpu_kernels.h).
  constexpr bool SPLIT = PAIRS && !PF;
  const __m256 va = _mm256_set1_ps(alpha);
  for (int lr = 0; lr < rows; ++lr) {
    __m256 acc[NA];
    for (int i = 0; i < NA; ++i) acc[i] = _mm256_setzero_ps();
    bool any = false;
    if (SPLIT) {
      __m256 acc1[NA];
      for (int i = 0; i < NA; ++i) acc1[i] = _mm256_setzero_ps();
      for (int ti = 0; ti < nt; ++ti) {
        const std::uint32_t w = t[ti].w;
        const std::uint8_t* ix = t[ti].idx + std::size_t(lr) * w;
        const float* vv = t[ti].val + std::size_t(lr) * w;
        const float* Db = D + std::size_t(t[ti].base) * ldd;
        const std::uint32_t n = w >= kCountedRowMinW ? ell_row_length_avx2(vv, w) : w;
        std::uint32_t j = 0;
        for (; j + 1 < n; j += 2) {
          const float v1 = vv[j + 1];
          if (vv[j] == 0.0f || v1 == 0.0f) break;  // the row ends at its first zero (vv[j] non-zero: below)
          any = true;
          fma_row<NV, TAIL>(acc, _mm256_set1_ps(vv[j]), Db + std::size_t(ix[j]) * ldd, mask);
          fma_row<NV, TAIL>(acc1, _mm256_set1_ps(v1), Db + std::size_t(ix[j + 1]) * ldd, mask);
        }
        if (j < n && vv[j] != 0.0f) {  // an odd count: the last non-zero
          any = true;
          fma_row<NV, TAIL>(acc, _mm256_set1_ps(vv[j]), Db + std::size_t(ix[j]) * ldd, mask);
        }
      }
      for (int i = 0; i < NA; ++i) acc[i] = _mm256_add_ps(acc[i], acc1[i]);
    } else {
      for (int ti = 0; ti < nt; ++ti) {
        const std::uint32_t w = t[ti].w;
        const std::uint8_t* ix = t[ti].idx + std::size_t(lr) * w;
        const float* vv = t[ti].val + std::size_t(lr) * w;
        const float* Db = D + std::size_t(t[ti].base) * ldd;
        const std::uint32_t n = w >= kCountedRowMinW ? ell_row_length_avx2(vv, w) : w;
        for (std::uint32_t j = 0; j < n; ++j) {
          const float v = vv[j];
          if (v == 0.0f) break;  // ELL padding ends the row (short tiles; never taken after the count)
          any = true;
          if (PF) {
            const std::uint32_t jp = j + kPrefetch < w ? j + std::uint32_t(kPrefetch) : w - 1;
            const char* pf = reinterpret_cast<const char*>(Db + std::size_t(ix[jp]) * ldd);
            for (int l = 0; l < (NA * 32 + 63) / 64; ++l) _mm_prefetch(pf + 64 * l, _MM_HINT_T0);
          }
          const __m256 vb = _mm256_set1_ps(v);
          const float* d = Db + std::size_t(ix[j]) * ldd;
          for (int i = 0; i < NV; ++i) acc[i] = _mm256_fmadd_ps(vb, _mm256_loadu_ps(d + 8 * i), acc[i]);
          if (TAIL) acc[NV] = _mm256_fmadd_ps(vb, _mm256_maskload_ps(d + 8 * NV, mask), acc[NV]);
        }
      }
    }
    float* out = Out + std::size_t(lr) * ldo;
    if (!overwrite && !any) continue;
    for (int i = 0; i < NA; ++i) {
      const bool tail = TAIL && i == NV;
      __m256 r = _mm256_mul_ps(va, acc[i]);
      if (!overwrite) r = _mm256_add_ps(r, tail ? _mm256_maskload_ps(out + 8 * i, mask) : _mm256_loadu_ps(out + 8 * i));
      if (tail)
        _mm256_maskstore_ps(out + 8 * i, mask, r);
      else
        _mm256_storeu_ps(out + 8 * i, r);
    }
  }
}

template <bool TAIL, bool PAIRS>
__attribute__((target("avx2,fma"))) void gather_ell_nv(int nv, const EllTileRef* t, int nt, int rows, float alpha,
                                                        const float* D, std::size_t ldd, float* Out, std::size_t ldo,
                                                        __m256i mask, bool ow) {
  switch (nv) {
    case 0: gather_ell_block<0, TAIL, PAIRS>(t, nt, rows, alpha, D, ldd, Out, ldo, mask, ow); break;
    case 1: gather_ell_block<1, TAIL, PAIRS>(t, nt, rows, alpha, D, ldd, Out, ldo, mask, ow); break;
    case 2: gather_ell_block<2, TAIL, PAIRS>(t, nt, rows, alpha, D, ldd, Out, ldo, mask, ow); break;
    case 3: gather_ell_block<3, TAIL, PAIRS>(t, nt, rows, alpha, D, ldd, Out, ldo, mask, ow); break;
    case 4: gather_ell_block<4, TAIL, PAIRS>(t, nt, rows, alpha, D, ldd, Out, ldo, mask, ow); break;
    case 5: gather_ell_block<5, TAIL, PAIRS>(t, nt, rows, alpha, D, ldd, Out, ldo, mask, ow); break;
    case 6: gather_ell_block<6, TAIL, PAIRS>(t, nt, rows, alpha, D, ldd, Out, ldo, mask, ow); break;
    case 7: gather_ell_block<7, TAIL, PAIRS>(t, nt, rows, alpha, D, ldd, Out, ldo, mask, ow); break;
    default: gather_ell_block<8, TAIL, PAIRS>(t, nt, rows, alpha, D, ldd, Out, ldo, mask, ow); break;
  }
}

template <bool PAIRS>
__attribute__((target("avx2,fma"))) void gather_ell_u8_avx2_impl(const EllTileRef* t, int nt, int rows, float alpha,
                                                                 const float* D, std::size_t ldd, float* Out,
                                                                 std::size_t ldo, int qn, bool overwrite) {
  const int nv = qn / 8, tail = qn % 8;
  if (tail == 0) {
    gather_ell_nv<false, PAIRS>(nv, t, nt, rows, alpha, D, ldd, Out, ldo, _mm256_setzero_si256(), overwrite);
  } else {
    alignas(32) int m[8];
    for (int i = 0; i < 8; ++i) m[i] = i < tail ? -1 : 0;
    gather_ell_nv<true, PAIRS>(nv, t, nt, rows, alpha, D, ldd, Out, ldo,
                               _mm256_load_si256(reinterpret_cast<const __m256i*>(m)), overwrite);
  }
}
}  // namespace

void gather_ell_u8_avx2(const EllTileRef* t, int nt, int rows, float alpha, const float* D, std::size_t ldd, float* Out,
                        std::size_t ldo, int qn, bool overwrite) {
  gather_ell_u8_avx2_impl<false>(t, nt, rows, alpha, D, ldd, Out, ldo, qn, overwrite);
}
void gather_ell_u8_avx2_pairs(const EllTileRef* t, int nt, int rows, float alpha, const float* D, std::size_t ldd,
                              float* Out, std::size_t ldo, int qn, bool overwrite) {
  gather_ell_u8_avx2_impl<true>(t, nt, rows, alpha, D, ldd, Out, ldo, qn, overwrite);
}

__attribute__((target("avx2,fma"))) void gather_avx2(const std::uint32_t* lo, const std::uint32_t* hi,
                                                     const Entry* e, int rows, const float* D, std::size_t ldd,
                                                     float* Out, std::size_t ldo, int Q, bool overwrite) {
  const __m256i none = _mm256_setzero_si256();
  int q0 = 0;
  for (; q0 + 64 <= Q; q0 += 64) gather_block<8, false>(lo, hi, e, rows, D, ldd, Out, ldo, q0, none, overwrite);
  const int rem = Q - q0;
  if (rem == 0) return;
  const int nv = rem / 8, tail = rem % 8;
  if (tail == 0) {
    gather_nv<false>(nv, lo, hi, e, rows, D, ldd, Out, ldo, q0, none, overwrite);
  } else {
    alignas(32) int m[8];
    for (int i = 0; i < 8; ++i) m[i] = i < tail ? -1 : 0;
    gather_nv<true>(nv, lo, hi, e, rows, D, ldd, Out, ldo, q0, _mm256_load_si256(reinterpret_cast<const __m256i*>(m)),
                    overwrite);
  }
}
#else
bool cpu_has_avx2_fma() { return false; }
void transpose_store_avx2(const float* T, std::size_t ldt, int rows, int w, float* C, std::size_t ldc, float beta) {
  transpose_store_portable(T, ldt, rows, w, C, ldc, beta);
}
void transpose_store_stream_avx2(const float* T, std::size_t ldt, int rows, int w, float* C, std::size_t ldc) {
  transpose_store_portable(T, ldt, rows, w, C, ldc, 0.0f);
}
void gather_avx2(const std::uint32_t* lo, const std::uint32_t* hi, const Entry* e, int rows, const float* D,
                 std::size_t ldd, float* Out, std::size_t ldo, int Q, bool overwrite) {
  gather_portable(lo, hi, e, rows, D, ldd, Out, ldo, Q, overwrite);
}
void scatter_ell_u8_avx2(const std::uint8_t* idx, const float* val, std::uint32_t re, std::uint32_t w, float alpha,
                         const float* D, std::size_t ldd, int qn, float* O, std::size_t ldo) {
  scatter_ell_u8_portable(idx, val, re, w, alpha, D, ldd, qn, O, ldo);
}
void gather_ell_u8_avx2(const EllTileRef* t, int nt, int rows, float alpha, const float* D, std::size_t ldd, float* Out,
                        std::size_t ldo, int qn, bool overwrite) {
  gather_ell_u8_portable(t, nt, rows, alpha, D, ldd, Out, ldo, qn, overwrite);
}
void gather_ell_u8_avx2_pairs(const EllTileRef* t, int nt, int rows, float alpha, const float* D, std::size_t ldd,
                              float* Out, std::size_t ldo, int qn, bool overwrite) {
  gather_ell_u8_portable(t, nt, rows, alpha, D, ldd, Out, ldo, qn, overwrite);
}
#endif

}  // namespace spartan::gemm::detail
