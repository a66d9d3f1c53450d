// Per-tile steps of the compaction into the one tile-sparse format (spartan/format/tile_format.h,
// docs/tile-format.md), written as __host__ __device__ functions (SPARTAN_HD under nvcc) so that the CUDA
// tile-sparse engine compacts a device-resident operand on the GPU (cuda_engines.cu: one thread per tile for
// tile_count_header, an exclusive scan of the 16-byte-aligned payload sizes with CUB, one thread per tile for
// tile_write_payload) and the host test test_gemm_compact_hd runs the very same functions and checks the result
// byte for byte against format::compact(). F32 elements, DENSE tiles in place (DenseStorage::InPlace).
#pragma once
#include <cstdint>
#include <cstring>

#include "spartan/common/hd.h"
#include "spartan/format/tile_format.h"

namespace spartan::gemm::hd {

/// The matrix and options of one compaction (stored row-major rows x cols, row stride ld elements).
struct CompactGeom {
  const float* s;
  std::uint64_t ld;
  std::uint32_t rows, cols, tile_rows, tile_cols, tiles_c;
  double threshold;
  std::uint8_t sparse_format;  ///< format::TileFormat::Ell (1) or Bitmap (2)
  bool dense_if_not_smaller;   ///< format::CompactOptions' size rule
};

SPARTAN_HD inline std::uint32_t f32_bits(float x) {
  std::uint32_t b;
  memcpy(&b, &x, 4);
  return b;
}
SPARTAN_HD inline bool zero_bits(std::uint32_t b) { return (b & 0x7FFFFFFFu) == 0; }
SPARTAN_HD inline std::uint64_t align_up(std::uint64_t x, std::uint64_t a) { return (x + a - 1) / a * a; }

/// Header of tile t (format, flags, width, nnz; offset left 0) and its exact payload bytes, as pass 1 of
/// format::compact() computes them.
SPARTAN_HD inline std::uint64_t tile_count_header(const CompactGeom& g, std::uint64_t t, format::TileHeader* h) {
  const std::uint32_t ti = std::uint32_t(t / g.tiles_c), tj = std::uint32_t(t % g.tiles_c);
  const std::uint32_t re = g.rows - ti * g.tile_rows < g.tile_rows ? g.rows - ti * g.tile_rows : g.tile_rows;
  const std::uint32_t ce = g.cols - tj * g.tile_cols < g.tile_cols ? g.cols - tj * g.tile_cols : g.tile_cols;
  std::uint32_t nnz = 0, width = 0;
  for (std::uint32_t r = 0; r < re; ++r) {
    const float* row = g.s + std::uint64_t(ti * g.tile_rows + r) * g.ld + std::uint64_t(tj) * g.tile_cols;
    std::uint32_t rn = 0;
    for (std::uint32_t c = 0; c < ce; ++c) rn += !zero_bits(f32_bits(row[c]));
    nnz += rn;
    width = rn > width ? rn : width;
  }
  h->nnz = nnz;
  h->offset = 0;
  const double density = double(nnz) / (double(re) * ce);
  std::uint64_t bytes = 0;  // sparse payload bytes (format::sparse_payload_bytes)
  if (nnz > 0) {
    if (g.sparse_format == 1) {
      const std::uint64_t ib = g.tile_cols <= 256 ? 1 : 2;
      bytes = align_up(std::uint64_t(re) * width * ib, format::kEllValueAlignBytes) + std::uint64_t(re) * width * 4;
    } else {
      bytes = std::uint64_t(re) * ((ce + 31) / 32) * 4 + std::uint64_t(nnz) * 4;
    }
  }
  // format::tile_stays_dense: the threshold, then the size rule
  if (density >= g.threshold || (g.dense_if_not_smaller && nnz > 0 && bytes >= std::uint64_t(re) * ce * 4)) {
    h->format = 0;  // DENSE, in place
    h->flags = 0;
    h->width = 0;
    return 0;
  }
  h->format = g.sparse_format;
  h->flags = 0;
  h->width = g.sparse_format == 1 ? static_cast<std::uint16_t>(width) : 0;
  return bytes;
}

SPARTAN_HD inline void store_le32(std::uint8_t* p, std::uint32_t v) {
  p[0] = std::uint8_t(v), p[1] = std::uint8_t(v >> 8), p[2] = std::uint8_t(v >> 16), p[3] = std::uint8_t(v >> 24);
}

/// Writes tile t's payload at payload + h.offset (the area is zero-initialised: gaps and ELL padding stay 0),
/// as pass 2 of format::compact() does.
SPARTAN_HD inline void tile_write_payload(const CompactGeom& g, std::uint64_t t, const format::TileHeader& h,
                                          std::uint8_t* payload) {
  if (h.format == 0 || h.nnz == 0) return;
  const std::uint32_t ti = std::uint32_t(t / g.tiles_c), tj = std::uint32_t(t % g.tiles_c);
  const std::uint32_t re = g.rows - ti * g.tile_rows < g.tile_rows ? g.rows - ti * g.tile_rows : g.tile_rows;
  const std::uint32_t ce = g.cols - tj * g.tile_cols < g.tile_cols ? g.cols - tj * g.tile_cols : g.tile_cols;
  std::uint8_t* p = payload + h.offset;
  if (h.format == 1) {  // ELL
    const std::uint64_t ib = g.tile_cols <= 256 ? 1 : 2;
    std::uint8_t* vals = p + align_up(std::uint64_t(re) * h.width * ib, format::kEllValueAlignBytes);
    for (std::uint32_t r = 0; r < re; ++r) {
      const float* row = g.s + std::uint64_t(ti * g.tile_rows + r) * g.ld + std::uint64_t(tj) * g.tile_cols;
      std::uint64_t j = std::uint64_t(r) * h.width;
      for (std::uint32_t c = 0; c < ce; ++c) {
        const std::uint32_t b = f32_bits(row[c]);
        if (zero_bits(b)) continue;
        if (ib == 1) {
          p[j] = std::uint8_t(c);
        } else {
          p[2 * j] = std::uint8_t(c), p[2 * j + 1] = std::uint8_t(c >> 8);
        }
        store_le32(vals + 4 * j, b);
        ++j;
      }
    }
  } else {  // BITMAP
    const std::uint32_t words = (ce + 31) / 32;
    std::uint8_t* vals = p + std::uint64_t(re) * words * 4;
    std::uint64_t k = 0;
    for (std::uint32_t r = 0; r < re; ++r) {
      const float* row = g.s + std::uint64_t(ti * g.tile_rows + r) * g.ld + std::uint64_t(tj) * g.tile_cols;
      for (std::uint32_t w = 0; w < words; ++w) {
        std::uint32_t bits = 0;
        for (std::uint32_t b = 0; b < 32 && w * 32 + b < ce; ++b) {
          const std::uint32_t x = f32_bits(row[w * 32 + b]);
          if (!zero_bits(x)) {
            bits |= 1u << b;
            store_le32(vals + 4 * (k++), x);
          }
        }
        store_le32(p + (std::uint64_t(r) * words + w) * 4, bits);
      }
    }
  }
}

/// Upper bound of the payload bytes of any tile of the grid (for a scan-free allocation on the device).
inline std::uint64_t max_tile_payload_bytes(std::uint32_t tile_rows, std::uint32_t tile_cols) {
  const std::uint64_t ib = tile_cols <= 256 ? 1 : 2, e = std::uint64_t(tile_rows) * tile_cols;
  const std::uint64_t ell = align_up(e * ib, format::kEllValueAlignBytes) + e * 4;
  const std::uint64_t bitmap = std::uint64_t(tile_rows) * ((tile_cols + 31) / 32) * 4 + e * 4;
  return align_up(ell > bitmap ? ell : bitmap, format::kPayloadAlignBytes);
}

}  // namespace spartan::gemm::hd
