// The ONE tile-sparse format of the project (design: ../shared/design/ARCHITECTURE.md from the repository
// root, outside this repository, section "The tile-sparse format (one definition)"; what is built:
// docs/architecture.md; byte-level specification with a worked example: docs/tile-format.md).
//
// Used by the CPU and CUDA GEMM kernels (sw/gemm), the TLM compaction-engine model and the RTL
// scoreboards. Everything that defines bytes lives here: header layout, payload layout per format,
// alignment, the zero test, and the reference compact/expand.
//
// Summary
//  - A stored (row-major) matrix of `rows x cols` elements is cut into tiles of `tile_rows x tile_cols`
//    (TR x TC); edge tiles are clipped (their effective size is r_eff x c_eff). Tiles are numbered in
//    row-major tile order: tile (ti, tj) has index ti * tiles_c + tj.
//  - Each tile has a 16-byte TileHeader {format, flags, width, nnz, offset} (little-endian).
//  - nnz is always the true number of non-zero elements of the tile, whatever its format.
//  - A tile with density nnz / (r_eff * c_eff) >= threshold is DENSE; so is, by default
//    (CompactOptions::dense_if_not_smaller), a tile whose sparse payload would take at least as many bytes
//    as its r_eff * c_eff dense elements (sparse_not_smaller; F32 ELL with u8 indices: a widest row of about
//    4/5 of the columns or more, fewer when the 4-byte alignment of the index block adds bytes, see
//    docs/tile-format.md): compaction never makes a tile larger. Otherwise the tile gets the requested sparse format (ELL or BITMAP). A tile with
//    nnz == 0 below the threshold is a "zero tile": sparse format, width 0, no payload. Kernels skip every
//    tile with nnz == 0.
//  - DENSE tiles stay in place in the source matrix (DenseStorage::InPlace, the default, as the
//    hardware compaction engine does) or are copied row-major into the payload (DenseStorage::Payload,
//    header flag kFlagDenseInPayload) so that a TiledMatrix is self-contained.
//  - Every tile's payload starts at a multiple of kPayloadAlignBytes (16) from the start of the payload
//    area; gaps are zero bytes. Every offset is a multiple of 16, also for tiles without payload (their
//    offset is the running offset), so offsets never decrease and tile t occupies
//    [offset, offset + tile_payload_bytes(t)).
//  - Zero means +0.0 or -0.0 only; NaN, Inf and denormals are non-zero (is_zero_bits). ELL/BITMAP tiles
//    do not store zeros, so expand() writes +0.0 where the source had -0.0; DENSE tiles keep every bit.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#if defined(__SSE2__) && !defined(__CUDA_ARCH__)
#include <emmintrin.h>
#endif

#include "spartan/common/error.h"

namespace spartan::format {

/// Per-tile storage format (header byte 0). Values are part of the byte format; never renumber.
enum class TileFormat : std::uint8_t {
  Dense = 0,   ///< r_eff x c_eff elements row-major, in place in the source or copied to the payload.
  Ell = 1,     ///< ELLPACK over the tile's rows: width = max non-zeros in one tile row.
  Bitmap = 2,  ///< one bit per element (row-major, u32 words per row) + packed non-zero values.
  // 3 is reserved for CSR (not implemented).
};

/// Element type of the matrix (matrix-level, not per tile). Values are part of the format.
enum class ElemType : std::uint8_t { F32 = 0, F16 = 1, BF16 = 2 };

/// Where DENSE tiles live.
enum class DenseStorage : std::uint8_t { InPlace = 0, Payload = 1 };

inline constexpr std::size_t kHeaderBytes = 16;
inline constexpr std::size_t kPayloadAlignBytes = 16;
/// ELL: the column-index block is padded to this many bytes before the value block starts.
inline constexpr std::size_t kEllValueAlignBytes = 4;
/// Header flag bit 0: this DENSE tile's elements are in the payload (else in place in the source).
inline constexpr std::uint8_t kFlagDenseInPayload = 0x01;
/// Default tile grid. 32 x 32 f32 = one 128-byte L2 line per tile row (the SparsityMonitor counts per
/// line); benchmark comparison of tile sizes: docs/bench/gemm.md.
inline constexpr std::uint32_t kDefaultTileRows = 32;
inline constexpr std::uint32_t kDefaultTileCols = 32;

/// Per-tile header, exactly 16 bytes, little-endian:
///   byte 0      format (TileFormat)
///   byte 1      flags  (bit 0 = kFlagDenseInPayload; other bits 0)
///   bytes 2-3   width  (u16: ELL width; 0 for DENSE/BITMAP and for zero tiles)
///   bytes 4-7   nnz    (u32: true non-zero count of the tile)
///   bytes 8-15  offset (u64: byte offset of the tile's payload from the start of the payload area)
struct TileHeader {
  std::uint8_t format = 0;
  std::uint8_t flags = 0;
  std::uint16_t width = 0;
  std::uint32_t nnz = 0;
  std::uint64_t offset = 0;

