// Reference of the sparsity monitor's counting semantics, written from docs/hw-units.md ("Counting
// semantics") independently of the RTL: used by the RTL tests as the golden model for per-tile counts.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

namespace spartan::rtl::test {

struct RefRegion {
  bool en = false;
  unsigned dtype = 0;  // 0 F32, 1 F16, 2 BF16
  std::uint32_t tr = 32, tc = 32, rows = 0, cols = 0, pitch = 0, cnt_offset = 0;
  std::uint64_t base = 0, ct_base = 0;
  unsigned eb() const { return dtype == 0 ? 4u : 2u; }
  std::uint64_t size() const { return std::uint64_t(rows) * pitch; }
  std::uint64_t tpr() const { return (cols + tc - 1) / tc; }
  std::uint64_t tiles() const { return ((rows + tr - 1) / tr) * tpr(); }
};

inline bool ref_nonzero(const std::uint8_t* p, unsigned eb) {
  if (eb == 4) {
    std::uint32_t v;
    std::memcpy(&v, p, 4);
    return (v & 0x7FFFFFFFu) != 0;
  }
  std::uint16_t v;
  std::memcpy(&v, p, 2);
  return (v & 0x7FFFu) != 0;
}

struct RefMonitor {
  std::vector<RefRegion> regions = std::vector<RefRegion>(16);
  std::vector<std::uint32_t> counters = std::vector<std::uint32_t>(8192, 0);
  unsigned shift = 0;
  std::uint64_t k = 0, seen = 0, matched = 0, sampled = 0;
  bool enable = true;

  void write(std::uint64_t addr, const std::uint8_t* data, std::uint32_t len) {
    if (!enable) return;
    ++seen;
    std::vector<unsigned> hit;
    for (unsigned r = 0; r < regions.size(); ++r) {
      const auto& g = regions[r];
      if (g.en && addr < g.base + g.size() && addr + len > g.base) hit.push_back(r);
    }
    if (hit.empty()) return;
    const bool smp = (k & ((1ull << shift) - 1)) == 0;
    ++k;
    ++matched;
    if (!smp) return;
    ++sampled;
    for (unsigned r : hit) count(regions[r], addr, data, len);
  }
  void count(const RefRegion& g, std::uint64_t addr, const std::uint8_t* data, std::uint32_t len) {
    const unsigned eb = g.eb();
    const std::uint64_t lo = std::max(addr, g.base), hi = std::min(addr + len, g.base + g.size());
    for (std::uint64_t a = lo; a + eb <= hi; ++a) {
      const std::uint64_t o = a - g.base;
      if (o % eb) continue;
      const std::uint64_t r = o / g.pitch, cb = o % g.pitch;
      if (r >= g.rows || cb >= std::uint64_t(g.cols) * eb) continue;
      if (!ref_nonzero(data + (a - addr), eb)) continue;
      const std::uint64_t c = cb / eb;
      std::uint32_t& ctr = counters.at(g.cnt_offset + (r / g.tr) * g.tpr() + c / g.tc);
      if (ctr != 0xFFFFFFFFu) ++ctr;
    }
  }
};

}  // namespace spartan::rtl::test
