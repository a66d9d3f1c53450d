// Small timing helpers shared by the Spartan unit models (loosely-timed TLM-2.0, absolute times in
// sc_time): a unit clock and a window of outstanding requests.
//
// Outstanding-request model: a unit may have at most N requests in flight; request i may not be issued
// before request i-N has completed. With blocking b_transport this is modelled by issuing each request
// with an annotated delay (issue time - sc_time_stamp()) and recording the completion time the target
// returns, the usual LT approximation of a pipelined initiator (TLM-2.0 LRM, "loosely-timed").
#pragma once
#include <cmath>
#include <cstdint>
#include <deque>

#include <systemc>

namespace spartan::hw {

/// A clock in MHz; converts (fractional) cycles to sc_time without accumulating rounding drift.
struct UnitClock {
  double mhz = 1000.0;
  double period_ps() const { return 1.0e6 / mhz; }
  sc_core::sc_time cycles(double n) const { return sc_core::sc_time(std::llround(n * period_ps()), sc_core::SC_PS); }
  double to_cycles(const sc_core::sc_time& t) const { return t.to_seconds() * 1e12 / period_ps(); }
  /// Whole cycles covering t (rounded to the nearest cycle, as a register would report them).
  std::uint64_t whole_cycles(const sc_core::sc_time& t) const {
    return static_cast<std::uint64_t>(std::llround(to_cycles(t)));
  }
};

/// At most `limit` requests in flight (limit >= 1).
class InflightWindow {
 public:
  explicit InflightWindow(unsigned limit = 1) : limit_(limit ? limit : 1) {}
  /// Earliest time >= `t` at which one more request may be issued.
  sc_core::sc_time earliest_issue(const sc_core::sc_time& t) const {
    if (done_.size() < limit_) return t;
    return done_.front() > t ? done_.front() : t;
  }
  /// Records a request completing at `done` (call after earliest_issue()).
  void push(const sc_core::sc_time& done) {
    if (done_.size() >= limit_) done_.pop_front();
    // Keep the deque sorted so that front() is the earliest completion among the last `limit_`.
    auto it = done_.end();
    while (it != done_.begin() && *(it - 1) > done) --it;
    done_.insert(it, done);
  }
  /// Latest completion recorded so far (SC_ZERO_TIME if none).
  sc_core::sc_time last_done() const { return done_.empty() ? sc_core::SC_ZERO_TIME : done_.back(); }
  void reset() { done_.clear(); }

 private:
  unsigned limit_;
  std::deque<sc_core::sc_time> done_;
};

}  // namespace spartan::hw