  TileFormat fmt() const { return static_cast<TileFormat>(format); }
  bool operator==(const TileHeader& o) const {
    return format == o.format && flags == o.flags && width == o.width && nnz == o.nnz && offset == o.offset;
  }
};
static_assert(sizeof(TileHeader) == kHeaderBytes, "TileHeader must be 16 bytes");
static_assert(offsetof(TileHeader, width) == 2 && offsetof(TileHeader, nnz) == 4 && offsetof(TileHeader, offset) == 8,
              "TileHeader field offsets are part of the byte format");
static_assert(std::is_trivially_copyable<TileHeader>::value, "TileHeader must be trivially copyable");

/// Writes the header's 16 bytes in little-endian order (independent of the host byte order).
inline void encode_header(const TileHeader& h, std::uint8_t out[kHeaderBytes]) {
  out[0] = h.format;
  out[1] = h.flags;
  for (int i = 0; i < 2; ++i) out[2 + i] = static_cast<std::uint8_t>(h.width >> (8 * i));
  for (int i = 0; i < 4; ++i) out[4 + i] = static_cast<std::uint8_t>(h.nnz >> (8 * i));
  for (int i = 0; i < 8; ++i) out[8 + i] = static_cast<std::uint8_t>(h.offset >> (8 * i));
}

/// Reads a header from its 16 little-endian bytes.
inline TileHeader decode_header(const std::uint8_t in[kHeaderBytes]) {
  TileHeader h;
  h.format = in[0];
  h.flags = in[1];
  h.width = static_cast<std::uint16_t>(in[2] | (in[3] << 8));
  for (int i = 3; i >= 0; --i) h.nnz = (h.nnz << 8) | in[4 + i];
  for (int i = 7; i >= 0; --i) h.offset = (h.offset << 8) | in[8 + i];
  return h;
}

inline std::size_t elem_bytes(ElemType t) { return t == ElemType::F32 ? 4 : 2; }

/// Zero test on raw element bits: +0.0 and -0.0 are zero; NaN, Inf, denormals are non-zero.
inline bool is_zero_bits(std::uint32_t bits) { return (bits & 0x7FFFFFFFu) == 0; }  // f32
inline bool is_zero_bits(std::uint16_t bits) { return (bits & 0x7FFFu) == 0; }      // f16 and bf16
inline bool is_zero(float x) {
  std::uint32_t b;
  std::memcpy(&b, &x, 4);
  return is_zero_bits(b);
}

/// Column-index width in bytes for ELL: u8 when tile_cols <= 256, else u16 (tile_cols <= 65535).
inline std::size_t index_bytes(std::uint32_t tile_cols) { return tile_cols <= 256 ? 1 : 2; }

inline std::size_t align_up(std::size_t x, std::size_t a) { return (x + a - 1) / a * a; }

/// Tile grid over a stored row-major matrix.
struct TileGrid {
  std::uint32_t rows = 0, cols = 0;                                     ///< stored matrix, elements
  std::uint32_t tile_rows = kDefaultTileRows, tile_cols = kDefaultTileCols;  ///< TR, TC

  /// Tiles per column / row of tiles: ceil(rows / TR), ceil(cols / TC), in 64 bits (rows + TR - 1 would wrap
  /// in 32 bits for rows near 2^32). TR, TC >= 1 (check_options, validate).
  std::uint32_t tiles_r() const { return std::uint32_t((std::uint64_t(rows) + tile_rows - 1) / tile_rows); }
  std::uint32_t tiles_c() const { return std::uint32_t((std::uint64_t(cols) + tile_cols - 1) / tile_cols); }
  std::size_t num_tiles() const { return std::size_t(tiles_r()) * tiles_c(); }
  std::uint32_t row0(std::uint32_t ti) const { return ti * tile_rows; }
  std::uint32_t col0(std::uint32_t tj) const { return tj * tile_cols; }
  /// Effective (clipped) size of the tiles in tile row ti / tile column tj.
  std::uint32_t r_eff(std::uint32_t ti) const { return std::min(tile_rows, rows - ti * tile_rows); }
  std::uint32_t c_eff(std::uint32_t tj) const { return std::min(tile_cols, cols - tj * tile_cols); }
};

/// Bytes of a BITMAP tile's bitmap: each of the r_eff rows has ceil(c_eff / 32) little-endian u32
/// words; element (r, c) is bit (c % 32) of word c / 32 of row r (LSB first).
inline std::size_t bitmap_row_words(std::uint32_t c_eff) { return (c_eff + 31) / 32; }
inline std::size_t bitmap_bytes(std::uint32_t r_eff, std::uint32_t c_eff) {
  return std::size_t(r_eff) * bitmap_row_words(c_eff) * 4;
}
/// Bytes of an ELL tile's index block (before padding to kEllValueAlignBytes).
inline std::size_t ell_index_bytes(std::uint32_t r_eff, std::uint32_t width, std::uint32_t tile_cols) {
  return std::size_t(r_eff) * width * index_bytes(tile_cols);
}
/// Offset of the ELL value block from the tile's payload start.
inline std::size_t ell_values_offset(std::uint32_t r_eff, std::uint32_t width, std::uint32_t tile_cols) {
  return align_up(ell_index_bytes(r_eff, width, tile_cols), kEllValueAlignBytes);
}

/// Exact payload size of one tile in bytes (before the 16-byte alignment of the next tile).
///   DENSE in place: 0; DENSE in payload: r_eff*c_eff*eb.
///   ELL: align4(r_eff*width*ib) + r_eff*width*eb.   BITMAP: bitmap_bytes + nnz*eb.   nnz == 0 (sparse): 0.
inline std::size_t tile_payload_bytes(const TileHeader& h, std::uint32_t r_eff, std::uint32_t c_eff,
                                      std::uint32_t tile_cols, ElemType et) {
  const std::size_t eb = elem_bytes(et);
  switch (h.fmt()) {
    case TileFormat::Dense:
      return (h.flags & kFlagDenseInPayload) ? std::size_t(r_eff) * c_eff * eb : 0;
    case TileFormat::Ell:
      if (h.nnz == 0) return 0;
      return ell_values_offset(r_eff, h.width, tile_cols) + std::size_t(r_eff) * h.width * eb;
    case TileFormat::Bitmap:
      if (h.nnz == 0) return 0;
      return bitmap_bytes(r_eff, c_eff) + std::size_t(h.nnz) * eb;
  }
  return 0;
}

/// Options of compact().
struct CompactOptions {
  std::uint32_t tile_rows = kDefaultTileRows;
  std::uint32_t tile_cols = kDefaultTileCols;
  /// Density (nnz / elements of the clipped tile) at or above which a tile stays DENSE. 0 makes every
  /// tile DENSE; a value > 1 makes every tile sparse. The GEMM kernels' default comes from calibration
  /// (sw/gemm/README.md).
  double threshold = 0.5;
  TileFormat sparse_format = TileFormat::Ell;  ///< format of non-DENSE tiles: Ell or Bitmap
  DenseStorage dense_storage = DenseStorage::InPlace;
  ElemType elem = ElemType::F32;
  /// Size rule: a tile below the threshold whose sparse payload (sparse_payload_bytes) would be at least
  /// its dense bytes r_eff * c_eff * eb is DENSE too. ELL pads every row to the widest one, so a tile of
  /// density 0.45 with one nearly full row takes 32 * 26 * 5 B > 4 KiB in ELL (review F8,
  /// docs/review/2026-12-01-numbers.md). false gives the threshold alone (tests forcing a sparse format).
  bool dense_if_not_smaller = true;
};

/// Payload bytes a non-zero tile (nnz > 0) would take in sparse format `f` (Ell or Bitmap) with ELL width
/// `width` (the largest row non-zero count): the sizes of tile_payload_bytes().
inline std::size_t sparse_payload_bytes(TileFormat f, std::uint32_t r_eff, std::uint32_t c_eff, std::uint32_t width,
                                        std::uint32_t nnz, std::uint32_t tile_cols, ElemType et) {
  const std::size_t eb = elem_bytes(et);
  if (f == TileFormat::Ell) return ell_values_offset(r_eff, width, tile_cols) + std::size_t(r_eff) * width * eb;
  return bitmap_bytes(r_eff, c_eff) + std::size_t(nnz) * eb;
}

/// The size rule's test: a non-zero tile whose sparse payload in `f` would be at least its dense bytes
/// r_eff * c_eff * eb (false for nnz == 0: a zero tile has no payload).
inline bool sparse_not_smaller(TileFormat f, std::uint32_t r_eff, std::uint32_t c_eff, std::uint32_t width,
                               std::uint32_t nnz, std::uint32_t tile_cols, ElemType et) {
  return nnz > 0 && sparse_payload_bytes(f, r_eff, c_eff, width, nnz, tile_cols, et) >=
                        std::size_t(r_eff) * c_eff * elem_bytes(et);
}

/// The format decision of compact() for a tile of r_eff x c_eff elements with `nnz` non-zeros and widest
/// row `width`: true when the tile is DENSE (threshold, then the size rule).
inline bool tile_stays_dense(const CompactOptions& o, std::uint32_t r_eff, std::uint32_t c_eff, std::uint32_t width,
                             std::uint32_t nnz) {
  if (double(nnz) / (double(r_eff) * c_eff) >= o.threshold) return true;
  return o.dense_if_not_smaller && sparse_not_smaller(o.sparse_format, r_eff, c_eff, width, nnz, o.tile_cols, o.elem);
}

/// A compacted matrix: grid, one header per tile (row-major tile order) and the payload area.
/// With DenseStorage::InPlace, DENSE tiles are read from `source` (non-owning; must outlive this).
struct TiledMatrix {
  TileGrid grid;
  ElemType elem = ElemType::F32;
  TileFormat sparse_format = TileFormat::Ell;
  DenseStorage dense_storage = DenseStorage::InPlace;
  double threshold = 0.5;
  bool dense_if_not_smaller = true;  ///< the size rule of CompactOptions was applied
  std::vector<TileHeader> headers;
  std::vector<std::uint8_t> payload;
  const void* source = nullptr;  ///< the dense source (for in-place DENSE tiles)
  std::size_t source_ld = 0;     ///< row stride of `source`, elements
  /// `source` stores the transpose of this matrix: element (r, c) is source[c * source_ld + r]
  /// (set by compact_transposed()).
  bool source_transposed = false;

