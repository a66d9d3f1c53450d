#include "compact_fast.h"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include "transpose16_avx512.h"

namespace spartan::gemm::detail {

#if defined(__x86_64__) && defined(__GNUC__)
bool cpu_has_avx512_bw() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl");
}

namespace {
#define SPARTAN_AVX512BW __attribute__((target("avx512f,avx512bw,avx512vl,popcnt")))

// body(ti) for every tile row ti < n: an OpenMP loop with nthreads > 1, a plain loop otherwise (an engine of one
// thread enters no parallel region: libgomp's one-thread regions cost 1-2 us, sw/gemm/README.md).
template <class F>
void for_tile_rows(std::uint32_t n, int nthreads, F&& body) {
  if (nthreads > 1 && n > 1) {
#pragma omp parallel for schedule(dynamic, 4) num_threads(nthreads)
    for (long ti = 0; ti < long(n); ++ti) body(std::uint32_t(ti));
  } else {
    for (std::uint32_t ti = 0; ti < n; ++ti) body(ti);
  }
}

inline __mmask16 lanes(std::uint32_t n) { return __mmask16(n >= 16 ? 0xFFFFu : (1u << n) - 1u); }

// load16: the first min(n, 16) floats at x, the other lanes 0; nonzero16: those of the first min(n, 16) lanes
// whose |x| bits are not 0 (format::is_zero_bits); no arithmetic on the values. Whole chunks are read with plain
// loads: with masked loads, pass 2 over an operand coming from memory (VGG-16 conv2_2 backward-weight's col,
// 58 MB, 97 % zeros) took 4.8x the time (29.6 against 6.1 M TSC ticks; pass 1 4-5.6 M), Zen 5 host, rdtsc probe.
SPARTAN_AVX512BW inline __m512i load16(const float* x, std::uint32_t n) {
  return n >= 16 ? _mm512_loadu_si512(x) : _mm512_maskz_loadu_epi32(lanes(n), x);
}
SPARTAN_AVX512BW inline __mmask16 nonzero16(__m512i v, std::uint32_t n) {
  return _mm512_mask_test_epi32_mask(lanes(n), v, _mm512_set1_epi32(0x7FFFFFFF));
}

// Non-zeros of the ce floats at seg.
SPARTAN_AVX512BW inline std::uint32_t row_count(const float* seg, std::uint32_t ce) {
  std::uint32_t rn = 0, c = 0;
  for (; c + 16 <= ce; c += 16) rn += std::uint32_t(_mm_popcnt_u32(nonzero16(load16(seg + c, 16), 16)));
  if (c < ce) rn += std::uint32_t(_mm_popcnt_u32(nonzero16(load16(seg + c, ce - c), ce - c)));
  return rn;
}

// Pass 1 of tile row ti: the non-zeros and the widest row of each of its tiles (nnz[tj], width[tj]), reading each
// source row front to back. With one tile per tile row the counts stay in registers (through nnz[0] / width[0],
// each row's update waited for the previous row's store: 1.9x format::compact()'s time on a 784 x 16 operand).
SPARTAN_AVX512BW void count_tile_row(const float* dense, std::size_t ld, const format::TileGrid& g, std::uint32_t ti,
                                     std::uint32_t* nnz, std::uint32_t* width) {
  const std::uint32_t nc = g.tiles_c(), TC = g.tile_cols, re = g.r_eff(ti);
  const float* base = dense + std::size_t(ti) * g.tile_rows * ld;
  if (nc == 1) {
    std::uint32_t n = 0, w = 0;
    for (std::uint32_t r = 0; r < re; ++r) {
      const std::uint32_t rn = row_count(base + std::size_t(r) * ld, g.c_eff(0));
      n += rn;
      w = std::max(w, rn);
    }
    nnz[0] = n;
    width[0] = w;
    return;
  }
  std::fill(nnz, nnz + nc, 0u);
  std::fill(width, width + nc, 0u);
  for (std::uint32_t r = 0; r < re; ++r)
    for (std::uint32_t tj = 0; tj < nc; ++tj) {
      const std::uint32_t rn = row_count(base + std::size_t(r) * ld + std::size_t(tj) * TC, g.c_eff(tj));
      nnz[tj] += rn;
      width[tj] = std::max(width[tj], rn);
    }
}

// Pass 2 of tile row ti: the payload of its tiles (headers and offsets already final). ELL rows: values and
// column indices of the non-zeros in column order, compressed in registers (branch-free: at 97 % sparsity a
// branch on empty chunks mispredicted enough to cost more than the work it skipped) and stored under a mask of
// the first popcount lanes.
SPARTAN_AVX512BW void fill_tile_row(const float* dense, std::size_t ld, std::uint32_t ti, format::TiledMatrix& m) {
  const format::TileGrid& g = m.grid;
  const std::uint32_t nc = g.tiles_c(), TC = g.tile_cols, re = g.r_eff(ti);
  const bool u8 = format::index_bytes(TC) == 1;
  const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const format::TileHeader* hs = m.headers.data() + std::size_t(ti) * nc;
  // Row by row of the source (each row read front to back, as pass 1 reads it), then tile by tile along it.
  for (std::uint32_t r = 0; r < re; ++r) {
    const float* row = dense + (std::size_t(ti) * g.tile_rows + r) * ld;
    for (std::uint32_t tj = 0; tj < nc; ++tj) {
      const format::TileHeader& h = hs[tj];
      const std::uint32_t ce = g.c_eff(tj);
      const float* s = row + std::size_t(tj) * TC;
      std::uint8_t* p = m.payload.data() + h.offset;
      if (h.fmt() == format::TileFormat::Dense) {
        if (h.flags & format::kFlagDenseInPayload)
          std::memcpy(p + std::size_t(r) * ce * sizeof(float), s, ce * sizeof(float));
        continue;
      }
      if (h.nnz == 0) continue;
      std::uint8_t* vals = p + format::ell_values_offset(re, h.width, TC);
      std::size_t j = std::size_t(r) * h.width;  // the row's first slot
      for (std::uint32_t c = 0; c < ce; c += 16) {
        const __m512i x = load16(s + c, ce - c);
        const __mmask16 nz = nonzero16(x, ce - c);
        const unsigned pop = unsigned(_mm_popcnt_u32(nz));
        const __m512i v = _mm512_maskz_compress_epi32(nz, x);
        const __m512i col = _mm512_maskz_compress_epi32(nz, _mm512_add_epi32(iota, _mm512_set1_epi32(int(c))));
        // The first pop lanes only (the later slots keep the payload's zero fill: the format's padding).
        const __mmask16 first = lanes(pop);
        _mm512_mask_storeu_epi32(vals + j * sizeof(float), first, v);
        if (u8)
          _mm_mask_storeu_epi8(p + j, first, _mm512_maskz_cvtepi32_epi8(0xFFFF, col));
        else
          _mm256_mask_storeu_epi16(p + 2 * j, first, _mm512_maskz_cvtepi32_epi16(0xFFFF, col));
        j += pop;
      }
    }
  }
}

// Pass 1 of the transposed compaction, one source row s (a column of the result) of `rows` elements: cnt[i] +=
// (s[i] non-zero), 16 lanes at a time.
SPARTAN_AVX512BW void count_source_row(const float* s, std::uint32_t rows, std::uint32_t* cnt) {
  const __m512i one = _mm512_set1_epi32(1);
  std::uint32_t i = 0;
  for (; i + 16 <= rows; i += 16) {
    const __mmask16 nz = nonzero16(load16(s + i, 16), 16);
    __m512i* pc = reinterpret_cast<__m512i*>(cnt + i);
    _mm512_storeu_si512(pc, _mm512_mask_add_epi32(_mm512_loadu_si512(pc), nz, _mm512_loadu_si512(pc), one));
  }
  if (i < rows) {
    const __mmask16 live = lanes(rows - i), nz = nonzero16(load16(s + i, rows - i), rows - i);
    const __m512i c = _mm512_maskz_loadu_epi32(live, cnt + i);
    _mm512_mask_storeu_epi32(cnt + i, live, _mm512_mask_add_epi32(c, nz, c, one));
  }
}

// How far ahead along each source row fill_tile_transposed prefetches: two 64-byte pieces, the ones two tiles
// further down the tile column read (16-row tiles). The hardware prefetchers do not follow 256 source rows read 64
// bytes at a time; without it VGG-16 conv2_2's forward compaction at 90 % took 20.0 ms against 12.1 (1, 4, 8 and 16
// pieces: 17.3, 12.4, 12.6, 13.2 ms; probe, forty-seventh session). (A hint: it may point past the source's end.)
constexpr std::size_t kTransposedPrefetchFloats = 2 * 16;

// Pass 2 of the transposed compaction for one sparse tile: its re result rows are the source columns i0.., each
// read down the source rows k0..k0 + ce. Per 16 result rows and 16 source rows, one 64-byte piece of each source
// row is loaded (masked when fewer than 16 result rows remain) and the block transposed in registers
// (transpose16x16: bits moved, not computed on), then each result row's non-zeros are compressed and stored as
// fill_tile_row stores them; a row's slots are filled in source-row order, as format::compact_transposed() fills
// them. p: the tile's payload (index block, then values at `vals`), its rows `width` slots apart.
SPARTAN_AVX512BW void fill_tile_transposed(const float* src, std::size_t ld, std::uint32_t i0, std::uint32_t re,
                                           std::uint32_t k0, std::uint32_t ce, std::uint32_t width, bool u8,
                                           std::uint8_t* p, std::uint8_t* vals) {
  const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  for (std::uint32_t r0 = 0; r0 < re; r0 += 16) {
    const std::uint32_t rn = std::min<std::uint32_t>(16, re - r0);
    std::size_t j[16];  // each result row's next slot
    for (std::uint32_t r = 0; r < rn; ++r) j[r] = std::size_t(r0 + r) * width;
    for (std::uint32_t c = 0; c < ce; c += 16) {
      const std::uint32_t kn = std::min<std::uint32_t>(16, ce - c);
      __m512 x[16];
      for (std::uint32_t t = 0; t < 16; ++t) {  // lanes past rn and rows past kn are 0: never stored
        const float* at = src + std::size_t(k0 + c + t) * ld + i0 + r0;
        if (t < kn) _mm_prefetch(reinterpret_cast<const char*>(at + kTransposedPrefetchFloats), _MM_HINT_T0);
        x[t] = t < kn ? _mm512_castsi512_ps(load16(at, rn)) : _mm512_setzero_ps();
      }
      transpose16x16(x);
      const __m512i col = _mm512_add_epi32(iota, _mm512_set1_epi32(int(c)));
      for (std::uint32_t r = 0; r < rn; ++r) {
        const __m512i xr = _mm512_castps_si512(x[r]);
        const __mmask16 nz = nonzero16(xr, kn);
        const unsigned pop = unsigned(_mm_popcnt_u32(nz));
        const __mmask16 first = lanes(pop);
        _mm512_mask_storeu_epi32(vals + j[r] * sizeof(float), first, _mm512_maskz_compress_epi32(nz, xr));
        const __m512i cr = _mm512_maskz_compress_epi32(nz, col);
        if (u8)
          _mm_mask_storeu_epi8(p + j[r], first, _mm512_maskz_cvtepi32_epi8(0xFFFF, cr));
        else
          _mm256_mask_storeu_epi16(p + 2 * j[r], first, _mm512_maskz_cvtepi32_epi16(0xFFFF, cr));
        j[r] += pop;
      }
    }
  }
}

// Non-zero lanes of s[i0, i0 + n), n <= 64, as a 64-bit mask (bit k: element i0 + k).
SPARTAN_AVX512BW inline std::uint64_t nonzero64(const float* s, std::uint32_t n) {
  std::uint64_t mask = 0;
  for (std::uint32_t q = 0; q < n; q += 16)
    mask |= std::uint64_t(nonzero16(load16(s + q, n - q), n - q)) << q;
  return mask;
}

// Pass 2 of the transposed compaction by source rows, one tile column at a time: each source row's non-zeros,
// found 64 elements at a time across the result rows of the column's sparse tiles, go to their rows' next ELL
// slots. Its work grows with the non-zeros (the blocks path's with the elements).
SPARTAN_AVX512BW void fill_transposed_scan(const float* src, std::size_t ld, format::TiledMatrix& m) {
  const format::TileGrid& g = m.grid;
  const std::uint32_t rows = g.rows, TR = g.tile_rows, TC = g.tile_cols, nr = g.tiles_r(), nc = g.tiles_c();
  const bool u8 = format::index_bytes(TC) == 1;
  std::vector<std::uint8_t*> idx_at(rows);
  std::vector<float*> val_at(rows);
  std::vector<std::pair<std::uint32_t, std::uint32_t>> spans;  // result rows of the sparse tiles with non-zeros
  for (std::uint32_t tj = 0; tj < nc; ++tj) {
    const std::uint32_t ce = g.c_eff(tj);
    spans.clear();
    for (std::uint32_t ti = 0; ti < nr; ++ti) {
      const format::TileHeader& h = m.headers[std::size_t(ti) * nc + tj];
      if (h.fmt() == format::TileFormat::Dense || h.nnz == 0) continue;
      const std::uint32_t re = g.r_eff(ti);
      if (!spans.empty() && spans.back().second == ti * TR)
        spans.back().second += re;
      else
        spans.emplace_back(ti * TR, ti * TR + re);
      std::uint8_t* p = m.payload.data() + h.offset;
      float* vals = reinterpret_cast<float*>(p + format::ell_values_offset(re, h.width, TC));
      for (std::uint32_t r = 0; r < re; ++r) {
        idx_at[ti * TR + r] = p + std::size_t(r) * h.width * (u8 ? 1 : 2);
        val_at[ti * TR + r] = vals + std::size_t(r) * h.width;
      }
    }
    for (std::uint32_t kk = 0; kk < ce; ++kk) {
      const float* s = src + std::size_t(tj * TC + kk) * ld;
      for (const auto& [sb, se] : spans)
        for (std::uint32_t i0 = sb; i0 < se; i0 += 64) {
          std::uint64_t mask = nonzero64(s + i0, std::min<std::uint32_t>(64, se - i0));
          while (mask) {
            const std::uint32_t i = i0 + std::uint32_t(__builtin_ctzll(mask));
            mask &= mask - 1;
            if (u8) {
              *idx_at[i]++ = static_cast<std::uint8_t>(kk);
            } else {
              const std::uint16_t k16 = static_cast<std::uint16_t>(kk);
              std::memcpy(idx_at[i], &k16, 2);
              idx_at[i] += 2;
            }
            std::memcpy(val_at[i]++, s + i, sizeof(float));
          }
        }
    }
  }
}

// Pass 2 of the transposed compaction by blocks, tile by tile down each tile column (consecutive tiles read the
// next 64 bytes of the same source rows).
SPARTAN_AVX512BW void fill_transposed_blocks(const float* src, std::size_t ld, format::TiledMatrix& m) {
  const format::TileGrid& g = m.grid;
  const std::uint32_t TR = g.tile_rows, TC = g.tile_cols, nr = g.tiles_r(), nc = g.tiles_c();
  const bool u8 = format::index_bytes(TC) == 1;
  for (std::uint32_t tj = 0; tj < nc; ++tj)
    for (std::uint32_t ti = 0; ti < nr; ++ti) {
      const format::TileHeader& h = m.headers[std::size_t(ti) * nc + tj];
      if (h.fmt() == format::TileFormat::Dense || h.nnz == 0) continue;
      const std::uint32_t re = g.r_eff(ti);
      std::uint8_t* p = m.payload.data() + h.offset;
      fill_tile_transposed(src, ld, ti * TR, re, tj * TC, g.c_eff(tj), h.width, u8, p,
                           p + format::ell_values_offset(re, h.width, TC));
    }
}

// True when the matrix's density (sum of the headers' nnz over rows x cols) is >= skip_payload_density: the
// payload is then not written (density_at_least: the engine's whole-call guard's test).
bool headers_only(const format::TiledMatrix& m, double skip_payload_density) {
  if (!(skip_payload_density <= 1.0)) return false;
  std::uint64_t nnz = 0;
  for (const auto& h : m.headers) nnz += h.nnz;
  return density_at_least(nnz, m.grid.rows, m.grid.cols, skip_payload_density);
}

// Every tile's format and payload offset, in tile order, from its non-zeros and widest row (nnz[t], width[t],
// row-major tile order), as format::compact() places them; returns the payload's size in bytes.
std::size_t set_headers(format::TiledMatrix& m, const format::CompactOptions& o, const std::vector<std::uint32_t>& nnz,
                        const std::vector<std::uint32_t>& width) {
  const format::TileGrid& g = m.grid;
  const std::uint32_t nr = g.tiles_r(), nc = g.tiles_c();
  std::uint64_t off = 0;
  for (std::uint32_t ti = 0; ti < nr; ++ti)
    for (std::uint32_t tj = 0; tj < nc; ++tj) {
      const std::size_t t = std::size_t(ti) * nc + tj;
      off = format::place_tile(m.headers[t], o, g.r_eff(ti), g.c_eff(tj), nnz[t], width[t], off);
    }
  return format::align_up(off, format::kPayloadAlignBytes);
}
}  // namespace

