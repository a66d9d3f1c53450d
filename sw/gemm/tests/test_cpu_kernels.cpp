// Internal CPU micro-kernels of the tile-sparse GEMM, checked directly against their portable versions
// (the engine tests in test_tile_sparse.cpp reach them only through whole GEMM calls).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <set>
#include <vector>

#include "cpu_kernels.h"
#include "payload_prefetch.h"

using namespace spartan::gemm::detail;

// transpose_store_avx2 (8x8 blocks: lane crossing in the loads, in-lane 4x4 transposes) must give the
// portable result for every block / edge combination, both loop orders (rows <= 64 and > 64), padded
// strides and the three beta cases. beta 0 and 1 are exact; a general beta uses one FMA per element on
// the AVX2 side (portable: multiply, then add), so the bound is one rounding of the largest term.
TEST(TileSparseKernels, TransposeStoreAvx2MatchesPortable) {
  if (!cpu_has_avx2_fma()) GTEST_SKIP() << "no AVX2/FMA on this CPU";
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-2, 2);
  for (int rows : {1, 7, 8, 9, 63, 64, 65, 130})
    for (int w : {1, 5, 8, 13, 64})
      for (float beta : {0.0f, 1.0f, -0.75f}) {
        const std::size_t ldt = std::size_t(w) + 3, ldc = std::size_t(rows) + 5;
        std::vector<float> T(std::size_t(rows) * ldt), C0(std::size_t(w) * ldc);
        for (float& x : T) x = u(rng);
        for (float& x : C0) x = u(rng);
        if (beta == 0.0f) C0[0] = std::nanf("");  // beta 0 must not read C
        std::vector<float> Ca = C0, Cp = C0;
        transpose_store_avx2(T.data(), ldt, rows, w, Ca.data(), ldc, beta);
        transpose_store_portable(T.data(), ldt, rows, w, Cp.data(), ldc, beta);
        for (int i = 0; i < w; ++i)
          for (std::size_t j = 0; j < ldc; ++j) {
            const std::size_t at = std::size_t(i) * ldc + j;
            if (j >= std::size_t(rows)) {
              ASSERT_TRUE(Ca[at] == C0[at] || (std::isnan(Ca[at]) && std::isnan(C0[at])))
                  << "padding written at " << i << "," << j;
              continue;
            }
            if (beta == 0.0f || beta == 1.0f) {
              ASSERT_EQ(Ca[at], Cp[at]) << rows << "x" << w << " beta " << beta << " at " << i << "," << j;
            } else {
              const float bound = 2 * std::ldexp(std::fabs(beta * C0[at]) + std::fabs(T[std::size_t(j) * ldt + i]), -24);
              ASSERT_NEAR(Ca[at], Cp[at], bound) << rows << "x" << w << " at " << i << "," << j;
            }
          }
      }
}

// transpose_store_avx512 (16x16 blocks, edges by the AVX2 kernel) must match transpose_store_avx2 bit for bit
// (the same adds and FMAs) for every block / edge combination, both loop orders, padded strides and the three
// beta cases, and must not write C's padding or read C with beta 0.
TEST(TileSparseKernels, TransposeStoreAvx512MatchesAvx2) {
  if (!cpu_has_avx512()) GTEST_SKIP() << "no AVX-512 on this CPU";
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-2, 2);
  for (int rows : {1, 8, 15, 16, 17, 33, 64, 65, 80, 130})
    for (int w : {1, 9, 16, 17, 40, 64, 128})
      for (float beta : {0.0f, 1.0f, -0.75f}) {
        const std::size_t ldt = std::size_t(w) + 3, ldc = std::size_t(rows) + 5;
        std::vector<float> T(std::size_t(rows) * ldt), C0(std::size_t(w) * ldc);
        for (float& x : T) x = u(rng);
        for (float& x : C0) x = u(rng);
        if (beta == 0.0f)  // beta 0 must not read C: NaN in the first and the last written element
          C0[0] = C0[std::size_t(w - 1) * ldc + std::size_t(rows - 1)] = std::nanf("");
        std::vector<float> C5 = C0, C2 = C0;
        transpose_store_avx512(T.data(), ldt, rows, w, C5.data(), ldc, beta);
        transpose_store_avx2(T.data(), ldt, rows, w, C2.data(), ldc, beta);
        for (int i = 0; i < w; ++i)
          for (std::size_t j = 0; j < ldc; ++j) {
            const std::size_t at = std::size_t(i) * ldc + j;
            if (j >= std::size_t(rows)) {
              ASSERT_TRUE(C5[at] == C0[at] || (std::isnan(C5[at]) && std::isnan(C0[at])))
                  << "padding written at " << i << "," << j;
              continue;
            }
            ASSERT_EQ(std::memcmp(&C5[at], &C2[at], sizeof(float)), 0)
                << rows << "x" << w << " beta " << beta << " at " << i << "," << j << ": " << C5[at] << " vs " << C2[at];
            if (beta == 0.0f) {
              ASSERT_EQ(C5[at], T[std::size_t(j) * ldt + std::size_t(i)]);
            }
          }
      }
}