  const TileHeader& header(std::uint32_t ti, std::uint32_t tj) const {
    return headers[std::size_t(ti) * grid.tiles_c() + tj];
  }
  const std::uint8_t* tile_payload(const TileHeader& h) const { return payload.data() + h.offset; }
  /// Pointer to element (r, c) of the dense source (of this matrix, not of what `source` stores).
  const std::uint8_t* source_at(std::size_t r, std::size_t c) const {
    return static_cast<const std::uint8_t*>(source) +
           (source_transposed ? c * source_ld + r : r * source_ld + c) * elem_bytes(elem);
  }
  /// Headers as the 16-byte little-endian records of the byte format (what hardware writes).
  std::vector<std::uint8_t> header_bytes() const {
    std::vector<std::uint8_t> out(headers.size() * kHeaderBytes);
    for (std::size_t i = 0; i < headers.size(); ++i) encode_header(headers[i], out.data() + i * kHeaderBytes);
    return out;
  }
};

/// The matrix-level fields compact() and compact_transposed() give a rows x cols result: the grid of opt's tiles,
/// opt's element type, formats, threshold and size rule, `source` (row stride ld elements; source_transposed: it
/// stores the transpose of the result), one default header per tile and an empty payload.
inline TiledMatrix new_tiled_matrix(std::uint32_t rows, std::uint32_t cols, const CompactOptions& opt,
                                    const void* source, std::size_t ld, bool source_transposed) {
  TiledMatrix m;
  m.grid = TileGrid{rows, cols, opt.tile_rows, opt.tile_cols};
  m.elem = opt.elem;
  m.sparse_format = opt.sparse_format;
  m.dense_storage = opt.dense_storage;
  m.threshold = opt.threshold;
  m.dense_if_not_smaller = opt.dense_if_not_smaller;
  m.source = source;
  m.source_ld = ld;
  m.source_transposed = source_transposed;
  m.headers.resize(m.grid.num_tiles());
  return m;
}

/// compact()'s header for a tile of r_eff x c_eff elements with `nnz` non-zeros and widest row `width`, placed
/// after a payload ending at byte `off`: its format (tile_stays_dense), flags (kFlagDenseInPayload for a DENSE
/// tile under DenseStorage::Payload), nnz, ELL width and offset (off rounded up to kPayloadAlignBytes) are set in
/// `h`; returns the end of its payload (offset + tile_payload_bytes). Every compaction of the format and of the
/// CPU engine places its tiles with this, in row-major tile order.
inline std::uint64_t place_tile(TileHeader& h, const CompactOptions& opt, std::uint32_t r_eff, std::uint32_t c_eff,
                                std::uint32_t nnz, std::uint32_t width, std::uint64_t off) {
  h.nnz = nnz;
  if (tile_stays_dense(opt, r_eff, c_eff, width, nnz)) {
    h.format = std::uint8_t(TileFormat::Dense);
    h.flags = opt.dense_storage == DenseStorage::Payload ? kFlagDenseInPayload : 0;
  } else {
    h.format = std::uint8_t(opt.sparse_format);
    h.width = opt.sparse_format == TileFormat::Ell ? static_cast<std::uint16_t>(width) : 0;
  }
  h.offset = align_up(off, kPayloadAlignBytes);
  return h.offset + tile_payload_bytes(h, r_eff, c_eff, opt.tile_cols, opt.elem);
}

/// Counts of tiles by kind, for reporting.
struct TileCounts {
  std::size_t zero = 0, sparse = 0, dense = 0;  ///< zero: nnz == 0 (any format); dense/sparse: nnz > 0
};
inline TileCounts count_tiles(const TiledMatrix& m) {
  TileCounts c;
  for (const auto& h : m.headers) {
    if (h.nnz == 0)
      ++c.zero;
    else if (h.fmt() == TileFormat::Dense)
      ++c.dense;
    else
      ++c.sparse;
  }
  return c;
}

namespace detail {

/// Host byte order: the payload is little-endian; on a little-endian host values are copied as they are.
inline constexpr bool kHostLittleEndian = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__;

template <class T>
inline T load_bits(const std::uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}
template <class T>
inline void store_le(std::uint8_t* p, T v) {  // little-endian store of an unsigned integer
  for (std::size_t i = 0; i < sizeof(T); ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * i));
}
template <class T>
inline T load_le(const std::uint8_t* p) {
  T v = 0;
  for (std::size_t i = sizeof(T); i-- > 0;) v = static_cast<T>((v << 8) | p[i]);
  return v;
}

/// Bit i set iff x[i] is non-zero (is_zero_bits), for i < n <= 32.
template <class T>
inline std::uint32_t nonzero_mask(const T* x, std::uint32_t n) {
  std::uint32_t mask = 0;
#if defined(__SSE2__) && !defined(__CUDA_ARCH__)
  if constexpr (sizeof(T) == 4) {
    if (n == 32) {  // 4 elements per SSE2 compare
      const __m128i abs_mask = _mm_set1_epi32(0x7FFFFFFF), zero = _mm_setzero_si128();
      for (int i = 0; i < 8; ++i) {
        const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x + 4 * i));
        const int z = _mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(_mm_and_si128(v, abs_mask), zero)));
        mask |= std::uint32_t(~z & 0xF) << (4 * i);
      }
      return mask;
    }
  }
