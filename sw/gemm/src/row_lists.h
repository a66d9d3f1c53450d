// Internal: row lists of the logical sparse operand S of the CPU tile-sparse GEMM, built from the
// compacted tiles (loop structure: tile_sparse.cpp and sw/gemm/README.md). Entries are {r, alpha * v}.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "spartan/format/tile_format.h"
#include "spartan/gemm/tile_sparse.h"

namespace spartan::gemm::detail {

using format::TileFormat;
using format::TiledMatrix;
using format::TileHeader;

// Iterates the non-zeros of one stored row (local row `r`) of a sparse-format tile: f(col, value).
// `cursor` is the running value index for BITMAP tiles (rows must be visited in increasing order).
template <class F>
inline void for_row(const TiledMatrix& s, const TileHeader& h, std::uint32_t r_eff, std::uint32_t c_eff,
                    std::uint32_t r, std::size_t& cursor, F&& f) {
  const std::uint8_t* p = s.tile_payload(h);
  if (h.fmt() == TileFormat::Ell) {
    const std::uint32_t w = h.width;
    const float* vals = reinterpret_cast<const float*>(p + format::ell_values_offset(r_eff, w, s.grid.tile_cols));
    const bool u8 = format::index_bytes(s.grid.tile_cols) == 1;
    for (std::uint32_t j = 0; j < w; ++j) {
      const float v = vals[std::size_t(r) * w + j];
      if (format::is_zero(v)) break;  // padding ends the row
      const std::size_t slot = std::size_t(r) * w + j;
      const std::uint32_t col = u8 ? p[slot] : format::detail::load_le<std::uint16_t>(p + 2 * slot);
      f(col, v);
    }
  } else {  // Bitmap
    const std::size_t words = format::bitmap_row_words(c_eff);
    const float* vals = reinterpret_cast<const float*>(p + format::bitmap_bytes(r_eff, c_eff));
    const std::uint32_t* bm = reinterpret_cast<const std::uint32_t*>(p) + std::size_t(r) * words;
    for (std::size_t wi = 0; wi < words; ++wi) {
      std::uint32_t bits = bm[wi];
      while (bits) {
        const int b = __builtin_ctz(bits);
        bits &= bits - 1;
        f(std::uint32_t(wi * 32 + b), vals[cursor++]);
      }
    }
  }
}

// Header of tile (ti, tj) for a grid of ntc tile columns. TiledMatrix::header recomputes tiles_c (an
// integer division) on every call, and the compiler cannot hoist it past the stores of the list builders;
// the callers here pass the hoisted count (per-call fixed cost of small GEMMs, docs/bench/gemm.md).
inline const TileHeader& hdr_at(const TiledMatrix& s, std::uint32_t ntc, std::uint32_t ti, std::uint32_t tj) {
  return s.headers[std::size_t(ti) * ntc + tj];
}

// Row lists of S ("CSR over P"): the entries of row p are e[row_beg[p] .. row_end[p]), {r, alpha * v}
// with r ascending. Built band by band, each band into its own region of the entry array (band_slots
// entries, so that bands can be built in parallel and ELL tiles can be read branch-free).

// Entries reserved for one band: all ELL slots of its sparse tiles (u8 ELL is read branch-free,
// padding included), else the non-zeros.
inline std::size_t band_slots(const TiledMatrix& s, std::uint32_t band, bool trans_s, bool u8idx) {
  const format::TileGrid& g = s.grid;
  const std::uint32_t ntc = g.tiles_c(), n_rt = trans_s ? g.tiles_r() : ntc;
  std::size_t slots = 0;
  for (std::uint32_t rt = 0; rt < n_rt; ++rt) {
    const TileHeader& h = trans_s ? hdr_at(s, ntc, rt, band) : hdr_at(s, ntc, band, rt);
    if (h.nnz == 0 || h.fmt() == TileFormat::Dense) continue;
    const std::uint32_t re = g.r_eff(trans_s ? rt : band);
    slots += (h.fmt() == TileFormat::Ell && u8idx) ? std::size_t(re) * h.width : h.nnz;
  }
  return slots;
}

// S rows = stored rows: tile row `band` walked row by row across its sparse tiles.
inline void build_rows(const TiledMatrix& s, std::uint32_t band, float alpha, bool u8idx, Entry* e, std::size_t ne,
                std::uint32_t* row_beg, std::uint32_t* row_end, std::vector<std::size_t>& cursor) {
  const format::TileGrid& g = s.grid;
  const std::uint32_t nc = g.tiles_c(), TC = g.tile_cols, rows = g.r_eff(band), p0 = band * g.tile_rows;
  std::fill(cursor.begin(), cursor.end(), 0);
  for (std::uint32_t r = 0; r < rows; ++r) {
    row_beg[p0 + r] = std::uint32_t(ne);
    for (std::uint32_t tj = 0; tj < nc; ++tj) {
      const TileHeader& h = hdr_at(s, nc, band, tj);
      if (h.nnz == 0 || h.fmt() == TileFormat::Dense) continue;
      const std::uint32_t base = tj * TC;
      if (h.fmt() == TileFormat::Ell && u8idx) {  // branch-free: every slot written, cursor moves on non-zeros
        const std::uint32_t w = h.width;
        const std::uint8_t* idx = s.tile_payload(h) + std::size_t(r) * w;
        const float* val =
            reinterpret_cast<const float*>(s.tile_payload(h) + format::ell_values_offset(rows, w, TC)) +
            std::size_t(r) * w;
        for (std::uint32_t j = 0; j < w; ++j) {
          e[ne] = {base + idx[j], alpha * val[j]};
          ne += !format::is_zero(val[j]);
        }
      } else {
        for_row(s, h, rows, g.c_eff(tj), r, cursor[tj],
                [&](std::uint32_t col, float v) { e[ne++] = {base + col, alpha * v}; });
      }
    }
    row_end[p0 + r] = std::uint32_t(ne);
  }
}

// S = stored^T: the rows of S are the columns of tile column `band`; its non-zeros are bucketed by column
// (counting sort), stable, so r ascends.
inline void build_cols(const TiledMatrix& s, std::uint32_t band, float alpha, bool u8idx, Entry* e, std::size_t ne,
                std::uint32_t* row_beg, std::uint32_t* row_end, std::vector<std::uint32_t>& cnt) {
  const format::TileGrid& g = s.grid;
  const std::uint32_t nr = g.tiles_r(), ntc = g.tiles_c(), TR = g.tile_rows, TC = g.tile_cols, ce = g.c_eff(band),
                      p0 = band * TC;
  // Column counts. u8 ELL tiles: four interleaved histograms of every slot of the index block (no value
  // reads, no branches; four tables split runs of padding increments into short store-forwarding
  // chains), then the padding slots (index 0 by the format, `r_eff * width - nnz` of them per tile;
  // docs/tile-format.md, checked by format::validate) are taken off column 0. The exact recount below only
  // keeps a matrix that violates this from underflowing the counts.
  const std::size_t stride = std::size_t(u8idx ? std::max<std::uint32_t>(TC, 256) : TC) + 2;
  cnt.assign(4 * stride, 0);
  std::uint32_t* cn = cnt.data();
  std::uint32_t *h0 = cn + stride, *h1 = cn + 2 * stride, *h2 = cn + 3 * stride;
  std::uint64_t pad_total = 0;
  // Calls f(local row, column, value) for every stored non-zero of a u8-index ELL tile (row order).
  auto each_ell_u8 = [&](const TileHeader& h, std::uint32_t re, auto&& f) {
    const std::uint32_t w = h.width;
    const std::uint8_t* idx = s.tile_payload(h);
    const float* val = reinterpret_cast<const float*>(idx + format::ell_values_offset(re, w, TC));
    for (std::uint32_t lr = 0; lr < re; ++lr) {
      const std::uint8_t* ix = idx + std::size_t(lr) * w;
      const float* vv = val + std::size_t(lr) * w;
      // The row ends at its first zero (ELL padding, docs/tile-format.md): its length found without a
      // branch per slot, then a counted loop (its exit does not wait for a value load).
      std::uint32_t n = 0, alive = 1;
      for (std::uint32_t j = 0; j < w; ++j) n += (alive &= !format::is_zero(vv[j]));
      for (std::uint32_t j = 0; j < n; ++j) f(lr, ix[j], vv[j]);
    }
  };
  auto count_exact = [&](const TileHeader& h, std::uint32_t re) {
    if (h.fmt() == TileFormat::Ell && u8idx) {
      each_ell_u8(h, re, [&](std::uint32_t, std::uint32_t col, float) { ++cn[col + 1]; });
    } else {
      std::size_t cur = 0;
      for (std::uint32_t lr = 0; lr < re; ++lr)
        for_row(s, h, re, ce, lr, cur, [&](std::uint32_t col, float) { ++cn[col + 1]; });
    }
  };
  for (std::uint32_t rt = 0; rt < nr; ++rt) {
    const TileHeader& h = hdr_at(s, ntc, rt, band);
    if (h.nnz == 0 || h.fmt() == TileFormat::Dense) continue;
    const std::uint32_t re = g.r_eff(rt);
    if (h.fmt() == TileFormat::Ell && u8idx) {
      const std::uint8_t* idx = s.tile_payload(h);
      const std::size_t n = std::size_t(re) * h.width;
      std::size_t j = 0;
      for (; j + 4 <= n; j += 4) {
        ++cn[idx[j] + 1];
        ++h0[idx[j + 1] + 1];
        ++h1[idx[j + 2] + 1];
        ++h2[idx[j + 3] + 1];
      }
      for (; j < n; ++j) ++cn[idx[j] + 1];
      pad_total += n - h.nnz;
    } else {
      count_exact(h, re);
    }
  }
  for (std::uint32_t i = 1; i <= TC; ++i) cn[i] += h0[i] + h1[i] + h2[i];
  if (cn[1] >= pad_total) {
    cn[1] -= std::uint32_t(pad_total);
  } else {
    std::fill(cn, cn + stride, 0u);
    for (std::uint32_t rt = 0; rt < nr; ++rt) {
      const TileHeader& h = hdr_at(s, ntc, rt, band);
      if (h.nnz != 0 && h.fmt() != TileFormat::Dense) count_exact(h, g.r_eff(rt));
    }
  }
  cn[0] = std::uint32_t(ne);
  for (std::uint32_t i = 0; i <= TC; ++i) cn[i + 1] += cn[i];
  for (std::uint32_t col = 0; col < ce; ++col) row_beg[p0 + col] = cn[col], row_end[p0 + col] = cn[col + 1];
  for (std::uint32_t rt = 0; rt < nr; ++rt) {
    const TileHeader& h = hdr_at(s, ntc, rt, band);
    if (h.nnz == 0 || h.fmt() == TileFormat::Dense) continue;
    const std::uint32_t re = g.r_eff(rt), rbase = rt * TR;
    if (h.fmt() == TileFormat::Ell && u8idx) {
      each_ell_u8(h, re, [&](std::uint32_t lr, std::uint32_t col, float v) { e[cn[col]++] = {rbase + lr, alpha * v}; });
    } else {
      std::size_t cur = 0;
      for (std::uint32_t lr = 0; lr < re; ++lr)
        for_row(s, h, re, ce, lr, cur,
                [&](std::uint32_t col, float v) { e[cn[col]++] = {rbase + lr, alpha * v}; });
    }
  }
}

}  // namespace spartan::gemm::detail