namespace {
// One u8-index ELL tile (re rows x w slots) whose row lr holds len[lr] non-zeros (some NaN, some
// denormal: non-zeros by the format) and then padding (value +-0.0, index 0).
struct EllTile {
  std::vector<std::uint8_t> idx;
  std::vector<float> val;
};
EllTile make_tile(std::mt19937& rng, std::uint32_t re, std::uint32_t w, const std::vector<std::uint32_t>& len) {
  std::uniform_real_distribution<float> u(-1, 1);
  std::uniform_int_distribution<int> col(0, 255), pick(0, 39);
  EllTile t{std::vector<std::uint8_t>(std::size_t(re) * w, 0), std::vector<float>(std::size_t(re) * w, 0.0f)};
  for (std::uint32_t lr = 0; lr < re; ++lr)
    for (std::uint32_t j = 0; j < w; ++j) {
      const std::size_t at = std::size_t(lr) * w + j;
      if (j >= len[lr]) {
        t.val[at] = (j % 2) ? -0.0f : 0.0f;
        continue;
      }
      const int kind = pick(rng);
      t.val[at] = kind == 0 ? std::nanf("") : kind == 1 ? 1e-40f : (u(rng) == 0.0f ? 0.5f : u(rng) + 2.0f);
      t.idx[at] = std::uint8_t(col(rng));
    }
  return t;
}
bool same_or_close(float a, float b, float scale) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return std::fabs(a - b) <= scale * 0x1p-20f;
}
}  // namespace

