// Division by a run-time constant without a hardware divide on the hot paths of the hardware models.
#pragma once
#include <cstdint>

namespace spartan::hw {

/// Exact x / d and x % d for a run-time constant d >= 1: a shift when d is a power of two; otherwise the
/// high half of x * m with m = ceil(2^64 / d), exact whenever x * d < 2^64 (x <= lim), and the divide
/// instruction beyond that. Proof of exactness: x * m / 2^64 = x / d + delta with 0 <= delta < x / 2^64
/// < 1 / d, and x / d = q + r / d with r <= d - 1, so q <= x * m / 2^64 < q + 1 (the round-up
/// reciprocal method of Granlund & Montgomery, PLDI 1994, restricted to the range where one 64-bit
/// multiplier suffices). Simulated times in ps stay far below lim for the divisors used (< 2^52 / d).
struct FastDiv {
  std::uint64_t d = 1;
  int shift = 0;          ///< log2(d) when d is a power of two, else -1
  std::uint64_t m = 0;    ///< ceil(2^64 / d) (d not a power of two)
  std::uint64_t lim = 0;  ///< largest x with x * d < 2^64
  FastDiv() = default;
  explicit FastDiv(std::uint64_t v)
      : d(v),
        shift((v && !(v & (v - 1))) ? __builtin_ctzll(v) : -1),
        m(shift < 0 && v ? ~std::uint64_t(0) / v + 1 : 0),
        lim(shift < 0 && v ? ~std::uint64_t(0) / v : 0) {}
  std::uint64_t div(std::uint64_t x) const noexcept {
    if (shift >= 0) return x >> shift;
    if (x <= lim) return std::uint64_t((static_cast<unsigned __int128>(x) * m) >> 64);
    return x / d;
  }
  std::uint64_t mod(std::uint64_t x) const noexcept { return shift >= 0 ? x & (d - 1) : x - div(x) * d; }
};

}  // namespace spartan::hw
