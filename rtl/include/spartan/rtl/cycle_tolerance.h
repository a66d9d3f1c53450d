// The calibration tolerance of the TLM units' timing against the RTL (docs/hw-units.md, "Calibration from the
// RTL"): the lockstep checks (`spartan-sim rtl-check`, `spartan-sim run --rtl`) fail a layer whose RTL cycle
// count is outside it, as the unit tests (test_rtl_*_vs_tlm) fail one outside 5 %.
#pragma once
#include <algorithm>
#include <cmath>

namespace spartan::rtl {

/// Relative tolerance, percent of the TLM cycles (the calibration goal of docs/hw-units.md).
inline constexpr double kCycleTolerancePercent = 5.0;
/// Absolute floor, cycles: pipeline fill and drain differ by a cycle or two whatever the job (the monitor's
/// counting latency is 3 cycles in the TLM, 4 in the RTL), so a 2-cycle difference on an 8-cycle layer (+25 %,
/// tiny-lenet5's L3 in rtl-check) is within calibration.
inline constexpr double kCycleToleranceCycles = 2.0;

/// True if `rtl` cycles agree with `tlm` cycles within max(kCycleTolerancePercent of tlm, kCycleToleranceCycles),
/// both rounded to whole cycles first (the counts come from ps times at clocks whose period is not a whole
/// number of ps: 25.0014 TLM cycles are 25). NaN or infinite counts are never within.
inline bool cycles_within_tolerance(double tlm, double rtl) {
  if (!std::isfinite(tlm) || !std::isfinite(rtl)) return false;
  const double t = std::round(tlm), r = std::round(rtl);
  return std::fabs(r - t) <= std::max(t * kCycleTolerancePercent / 100.0, kCycleToleranceCycles);
}

}  // namespace spartan::rtl