#endif
  for (std::uint32_t i = 0; i < n; ++i) mask |= std::uint32_t(!is_zero_bits(x[i])) << i;
  return mask;
}

/// T = std::uint32_t (F32) or std::uint16_t (F16/BF16): the raw element bits.
template <class T>
TiledMatrix compact_bits(const T* dense, std::uint32_t rows, std::uint32_t cols, std::size_t ld,
                         const CompactOptions& opt) {
  TiledMatrix m = new_tiled_matrix(rows, cols, opt, dense, ld, false);
  const TileGrid& g = m.grid;
  const std::uint32_t TR = g.tile_rows, TC = g.tile_cols;
  const std::uint32_t nr = g.tiles_r(), nc = g.tiles_c();
  // Pass 1: per tile nnz, ELL width, format, payload size; running offsets.
  std::uint64_t off = 0;
  for (std::uint32_t ti = 0; ti < nr; ++ti)
    for (std::uint32_t tj = 0; tj < nc; ++tj) {
      const std::uint32_t re = g.r_eff(ti), ce = g.c_eff(tj);
      std::uint32_t nnz = 0, width = 0;
      for (std::uint32_t r = 0; r < re; ++r) {
        const T* row = dense + std::size_t(ti * TR + r) * ld + std::size_t(tj) * TC;
        std::uint32_t rn = 0;
        for (std::uint32_t c = 0; c < ce; ++c) rn += !is_zero_bits(row[c]);
        nnz += rn;
        width = std::max(width, rn);
      }
      off = place_tile(m.headers[std::size_t(ti) * nc + tj], opt, re, ce, nnz, width, off);
    }
  m.payload.assign(align_up(off, kPayloadAlignBytes), 0);
  // Pass 2: fill payloads.
  const std::size_t ib = index_bytes(TC);
  for (std::uint32_t ti = 0; ti < nr; ++ti)
    for (std::uint32_t tj = 0; tj < nc; ++tj) {
      const TileHeader& h = m.headers[std::size_t(ti) * nc + tj];
      const std::uint32_t re = g.r_eff(ti), ce = g.c_eff(tj);
      std::uint8_t* p = m.payload.data() + h.offset;
      auto row_ptr = [&](std::uint32_t r) { return dense + std::size_t(ti * TR + r) * ld + std::size_t(tj) * TC; };
      if (h.fmt() == TileFormat::Dense) {
        if (!(h.flags & kFlagDenseInPayload)) continue;
        for (std::uint32_t r = 0; r < re; ++r) std::memcpy(p + std::size_t(r) * ce * sizeof(T), row_ptr(r), ce * sizeof(T));
      } else if (h.nnz == 0) {
        continue;
      } else if (h.fmt() == TileFormat::Ell) {
        std::uint8_t* vals = p + ell_values_offset(re, h.width, TC);
        for (std::uint32_t r = 0; r < re; ++r) {
          const T* row = row_ptr(r);
          // 32 elements at a time: a non-zero mask (vectorisable), then one step per set bit.
          const std::size_t slot0 = std::size_t(r) * h.width;
          std::size_t j = slot0;
          for (std::uint32_t c0 = 0; c0 < ce; c0 += 32) {
            const std::uint32_t n = std::min<std::uint32_t>(32, ce - c0);
            std::uint32_t mask = nonzero_mask(row + c0, n);
            while (mask) {
              const std::uint32_t c = c0 + std::uint32_t(__builtin_ctz(mask));
              mask &= mask - 1;
              if (ib == 1)
                p[j] = static_cast<std::uint8_t>(c);
              else
                store_le<std::uint16_t>(p + 2 * j, static_cast<std::uint16_t>(c));
              if (kHostLittleEndian)
                std::memcpy(vals + j * sizeof(T), row + c, sizeof(T));
              else
                store_le<T>(vals + j * sizeof(T), row[c]);
              ++j;
            }
          }
        }
      } else {  // Bitmap
        const std::size_t words = bitmap_row_words(ce);
        std::uint8_t* vals = p + bitmap_bytes(re, ce);
        std::size_t k = 0;
        for (std::uint32_t r = 0; r < re; ++r) {
          const T* row = row_ptr(r);
          for (std::size_t w = 0; w < words; ++w) {
            std::uint32_t bits = 0;
            for (std::uint32_t b = 0; b < 32 && w * 32 + b < ce; ++b) {
              const T x = row[w * 32 + b];
              if (!is_zero_bits(x)) {
                bits |= 1u << b;
                store_le<T>(vals + (k++) * sizeof(T), x);
              }
            }
            store_le<std::uint32_t>(p + (std::size_t(r) * words + w) * 4, bits);
          }
        }
      }
    }
  return m;
}

