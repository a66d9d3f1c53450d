// Property tests of the tile-sparse format: expand(compact(x)) == x bit-exactly, header layout,
// byte-exact worked example (docs/tile-format.md) and validation of corrupted matrices.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "spartan/common/error.h"
#include "spartan/format/tile_format.h"

using namespace spartan::format;

namespace {

std::uint32_t bits_of(float x) {
  std::uint32_t b;
  std::memcpy(&b, &x, 4);
  return b;
}

// Random matrix with the given fraction of zeros; zeros are a mix of +0.0 and -0.0 and the
// non-zeros include NaN, +-Inf and denormals.
std::vector<float> random_matrix(std::mt19937& rng, std::size_t rows, std::size_t ld, double sparsity) {
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<float> m(rows * ld);
  for (auto& x : m) {
    if (u(rng) < sparsity) {
      x = u(rng) < 0.5 ? 0.0f : -0.0f;
      continue;
    }
    const double k = u(rng);
    if (k < 0.02)
      x = std::numeric_limits<float>::quiet_NaN();
    else if (k < 0.04)
      x = k < 0.03 ? std::numeric_limits<float>::infinity() : -std::numeric_limits<float>::infinity();
    else if (k < 0.08)
      x = std::numeric_limits<float>::denorm_min() * float(1 + int(k * 1000));
    else
      x = float(u(rng) * 2 - 1);
  }
  return m;
}

void expect_roundtrip(const std::vector<float>& x, std::uint32_t rows, std::uint32_t cols, std::size_t ld,
                      const CompactOptions& opt) {
  const TiledMatrix t = compact(x.data(), rows, cols, ld, opt);
  ASSERT_NO_THROW(validate(t));
  std::vector<float> y(rows * ld, 1.0f);
  expand(t, static_cast<void*>(y.data()), ld);
  // Bit-exact, except that ELL/BITMAP tiles do not keep the sign of a zero (-0.0 comes back as +0.0);
  // DENSE tiles keep every bit. (Plain loop, one assertion: per-element gtest macros are slow under ASan.)
  for (std::uint32_t r = 0; r < rows; ++r)
    for (std::uint32_t c = 0; c < cols; ++c) {
      const std::uint32_t want =
          t.header(r / opt.tile_rows, c / opt.tile_cols).fmt() != TileFormat::Dense && is_zero(x[r * ld + c])
              ? 0u
              : bits_of(x[r * ld + c]);
      if (bits_of(y[r * ld + c]) != want) {
        FAIL() << "at (" << r << "," << c << ") rows=" << rows << " cols=" << cols << " tile=" << opt.tile_rows
               << "x" << opt.tile_cols << " fmt=" << int(opt.sparse_format) << " thr=" << opt.threshold;
      }
    }
  // nnz in every header is the true count.
  std::size_t nnz = 0, expect = 0;
  for (const auto& h : t.headers) nnz += h.nnz;
  for (std::uint32_t r = 0; r < rows; ++r)
    for (std::uint32_t c = 0; c < cols; ++c) expect += !is_zero(x[r * ld + c]);
  EXPECT_EQ(nnz, expect);
}

}  // namespace

TEST(TileFormat, HeaderIsSixteenLittleEndianBytes) {
  TileHeader h;
  h.format = 1;
  h.flags = 0;
  h.width = 0x0203;
  h.nnz = 0x04050607;
  h.offset = 0x08090A0B0C0D0E0Full;
  std::uint8_t b[16];
  encode_header(h, b);
  const std::uint8_t want[16] = {1, 0, 3, 2, 7, 6, 5, 4, 0x0F, 0x0E, 0x0D, 0x0C, 0x0B, 0x0A, 9, 8};
  for (int i = 0; i < 16; ++i) EXPECT_EQ(b[i], want[i]) << i;
  EXPECT_EQ(decode_header(b), h);
  // On a little-endian host the struct's memory image is the byte format.
  std::uint8_t mem[16];
  std::memcpy(mem, &h, 16);
  EXPECT_EQ(0, std::memcmp(mem, want, 16));
}

TEST(TileFormat, ZeroTestOnlySignedZeros) {
  EXPECT_TRUE(is_zero(0.0f));
  EXPECT_TRUE(is_zero(-0.0f));
  EXPECT_FALSE(is_zero(std::numeric_limits<float>::denorm_min()));
  EXPECT_FALSE(is_zero(-std::numeric_limits<float>::denorm_min()));
  EXPECT_FALSE(is_zero(std::numeric_limits<float>::quiet_NaN()));
  EXPECT_FALSE(is_zero(std::numeric_limits<float>::infinity()));
  EXPECT_TRUE(is_zero_bits(std::uint16_t(0x8000)));
  EXPECT_FALSE(is_zero_bits(std::uint16_t(0x0001)));
}

