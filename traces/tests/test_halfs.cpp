// IEEE binary16 and bfloat16 conversions: exhaustive round trips and a comparison with the
// compiler's _Float16 (libgcc soft-float, round to nearest even) where available.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "spartan/trace/sptrace.h"

namespace spartan::trace {
namespace {

std::uint32_t bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float from_bits(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

TEST(Half, EveryF16RoundTripsThroughF32) {
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    const float f = f16_to_f32(static_cast<std::uint16_t>(h));
    const bool nan = (h & 0x7c00) == 0x7c00 && (h & 0x3ff);
    EXPECT_EQ(std::isnan(f), nan) << h;
    if (nan) {
      EXPECT_TRUE(std::isnan(f16_to_f32(f32_to_f16(f))));
      EXPECT_EQ(f32_to_f16(f) & 0x1ff, h & 0x1ff) << "payload kept";
    } else {
      EXPECT_EQ(f32_to_f16(f), h) << h;
    }
  }
}

TEST(Half, KnownValues) {
  EXPECT_EQ(f16_to_f32(0x3c00), 1.0f);
  EXPECT_EQ(f16_to_f32(0xc000), -2.0f);
  EXPECT_EQ(f16_to_f32(0x7bff), 65504.0f);
  EXPECT_EQ(f16_to_f32(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(f16_to_f32(0x0400), std::ldexp(1.0f, -14));
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7c00);  // rounds to Inf
  EXPECT_EQ(f32_to_f16(65519.0f), 0x7bff);
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -25)), 0x0000);  // tie -> even (0)
  EXPECT_EQ(f32_to_f16(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_EQ(f32_to_f16(std::ldexp(3.0f, -25)), 0x0002);  // 1.5 ulp tie -> even (2)
  EXPECT_EQ(f32_to_f16(-0.0f), 0x8000);
  EXPECT_EQ(f32_to_f16(1e-40f), 0x0000);
}

#if defined(__FLT16_MAX__) && !defined(__clang__)
TEST(Half, MatchesCompilerFloat16) {
  std::mt19937 rng(7);
  for (int i = 0; i < 200000; ++i) {
    // Bias towards the f16 range: exponents 100..150.
    const std::uint32_t u = (rng() & 0x807fffffu) | ((100u + rng() % 51u) << 23);
    const float f = from_bits(u);
    const _Float16 ref = static_cast<_Float16>(f);
    std::uint16_t rb;
    std::memcpy(&rb, &ref, 2);
    ASSERT_EQ(f32_to_f16(f), rb) << std::hexfloat << f;
  }
}
#endif

TEST(BFloat16, RoundTripAndRounding) {
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    const float f = bf16_to_f32(static_cast<std::uint16_t>(h));
    EXPECT_EQ(bits(f), h << 16);
    if (!std::isnan(f)) {
      EXPECT_EQ(f32_to_bf16(f), h);
    }
  }
  EXPECT_EQ(f32_to_bf16(from_bits(0x3f808000u)), 0x3f80);  // tie -> even
  EXPECT_EQ(f32_to_bf16(from_bits(0x3f818000u)), 0x3f82);  // tie -> even (up)
  EXPECT_EQ(f32_to_bf16(from_bits(0x3f808001u)), 0x3f81);
  EXPECT_EQ(f32_to_bf16(from_bits(0x7f7fffffu)), 0x7f80);  // max float rounds to Inf
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(from_bits(0x7f800001u)))));  // NaN with low payload only
}

}  // namespace
}  // namespace spartan::trace