// The scatter kernel and the direct row gather find each ELL row's end from compare masks (64 slots per
// word); rows of every length 0..w (w up to 200: several words, full rows without padding), NaN and
// denormal values, two tiles per gather call, AVX2 against portable.
TEST(TileSparseKernels, EllRowEndsAvx2MatchesPortable) {
  if (!cpu_has_avx2_fma()) GTEST_SKIP() << "no AVX2/FMA on this CPU";
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-1, 1);
  for (std::uint32_t w : {1u, 7u, 8u, 9u, 63u, 64u, 65u, 130u, 200u})
    for (int qn : {5, 17, 40, 44, 64}) {
      const std::uint32_t re = 8;
      std::vector<EllTile> tiles;
      for (int k = 0; k < 2; ++k) {
        std::vector<std::uint32_t> len(re);
        for (std::uint32_t lr = 0; lr < re; ++lr) len[lr] = lr == 0 ? w : lr == 1 ? 0 : rng() % (w + 1);
        tiles.push_back(make_tile(rng, re, w, len));
      }
      const std::size_t ldd = 64;
      std::vector<float> D(std::size_t(512) * ldd);
      for (float& x : D) x = u(rng);
      // scatter: O blocks of 256 rows x ldo (qn rounded up to 8), one per tile
      const std::size_t ldo = std::size_t((qn + 7) / 8 * 8);
      std::vector<float> Oa(2 * 256 * ldo + 8, 0.0f), Op;  // each tile: its own O block
      float* oa = Oa.data() + (8 - (reinterpret_cast<std::uintptr_t>(Oa.data()) / 4) % 8) % 8;
      Op = Oa;
      float* op = Op.data() + (oa - Oa.data());
      for (int k = 0; k < 2; ++k) {
        scatter_ell_u8_avx2(tiles[k].idx.data(), tiles[k].val.data(), re, w, 1.5f, D.data() + k * 8 * ldd, ldd, qn,
                            oa + std::size_t(k) * 256 * ldo, ldo);
        scatter_ell_u8_portable(tiles[k].idx.data(), tiles[k].val.data(), re, w, 1.5f, D.data() + k * 8 * ldd, ldd,
                                qn, op + std::size_t(k) * 256 * ldo, ldo);
      }
      for (int k = 0; k < 2; ++k)
        for (int r = 0; r < 256; ++r)
          for (int q = 0; q < qn; ++q) {
            const std::size_t at = (std::size_t(k) * 256 + r) * ldo + q;
            ASSERT_TRUE(same_or_close(oa[at], op[at], 8.0f * float(w))) << "scatter w " << w << " qn " << qn;
          }
      if (cpu_has_avx512()) {  // the AVX-512 scatter: the AVX2 result bit for bit (O rows of 16-float multiples)
        const std::size_t ld5 = std::size_t((qn + 15) / 16 * 16);
        std::vector<float> O5(2 * 256 * ld5 + 16, 0.0f);
        float* o5 = O5.data() + (16 - (reinterpret_cast<std::uintptr_t>(O5.data()) / 4) % 16) % 16;
        for (int k = 0; k < 2; ++k)
          scatter_ell_u8_avx512(tiles[k].idx.data(), tiles[k].val.data(), re, w, 1.5f, D.data() + k * 8 * ldd, ldd,
                                qn, o5 + std::size_t(k) * 256 * ld5, ld5);
        for (int k = 0; k < 2; ++k)
          for (int r = 0; r < 256; ++r)
            ASSERT_EQ(std::memcmp(oa + (std::size_t(k) * 256 + r) * ldo, o5 + (std::size_t(k) * 256 + r) * ld5,
                                  std::size_t(qn) * sizeof(float)),
                      0)
                << "avx512 scatter w " << w << " qn " << qn << " row " << r;
      }
      // direct row gather over both tiles (columns 0..255 and 256..511 of S)
      std::vector<EllTileRef> ga;
      for (int k = 0; k < 2; ++k) ga.push_back({tiles[k].idx.data(), tiles[k].val.data(), w, std::uint32_t(256 * k)});
      for (bool ow : {true, false}) {
        std::vector<float> Ga(re * 64, 3.0f), Gp(re * 64, 3.0f);
        gather_ell_u8_avx2(ga.data(), 2, int(re), 0.5f, D.data(), ldd, Ga.data(), 64, qn, ow);
        gather_ell_u8_portable(ga.data(), 2, int(re), 0.5f, D.data(), ldd, Gp.data(), 64, qn, ow);
        for (std::size_t at = 0; at < Ga.size(); ++at)
          ASSERT_TRUE(same_or_close(Ga[at], Gp[at], 8.0f * float(w))) << "gather w " << w << " qn " << qn << " ow " << ow;
      }
    }
}

// gather_ell_u8_avx512_bands (the direct row gather over many bands in one call) equals one
// gather_ell_u8_avx512 call per band bit for bit: bands of 0, 1 or 2 tiles, a last band of fewer rows, output
// rows past the last band untouched, both overwrite modes, whole and ragged panels.
TEST(TileSparseKernels, WideGatherBandsMatchesOneCallPerBand) {
  if (!cpu_has_avx512()) GTEST_SKIP() << "no AVX-512 on this CPU";
  std::mt19937 rng(29);
  std::uniform_real_distribution<float> u(-1, 1);
  const int band_rows = 8, nb = 5, total_rows = 4 * band_rows + 3;  // the last band: 3 rows
  const std::uint32_t w = 6;
  const std::size_t ldd = 400;
  std::vector<float> D(std::size_t(512) * ldd);
  for (float& x : D) x = u(rng);
  std::vector<EllTile> tiles;
  std::vector<EllTileRef> refs;
  std::vector<std::size_t> off{0};
  for (int b = 0; b < nb; ++b) {
    const int nt = b % 3;  // 0, 1, 2, 0, 1 tiles
    for (int k = 0; k < nt; ++k) {
      std::vector<std::uint32_t> len(static_cast<std::size_t>(band_rows));
      for (auto& l : len) l = rng() % (w + 1);
      tiles.push_back(make_tile(rng, std::uint32_t(band_rows), w, len));
    }
    off.push_back(off.back() + std::size_t(nt));
  }
  for (std::size_t i = 0, k = 0; i + 1 < off.size(); ++i)
    for (std::size_t j = off[i]; j < off[i + 1]; ++j, ++k)
      refs.push_back({tiles[k].idx.data(), tiles[k].val.data(), w, std::uint32_t(256 * (j - off[i]))});
  for (int qn : {16, 40, 64, 384})
    for (bool ow : {true, false}) {
      const std::size_t ldo = std::size_t(qn) + 16, rows_out = std::size_t(nb) * band_rows + 2;
      std::vector<float> Oa(rows_out * ldo), Ob;
      for (float& x : Oa) x = u(rng);
      Ob = Oa;
      const std::vector<float> O0 = Oa;
      gather_ell_u8_avx512_bands(refs.data(), off.data(), nb, band_rows, total_rows, 0.75f, D.data(), ldd, Oa.data(), ldo,
                                 qn, ow);
      for (int b = 0; b < nb; ++b)
        gather_ell_u8_avx512(refs.data() + off[std::size_t(b)], int(off[std::size_t(b) + 1] - off[std::size_t(b)]),
                             std::min(band_rows, total_rows - b * band_rows), 0.75f, D.data(), ldd,
                             Ob.data() + std::size_t(b) * band_rows * ldo, ldo, qn, ow);
      ASSERT_EQ(std::memcmp(Oa.data(), Ob.data(), Oa.size() * sizeof(float)), 0) << "qn " << qn << " ow " << ow;
      // rows past total_rows, and columns past qn, keep what they held
      for (std::size_t r = 0; r < rows_out; ++r)
        for (std::size_t q = r < std::size_t(total_rows) ? std::size_t(qn) : 0; q < ldo; ++q)
          ASSERT_EQ(std::memcmp(&Oa[r * ldo + q], &O0[r * ldo + q], sizeof(float)), 0) << "row " << r << " col " << q;
    }
}