bool compact_f32_avx512(const float* dense, std::uint32_t rows, std::uint32_t cols, std::size_t ld,
                        const format::CompactOptions& o, int nthreads, format::TiledMatrix& out,
                        double skip_payload_density) {
  format::check_options(rows, cols, ld, o);
  if (o.elem != format::ElemType::F32 || o.sparse_format != format::TileFormat::Ell || !cpu_has_avx512_bw())
    return false;
  format::TiledMatrix m = format::new_tiled_matrix(rows, cols, o, dense, ld, false);
  const format::TileGrid& g = m.grid;
  const std::uint32_t nr = g.tiles_r(), nc = g.tiles_c();
  std::vector<std::uint32_t> nnz(g.num_tiles()), width(g.num_tiles());
  for_tile_rows(nr, nthreads, [&](std::uint32_t ti) {
    count_tile_row(dense, ld, g, ti, nnz.data() + std::size_t(ti) * nc, width.data() + std::size_t(ti) * nc);
  });
  const std::size_t payload_bytes = set_headers(m, o, nnz, width);
  if (headers_only(m, skip_payload_density)) {
    out = std::move(m);
    return true;
  }
  m.payload.assign(payload_bytes, 0);
  for_tile_rows(nr, nthreads, [&](std::uint32_t ti) { fill_tile_row(dense, ld, ti, m); });
  out = std::move(m);
  return true;
}