TEST(TileFormat, RoundTripRandomShapesAllFormats) {
  std::mt19937 rng(42);
  std::uniform_int_distribution<int> dim(1, 150);
  const std::uint32_t tiles[][2] = {{32, 32}, {8, 16}, {7, 5}, {1, 64}, {64, 1}, {4, 300}};
  for (int trial = 0; trial < 25; ++trial) {
    const std::uint32_t rows = dim(rng), cols = trial % 8 == 0 ? 300 + dim(rng) : dim(rng);
    const std::size_t ld = cols + (trial % 3);
    const double sparsity = std::vector<double>{0, 0.5, 0.9, 0.97, 1.0}[trial % 5];
    const auto x = random_matrix(rng, rows, ld, sparsity);
    for (auto& ts : tiles)
      for (TileFormat f : {TileFormat::Ell, TileFormat::Bitmap})
        for (double thr : {0.0, 0.3, 0.75, 1.0, 2.0})
          for (DenseStorage ds : {DenseStorage::InPlace, DenseStorage::Payload}) {
            CompactOptions o;
            o.tile_rows = ts[0];
            o.tile_cols = ts[1];
            o.sparse_format = f;
            o.threshold = thr;
            o.dense_storage = ds;
            expect_roundtrip(x, rows, cols, ld, o);
          }
  }
}

// compact_transposed(x) is compact() of a stored copy of x^T, headers and payload byte for byte, with DENSE
// tiles in the payload or left in x (source_transposed; expand() reads them transposed): random shapes that
// are not multiples of the tile sides or of the 4-element vectors of the count pass, padded rows, F32 (with
// -0.0, NaN, Inf, denormals) and 16-bit elements, both sparse formats, 1- and 2-byte ELL indices.
TEST(TileFormat, CompactTransposedIsCompactOfTheStoredTranspose) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> dim(1, 90);
  const std::uint32_t tiles[][2] = {{8, 256}, {8, 16}, {7, 5}, {1, 64}, {5, 1}, {3, 300}};  // (300: u16 indices)
  for (int trial = 0; trial < 16; ++trial) {
    const std::uint32_t rows = dim(rng), cols = dim(rng);
    const std::size_t ld = cols + (trial % 3);
    const auto x = random_matrix(rng, rows, ld, std::vector<double>{0, 0.5, 0.9, 0.97}[trial % 4]);
    std::vector<float> xt(std::size_t(cols) * rows);
    std::vector<std::uint16_t> h(std::size_t(rows) * ld), ht(std::size_t(cols) * rows);
    for (std::uint32_t r = 0; r < rows; ++r)
      for (std::uint32_t c = 0; c < cols; ++c) {
        xt[std::size_t(c) * rows + r] = x[r * ld + c];
        h[r * ld + c] = std::uint16_t(bits_of(x[r * ld + c]) >> 16);  // BF16-like bits of the same values
        ht[std::size_t(c) * rows + r] = h[r * ld + c];
      }
    for (auto& ts : tiles)
      for (TileFormat f : {TileFormat::Ell, TileFormat::Bitmap})
        for (double thr : {0.0, 0.3, 2.0})
          for (ElemType et : {ElemType::F32, ElemType::BF16})
            for (DenseStorage ds : {DenseStorage::InPlace, DenseStorage::Payload}) {
              CompactOptions o;
              o.tile_rows = ts[0];
              o.tile_cols = ts[1];
              o.sparse_format = f;
              o.threshold = thr;
              o.elem = et;
              o.dense_storage = ds;
              const bool f32 = et == ElemType::F32;
              const void* src = f32 ? static_cast<const void*>(x.data()) : static_cast<const void*>(h.data());
              const TiledMatrix t = compact_transposed(src, rows, cols, ld, o);
              const TiledMatrix want = f32 ? compact(static_cast<const void*>(xt.data()), cols, rows, rows, o)
                                           : compact(static_cast<const void*>(ht.data()), cols, rows, rows, o);
              const std::string what = "rows=" + std::to_string(rows) + " cols=" + std::to_string(cols) + " tile=" +
                                       std::to_string(ts[0]) + "x" + std::to_string(ts[1]) + " fmt=" +
                                       std::to_string(int(f)) + " thr=" + std::to_string(thr) +
                                       " payload=" + std::to_string(int(ds));
              ASSERT_NO_THROW(validate(t)) << what;
              ASSERT_EQ(t.grid.rows, cols);
              ASSERT_EQ(t.grid.cols, rows);
              EXPECT_EQ(t.dense_storage, ds);
              EXPECT_EQ(t.source, src);
              EXPECT_TRUE(t.source_transposed);
              ASSERT_EQ(t.headers.size(), want.headers.size());
              for (std::size_t i = 0; i < t.headers.size(); ++i) ASSERT_EQ(t.headers[i], want.headers[i]) << i << what;
              ASSERT_EQ(t.payload, want.payload) << what;
              if (f32) {  // expand() reads in-place DENSE tiles transposed: the same matrix as from `want`
                const std::vector<float> got = expand(t), ref = expand(want);  // (bits: NaN != NaN)
                ASSERT_EQ(0, std::memcmp(got.data(), ref.data(), got.size() * sizeof(float))) << what;
                // onto the stored source (its transpose), even with its own row stride: refused (the buffer
                // would hold the expanded matrix, were the check missing)
                std::vector<float> buf(std::size_t(cols + rows) * ld);
                TiledMatrix tc = t;
                tc.source = buf.data();
                EXPECT_THROW(expand(tc, static_cast<void*>(buf.data()), tc.source_ld), spartan::InputError);
              }
            }
  }
}