/// compact_transposed() for raw element bits T: tiles of the rows x cols transpose of the stored (cols x rows,
/// row stride ld) matrix `src`, headers and payload identical to compact_bits() of a stored copy of the
/// transpose. Reads `src` front to back, row by row, in both passes (no transposed copy): pass 1 counts the
/// non-zeros of every row of the result per tile column (one counter per result row, vectorised), pass 2
/// places each non-zero in its tile's slot (and, with DenseStorage::Payload, copies DENSE tiles element by
/// element; InPlace leaves them in `src`, source_transposed).
template <class T>
TiledMatrix compact_transposed_bits(const T* src, std::uint32_t rows, std::uint32_t cols, std::size_t ld,
                                    const CompactOptions& opt) {
  TiledMatrix m = new_tiled_matrix(rows, cols, opt, src, ld, true);
  const bool in_place = opt.dense_storage == DenseStorage::InPlace;  // DENSE tiles stay in `src`, read transposed
  const TileGrid& g = m.grid;
  const std::uint32_t TR = g.tile_rows, TC = g.tile_cols;
  const std::uint32_t nr = g.tiles_r(), nc = g.tiles_c();
  // rc[tj * rows + i]: non-zeros of result row i in tile column tj (pass 1; pass 2 reads it for BITMAP offsets).
  std::vector<std::uint32_t> rc(std::size_t(nc) * rows, 0);
  // Pass 1: source row c is result column c; its element i belongs to result row i.
  for (std::uint32_t c = 0; c < cols; ++c) {
    const T* s = src + std::size_t(c) * ld;
    std::uint32_t* cnt = rc.data() + std::size_t(c / TC) * rows;
    std::uint32_t i = 0;
#if defined(__SSE2__) && !defined(__CUDA_ARCH__)
    if constexpr (sizeof(T) == 4) {
      const __m128i abs_mask = _mm_set1_epi32(0x7FFFFFFF), zero = _mm_setzero_si128(), one = _mm_set1_epi32(1);
      for (; i + 4 <= rows; i += 4) {
        const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i));
        const __m128i z = _mm_cmpeq_epi32(_mm_and_si128(v, abs_mask), zero);  // -1 where zero
        __m128i* pc = reinterpret_cast<__m128i*>(cnt + i);
        _mm_storeu_si128(pc, _mm_add_epi32(_mm_loadu_si128(pc), _mm_add_epi32(one, z)));
      }
    }
#endif
    for (; i < rows; ++i) cnt[i] += !is_zero_bits(s[i]);
  }
  std::uint64_t off = 0;
  for (std::uint32_t ti = 0; ti < nr; ++ti)
    for (std::uint32_t tj = 0; tj < nc; ++tj) {
      const std::uint32_t re = g.r_eff(ti), ce = g.c_eff(tj);
      std::uint32_t nnz = 0, width = 0;
      for (std::uint32_t r = 0; r < re; ++r) {
        const std::uint32_t rn = rc[std::size_t(tj) * rows + ti * TR + r];
        nnz += rn;
        width = std::max(width, rn);
      }
      off = place_tile(m.headers[std::size_t(ti) * nc + tj], opt, re, ce, nnz, width, off);
    }
  m.payload.assign(align_up(off, kPayloadAlignBytes), 0);
  // Pass 2, one tile column at a time. Per result row i of a sparse tile: where its next non-zero goes
  // (idx_at[i]: ELL index slot, bitmap byte row; val_at[i]: value slot) and how many it has placed (placed[i]).
  const bool ell = opt.sparse_format == TileFormat::Ell;
  const std::size_t ib = index_bytes(TC), eb = sizeof(T);
  std::vector<std::uint8_t*> idx_at(rows), val_at(rows);
  std::vector<std::uint32_t> placed(rows);
  std::vector<std::uint32_t> dense_ti;  // the DENSE tiles of the current tile column (Payload)
  std::vector<std::pair<std::uint32_t, std::uint32_t>> spans;  // its result rows in sparse tiles with non-zeros
  for (std::uint32_t tj = 0; tj < nc; ++tj) {
    const std::uint32_t ce = g.c_eff(tj), words = std::uint32_t(bitmap_row_words(ce));
    dense_ti.clear();
    spans.clear();
    for (std::uint32_t ti = 0; ti < nr; ++ti) {
      const TileHeader& h = m.headers[std::size_t(ti) * nc + tj];
      const std::uint32_t re = g.r_eff(ti);
      std::uint8_t* p = m.payload.data() + h.offset;
      if (h.fmt() == TileFormat::Dense && !in_place) dense_ti.push_back(ti);
      if (h.fmt() != TileFormat::Dense && h.nnz > 0) {
        if (!spans.empty() && spans.back().second == ti * TR)
          spans.back().second += re;
        else
          spans.emplace_back(ti * TR, ti * TR + re);
      }
      std::size_t before = 0;  // BITMAP: non-zeros of the tile's earlier rows
      for (std::uint32_t r = 0; r < re; ++r) {
        const std::uint32_t i = ti * TR + r;
        placed[i] = 0;
        if (h.fmt() == TileFormat::Dense || h.nnz == 0) {
          idx_at[i] = val_at[i] = nullptr;  // (never used: only the spans of sparse tiles are scanned)
        } else if (ell) {
          idx_at[i] = p + std::size_t(r) * h.width * ib;
          val_at[i] = p + ell_values_offset(re, h.width, TC) + std::size_t(r) * h.width * eb;
        } else {
          idx_at[i] = p + std::size_t(r) * words * 4;
          val_at[i] = p + bitmap_bytes(re, ce) + before * eb;
          before += rc[std::size_t(tj) * rows + i];
        }
      }
    }
    for (std::uint32_t kk = 0; kk < ce; ++kk) {
      const T* s = src + std::size_t(tj * TC + kk) * ld;
      for (std::uint32_t ti : dense_ti) {  // column kk of a DENSE tile (Payload): every element, zeros included
        std::uint8_t* p = m.payload.data() + m.headers[std::size_t(ti) * nc + tj].offset;
        for (std::uint32_t r = 0; r < g.r_eff(ti); ++r)
          std::memcpy(p + (std::size_t(r) * ce + kk) * eb, s + ti * TR + r, eb);
      }
      for (const auto& [sb, se] : spans)  // (DENSE and zero tiles' rows are not scanned)
        for (std::uint32_t i0 = sb; i0 < se; i0 += 32) {
          std::uint32_t mask = nonzero_mask(s + i0, std::min<std::uint32_t>(32, se - i0));
          while (mask) {
            const std::uint32_t i = i0 + std::uint32_t(__builtin_ctz(mask));
            mask &= mask - 1;
            std::uint8_t* ip = idx_at[i];
            const std::uint32_t j = placed[i]++;
            if (!ell)
              ip[kk / 8] |= std::uint8_t(1u << (kk % 8));  // bit kk of the row's little-endian u32 words
            else if (ib == 1)
              ip[j] = static_cast<std::uint8_t>(kk);
            else
              store_le<std::uint16_t>(ip + 2 * std::size_t(j), static_cast<std::uint16_t>(kk));
            if (kHostLittleEndian)
              std::memcpy(val_at[i] + std::size_t(j) * eb, s + i, eb);
            else
              store_le<T>(val_at[i] + std::size_t(j) * eb, s[i]);
          }
        }
    }
  }
  return m;
}

