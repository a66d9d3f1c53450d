// compact_f32_avx512 and compact_transposed_f32_avx512 (src/compact_fast.h) against format::compact() and
// format::compact_transposed(), the format's definition: the same grid,
// headers (as their 16 bytes), payload bytes and source, for random shapes and tile sizes (u8 and u16 column
// indices, tiles cut by the matrix edge), sparsities 0-100 %, +-0.0 / NaN / Inf / denormal values, thresholds
// and both DENSE storages, with one and two threads.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <cblas.h>

#include "compact_fast.h"
#include "spartan/gemm/tile_sparse.h"
#include "spartan/common/error.h"
#include "spartan/format/tile_format.h"

namespace spartan::gemm::detail {
namespace {

std::vector<float> random_matrix(std::uint32_t rows, std::size_t ld, double sparsity, std::mt19937& rng) {
  std::uniform_real_distribution<double> p(0, 1);
  std::uniform_real_distribution<float> u(-2, 2);
  const float specials[] = {-0.0f, std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::denorm_min(),
                            -1e-40f};
  std::vector<float> m(std::size_t(rows) * ld);
  for (auto& v : m) {
    if (p(rng) < sparsity) {
      v = p(rng) < 0.3 ? -0.0f : 0.0f;  // both zeros
    } else {
      v = p(rng) < 0.05 ? specials[std::size_t(p(rng) * 6) % 6] : u(rng);
      if (format::is_zero(v)) v = 1.0f;  // (-0.0 drawn as a "non-zero": keep the sparsity)
    }
  }
  return m;
}

void expect_same(const format::TiledMatrix& a, const format::TiledMatrix& b, const std::string& what) {
  SCOPED_TRACE(what);
  EXPECT_EQ(a.grid.rows, b.grid.rows);
  EXPECT_EQ(a.grid.cols, b.grid.cols);
  EXPECT_EQ(a.grid.tile_rows, b.grid.tile_rows);
  EXPECT_EQ(a.grid.tile_cols, b.grid.tile_cols);
  EXPECT_EQ(a.elem, b.elem);
  EXPECT_EQ(a.sparse_format, b.sparse_format);
  EXPECT_EQ(a.dense_storage, b.dense_storage);
  EXPECT_EQ(a.threshold, b.threshold);
  EXPECT_EQ(a.dense_if_not_smaller, b.dense_if_not_smaller);
  EXPECT_EQ(a.source, b.source);
  EXPECT_EQ(a.source_ld, b.source_ld);
  EXPECT_EQ(a.source_transposed, b.source_transposed);
  EXPECT_EQ(a.header_bytes(), b.header_bytes());
  ASSERT_EQ(a.payload.size(), b.payload.size());
  EXPECT_TRUE(a.payload == b.payload) << "payload bytes differ";
}

TEST(TileSparseCompactFast, SameTilesAsFormatCompact) {
  if (!cpu_has_avx512_bw()) GTEST_SKIP() << "no AVX-512 F/BW/VL on this CPU";
  std::mt19937 rng(11);
  struct Shape {
    std::uint32_t rows, cols, pad;
  };
  const Shape shapes[] = {{1, 1, 0}, {7, 300, 3}, {8, 256, 0}, {17, 513, 16}, {100, 1000, 5}, {64, 70, 0}, {33, 17, 1}};
  const std::pair<std::uint32_t, std::uint32_t> tiles[] = {{8, 256}, {32, 32}, {8, 300}, {1, 1}, {3, 17}, {5, 16}};
  const double sparsities[] = {0.0, 0.5, 0.9, 0.97, 1.0};
  int cases = 0;
  for (const Shape& s : shapes)
    for (const auto& [tr, tc] : tiles)
      for (double sp : sparsities) {
        const std::size_t ld = s.cols + s.pad;
        const std::vector<float> x = random_matrix(s.rows, ld, sp, rng);
        for (double threshold : {0.3, 0.0, 2.0})
          for (bool size_rule : {true, false})
            for (auto storage : {format::DenseStorage::InPlace, format::DenseStorage::Payload}) {
              format::CompactOptions o;
              o.tile_rows = tr, o.tile_cols = tc, o.threshold = threshold, o.dense_if_not_smaller = size_rule;
              o.dense_storage = storage;
              const format::TiledMatrix ref = format::compact(x.data(), s.rows, s.cols, ld, o);
              for (int threads : {1, 2}) {
                format::TiledMatrix fast;
                ASSERT_TRUE(compact_f32_avx512(x.data(), s.rows, s.cols, ld, o, threads, fast));
                expect_same(ref, fast,
                            std::to_string(s.rows) + "x" + std::to_string(s.cols) + " ld " + std::to_string(ld) +
                                " tiles " + std::to_string(tr) + "x" + std::to_string(tc) + " sparsity " +
                                std::to_string(sp) + " threshold " + std::to_string(threshold) + " size rule " +
                                std::to_string(size_rule) + " payload dense " +
                                std::to_string(storage == format::DenseStorage::Payload) + " threads " +
                                std::to_string(threads));
                ++cases;
                if (::testing::Test::HasFailure()) return;
              }
            }
      }
  EXPECT_EQ(cases, 7 * 6 * 5 * 3 * 2 * 2 * 2);
}

TEST(TileSparseCompactFast, TransposedSameTilesAsFormatCompactTransposed) {
  if (!cpu_has_avx512_bw()) GTEST_SKIP() << "no AVX-512 F/BW/VL on this CPU";
  std::mt19937 rng(12);
  struct Shape {
    std::uint32_t rows, cols, pad;  // stored
  };
  const Shape shapes[] = {{1, 1, 0}, {300, 7, 3}, {256, 8, 0}, {513, 17, 16}, {1000, 100, 5}, {70, 64, 0}, {17, 33, 1},
                          {144, 784, 0}};
  // (16 x 256: the engine's tile; 20 x 64: a second block of 4 result rows per tile; 32 x 32: two whole blocks)
  const std::pair<std::uint32_t, std::uint32_t> tiles[] = {{8, 256},  {32, 32}, {8, 300}, {1, 1},
                                                           {3, 17},   {5, 16},  {16, 256}, {20, 64}};
  const double sparsities[] = {0.0, 0.5, 0.9, 0.97, 1.0};
  int cases = 0;
  for (const Shape& s : shapes)
    for (const auto& [tr, tc] : tiles)
      for (double sp : sparsities) {
        const std::size_t ld = s.cols + s.pad;
        const std::vector<float> x = random_matrix(s.rows, ld, sp, rng);
        for (double threshold : {0.3, 0.0, 2.0})
          for (bool size_rule : {true, false}) {
            format::CompactOptions o;
            o.tile_rows = tr, o.tile_cols = tc, o.threshold = threshold, o.dense_if_not_smaller = size_rule;
            const format::TiledMatrix ref = format::compact_transposed(x.data(), s.rows, s.cols, ld, o);
            for (TransposedFill fill : {TransposedFill::Auto, TransposedFill::Scan, TransposedFill::Blocks}) {
              format::TiledMatrix fast;
              ASSERT_TRUE(compact_transposed_f32_avx512(x.data(), s.rows, s.cols, ld, o, fast, 2.0, fill));
              expect_same(ref, fast,
                          "stored " + std::to_string(s.rows) + "x" + std::to_string(s.cols) + " ld " +
                              std::to_string(ld) + " tiles " + std::to_string(tr) + "x" + std::to_string(tc) +
                              " sparsity " + std::to_string(sp) + " threshold " + std::to_string(threshold) +
                              " size rule " + std::to_string(size_rule) + " fill " + std::to_string(int(fill)));
              ++cases;
              if (::testing::Test::HasFailure()) return;
            }
          }
      }
  EXPECT_EQ(cases, 8 * 8 * 5 * 3 * 2 * 3);
}

// An operand the whole-call guard takes: run() compacts it without its payload (headers only), C is the guard's
// one sgemm (bit for bit cblas_sgemm) and the tile counts are format::compact()'s; below the guard the payload
// is complete; run_compacted() refuses headers-only tiles when it would have to read them.
TEST(TileSparseCompactFast, WholeCallGuardCompactsHeadersOnly) {
  if (!cpu_has_avx512_bw()) GTEST_SKIP() << "no AVX-512 F/BW/VL on this CPU";
  std::mt19937 rng(13);
  const int M = 40, N = 24, K = 300;
  std::vector<float> B(std::size_t(K) * N), C(std::size_t(M) * N), R(std::size_t(M) * N);
  std::uniform_real_distribution<float> u(-1, 1);
  for (auto& v : B) v = u(rng);
  for (bool transposed : {false, true}) {
    SCOPED_TRACE(transposed ? "sparse A op T (forward: transposed compaction)" : "sparse A op N (stored)");
    // The first half of the stored rows dense, the rest 97 % zeros: density about 0.5 (the guard takes the call),
    // with ELL tiles in the sparse half.
    const int rows = transposed ? K : M, lda = transposed ? M : K;
    std::vector<float> A = random_matrix(std::uint32_t(rows), std::size_t(lda), 0.97, rng);
    for (std::size_t i = 0; i < std::size_t(rows / 2) * lda; ++i) A[i] = u(rng) + 2.0f;
    GemmCall c{transposed ? Op::T : Op::N, Op::N, M, N, K, 1.0f, 0.0f, A.data(), lda, B.data(), N, C.data(), N,
               SparseOperand::A};
    TileSparseOptions o;  // threshold 0.35, guard at 0.95 x 0.35 = 0.3325 <= 0.5
    o.num_threads = 1;
    o.transposed_kernel = TransposedKernel::RowGather;  // op T: the transposed compaction
    TileSparseEngine e(o);
    e.run(c);
    cblas_sgemm(CblasRowMajor, transposed ? CblasTrans : CblasNoTrans, CblasNoTrans, M, N, K, 1.0f, A.data(), lda,
                B.data(), N, 0.0f, R.data(), N);
    EXPECT_TRUE(e.last_stats().full_dense);
    EXPECT_TRUE(e.last_stats().compact_headers_only);
    EXPECT_TRUE(std::memcmp(C.data(), R.data(), C.size() * sizeof(float)) == 0) << "not the guard's one sgemm";
    format::CompactOptions co;
    co.tile_rows = o.tile_rows, co.tile_cols = o.tile_cols, co.threshold = o.threshold;
    const format::TiledMatrix ref = transposed ? format::compact_transposed(A.data(), K, M, lda, co)
                                               : format::compact(A.data(), M, K, lda, co);
    const format::TileCounts tc = format::count_tiles(ref);
    EXPECT_EQ(e.last_stats().tiles_zero, tc.zero);
    EXPECT_EQ(e.last_stats().tiles_sparse, tc.sparse);
    EXPECT_EQ(e.last_stats().tiles_dense, tc.dense);
    ASSERT_GT(tc.sparse, 0u);  // sparse tiles whose payload the guard made unnecessary
    // The compaction itself: headers only at or above the density given, complete below it.
    format::TiledMatrix h, full;
    const double guard = o.guard_fraction * o.threshold;
    ASSERT_TRUE(transposed ? compact_transposed_f32_avx512(A.data(), K, M, lda, co, h, guard)
                           : compact_f32_avx512(A.data(), M, K, lda, co, 1, h, guard));
    EXPECT_TRUE(h.payload.empty());
    EXPECT_EQ(h.header_bytes(), ref.header_bytes());
    ASSERT_TRUE(transposed ? compact_transposed_f32_avx512(A.data(), K, M, lda, co, full, 0.6)
                           : compact_f32_avx512(A.data(), M, K, lda, co, 1, full, 0.6));
    expect_same(ref, full, "density 0.5 below 0.6: the whole payload");
    // Headers-only tiles where the guard does not run: refused, nothing computed from them.
    o.whole_call_guard = false;
    TileSparseEngine unguarded(o);
    try {
      unguarded.run_compacted(c, h, unguarded.compact_orientation(c));
      ADD_FAILURE() << "headers-only tiles accepted without the guard";
    } catch (const InputError& err) {
      EXPECT_NE(std::string(err.what()).find("payload"), std::string::npos) << err.what();
    }
    // Without the guard run() compacts the whole payload and computes from the tiles.
    unguarded.run(c);
    EXPECT_FALSE(unguarded.last_stats().full_dense);
    EXPECT_FALSE(unguarded.last_stats().compact_headers_only);
  }
}

// At exactly the guard's density (nnz / elements == guard_fraction x threshold, both exact in binary) the guard
// takes the call (>=) and run() leaves the payload out: the two decisions are one test (density_at_least).
TEST(TileSparseCompactFast, HeadersOnlyAtExactlyTheGuardDensity) {
  if (!cpu_has_avx512_bw()) GTEST_SKIP() << "no AVX-512 F/BW/VL on this CPU";
  const int M = 40, N = 16, K = 300;
  std::vector<float> B(std::size_t(K) * N, 0.5f), C(std::size_t(M) * N), R(std::size_t(M) * N);
  for (bool transposed : {false, true}) {
    SCOPED_TRACE(transposed ? "transposed compaction" : "stored");
    // op(A) = M x K: rows 0-7 dense (2400), every 16th element of rows 8-39 (600): 3000 = 12000 / 4.
    std::vector<float> A(std::size_t(M) * K, 0.0f);
    auto at = [&](int m, int k) -> float& {
      return transposed ? A[std::size_t(k) * M + m] : A[std::size_t(m) * K + k];
    };
    for (int m = 0; m < M; ++m)
      for (int k = 0; k < K; ++k)
        if (m < 8 || (m * K + k) % 16 == 0) at(m, k) = 1.0f + float((m + k) % 5);
    std::size_t nnz = 0;
    for (float v : A) nnz += v != 0.0f;
    ASSERT_EQ(nnz, std::size_t(M) * K / 4);
    const int lda = transposed ? M : K;
    GemmCall c{transposed ? Op::T : Op::N, Op::N, M, N, K, 1.0f, 0.0f, A.data(), lda, B.data(), N, C.data(), N,
               SparseOperand::A};
    TileSparseOptions o;
    o.num_threads = 1;
    o.transposed_kernel = TransposedKernel::RowGather;
    o.threshold = 0.5;
    o.guard_fraction = 0.5;  // guard density 0.25 = nnz / elements
    TileSparseEngine e(o);
    e.run(c);
    EXPECT_TRUE(e.last_stats().full_dense);
    EXPECT_TRUE(e.last_stats().compact_headers_only);
    EXPECT_GT(e.last_stats().tiles_sparse, 0u);
    cblas_sgemm(CblasRowMajor, transposed ? CblasTrans : CblasNoTrans, CblasNoTrans, M, N, K, 1.0f, A.data(), lda,
                B.data(), N, 0.0f, R.data(), N);
    EXPECT_TRUE(std::memcmp(C.data(), R.data(), C.size() * sizeof(float)) == 0);
    o.guard_fraction = 0.5 + 1.0 / 1024;  // just above: the tiles, with their payload
    TileSparseEngine above(o);
    above.run(c);
    EXPECT_FALSE(above.last_stats().full_dense);
    EXPECT_FALSE(above.last_stats().compact_headers_only);
  }
}

TEST(TileSparseCompactFast, EmptyMatrices) {
  if (!cpu_has_avx512_bw()) GTEST_SKIP() << "no AVX-512 F/BW/VL on this CPU";
  std::vector<float> x(8, 1.0f);
  format::CompactOptions o;
  o.tile_rows = 4, o.tile_cols = 4;
  for (auto [rows, cols] : {std::pair<std::uint32_t, std::uint32_t>{0, 8}, {8, 0}, {0, 0}}) {
    const std::size_t ld = std::max<std::uint32_t>(cols, 1);
    format::TiledMatrix fast, fast_t;
    ASSERT_TRUE(compact_f32_avx512(x.data(), rows, cols, ld, o, 1, fast));
    expect_same(format::compact(x.data(), rows, cols, ld, o), fast,
                "stored " + std::to_string(rows) + "x" + std::to_string(cols));
    ASSERT_TRUE(compact_transposed_f32_avx512(x.data(), rows, cols, ld, o, fast_t));
    expect_same(format::compact_transposed(x.data(), rows, cols, ld, o), fast_t,
                "transposed " + std::to_string(rows) + "x" + std::to_string(cols));
  }
}

TEST(TileSparseCompactFast, OutsideItsPathLeavesTheOutputToFormatCompact) {
  std::vector<float> x(64, 1.0f);
  format::CompactOptions o;
  o.tile_rows = 4, o.tile_cols = 4;
  o.sparse_format = format::TileFormat::Bitmap;
  format::TiledMatrix out;
  out.source_ld = 12345;  // a marker: untouched when the call is declined
  EXPECT_FALSE(compact_f32_avx512(x.data(), 8, 8, 8, o, 1, out));
  EXPECT_EQ(out.source_ld, 12345u);
  EXPECT_TRUE(out.headers.empty());
  EXPECT_FALSE(compact_transposed_f32_avx512(x.data(), 8, 8, 8, o, out));  // BITMAP
  o.sparse_format = format::TileFormat::Ell;
  o.dense_storage = format::DenseStorage::Payload;  // DENSE tiles copied: format::compact_transposed()
  EXPECT_FALSE(compact_transposed_f32_avx512(x.data(), 8, 8, 8, o, out));
  EXPECT_EQ(out.source_ld, 12345u);
  EXPECT_TRUE(out.headers.empty());
}

TEST(TileSparseCompactFast, RejectsWhatFormatCompactRejects) {
  std::vector<float> x(64, 1.0f);
  format::CompactOptions o;
  format::TiledMatrix out;
  o.tile_rows = 0;
  EXPECT_THROW(compact_f32_avx512(x.data(), 8, 8, 8, o, 1, out), InputError);
  o.tile_rows = 4;
  EXPECT_THROW(compact_f32_avx512(x.data(), 8, 8, 4, o, 1, out), InputError);  // ld < cols
  EXPECT_THROW(compact_transposed_f32_avx512(x.data(), 8, 8, 4, o, out), InputError);  // ld < stored cols
  EXPECT_NO_THROW(compact_transposed_f32_avx512(x.data(), 16, 4, 4, o, out));         // 16 x 4 stored, ld 4
  o.threshold = std::nan("");
  EXPECT_THROW(compact_f32_avx512(x.data(), 8, 8, 8, o, 1, out), InputError);
  EXPECT_THROW(compact_transposed_f32_avx512(x.data(), 8, 8, 8, o, out), InputError);
}

}  // namespace
}  // namespace spartan::gemm::detail