TEST(TileFormat, AllZeroAndAllDense) {
  std::mt19937 rng(7);
  for (double sp : {0.0, 1.0}) {
    const auto x = random_matrix(rng, 70, 45, sp);
    for (TileFormat f : {TileFormat::Ell, TileFormat::Bitmap}) {
      CompactOptions o;
      o.sparse_format = f;
      o.threshold = 0.5;
      const TiledMatrix t = compact(x.data(), 70, 45, 45, o);
      const TileCounts c = count_tiles(t);
      if (sp == 1.0) {
        EXPECT_EQ(c.zero, t.headers.size());
        EXPECT_TRUE(t.payload.empty());  // zero tiles have no payload
      } else {
        EXPECT_EQ(c.dense, t.headers.size());
        EXPECT_TRUE(t.payload.empty());  // in-place DENSE tiles have no payload
      }
      expect_roundtrip(x, 70, 45, 45, o);
    }
  }
}

// Size rule (CompactOptions::dense_if_not_smaller): a 32 x 32 F32 tile of density 0.33 whose first row is
// full has ELL width 32, i.e. 32 * 32 * (1 + 4) = 5120 B > 4096 B dense: DENSE with the rule, ELL without;
// as BITMAP (128 + 342 * 4 B) it stays sparse. A tile of the same density spread evenly stays ELL.
TEST(TileFormat, SizeRuleKeepsTilesThatCompactionWouldEnlargeDense) {
  std::vector<float> x(32 * 64, 0.0f);
  for (int c = 0; c < 32; ++c) x[c] = 1.0f + float(c);                        // tile 0: row 0 full
  for (int r = 1; r < 32; ++r)
    for (int c = 0; c < 10; ++c) x[r * 64 + c] = -1.0f;                      // + 31 rows of 10: nnz 342
  for (int r = 0; r < 32; ++r)
    for (int c = 0; c < 11; ++c) x[r * 64 + 32 + 3 * c] = 2.0f;              // tile 1: 11 per row, nnz 352
  CompactOptions o;
  o.threshold = 0.5;
  const TiledMatrix on = compact(x.data(), 32, 64, 64, o);
  ASSERT_EQ(on.headers[0].nnz, 342u);
  EXPECT_EQ(on.headers[0].fmt(), TileFormat::Dense);
  EXPECT_EQ(on.headers[1].fmt(), TileFormat::Ell);
  EXPECT_EQ(on.headers[1].width, 11);
  EXPECT_TRUE(tile_stays_dense(o, 32, 32, 32, 342));
  EXPECT_FALSE(tile_stays_dense(o, 32, 32, 11, 352));
  expect_roundtrip(x, 32, 64, 64, o);
  o.dense_if_not_smaller = false;
  const TiledMatrix off = compact(x.data(), 32, 64, 64, o);
  EXPECT_EQ(off.headers[0].fmt(), TileFormat::Ell);
  EXPECT_EQ(off.headers[0].width, 32);
  EXPECT_EQ(tile_payload_bytes(off.headers[0], 32, 32, 32, ElemType::F32), 5120u);
  expect_roundtrip(x, 32, 64, 64, o);
  o.dense_if_not_smaller = true;
  o.sparse_format = TileFormat::Bitmap;
  const TiledMatrix bm = compact(x.data(), 32, 64, 64, o);
  EXPECT_EQ(bm.headers[0].fmt(), TileFormat::Bitmap);
  // threshold > 1 no longer forces a sparse tile that would be larger: an all-non-zero tile is DENSE
  std::vector<float> full(32 * 32, 3.0f);
  o.sparse_format = TileFormat::Ell;
  o.threshold = 2.0;
  EXPECT_EQ(compact(full.data(), 32, 32, 32, o).headers[0].fmt(), TileFormat::Dense);
  o.sparse_format = TileFormat::Bitmap;  // 128 + 4096 B: not smaller either
  EXPECT_EQ(compact(full.data(), 32, 32, 32, o).headers[0].fmt(), TileFormat::Dense);
}

