#include <gtest/gtest.h>

#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "spartan/hw/address_map.h"

using namespace spartan::hw;

static GpuConfig small(std::uint32_t slices, std::uint32_t channels, const std::string& hash) {
  GpuConfig c;
  c.l2.slices = slices;
  c.l2.hash = hash;
  c.l2.interleave_bytes = 256;
  c.dram.channels = channels;
  return c;
}

// std::string, not const char*: gtest prints a pointer parameter with its address, which went into the CTest
// test names (a different name in every build)
class AddressMapP : public ::testing::TestWithParam<std::tuple<int, int, std::string>> {};

TEST_P(AddressMapP, SliceMapIsABijectionAndBalanced) {
  auto [s, ch, hash] = GetParam();
  AddressMap m(small(s, ch, hash));
  std::vector<std::uint64_t> per_slice(s, 0);
  for (std::uint64_t a = 0; a < 256ull * s * 64; a += 64) {
    auto sa = m.to_slice(a);
    ASSERT_LT(sa.slice, std::uint32_t(s));
    ASSERT_EQ(m.to_global(sa.slice, sa.local), a);
    ++per_slice[sa.slice];
  }
  for (auto n : per_slice) EXPECT_EQ(n, per_slice[0]);  // a contiguous range spreads exactly evenly
}

TEST_P(AddressMapP, DramCoordinatesAreUnique) {
  auto [s, ch, hash] = GetParam();
  GpuConfig c = small(s, ch, hash);
  AddressMap m(c);
  std::set<std::tuple<int, int, int, int, int>> seen;
  for (std::uint64_t a = 0; a < 4ull << 20; a += c.dram.burst_bytes()) {
    auto sa = m.to_slice(a);
    auto d = m.to_dram(sa.slice, sa.local);
    ASSERT_LT(d.channel, std::uint32_t(ch));
    ASSERT_LT(d.bank_group, c.dram.bank_groups);
    ASSERT_LT(d.bank, c.dram.banks_per_group);
    ASSERT_TRUE(seen.insert({int(d.channel), int(d.bank_group), int(d.bank), int(d.row), int(d.column)}).second);
  }
}

TEST_P(AddressMapP, NextBurstEqualsFullDecode) {
  auto [s, ch, hash] = GetParam();
  GpuConfig c = small(s, ch, hash);
  AddressMap m(c);
  const std::uint64_t b = c.dram.burst_bytes();
  for (std::uint32_t slice = 0; slice < std::uint32_t(s); slice += 5)
    for (std::uint64_t local = 0; local < (1ull << 20); local += b) {
      auto prev = m.to_dram(slice, local), next = m.to_dram(slice, local + b);
      auto fast = m.next_burst(prev, slice, local, local + b);
      ASSERT_EQ(std::make_tuple(fast.channel, fast.bank_group, fast.bank, fast.row, fast.column),
                std::make_tuple(next.channel, next.bank_group, next.bank, next.row, next.column))
          << "slice " << slice << " local " << local;
    }
}

// An L2 line's bursts are consecutive columns of one row of one bank (one ACT per line), and consecutive lines
// of a slice's share alternate bank groups (thirty-eighth session: a line's four sectors were in four bank groups,
// so a random line miss opened four rows).
TEST_P(AddressMapP, LineBurstsShareOneRowConsecutiveLinesAlternateBankGroups) {
  auto [s, ch, hash] = GetParam();
  GpuConfig c = small(s, ch, hash);
  AddressMap m(c);
  const std::uint32_t line = c.l2.slice.line_bytes, b = c.dram.burst_bytes();
  ASSERT_GT(line / b, 1u);  // the default geometry has several bursts per line: the property is not vacuous
  for (std::uint32_t slice = 0; slice < std::uint32_t(s); slice += 7)
    for (std::uint64_t local = 0; local < (1ull << 18); local += line) {
      const auto first = m.to_dram(slice, local);
      for (std::uint32_t k = 1; k < line / b; ++k) {
        const auto d = m.to_dram(slice, local + k * b);
        ASSERT_EQ(std::make_tuple(d.bank_group, d.bank, d.row, d.column),
                  std::make_tuple(first.bank_group, first.bank, first.row, first.column + k))
            << "slice " << slice << " local " << local << " burst " << k;
      }
      if ((local + line) % c.l2.interleave_bytes != 0) {  // the next line of the same interleave chunk
        const auto next = m.to_dram(slice, local + line);
        EXPECT_EQ(next.bank_group, (first.bank_group + 1) % c.dram.bank_groups) << local;
      }
    }
}

INSTANTIATE_TEST_SUITE_P(Geometries, AddressMapP,
                         ::testing::Values(std::make_tuple(64, 32, std::string("rotate_xor")),
                                           std::make_tuple(64, 32, std::string("modulo")),
                                           std::make_tuple(80, 40, std::string("rotate_xor")),
                                           std::make_tuple(16, 16, std::string("rotate_xor")),
                                           std::make_tuple(6, 3, std::string("rotate_xor"))));

TEST(AddressMap, XorHashSpreadsPowerOfTwoStrides) {
  // A stride of slices*interleave hits one slice under plain modulo interleaving; the hash spreads it.
  AddressMap mod(small(64, 32, "modulo")), hashed(small(64, 32, "rotate_xor"));
  std::set<std::uint32_t> a, b;
  for (std::uint64_t i = 0; i < 256; ++i) {
    a.insert(mod.to_slice(i * 64 * 256).slice);
    b.insert(hashed.to_slice(i * 64 * 256).slice);
  }
  EXPECT_EQ(a.size(), 1u);
  EXPECT_GT(b.size(), 32u);
}