template <class T>
void expand_bits(const TiledMatrix& m, T* out, std::size_t ld) {
  const TileGrid& g = m.grid;
  const std::uint32_t TR = g.tile_rows, TC = g.tile_cols;
  const std::size_t ib = index_bytes(TC);
  // Expanding onto the source itself (expand() checked ld == source_ld): in-place DENSE tiles are already
  // there; zero-filling them first would destroy them.
  const bool onto_source = static_cast<const void*>(out) == m.source;
  for (std::uint32_t ti = 0; ti < g.tiles_r(); ++ti)
    for (std::uint32_t tj = 0; tj < g.tiles_c(); ++tj) {
      const TileHeader& h = m.header(ti, tj);
      const std::uint32_t re = g.r_eff(ti), ce = g.c_eff(tj);
      if (onto_source && h.fmt() == TileFormat::Dense && !(h.flags & kFlagDenseInPayload)) continue;
      auto orow = [&](std::uint32_t r) { return out + std::size_t(ti * TR + r) * ld + std::size_t(tj) * TC; };
      for (std::uint32_t r = 0; r < re; ++r) std::fill(orow(r), orow(r) + ce, T(0));
      const std::uint8_t* p = m.payload.data() + h.offset;
      if (h.fmt() == TileFormat::Dense) {
        for (std::uint32_t r = 0; r < re; ++r) {
          if (!(h.flags & kFlagDenseInPayload) && m.source_transposed) {  // a column of the stored source
            for (std::uint32_t c = 0; c < ce; ++c)
              std::memcpy(orow(r) + c, m.source_at(std::size_t(ti) * TR + r, std::size_t(tj) * TC + c), sizeof(T));
            continue;
          }
          const std::uint8_t* src = (h.flags & kFlagDenseInPayload)
                                        ? p + std::size_t(r) * ce * sizeof(T)
                                        : m.source_at(std::size_t(ti) * TR + r, std::size_t(tj) * TC);
          std::memcpy(orow(r), src, ce * sizeof(T));
        }
      } else if (h.nnz == 0) {
        continue;
      } else if (h.fmt() == TileFormat::Ell) {
        const std::uint8_t* vals = p + ell_values_offset(re, h.width, TC);
        for (std::uint32_t r = 0; r < re; ++r)
          for (std::uint32_t j = 0; j < h.width; ++j) {
            const std::size_t slot = std::size_t(r) * h.width + j;
            const T v = load_le<T>(vals + slot * sizeof(T));
            if (is_zero_bits(v)) break;  // padding (+0.0) only at the end of a row
            const std::uint32_t c = ib == 1 ? p[slot] : load_le<std::uint16_t>(p + 2 * slot);
            orow(r)[c] = v;
          }
      } else if (h.fmt() == TileFormat::Bitmap) {
        const std::size_t words = bitmap_row_words(ce);
        const std::uint8_t* vals = p + bitmap_bytes(re, ce);
        std::size_t k = 0;
        for (std::uint32_t r = 0; r < re; ++r)
          for (std::size_t w = 0; w < words; ++w) {
            std::uint32_t bits = load_le<std::uint32_t>(p + (std::size_t(r) * words + w) * 4);
            while (bits) {
              const int b = __builtin_ctz(bits);
              bits &= bits - 1;
              orow(r)[w * 32 + b] = load_le<T>(vals + (k++) * sizeof(T));
            }
          }
      }
    }
}

}  // namespace detail

/// Largest tile side (rows and columns): u16 ELL column indices; a tile row index fits 16 bits too, and
/// TR * TC < 2^32 (u32 nnz). Grid arithmetic (tile origins, band starts) stays far from 32-bit limits.
inline constexpr std::uint32_t kMaxTileSide = 65535;

