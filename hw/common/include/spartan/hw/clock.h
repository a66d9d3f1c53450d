// Clock domains. All model time is kept as integer picoseconds (SystemC's default resolution, 1 ps);
// a domain converts cycles of its clock to ps and back. Periods are kept as doubles so that e.g.
// 1447 MHz (691.085 ps) does not drift when many cycles are converted at once.
#pragma once
#include <cmath>
#include <cstdint>
#include <string>

namespace spartan::hw {

using ps_t = std::uint64_t;  ///< simulated time in picoseconds

struct ClockDomain {
  std::string name;
  double mhz = 1000.0;  ///< frequency in MHz (> 0)

  double period_ps() const noexcept { return 1.0e6 / mhz; }
  /// Duration of `cycles` cycles, rounded to the nearest ps.
  ps_t cycles_to_ps(double cycles) const noexcept { return ps_t(std::llround(cycles * period_ps())); }
  /// How many (fractional) cycles of this clock `t` ps is.
  double ps_to_cycles(ps_t t) const noexcept { return double(t) / period_ps(); }
  /// The first clock edge at or after `t` (edges at multiples of the period from time 0).
  ps_t next_edge(ps_t t) const noexcept {
    double p = period_ps();
    return ps_t(std::llround(std::ceil(double(t) / p - 1e-9) * p));
  }
};

}  // namespace spartan::hw