// Compacts `x` (raw element bits of o.elem) with and without the size rule and checks tile by tile: with it,
// no sparse tile's payload reaches its dense bytes; every tile the rule made DENSE would have been at least
// as large; nnz are the same. Returns how many tiles the rule made DENSE.
template <class T>
int check_size_rule_tiles(const std::vector<T>& x, std::uint32_t rows, std::uint32_t cols, const CompactOptions& o) {
  const std::size_t eb = elem_bytes(o.elem);
  const TiledMatrix t = compact(static_cast<const void*>(x.data()), rows, cols, cols, o);
  EXPECT_NO_THROW(validate(t));
  CompactOptions off = o;
  off.dense_if_not_smaller = false;
  const TiledMatrix t_off = compact(static_cast<const void*>(x.data()), rows, cols, cols, off);
  int dense_by_rule = 0;
  for (std::uint32_t ti = 0; ti < t.grid.tiles_r(); ++ti)
    for (std::uint32_t tj = 0; tj < t.grid.tiles_c(); ++tj) {
      const TileHeader& h = t.header(ti, tj);
      const TileHeader& g = t_off.header(ti, tj);
      const std::uint32_t re = t.grid.r_eff(ti), ce = t.grid.c_eff(tj);
      const std::size_t dense = std::size_t(re) * ce * eb;
      if (h.fmt() != TileFormat::Dense && h.nnz > 0) {
        EXPECT_LT(tile_payload_bytes(h, re, ce, o.tile_cols, o.elem), dense);
      }
      if (h.fmt() == TileFormat::Dense && g.fmt() != TileFormat::Dense) {
        ++dense_by_rule;
        EXPECT_GE(tile_payload_bytes(g, re, ce, o.tile_cols, o.elem), dense);
      }
      EXPECT_EQ(h.nnz, g.nnz);
    }
  return dense_by_rule;
}

// With the size rule no sparse tile's payload reaches its dense bytes, for rows of very different
// densities (ReLU activations: some channels nearly dense, others empty), any tile shape and both formats.
TEST(TileFormat, SizeRuleNoSparseTileLargerThanDense) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> u(0, 1);
  int dense_by_rule = 0;
  for (int trial = 0; trial < 20; ++trial) {
    const std::uint32_t rows = 40 + trial, cols = 70 + 3 * trial;
    std::vector<float> x(std::size_t(rows) * cols, 0.0f);
    for (std::uint32_t r = 0; r < rows; ++r) {
      const double p = u(rng) < 0.15 ? 0.95 : 0.2 * u(rng);  // a few nearly dense rows
      for (std::uint32_t c = 0; c < cols; ++c)
        if (u(rng) < p) x[std::size_t(r) * cols + c] = float(u(rng)) + 0.5f;
    }
    const std::uint32_t shapes[][2] = {{32, 32}, {8, 16}, {16, 64}, {7, 5}, {8, 300}};  // 300: u16 ELL indices
    for (auto& ts : shapes)
      for (TileFormat f : {TileFormat::Ell, TileFormat::Bitmap}) {
        CompactOptions o;
        o.tile_rows = ts[0], o.tile_cols = ts[1], o.sparse_format = f, o.threshold = 0.5;
        dense_by_rule += check_size_rule_tiles(x, rows, cols, o);
        expect_roundtrip(x, rows, cols, cols, o);
      }
  }
  EXPECT_GT(dense_by_rule, 0);  // the rule did fire on these matrices
}