/// Checks the options against the matrix shape: 1 <= TR, TC <= kMaxTileSide, ELL or BITMAP, a known
/// element type, ld >= cols, threshold not NaN. Throws spartan::InputError.
inline void check_options(std::uint32_t rows, std::uint32_t cols, std::size_t ld, const CompactOptions& o) {
  if (o.tile_rows == 0 || o.tile_cols == 0 || o.tile_rows > kMaxTileSide || o.tile_cols > kMaxTileSide)
    throw InputError("tile format: tile size must be 1..65535 rows x 1..65535 columns, got " +
                     std::to_string(o.tile_rows) + "x" + std::to_string(o.tile_cols));
  if (o.sparse_format != TileFormat::Ell && o.sparse_format != TileFormat::Bitmap)
    throw InputError("tile format: sparse format must be ELL or BITMAP");
  if (o.elem != ElemType::F32 && o.elem != ElemType::F16 && o.elem != ElemType::BF16)
    throw InputError("tile format: element type must be F32, F16 or BF16");
  if (ld < cols) throw InputError("tile format: leading dimension smaller than the number of columns");
  if (!(o.threshold == o.threshold)) throw InputError("tile format: threshold is NaN");
  (void)rows;
}

/// A tile size TR x TC as a tool option gives it.
struct TileSize {
  std::uint32_t rows = 0, cols = 0;
};

/// Parses a tile size "RxC" (e.g. "32x32"): two decimal numbers without sign or leading zeros joined by 'x'
/// and nothing else (^[1-9][0-9]*x[1-9][0-9]*$), each in 1..kMaxTileSide. Throws spartan::InputError
/// starting with `what` (the option's name, e.g. "--tile").
inline TileSize parse_tile_size(const std::string& s, const std::string& what) {
  const auto bad = [&](const std::string& why) {
    return InputError(what + ": expected ROWSxCOLS with sides 1..65535 (e.g. 32x32), got '" + s + "'" + why);
  };
  std::uint64_t v[2] = {0, 0};
  std::size_t i = 0;
  for (int k = 0; k < 2; ++k) {
    if (k == 1) {
      if (i >= s.size() || s[i] != 'x') throw bad("");
      ++i;
    }
    if (i >= s.size() || s[i] < '1' || s[i] > '9') throw bad("");
    for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) {
      v[k] = v[k] * 10 + std::uint64_t(s[i] - '0');
      if (v[k] > kMaxTileSide) throw bad(" (side too large)");
    }
  }
  if (i != s.size()) throw bad("");
  return TileSize{std::uint32_t(v[0]), std::uint32_t(v[1])};
}

/// Compacts a row-major dense matrix of raw element bits (`elem` says which type; ld in elements).
/// Throws spartan::InputError on bad options.
inline TiledMatrix compact(const void* dense, std::uint32_t rows, std::uint32_t cols, std::size_t ld,
                           const CompactOptions& opt) {
  check_options(rows, cols, ld, opt);
  if (opt.elem == ElemType::F32)
    return detail::compact_bits(static_cast<const std::uint32_t*>(dense), rows, cols, ld, opt);
  return detail::compact_bits(static_cast<const std::uint16_t*>(dense), rows, cols, ld, opt);
}
/// F32 convenience overload (opt.elem is forced to F32).
inline TiledMatrix compact(const float* dense, std::uint32_t rows, std::uint32_t cols, std::size_t ld,
                           CompactOptions opt) {
  opt.elem = ElemType::F32;
  return compact(static_cast<const void*>(dense), rows, cols, ld, opt);
}

/// Compacts the transpose of a row-major matrix without storing it: `dense` is stored rows x cols (row
/// stride ld, elements of `elem`), the result is the tiled cols x rows matrix dense^T, with the headers and
/// payload that compact() gives for a stored copy of dense^T. `source` = dense, `source_ld` = ld and
/// `source_transposed` is set (source_at() and expand() read `source` transposed; expanding onto `dense`
/// itself throws). With DenseStorage::InPlace (the default) the DENSE tiles stay in `dense`; with Payload
/// they are copied (element by element: slow for mostly DENSE matrices). For a GEMM whose kernel walks the rows of
/// op(A) = A^T (sw/gemm, TileSparseEngine::compact_orientation). Both passes read `dense` row by row
/// (compact_transposed_bits); one counter per row of the transpose and tile column.
/// Throws spartan::InputError on bad options.
inline TiledMatrix compact_transposed(const void* dense, std::uint32_t rows, std::uint32_t cols, std::size_t ld,
                                      const CompactOptions& opt) {
  check_options(rows, cols, ld, opt);
  if (opt.elem == ElemType::F32)
    return detail::compact_transposed_bits(static_cast<const std::uint32_t*>(dense), cols, rows, ld, opt);
  return detail::compact_transposed_bits(static_cast<const std::uint16_t*>(dense), cols, rows, ld, opt);
}
/// F32 convenience overload (opt.elem is forced to F32).
inline TiledMatrix compact_transposed(const float* dense, std::uint32_t rows, std::uint32_t cols, std::size_t ld,
                                      CompactOptions opt) {
  opt.elem = ElemType::F32;
  return compact_transposed(static_cast<const void*>(dense), rows, cols, ld, opt);
}


/// Writes the dense matrix back (row-major, ld in elements >= cols): the inverse of compact(), bit-exact except
/// that a -0.0 stored in an ELL/BITMAP tile (a zero, not stored) comes back as +0.0 (see the header).
/// In-place DENSE tiles are read from m.source. `out` may be m.source itself (with ld == m.source_ld): the
/// in-place DENSE tiles are then left as they are and the other tiles rewritten from the payload. Any other
/// overlap of `out` with the source is not detected and gives wrong DENSE tiles. Throws
/// spartan::InputError for ld < cols, out == m.source with ld != m.source_ld, or out == m.source of a
/// transposed compaction (source_transposed: the source holds the transpose).
/// Trusts m (compact()'s output); run validate() first on matrices from elsewhere.
inline void expand(const TiledMatrix& m, void* out, std::size_t ld) {
  if (ld < m.grid.cols) throw InputError("tile format: expand: leading dimension smaller than the columns");
  if (out == m.source && m.source_transposed)
    throw InputError("tile format: expand onto the source matrix of a transposed compaction");
  if (out == m.source && ld != m.source_ld)
    throw InputError("tile format: expand onto the source matrix needs the source's leading dimension");
  if (m.elem == ElemType::F32)
    detail::expand_bits(m, static_cast<std::uint32_t*>(out), ld);
  else
    detail::expand_bits(m, static_cast<std::uint16_t*>(out), ld);
}
/// F32 convenience: returns a new rows x cols row-major matrix.
inline std::vector<float> expand(const TiledMatrix& m) {
  std::vector<float> out(std::size_t(m.grid.rows) * m.grid.cols);
  expand(m, static_cast<void*>(out.data()), m.grid.cols);
  return out;
}

