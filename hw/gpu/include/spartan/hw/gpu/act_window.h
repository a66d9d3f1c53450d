// The activate (ACT) command constraints of one DRAM channel, exact for bookings that arrive out of time
// order (pure C++, no SystemC):
//   - tRRD: two ACTs of the channel are at least tRRD apart (JESD235 / JESD79-4 ACT-to-ACT, different banks;
//     one value: the presets give no tRRD_S / tRRD_L split);
//   - tFAW: at most four ACTs in any rolling window of tFAW (the four-activate window of JESD235 HBM and
//     JESD79-4 DDR4; DRAMSim3 and Ramulator model it the same way): with the channel's ACTs in time order,
//     ACT[i + 4] - ACT[i] >= tFAW for every i.
// DramChannel books every ACT here (a row miss or conflict), so requests that reach the channel late (temporal
// decoupling: an SM that ran ahead, a posted write-back) are checked against the ACTs before AND after them.
// Until the thirty-sixth session tRRD was a slot calendar of fixed tRRD bins (two ACTs in adjacent bins could be
// 50 ps apart) and tFAW was not modelled at all (docs/gpu-model.md).
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "spartan/hw/clock.h"

namespace spartan::hw::gpu {

class ActWindow {
 public:
  /// `trrd_ps`: minimum ACT-to-ACT spacing (0: none); `tfaw_ps`: the four-activate window (0: not modelled);
  /// `horizon_ps`: how far behind the latest ACT booked so far earlier ACTs are kept (> 0). An ACT older than
  /// that is forgotten, and a request before a forgotten ACT's end of influence is moved after it (the same
  /// clamp as the slot calendars' horizon: conservative, exact for requests less than a horizon late).
  ActWindow(ps_t trrd_ps, ps_t tfaw_ps, ps_t horizon_ps)
      : trrd_(trrd_ps), tfaw_(tfaw_ps), horizon_(std::max<ps_t>(1, horizon_ps)) {}

  /// The earliest time >= t at which an ACT keeps both constraints against every kept ACT (nothing booked).
  /// Each move below jumps to a lower bound of the valid times (a proof sketch is in the comments), so the
  /// result is the earliest valid time, not just a valid one.
  ps_t earliest(ps_t t) const {
    t = std::max(t, floor_);
    const std::size_t kept = acts_.size() - lo_;
    if (kept == 0) return t;
    if (const ps_t last = acts_.back(); t >= last) {  // after every kept ACT (requests in time order): direct
      t = std::max(t, last + trrd_);
      if (tfaw_ && kept >= 4) t = std::max(t, acts_[acts_.size() - 4] + tfaw_);
      return t;
    }
    const ps_t from = t;
    // A stretch known to hold no valid time stays so (ACTs are only added; floor_ only rises): skip it. Where
    // the ACTs are booked back to back far ahead (a backlog), this saves walking them one by one per peek.
    t = skip_runs(t);
    const ps_t* a = acts_.data() + lo_;
    const std::size_t n = acts_.size() - lo_;
    std::size_t p = position(a, n, t);
    for (;;) {
      // tRRD: t within tRRD after its predecessor, or within tRRD before its successor (then every time up
      // to that successor + tRRD is within tRRD of it).
      if (p > 0 && t - a[p - 1] < trrd_) {
        t = a[p - 1] + trrd_;
      } else if (p < n && a[p] - t < trrd_) {
        t = a[p] + trrd_;
      } else if (ps_t e = faw_violation(a, n, p, t); e != kNone) {
        // Four kept ACTs e = e1 < e2 < e3 < e4, consecutive, lie with t within less than tFAW: every time in
        // [t, e1 + tFAW) does too (if it is <= e4 the span is at most the one at t; else it is t' - e1), so the
        // earliest candidate is e1 + tFAW.
        t = e + tfaw_;
      } else {
        note_run(from, t);
        return t;
      }
      if (const ps_t u = skip_runs(t); u != t) {  // walked into a known stretch: skip it
        t = u;
        p = position(a, n, t);
      } else {
        while (p < n && a[p] <= t) ++p;  // t only moves later: the insertion point moves right
      }
    }
  }