// The same invariant for 16-bit elements (F16 bits; ELL fires at 2/3 of the columns, BITMAP at 15/16).
TEST(TileFormat, SizeRuleNoSparseTileLargerThanDenseF16) {
  std::mt19937 rng(6);
  std::uniform_real_distribution<double> u(0, 1);
  int dense_by_rule = 0;
  const std::uint32_t rows = 48, cols = 100;
  std::vector<std::uint16_t> x(std::size_t(rows) * cols, 0);
  for (std::uint32_t r = 0; r < rows; ++r) {
    const double p = u(rng) < 0.2 ? 0.97 : 0.3 * u(rng);
    for (std::uint32_t c = 0; c < cols; ++c)
      if (u(rng) < p) x[std::size_t(r) * cols + c] = static_cast<std::uint16_t>(0x3C00 + (c & 0xFF));
  }
  const std::uint32_t shapes[][2] = {{32, 32}, {8, 16}, {4, 300}};
  for (auto& ts : shapes)
    for (TileFormat f : {TileFormat::Ell, TileFormat::Bitmap})
      for (double thr : {0.5, 2.0}) {
        CompactOptions o;
        o.tile_rows = ts[0], o.tile_cols = ts[1], o.sparse_format = f, o.threshold = thr, o.elem = ElemType::F16;
        dense_by_rule += check_size_rule_tiles(x, rows, cols, o);
        const TiledMatrix t = compact(x.data(), rows, cols, cols, o);
        std::vector<std::uint16_t> y(x.size(), 0xFFFF);
        expand(t, y.data(), cols);
        EXPECT_EQ(y, x);  // no -0.0 in x: exact
      }
  EXPECT_GT(dense_by_rule, 0);
}

TEST(TileFormat, HalfPrecisionRoundTrip) {
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> v(0, 65535);
  std::vector<std::uint16_t> x(37 * 41);
  for (auto& e : x) e = (v(rng) % 3 == 0) ? std::uint16_t(v(rng)) : std::uint16_t(v(rng) % 2 ? 0x8000 : 0);
  for (ElemType et : {ElemType::F16, ElemType::BF16})
    for (TileFormat f : {TileFormat::Ell, TileFormat::Bitmap}) {
      CompactOptions o;
      o.elem = et;
      o.sparse_format = f;
      o.tile_rows = 8;
      o.tile_cols = 8;
      o.threshold = 0.9;
      const TiledMatrix t = compact(static_cast<const void*>(x.data()), 37, 41, 41, o);
      validate(t);
      std::vector<std::uint16_t> y(x.size(), 7);
      expand(t, static_cast<void*>(y.data()), 41);
      for (std::size_t i = 0; i < x.size(); ++i) {
        const bool dense = t.header(std::uint32_t(i / 41 / 8), std::uint32_t(i % 41 / 8)).fmt() == TileFormat::Dense;
        ASSERT_EQ(y[i], !dense && is_zero_bits(x[i]) ? 0 : x[i]) << i;
      }
    }
}

// The worked example of docs/tile-format.md, byte for byte (both sparse formats; size rule off, then on).
TEST(TileFormat, WorkedExampleBytes) {
  const float x[3 * 5] = {0,    1.0f, 0,     2.0f, /**/ 0,     //
                          0,    0,    -0.0f, 0,    /**/ 3.0f,  //
                          4.0f, 5.0f, 6.0f,  7.0f, /**/ 0};
  CompactOptions o;
  o.tile_rows = 2;
  o.tile_cols = 4;
  o.threshold = 0.75;
  o.dense_if_not_smaller = false;
  using B = std::vector<std::uint8_t>;
  o.sparse_format = TileFormat::Ell;
  TiledMatrix t = compact(x, 3, 5, 5, o);
  EXPECT_EQ(t.header_bytes(), (B{
      0x01, 0x00, 0x02, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // (0,0)
      0x01, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0x00, 0x20, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // (0,1)
      0x00, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x30, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // (1,0)
      0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x30, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00}));  // (1,1)
  EXPECT_EQ(t.payload, (B{
      0x01, 0x03, 0x00, 0x00, 0x00, 0x00, 0x80, 0x3F, 0x00, 0x00, 0x00, 0x40, 0x00, 0x00, 0x00, 0x00,
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x40, 0x40, 0x00, 0x00, 0x00, 0x00}));
  o.sparse_format = TileFormat::Bitmap;
  t = compact(x, 3, 5, 5, o);
  EXPECT_EQ(t.header_bytes(), (B{
      0x02, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
      0x02, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
      0x00, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x20, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
      0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x20, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00}));
  EXPECT_EQ(t.payload, (B{
      0x0A, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0x3F, 0x00, 0x00, 0x00, 0x40,
      0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x40, 0x40, 0x00, 0x00, 0x00, 0x00}));
  // Size rule: tile (0,1) (8 dense bytes, 12 in either sparse format) is DENSE; the payload ends after (0,0).
  o.dense_if_not_smaller = true;
  for (TileFormat f : {TileFormat::Ell, TileFormat::Bitmap}) {
    o.sparse_format = f;
    t = compact(x, 3, 5, 5, o);
    const std::uint64_t end = f == TileFormat::Ell ? 0x20 : 0x10;
    EXPECT_EQ(t.header(0, 0).fmt(), f);
    EXPECT_EQ(t.header(0, 1), (TileHeader{0, 0, 0, 1, end}));
    EXPECT_EQ(t.header(1, 0), (TileHeader{0, 0, 0, 4, end}));
    EXPECT_EQ(t.payload.size(), end);
  }
}