/// Structural validation of a TiledMatrix (e.g. one written by a hardware model), so that expand() and the
/// GEMM kernels stay inside the payload and the output: grid (1 <= TR, TC <= kMaxTileSide), element type,
/// header count; per tile: format known, flags only kFlagDenseInPayload on DENSE tiles, width 0 except on
/// ELL tiles with nnz > 0, nnz <= tile size, ELL width <= c_eff, offsets aligned, non-decreasing and inside
/// the payload (no wrap-around); ELL: padding only at row ends (value +-0, index 0), column indices below
/// c_eff and strictly ascending within a row, stored non-zeros == nnz; BITMAP: bits only below c_eff, set
/// bits == nnz. Cost linear in the headers and the sparse payloads (in-place DENSE tiles are not read).
/// Throws spartan::InputError naming the first bad tile.
inline void validate(const TiledMatrix& m) {
  const TileGrid& g = m.grid;
  if (g.tile_rows == 0 || g.tile_cols == 0 || g.tile_rows > kMaxTileSide || g.tile_cols > kMaxTileSide)
    throw InputError("tile format: tile size " + std::to_string(g.tile_rows) + "x" + std::to_string(g.tile_cols) +
                     " outside 1..65535 x 1..65535");
  if (m.elem != ElemType::F32 && m.elem != ElemType::F16 && m.elem != ElemType::BF16)
    throw InputError("tile format: unknown element type " + std::to_string(unsigned(m.elem)));
  if (m.headers.size() != g.num_tiles()) throw InputError("tile format: header count does not match the grid");
  const std::size_t ib = index_bytes(g.tile_cols), eb = elem_bytes(m.elem), size = m.payload.size();
  std::uint64_t prev_end = 0;
  for (std::uint32_t ti = 0; ti < g.tiles_r(); ++ti)
    for (std::uint32_t tj = 0; tj < g.tiles_c(); ++tj) {
      const TileHeader& h = m.header(ti, tj);
      const auto where = [&] { return "tile format: tile (" + std::to_string(ti) + "," + std::to_string(tj) + "): "; };
      const std::uint32_t re = g.r_eff(ti), ce = g.c_eff(tj);
      if (h.format > 2) throw InputError(where() + "unknown format " + std::to_string(h.format));
      if (h.flags & ~(h.fmt() == TileFormat::Dense ? kFlagDenseInPayload : 0u))
        throw InputError(where() + "flags " + std::to_string(h.flags) + " not allowed for this format");
      if (h.width != 0 && !(h.fmt() == TileFormat::Ell && h.nnz > 0))
        throw InputError(where() + "width must be 0 for DENSE, BITMAP and zero tiles");
      if (h.nnz > std::uint64_t(re) * ce) throw InputError(where() + "nnz larger than the tile");
      if (h.fmt() == TileFormat::Ell && (h.width > ce || std::uint64_t(h.width) * re < h.nnz))
        throw InputError(where() + "ELL width inconsistent with nnz / tile columns");
      if (h.fmt() == TileFormat::Dense && !(h.flags & kFlagDenseInPayload) && !m.source)
        throw InputError(where() + "in-place DENSE tile but no source matrix");
      const std::size_t bytes = tile_payload_bytes(h, re, ce, g.tile_cols, m.elem);
      if (h.offset < prev_end) throw InputError(where() + "payload offset overlaps the previous tile");
      if (h.offset % kPayloadAlignBytes) throw InputError(where() + "payload offset not 16-byte aligned");
      if (h.offset > size || bytes > size - h.offset) throw InputError(where() + "payload beyond the payload area");
      prev_end = h.offset + bytes;
      if (h.nnz == 0) continue;
      const std::uint8_t* p = m.payload.data() + h.offset;
      if (h.fmt() == TileFormat::Ell) {  // padding: only at row ends, value +-0, index 0
        const std::uint8_t* vals = p + ell_values_offset(re, h.width, g.tile_cols);
        std::uint64_t nz = 0;
        for (std::uint32_t r = 0; r < re; ++r) {
          bool pad = false;
          std::uint32_t prev_c = 0;
          for (std::uint32_t j = 0; j < h.width; ++j) {
            const std::size_t slot = std::size_t(r) * h.width + j;
            const bool zero = eb == 4 ? is_zero_bits(detail::load_le<std::uint32_t>(vals + slot * 4))
                                      : is_zero_bits(detail::load_le<std::uint16_t>(vals + slot * 2));
            const std::uint32_t c = ib == 1 ? p[slot] : detail::load_le<std::uint16_t>(p + 2 * slot);
            if (zero) pad = true;
            if (pad && (!zero || c != 0)) throw InputError(where() + "ELL padding not at a row end or index not 0");
            if (!pad && c >= ce) throw InputError(where() + "ELL column index outside the tile");
            if (!pad && j > 0 && c <= prev_c)
              throw InputError(where() + "ELL column indices not strictly ascending in row " + std::to_string(r));
            prev_c = c;
            nz += !zero;
          }
        }
        if (nz != h.nnz) throw InputError(where() + "ELL non-zeros do not match the header nnz");
      } else if (h.fmt() == TileFormat::Bitmap) {  // set bits == nnz, unused high bits of the last word 0
        const std::size_t words = bitmap_row_words(ce);
        const std::uint32_t tail = ce % 32 ? ~((1u << (ce % 32)) - 1) : 0u;  // bits at columns >= c_eff
        std::uint64_t set = 0;
        for (std::uint32_t r = 0; r < re; ++r)
          for (std::size_t w = 0; w < words; ++w) {
            const std::uint32_t bits = detail::load_le<std::uint32_t>(p + (std::size_t(r) * words + w) * 4);
            if (w + 1 == words && (bits & tail))
              throw InputError(where() + "BITMAP bit set beyond the tile's columns in row " + std::to_string(r));
            set += std::uint64_t(__builtin_popcount(bits));
          }
        if (set != h.nnz) throw InputError(where() + "BITMAP set bits do not match the header nnz");
      }
    }
}

}  // namespace spartan::format
