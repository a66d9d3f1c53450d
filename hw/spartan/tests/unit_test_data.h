// Test matrices with the special values that matter for zero detection (+-0.0, NaN, Inf, denormals)
// for F32, F16 and BF16, and reference per-tile counts.
#pragma once
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "spartan/hw/regmap.h"

namespace spartan::hw::test {

/// Row-major matrix of raw element bits, stored with `pitch_bytes` per row.
struct RawMatrix {
  regmap::ElemType dtype = regmap::ElemType::F32;
  std::uint32_t rows = 0, cols = 0, pitch_bytes = 0;
  std::vector<std::uint8_t> bytes;  ///< rows * pitch_bytes (padding bytes are 0xA5: must be ignored)

  unsigned eb() const { return regmap::elem_bytes(dtype); }
  std::uint32_t bits(std::uint32_t r, std::uint32_t c) const {
    std::uint32_t v = 0;
    std::memcpy(&v, bytes.data() + std::size_t(r) * pitch_bytes + std::size_t(c) * eb(), eb());
    return v;
  }
  bool nonzero(std::uint32_t r, std::uint32_t c) const {
    const std::uint32_t mask = eb() == 4 ? 0x7FFFFFFFu : 0x7FFFu;
    return (bits(r, c) & mask) != 0;
  }
};

/// Random matrix with density ~ `density`, and a sprinkling of -0.0, NaN, Inf and denormals.
inline RawMatrix make_matrix(regmap::ElemType dt, std::uint32_t rows, std::uint32_t cols, std::uint32_t pitch_bytes,
                             double density, std::uint32_t seed) {
  RawMatrix m;
  m.dtype = dt;
  m.rows = rows;
  m.cols = cols;
  m.pitch_bytes = pitch_bytes;
  m.bytes.assign(std::size_t(rows) * pitch_bytes, 0xA5);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const unsigned eb = m.eb();
  for (std::uint32_t r = 0; r < rows; ++r)
    for (std::uint32_t c = 0; c < cols; ++c) {
      std::uint32_t v = 0;
      const double x = u(rng);
      const double y = u(rng);
      if (x < density) {
        if (y < 0.05)  // specials: NaN, Inf, denormal (all non-zero)
          v = dt == regmap::ElemType::F32 ? 0x7FC00000u : dt == regmap::ElemType::F16 ? 0x7E00u : 0x7FC0u;
        else if (y < 0.10)
          v = dt == regmap::ElemType::F32 ? 0xFF800000u : dt == regmap::ElemType::F16 ? 0xFC00u : 0xFF80u;
        else if (y < 0.15)
          v = 1;  // smallest denormal
        else
          v = (rng() | 1u) & (eb == 4 ? 0xBFFFFFFFu : 0xBFFFu);
      } else {
        v = (y < 0.3) ? (eb == 4 ? 0x80000000u : 0x8000u) : 0u;  // -0.0 or +0.0
      }
      std::memcpy(m.bytes.data() + std::size_t(r) * pitch_bytes + std::size_t(c) * eb, &v, eb);
    }
  return m;
}

/// Exact per-tile non-zero counts (row-major tile order).
inline std::vector<std::uint32_t> reference_counts(const RawMatrix& m, std::uint32_t tr, std::uint32_t tc) {
  const std::uint64_t tpr = regmap::tiles_per_row(m.cols, tc);
  std::vector<std::uint32_t> out(regmap::tile_count(m.rows, m.cols, tr, tc), 0);
  for (std::uint32_t r = 0; r < m.rows; ++r)
    for (std::uint32_t c = 0; c < m.cols; ++c)
      if (m.nonzero(r, c)) ++out[(r / tr) * tpr + c / tc];
  return out;
}

/// Line-sized write requests in the order a producer writes the matrix tile by tile: for each tile,
/// each of its rows, the row segment split at 128-byte boundaries.
struct WriteReq {
  std::uint64_t addr;
  std::uint32_t len;
};
inline std::vector<WriteReq> tile_order_writes(const RawMatrix& m, std::uint64_t base, std::uint32_t tr,
                                               std::uint32_t tc, std::uint32_t line = 128) {
  std::vector<WriteReq> w;
  const unsigned eb = m.eb();
  for (std::uint32_t ti = 0; ti * tr < m.rows; ++ti)
    for (std::uint32_t tj = 0; tj * tc < m.cols; ++tj)
      for (std::uint32_t r = ti * tr; r < std::min(m.rows, (ti + 1) * tr); ++r) {
        std::uint64_t a = base + std::uint64_t(r) * m.pitch_bytes + std::uint64_t(tj) * tc * eb;
        const std::uint64_t e = base + std::uint64_t(r) * m.pitch_bytes + std::uint64_t(std::min(m.cols, (tj + 1) * tc)) * eb;
        while (a < e) {
          const std::uint64_t n = std::min<std::uint64_t>(e - a, line - a % line);
          w.push_back({a, static_cast<std::uint32_t>(n)});
          a += n;
        }
      }
  return w;
}

}  // namespace spartan::hw::test