TEST(TileFormat, ValidateCatchesCorruption) {
  std::mt19937 rng(5);
  const auto x = random_matrix(rng, 40, 40, 0.9);
  CompactOptions o;
  o.tile_rows = 8;
  o.tile_cols = 8;
  TiledMatrix t = compact(x.data(), 40, 40, 40, o);
  ASSERT_NO_THROW(validate(t));
  TiledMatrix bad = t;
  bad.headers[3].format = 7;
  EXPECT_THROW(validate(bad), spartan::InputError);
  bad = t;
  bad.headers[2].nnz = 65;
  EXPECT_THROW(validate(bad), spartan::InputError);
  bad = t;
  bad.headers.back().offset = bad.payload.size() + 16;
  EXPECT_THROW(validate(bad), spartan::InputError);
  bad = t;
  bad.headers.pop_back();
  EXPECT_THROW(validate(bad), spartan::InputError);
  // ELL padding must sit at row ends with index 0 (the GEMM kernels count columns from the index block),
  // indices must lie inside the tile and the non-zeros must match the header's nnz.
  std::size_t ell = 0;
  while (ell < t.headers.size() &&
         !(t.headers[ell].fmt() == TileFormat::Ell && t.headers[ell].nnz > 0 &&
           std::uint64_t(t.headers[ell].width) * 8 > t.headers[ell].nnz))
    ++ell;
  ASSERT_LT(ell, t.headers.size());
  const TileHeader& h = t.headers[ell];
  const std::size_t slots = std::size_t(8) * h.width;
  const std::size_t vals = h.offset + spartan::format::ell_values_offset(8, h.width, 8);
  std::size_t pad = 0;  // first padding slot
  while (pad < slots && t.payload[vals + 4 * pad + 0] | t.payload[vals + 4 * pad + 1] |
                            t.payload[vals + 4 * pad + 2] | t.payload[vals + 4 * pad + 3])
    ++pad;
  ASSERT_LT(pad, slots);
  bad = t;
  bad.payload[h.offset + pad] = 3;  // padding index not 0
  EXPECT_THROW(validate(bad), spartan::InputError);
  bad = t;
  bad.payload[h.offset] = 9;  // column index outside the 8-column tile
  EXPECT_THROW(validate(bad), spartan::InputError);
  bad = t;
  bad.headers[ell].nnz -= 1;
  EXPECT_THROW(validate(bad), spartan::InputError);
}

