// The per-tile compaction functions of the CUDA tile-sparse engine's device compaction (tile_compact_hd.h), run
// on the host in the device algorithm's steps (count per tile, exclusive scan of the aligned sizes, write per
// tile into a zeroed area), must give format::compact()'s headers and payload byte for byte. Also: a CPU engine
// given device pointers throws.
#include <gtest/gtest.h>

#include <random>

#include "spartan/common/error.h"
#include "spartan/gemm/tile_sparse.h"
#include "tile_compact_hd.h"

namespace fmt = spartan::format;
namespace hd = spartan::gemm::hd;

namespace {

struct HostResult {
  std::vector<fmt::TileHeader> headers;
  std::vector<std::uint8_t> payload;
};

/// The device algorithm, sequentially.
HostResult compact_like_device(const float* s, std::uint32_t rows, std::uint32_t cols, std::size_t ld,
                               const fmt::CompactOptions& o) {
  const fmt::TileGrid grid{rows, cols, o.tile_rows, o.tile_cols};
  const std::uint64_t tiles = grid.num_tiles();
  const hd::CompactGeom g{s, ld, rows, cols, o.tile_rows, o.tile_cols, grid.tiles_c(), o.threshold,
                          std::uint8_t(o.sparse_format), o.dense_if_not_smaller};
  HostResult r;
  r.headers.resize(tiles);
  std::vector<std::uint64_t> sizes(tiles), offsets(tiles);
  for (std::uint64_t t = 0; t < tiles; ++t)
    sizes[t] = hd::align_up(hd::tile_count_header(g, t, &r.headers[t]), fmt::kPayloadAlignBytes);
  std::uint64_t off = 0;
  for (std::uint64_t t = 0; t < tiles; ++t) offsets[t] = off, off += sizes[t];
  const std::uint64_t bound = tiles * hd::max_tile_payload_bytes(o.tile_rows, o.tile_cols);
  EXPECT_LE(off, bound);
  std::vector<std::uint8_t> area(bound, 0);
  for (std::uint64_t t = 0; t < tiles; ++t) {
    r.headers[t].offset = offsets[t];
    hd::tile_write_payload(g, t, r.headers[t], area.data());
  }
  // Bytes past the used payload stay zero (the device area is zeroed up to the bound).
  for (std::uint64_t i = off; i < bound; ++i)
    if (area[i]) ADD_FAILURE() << "byte " << i << " past the payload written";
  r.payload.assign(area.begin(), area.begin() + static_cast<std::ptrdiff_t>(off));
  return r;
}

std::vector<float> random_matrix(std::uint32_t rows, std::size_t ld, double density, std::mt19937_64& rng) {
  std::vector<float> m(rows * ld);
  std::uniform_real_distribution<double> u(0, 1);
  std::normal_distribution<float> d(0, 1);
  for (float& x : m) {
    const double r = u(rng);
    x = r < density ? d(rng) : (r < density + 0.02 ? -0.0f : 0.0f);
  }
  return m;
}

}  // namespace

TEST(CompactHd, MatchesFormatCompactByteForByte) {
  std::mt19937_64 rng(1);
  struct Case { std::uint32_t rows, cols, ld_extra, tr, tc; };
  const Case cases[] = {{64, 64, 0, 32, 32}, {70, 45, 3, 32, 32}, {33, 300, 0, 8, 300}, {100, 37, 5, 16, 8},
                        {5, 600, 0, 4, 512}, {1, 1, 0, 32, 32},  {50, 50, 0, 1, 64},  {40, 80, 1, 7, 13}};
  int compared = 0;
  for (const Case& c : cases)
    for (fmt::TileFormat f : {fmt::TileFormat::Ell, fmt::TileFormat::Bitmap})
      for (double threshold : {0.0, 0.3, 0.5, 2.0})
        for (double density : {0.0, 0.05, 0.4, 0.9})
          for (bool size_rule : {true, false}) {
          const std::size_t ld = c.cols + c.ld_extra;
          const auto m = random_matrix(c.rows, ld, density, rng);
          fmt::CompactOptions o;
          o.tile_rows = c.tr, o.tile_cols = c.tc, o.threshold = threshold, o.sparse_format = f;
          o.dense_if_not_smaller = size_rule;
          const fmt::TiledMatrix ref = fmt::compact(m.data(), c.rows, c.cols, ld, o);
          const HostResult got = compact_like_device(m.data(), c.rows, c.cols, ld, o);
          fmt::TiledMatrix t = ref;
          t.headers = got.headers;
          ASSERT_EQ(t.header_bytes(), ref.header_bytes())
              << c.rows << "x" << c.cols << " tiles " << c.tr << "x" << c.tc << " thr " << threshold << " d " << density << " size rule " << size_rule;
          ASSERT_EQ(got.payload, ref.payload)
              << c.rows << "x" << c.cols << " tiles " << c.tr << "x" << c.tc << " thr " << threshold << " d " << density << " size rule " << size_rule;
          ++compared;
        }
  EXPECT_EQ(compared, 8 * 2 * 4 * 4 * 2);
}

TEST(CompactHd, CpuEnginesRejectDevicePointers) {
  std::vector<float> a(4, 1.0f), b(4, 1.0f), c(4, 0.0f);
  spartan::gemm::GemmCall call;
  call.M = call.N = call.K = 2;
  call.A = a.data(), call.B = b.data(), call.C = c.data();
  call.lda = call.ldb = call.ldc = 2;
  call.sparse = spartan::gemm::SparseOperand::A;
  call.device_pointers = true;
  for (const char* name : {"dense", "tile-sparse"}) {
    auto e = spartan::gemm::make_engine(name);
    try {
      e->run(call);
      ADD_FAILURE() << name << " accepted device pointers";
    } catch (const spartan::InputError& err) {
      EXPECT_NE(std::string(err.what()).find("device pointers"), std::string::npos) << err.what();
    }
    EXPECT_EQ(c[0], 0.0f) << name << " wrote C";
  }
}
