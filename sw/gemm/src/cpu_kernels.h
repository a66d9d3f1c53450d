// Internal: sparse micro-kernels of the CPU tile-sparse GEMM (loop structure: tile_sparse.cpp and
// sw/gemm/README.md).
//
// Floating-point environment: the kernels find the ELL padding (the first +-0.0 value ends a row) with float
// compares (v == 0.0f, _mm256_cmp_ps against zero), which equal the format's bit test (is_zero_bits) only
// while MXCSR's DAZ (denormals-are-zero) bit is off: with DAZ on, a stored denormal non-zero compares equal
// to 0 and would end its row early (the rest of the row dropped). The engine clears DAZ on the calling thread
// and on every team thread for each call and restores it after (DenormalsAsIs, tile_sparse.cpp), since a caller
// may have set it (-ffast-math / -Ofast start-up code does); a caller of these kernels outside run_compacted
// must do the same. FTZ does not matter here (it affects results, not the compares on stored values).
#pragma once
#include <cstddef>
#include <cstdint>

#include "spartan/gemm/tile_sparse.h"

namespace spartan::gemm::detail {

/// Width (floats along Q) of one gather pass: 8 AVX2 accumulators per output row.
inline constexpr int kGatherQ = 64;
/// Entry arrays passed to the gather kernel have this many readable entries after the last one used
/// (prefetch look-ahead and the branch-free builders' extra slot).
inline constexpr std::size_t kEntrySlack = 17;

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

/// One u8-index ELL tile of a band of S = stored rows, as the direct row gather reads it: index and value
/// blocks (rows x w each) and the S column (= D row) of the tile's local column 0.
struct EllTileRef {
  const std::uint8_t* idx;
  const float* val;
  std::uint32_t w, base;
};
/// Row gather straight from u8-index ELL tiles (no row lists), for S = stored rows. For local rows
/// lr < rows of one band and the band's sparse tiles t[0..nt) (in column order):
///   acc = sum over tiles, over the row's non-zeros (col, v) (the row ends at its first zero value: ELL
///         padding) of v * D[base + col][0..qn);   Out[lr] = alpha * acc (+ Out[lr] unless overwrite)
/// Without overwrite, rows without non-zeros are not touched. qn <= kGatherQ.
using GatherEllFn = void (*)(const EllTileRef* t, int nt, int rows, float alpha, const float* D, std::size_t ldd,
                             float* Out, std::size_t ldo, int qn, bool overwrite);
void gather_ell_u8_portable(const EllTileRef* t, int nt, int rows, float alpha, const float* D, std::size_t ldd,
                            float* Out, std::size_t ldo, int qn, bool overwrite);
/// AVX2 + FMA version; only call when cpu_has_avx2_fma().
void gather_ell_u8_avx2(const EllTileRef* t, int nt, int rows, float alpha, const float* D, std::size_t ldd,
                        float* Out, std::size_t ldo, int qn, bool overwrite);
/// gather_ell_u8_avx2 with two accumulator sets for panels of qn <= 32 (the even and the odd non-zeros of
/// each tile row, added at the end; wider panels as gather_ell_u8_avx2): with one set each non-zero waits
/// for the previous one's FMAs (4 cycles' latency), and narrow rows of many non-zeros are that chain. The
/// sum's order differs from gather_ell_u8_avx2 (C may differ in the last bits), so the engine takes it only
/// where no AVX-512 kernel must match gather_ell_u8_avx2 bit for bit: the stored rows' direct gather with
/// Q <= kDirectRowsMaxQ. vgg-s backward-weight at 97 %: b0c2 (Q = 16, 23 non-zeros per row) 4.9 -> 4.0 us,
/// 18 -> 14 us at batch 4; b1c2 (Q = 32, 6 per row) 3.5 -> 3.3 us (docs/bench/gemm.md, twenty-seventh session).
void gather_ell_u8_avx2_pairs(const EllTileRef* t, int nt, int rows, float alpha, const float* D, std::size_t ldd,
                              float* Out, std::size_t ldo, int qn, bool overwrite);

/// ELL tiles of at least this width find each row's end up front (compare masks over the row's values) in
/// the scatter kernels and the direct row gather; narrower ones test each value: with rows of a few
/// non-zeros the count's latency (mask load, compare, ctz) comes before the loop's first iteration and made
/// the vgg-s forward GEMMs at 97 % sparsity (ELL widths 3-12) 6-20 % slower, while wide rows (ImageNet
/// layers, widths 13-40) gained (docs/bench/gemm.md, 2026-12-01).
inline constexpr std::uint32_t kCountedRowMinW = 16;

/// Width (floats along Q) of one pass of the scatter micro-kernel; also the row stride of its output block.
inline constexpr int kScatterQ = 64;
/// Stored rows ahead of the scatter kernel's current row whose D row it prefetches (into L1). The kernel
/// reads one piece of up to kScatterQ floats of each D row per pass, D rows in ascending order, and does
/// little work per row at high sparsity (1.5 non-zeros per row in the case below), so a D that is not cached
/// outran the hardware prefetchers. ResNet-18 conv5_x forward at 97 % in bench-gemm (D = the 64-float
/// panels of W^T packed from W, 4608 x 512, eight passes, evicted between calls by the sgemm and the other
/// engine's packing): kernel 0.34-0.59 ms without, 0.24-0.31 ms with 32 rows (16: 0.31-0.33, 64: 0.31)
/// (docs/bench/gemm.md, twenty-seventh session).
inline constexpr std::size_t kScatterPrefetchRows = 32;
/// The address of cache line `line` of the row kScatterPrefetchRows rows below row `dr` (integer arithmetic
/// throughout: it may lie past D's end).
inline const char* scatter_prefetch_address(const float* dr, std::size_t ldd, int line) {
  return reinterpret_cast<const char*>(reinterpret_cast<std::uintptr_t>(dr) + kScatterPrefetchRows * ldd * sizeof(float) +
                                       std::uintptr_t(line) * 64);
}
/// Outer-product ("scatter") micro-kernel over one u8-index ELL tile of the stored sparse operand, for
/// calls where S is the transpose of the stored matrix (rows of S = stored columns). For every local
/// stored row lr < re (D row r0 + lr) and every non-zero (lr, col, v) of that row (the row ends at its first
/// zero value: ELL padding, docs/tile-format.md):
///   O[col][0..qn) += alpha * v * D[r0 + lr][0..qn)
/// `idx` / `val`: the tile's index and value blocks (re x w each). O is 32-byte aligned with row stride
/// ldo (a multiple of 8, >= qn rounded up to 8) and whole vectors are accumulated (lanes >= qn receive
/// v * 0 and must be ignored by the caller); qn <= kScatterQ; w >= 1 (tiles with non-zeros). (The AVX-512
/// kernel with qn a multiple of 16 touches only columns [0, qn) of O, unaligned: O may then be C itself.) Stored rows
/// without non-zeros are skipped (their D row is not read). The AVX2 and AVX-512 kernels prefetch the D row
/// kScatterPrefetchRows stored rows ahead of the one they read (a hint: it may point past D's end, it never
/// faults).
using ScatterEllFn = void (*)(const std::uint8_t* idx, const float* val, std::uint32_t re, std::uint32_t w,
                              float alpha, const float* D, std::size_t ldd, int qn, float* O, std::size_t ldo);
void scatter_ell_u8_portable(const std::uint8_t* idx, const float* val, std::uint32_t re, std::uint32_t w, float alpha,
                             const float* D, std::size_t ldd, int qn, float* O, std::size_t ldo);
/// AVX2 + FMA version; only call when cpu_has_avx2_fma().
void scatter_ell_u8_avx2(const std::uint8_t* idx, const float* val, std::uint32_t re, std::uint32_t w, float alpha,
                         const float* D, std::size_t ldd, int qn, float* O, std::size_t ldo);

/// AVX-512F version (16-float vectors; O's row stride ldo a multiple of 16 unless qn is: then any ldo, and O may
/// be C itself, as above); only call when cpu_has_avx512().
/// Results are bit-identical to scatter_ell_u8_avx2 (each output element gets the same FMAs in the same order).
void scatter_ell_u8_avx512(const std::uint8_t* idx, const float* val, std::uint32_t re, std::uint32_t w, float alpha,
                           const float* D, std::size_t ldd, int qn, float* O, std::size_t ldo);
/// Width (floats along Q) of the widest panel of the AVX-512 direct row gather: 24 zmm accumulators per
/// output row, leaving registers for the broadcast value and the loads.
inline constexpr int kWideGatherQ = 384;
/// AVX-512F direct row gather (the contract of GatherEllFn, except qn <= kWideGatherQ instead of kGatherQ): each
/// row's ELL entries are walked once for the whole panel. Results are bit-identical to gather_ell_u8_avx2
/// over the same columns. `next` (next_nt tiles of next_rows rows; none when next_nt is 0): the band gathered
/// after this one, whose ELL payload the kernel prefetches into L1 while it gathers this band (a hint: the
/// tiles' blocks are never read). Only call when cpu_has_avx512().
void gather_ell_u8_avx512(const EllTileRef* t, int nt, int rows, float alpha, const float* D, std::size_t ldd,
                          float* Out, std::size_t ldo, int qn, bool overwrite, const EllTileRef* next = nullptr,
                          int next_nt = 0, int next_rows = 0);
/// gather_ell_u8_avx512 over nb consecutive bands of one panel, in one call: band i has the tiles
/// t[off[i] .. off[i + 1]) and min(band_rows, total_rows - i * band_rows) rows, whose output rows start at
/// Out + i * band_rows * ldo. (Bands of a few short rows, e.g. vgg-s with the 8-row tiles used then: a call
/// and its dispatch per band were about a tenth of the GEMM.) With prefetch_next each band but the last
/// prefetches the next one's payload (as gather_ell_u8_avx512 with `next`). Only call when cpu_has_avx512().
void gather_ell_u8_avx512_bands(const EllTileRef* t, const std::size_t* off, int nb, int band_rows, int total_rows,
                                float alpha, const float* D, std::size_t ldd, float* Out, std::size_t ldo, int qn,
                                bool overwrite, bool prefetch_next = false);
/// The CPU (and the OS, which must save the AVX-512 state) supports AVX-512F, AVX2 and FMA.
bool cpu_has_avx512();

/// C[i][j] = T[j][i] + (beta == 0 ? 0 : beta * C[i][j]) for i < w, j < rows (T row stride ldt, C row
/// stride ldc). beta == 0 never reads C (BLAS semantics); beta == 0 also serves as a plain transpose.
using TransposeStoreFn = void (*)(const float* T, std::size_t ldt, int rows, int w, float* C, std::size_t ldc,
                                  float beta);
void transpose_store_portable(const float* T, std::size_t ldt, int rows, int w, float* C, std::size_t ldc,
                              float beta);
void transpose_store_avx2(const float* T, std::size_t ldt, int rows, int w, float* C, std::size_t ldc, float beta);
/// AVX-512F version (16x16 blocks, edges by transpose_store_avx2): C bit-identical to transpose_store_avx2's,
/// except which payload an element keeps where beta is 1 and both C and T hold a NaN there (a NaN either way: the
/// AVX2 kernel itself keeps C's or T's depending on whether the element falls in its vector part or its scalar
/// edge, where the compiler may order the addition's operands either way; forty-seventh session's review).
/// Only call when cpu_has_avx512(). 1.2-1.35x the AVX2 kernel's rate packing the forward's transposed weights
/// from L3 in probes on the Zen 5 host (docs/bench/gemm.md, forty-fifth session).
void transpose_store_avx512(const float* T, std::size_t ldt, int rows, int w, float* C, std::size_t ldc, float beta);
/// C[i][j] = T[j][i] for i < w <= 64, j < rows <= 64 (beta == 0), writing every whole 64-byte line of each
/// C row segment with non-temporal stores (no read-for-ownership of C; for outputs much larger than the
/// last-level cache). Partial lines at the ends of a segment use ordinary stores. AVX2 only.
void transpose_store_stream_avx2(const float* T, std::size_t ldt, int rows, int w, float* C, std::size_t ldc);

}  // namespace spartan::gemm::detail