// Review findings: corruptions that validate() let through although expand() then read or wrote out of
// bounds or produced a different matrix (it guards expand_check on hardware-model output, so it must throw,
// never crash).
TEST(TileFormat, ValidateRejectsWhatExpandCannotHandle) {
  // BITMAP: set bits must equal nnz (more bits: expand reads values beyond the payload), and bits at columns
  // >= c_eff must be 0 (expand writes beyond the tile's columns).
  {
    std::vector<float> x(8 * 8, 0.f);
    x[0] = 1.f;
    x[9] = 2.f;
    CompactOptions o;
    o.tile_rows = o.tile_cols = 8;
    o.sparse_format = TileFormat::Bitmap;
    const TiledMatrix t = compact(x.data(), 8, 8, 8, o);
    ASSERT_EQ(t.headers[0].fmt(), TileFormat::Bitmap);
    ASSERT_NO_THROW(validate(t));
    TiledMatrix bad = t;
    for (int r = 0; r < 8; ++r) bad.payload[4 * r] = 0xFF;  // 64 bits set, nnz 2
    EXPECT_THROW(validate(bad), spartan::InputError);
    bad = t;
    bad.payload[4] = 0;  // row 1's bit cleared: 1 bit, nnz 2
    EXPECT_THROW(validate(bad), spartan::InputError);
    bad = t;
    bad.payload[0] = 0x80;  // still 2 bits: column 7 instead of 0 in row 0 (inside the tile) ...
    EXPECT_NO_THROW(validate(bad));
    bad.payload[1] = 0x01;  // ... and bit 8 of an 8-column tile: 3 bits
    EXPECT_THROW(validate(bad), spartan::InputError);
    bad.payload[4] = 0x02, bad.payload[0] = 0;  // 2 bits again, one of them at column 8
    EXPECT_THROW(validate(bad), spartan::InputError);
  }
  {  // a 4-column tile: bit 31 of its one bitmap word is beyond c_eff (set bits == nnz otherwise kept)
    std::vector<float> x = {1, 0, 0, 0};
    CompactOptions o;
    o.tile_rows = 1;
    o.tile_cols = 32;
    o.sparse_format = TileFormat::Bitmap;
    o.dense_if_not_smaller = false;
    o.threshold = 2;
    TiledMatrix t = compact(x.data(), 1, 4, 4, o);
    ASSERT_NO_THROW(validate(t));
    t.payload[0] = 0, t.payload[3] = 0x80;
    EXPECT_THROW(validate(t), spartan::InputError);
  }
  // ELL: column indices strictly ascending within a row (a duplicate made expand drop a value).
  std::vector<float> x(8 * 16, 0.f);  // two 8 x 8 tiles: an ELL tile and a zero tile
  x[0] = 1.f;
  x[1] = 2.f;
  x[2] = 3.f;
  CompactOptions o;
  o.tile_rows = o.tile_cols = 8;
  const TiledMatrix t = compact(x.data(), 8, 16, 16, o);
  ASSERT_EQ(t.headers.size(), 2u);
  ASSERT_EQ(t.headers[0].fmt(), TileFormat::Ell);
  ASSERT_EQ(t.headers[0].width, 3);
  ASSERT_NO_THROW(validate(t));
  TiledMatrix bad = t;
  bad.payload[1] = 0;  // indices {0, 0, 2}
  EXPECT_THROW(validate(bad), spartan::InputError);
  bad = t;
  std::swap(bad.payload[1], bad.payload[2]);  // {0, 2, 1}
  EXPECT_THROW(validate(bad), spartan::InputError);
  // offset + bytes wrapping around 2^64 must not pass the bounds check.
  bad = t;
  bad.headers[0].offset = 0xFFFFFFFFFFFFFFF0ull;
  EXPECT_THROW(validate(bad), spartan::InputError);
  // Tile sides 0 (was SIGFPE in tiles_r()) or beyond 65535, unknown element type.
  for (std::uint32_t tr : {0u, 65536u}) {
    bad = t;
    bad.grid.tile_rows = tr;
    EXPECT_THROW(validate(bad), spartan::InputError) << tr;
    bad = t;
    bad.grid.tile_cols = tr;
    EXPECT_THROW(validate(bad), spartan::InputError) << tr;
  }
  bad = t;
  bad.elem = static_cast<ElemType>(3);
  EXPECT_THROW(validate(bad), spartan::InputError);
  // Flags: only bit 0, only on DENSE tiles. Width: 0 for DENSE, BITMAP and zero tiles.
  bad = t;
  bad.headers[0].flags = kFlagDenseInPayload;
  EXPECT_THROW(validate(bad), spartan::InputError);
  ASSERT_EQ(t.headers[1].nnz, 0u);
  bad = t;
  bad.headers[1].width = 1;
  EXPECT_THROW(validate(bad), spartan::InputError);
  {
    CompactOptions od = o;
    od.threshold = 0;  // every tile DENSE
    od.dense_storage = DenseStorage::Payload;
    const TiledMatrix d = compact(x.data(), 8, 16, 16, od);
    ASSERT_NO_THROW(validate(d));
    TiledMatrix bd = d;
    bd.headers[0].flags |= 0x02;
    EXPECT_THROW(validate(bd), spartan::InputError);
    bd = d;
    bd.headers[0].width = 3;
    EXPECT_THROW(validate(bd), spartan::InputError);
  }
}