// The wide gather's payload prefetch walks every 64-byte line of the next band's index and value blocks within
// `steps` steps (one per row of the band being gathered), each line of a block once, and no address outside the
// blocks' lines: tiles of widths 1-40 at odd offsets (index blocks not line-aligned, value blocks 4-aligned),
// empty tiles (width 0) skipped, 1-16 rows, steps from 1 to more than the lines; no tiles at all: no address.
TEST(TileSparseKernels, PayloadLineWalkCoversTheNextBandsBlocks) {
  using spartan::gemm::detail::EllTileRef;
  using spartan::gemm::detail::PayloadLineWalk;
  std::mt19937 rng(5);
  std::vector<unsigned char> buf(1 << 20);
  const std::uintptr_t base = (reinterpret_cast<std::uintptr_t>(buf.data()) + 63) & ~std::uintptr_t(63);
  for (int trial = 0; trial < 300; ++trial) {
    const int nt = int(rng() % 6), rows = 1 + int(rng() % 16);
    std::vector<EllTileRef> t(static_cast<std::size_t>(nt));
    std::set<std::uintptr_t> want;  // every line overlapping a block
    std::size_t want_visits = 0;    // lines counted per block
    std::uintptr_t at = base + rng() % 64;
    for (auto& x : t) {
      x.w = rng() % 5 == 0 ? 0u : 1u + std::uint32_t(rng() % 40);
      x.base = 0;
      const std::uintptr_t idx = at, val = (idx + x.w * rows + 3) & ~std::uintptr_t(3);
      x.idx = reinterpret_cast<const std::uint8_t*>(idx);
      x.val = reinterpret_cast<const float*>(val);
      for (const auto& [b, n] : {std::pair<std::uintptr_t, std::uintptr_t>{idx, x.w * rows},
                                 std::pair<std::uintptr_t, std::uintptr_t>{val, x.w * rows * 4u}}) {
        if (n == 0) continue;
        for (std::uintptr_t l = b & ~std::uintptr_t(63); l < b + n; l += 64) want.insert(l), ++want_visits;
      }
      at = val + x.w * rows * 4u + rng() % 48;
      ASSERT_LT(at, base + buf.size() - 64);
    }
    const int steps = 1 + int(rng() % 40);
    PayloadLineWalk walk(t.data(), nt, rows, steps);
    std::vector<std::uintptr_t> got;
    for (int i = 0; i < steps; ++i) walk.step([&](std::uintptr_t a) { got.push_back(a); });
    walk.step([&](std::uintptr_t a) { ADD_FAILURE() << "address after the last step: " << a; });
    EXPECT_EQ(got.size(), want_visits) << "trial " << trial;
    EXPECT_EQ(std::set<std::uintptr_t>(got.begin(), got.end()), want) << "trial " << trial;
    for (std::uintptr_t a : got) EXPECT_EQ(a % 64, 0u) << "trial " << trial;
  }
}