bool compact_transposed_f32_avx512(const float* src, std::uint32_t stored_rows, std::uint32_t stored_cols,
                                   std::size_t ld, const format::CompactOptions& o, format::TiledMatrix& out,
                                   double skip_payload_density, TransposedFill fill) {
  format::check_options(stored_rows, stored_cols, ld, o);
  const std::uint32_t rows = stored_cols, cols = stored_rows;  // the result src^T
  if (o.elem != format::ElemType::F32 || o.sparse_format != format::TileFormat::Ell ||
      o.dense_storage != format::DenseStorage::InPlace || !cpu_has_avx512_bw())
    return false;
  format::TiledMatrix m = format::new_tiled_matrix(rows, cols, o, src, ld, true);
  const format::TileGrid& g = m.grid;
  const std::uint32_t TR = g.tile_rows, TC = g.tile_cols, nr = g.tiles_r(), nc = g.tiles_c();
  // rc[tj * rows + i]: non-zeros of result row i in tile column tj.
  std::vector<std::uint32_t> rc(std::size_t(nc) * rows, 0);
  for (std::uint32_t c = 0; c < cols; ++c)
    count_source_row(src + std::size_t(c) * ld, rows, rc.data() + std::size_t(c / TC) * rows);
  std::vector<std::uint32_t> nnz(g.num_tiles(), 0), width(g.num_tiles(), 0);
  for (std::uint32_t ti = 0; ti < nr; ++ti)
    for (std::uint32_t tj = 0; tj < nc; ++tj) {
      const std::size_t t = std::size_t(ti) * nc + tj;
      for (std::uint32_t r = 0; r < g.r_eff(ti); ++r) {
        const std::uint32_t rn = rc[std::size_t(tj) * rows + ti * TR + r];
        nnz[t] += rn;
        width[t] = std::max(width[t], rn);
      }
    }
  const std::size_t payload_bytes = set_headers(m, o, nnz, width);
  if (headers_only(m, skip_payload_density)) {
    out = std::move(m);
    return true;
  }
  m.payload.assign(payload_bytes, 0);
  // Pass 2: by source rows for sparse operands, by 16 x 16 blocks transposed in registers for denser ones. The scan
  // costs per non-zero (a branch and a slot pointer each), the blocks per element; bench-gemm's forward GEMMs at
  // batch 1, compaction summed over the 14 rows, scan against blocks (two alternated rounds): 70 % zeros 50.2 /
  // 69.3 against 29.4 / 40.0 ms, 90 % 26.0 / 35.4 against 23.8 / 28.3, 97 % 15.6-18.7 against 16.3-17.4 ms, the
  // blocks slower at 97 % on the layers with few result rows (AlexNet conv3 / conv5, ResNet-18 conv4_x / conv5_x)
  // (docs/bench/gemm.md, forty-seventh session). Auto: blocks at a density of kTransposedBlocksMinDensity or more.
  std::uint64_t total = 0;
  for (const std::uint32_t n : nnz) total += n;
  const bool blocks = fill == TransposedFill::Blocks ||
                      (fill == TransposedFill::Auto &&
                       density_at_least(total, rows, cols, kTransposedBlocksMinDensity));
  if (blocks)
    fill_transposed_blocks(src, ld, m);
  else
    fill_transposed_scan(src, ld, m);
  out = std::move(m);
  return true;
}
#else
bool cpu_has_avx512_bw() { return false; }
bool compact_f32_avx512(const float*, std::uint32_t rows, std::uint32_t cols, std::size_t ld,
                        const format::CompactOptions& o, int, format::TiledMatrix&, double) {
  format::check_options(rows, cols, ld, o);
  return false;
}
bool compact_transposed_f32_avx512(const float*, std::uint32_t stored_rows, std::uint32_t stored_cols, std::size_t ld,
                                   const format::CompactOptions& o, format::TiledMatrix&, double, TransposedFill) {
  format::check_options(stored_rows, stored_cols, ld, o);
  return false;
}
#endif

}  // namespace spartan::gemm::detail