// Review finding: expand() onto the source zero-filled in-place DENSE tiles before copying them from it.
TEST(TileFormat, ExpandOntoTheSourceKeepsInPlaceDenseTiles) {
  std::vector<float> x = {1, 2, 3, 4, 0, 0, 0, 5};
  const std::vector<float> orig = x;
  CompactOptions o;
  o.tile_rows = 1;
  o.tile_cols = 4;
  o.threshold = 0.5;
  const TiledMatrix t = compact(x.data(), 2, 4, 4, o);
  ASSERT_EQ(t.headers[0].fmt(), TileFormat::Dense);
  expand(t, x.data(), 4);
  EXPECT_EQ(x, orig);
  EXPECT_THROW(expand(t, x.data(), 8), spartan::InputError);  // onto the source with another stride
}

// Review finding: tile_rows up to 2^32 - 1 were accepted (only TR * TC < 2^32 was checked); tiles_r()
// wrapped to 0 tiles (silent data loss) and the GEMM's band starts overflowed.
TEST(TileFormat, TileSidesAreBoundedAndGridArithmeticDoesNotWrap) {
  std::vector<float> x(4, 1.f);
  CompactOptions o;
  o.tile_cols = 1;
  for (std::uint32_t tr : {65536u, 0x80000000u, 0xFFFFFFFFu}) {
    o.tile_rows = tr;
    EXPECT_THROW(compact(x.data(), 4, 1, 1, o), spartan::InputError) << tr;
  }
  o.tile_rows = 65535;
  const TiledMatrix t = compact(x.data(), 4, 1, 1, o);
  EXPECT_EQ(t.headers.size(), 1u);
  EXPECT_EQ(expand(t), x);
  EXPECT_EQ((TileGrid{0xFFFFFFFFu, 0xFFFFFFFFu, 65535, 2}.tiles_r()), 65537u);  // 65535 * 65537 = 2^32 - 1
  EXPECT_EQ((TileGrid{0xFFFFFFFFu, 0xFFFFFFFFu, 65535, 2}.tiles_c()), 0x80000000u);
  EXPECT_EQ((TileGrid{0xFFFFFFF0u, 1, 65535, 1}.tiles_r()), 65537u);
}

// docs/tile-format.md's size-rule statement: the ELL index block's alignment to 4 bytes counts, so the rule can
// fire below c_eff * eb / (eb + ib) (a 1 x 8 F32 tile, u8 indices: 6.4, fires at width 6).
TEST(TileFormat, SizeRuleCountsTheEllIndexAlignment) {
  EXPECT_FALSE(sparse_not_smaller(TileFormat::Ell, 1, 8, 5, 5, 32, ElemType::F32));  // 8 + 20 < 32
  EXPECT_TRUE(sparse_not_smaller(TileFormat::Ell, 1, 8, 6, 6, 32, ElemType::F32));   // 8 + 24 >= 32
  EXPECT_FALSE(sparse_not_smaller(TileFormat::Ell, 4, 8, 6, 24, 32, ElemType::F32));  // 24 + 96 < 128
  EXPECT_TRUE(sparse_not_smaller(TileFormat::Ell, 4, 8, 7, 28, 32, ElemType::F32));   // 28 + 112 >= 128
}

TEST(TileFormat, ParseTileSizeAcceptsOnlyRxC) {
  EXPECT_EQ(parse_tile_size("32x32", "--tile").rows, 32u);
  EXPECT_EQ(parse_tile_size("8x256", "--tile").cols, 256u);
  EXPECT_EQ(parse_tile_size("65535x1", "--tile").rows, 65535u);
  for (const char* bad : {"-1x1", "8x256junk", "0x4", "4x0", "08x4", "x4", "4x", "", "4", "4X4", " 4x4", "4x4 ",
                          "+4x4", "65536x1", "1x65536", "99999999999999999999999x1", "4x4x4", "4.0x4"}) {
    try {
      parse_tile_size(bad, "--tile");
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const spartan::InputError& e) {
      EXPECT_EQ(std::string(e.what()).rfind("--tile: ", 0), 0u) << e.what();
    }
  }
}

TEST(TileFormat, RejectsBadOptions) {
  std::vector<float> x(16);
  CompactOptions o;
  o.tile_rows = 0;
  EXPECT_THROW(compact(x.data(), 4, 4, 4, o), spartan::InputError);
  o = CompactOptions{};
  o.sparse_format = TileFormat::Dense;
  EXPECT_THROW(compact(x.data(), 4, 4, 4, o), spartan::InputError);
  o = CompactOptions{};
  EXPECT_THROW(compact(x.data(), 4, 4, 3, o), spartan::InputError);
}