  /// Books an ACT at `t` (a time earliest() returned, with no booking since). Returns whether tFAW bound it:
  /// the fourth ACT before it lies exactly tFAW earlier (the window was full up to `t`).
  bool add(ps_t t) {
    const ps_t* a = acts_.data() + lo_;
    const std::size_t n = acts_.size() - lo_;
    const std::size_t p = position(a, n, t);
    const bool faw_bound = tfaw_ && p >= 4 && a[p - 4] + tfaw_ == t;
    acts_.insert(acts_.begin() + std::ptrdiff_t(lo_ + p), t);
    latest_ = std::max(latest_, t);
    forget_old();
    return faw_bound;
  }

  /// Forgets every ACT (DramChannel::rebase: an idle channel; nothing may be booked before `origin`).
  void clear(ps_t origin) {
    acts_.clear();
    for (Run& r : runs_) r = Run{};
    lo_ = 0;
    floor_ = origin;
    latest_ = origin;
  }

  /// ACTs kept (for tests).
  std::size_t kept() const { return acts_.size() - lo_; }

 private:
  static constexpr ps_t kNone = ~ps_t(0);

  /// Index of the first kept ACT after `t` (ACTs at t itself come before it; requests mostly arrive in time
  /// order, so the end is tried first).
  static std::size_t position(const ps_t* a, std::size_t n, ps_t t) {
    if (n == 0 || a[n - 1] <= t) return n;
    // Galloping back from the end (a late request lies a few hundred ACTs back, not 2^15), then a binary search.
    std::size_t hi = n - 1, step = 1;  // a[hi] > t
    while (hi >= step && a[hi - step] > t) hi -= step, step *= 2;
    const std::size_t lo = hi >= step ? hi - step : 0;  // a[lo] <= t unless lo == 0
    return std::size_t(std::upper_bound(a + lo, a + hi, t) - a);
  }

  /// With t inserted at position p: the first of four consecutive kept ACTs that lie with t within less
  /// than tFAW (their earliest), or kNone. The five windows of five consecutive ACTs that contain t.
  ps_t faw_violation(const ps_t* a, std::size_t n, std::size_t p, ps_t t) const {
    if (!tfaw_) return kNone;
    for (std::size_t k = 0; k <= 4; ++k) {
      // Kept ACTs a[p - 4 + k .. p - 1] before t and a[p .. p + k - 1] after it.
      if (p + k < 4 || p + k > n) continue;
      const ps_t first = k < 4 ? a[p - 4 + k] : t;
      const ps_t last = k > 0 ? a[p + k - 1] : t;
      if (last - first < tfaw_) return k < 4 ? first : a[p];
    }
    return kNone;
  }

  /// The end of the known stretch that holds `t`, or `t`.
  ps_t skip_runs(ps_t t) const {
    for (const Run& r : runs_)
      if (t - r.lo < r.hi - r.lo) return r.hi;
    return t;
  }
  /// Records that [from, to) holds no valid ACT time: joined with a kept stretch it touches or overlaps, else
  /// it replaces the kept stretch that ends earliest (most walks end at the frontier of the bookings).
  void note_run(ps_t from, ps_t to) const {
    if (from >= to) return;
    Run* oldest = &runs_[0];
    for (Run& r : runs_) {
      if (from <= r.hi && to >= r.lo && r.hi > r.lo) {
        r.lo = std::min(r.lo, from), r.hi = std::max(r.hi, to);
        return;
      }
      if (r.hi < oldest->hi) oldest = &r;
    }
    *oldest = Run{from, to};
  }

  void forget_old() {
    if (latest_ < horizon_) return;
    const ps_t cut = latest_ - horizon_;
    std::size_t lo = lo_;
    while (lo < acts_.size() && acts_[lo] < cut) {
      floor_ = std::max(floor_, acts_[lo] + std::max(trrd_, tfaw_));
      ++lo;
    }
    lo_ = lo;
    if (lo_ > 4096 && lo_ * 2 > acts_.size()) {  // drop the forgotten prefix now and then
      acts_.erase(acts_.begin(), acts_.begin() + std::ptrdiff_t(lo_));
      lo_ = 0;
    }
  }

  ps_t trrd_, tfaw_, horizon_;
  ps_t floor_ = 0, latest_ = 0;
  struct Run {
    ps_t lo = 0, hi = 0;  ///< [lo, hi) holds no valid ACT time
  };
  mutable Run runs_[4];   ///< stretches known to hold no valid ACT time (earliest() skips them)
  std::vector<ps_t> acts_;  ///< booked ACT times, ascending; [lo_, end) kept
  std::size_t lo_ = 0;
};

}  // namespace spartan::hw::gpu
