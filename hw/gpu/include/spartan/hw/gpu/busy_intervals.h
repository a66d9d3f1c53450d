// Bookings of a resource that serves one request at a time for a given duration (an L2 slice's data array), for
// requests that arrive out of time order (temporal decoupling: another initiator's thread may run behind).
#pragma once
#include <algorithm>
#include <cstdint>

#include "spartan/hw/clock.h"

namespace spartan::hw::gpu {

/// The latest `N` busy intervals [start, end) of the resource, sorted by start (a ring; N a power of two).
/// A request in time order (at or after the latest start) starts at max(t, latest end): exactly a busy-until
/// register, so in-order traffic is timed as before. A request that arrives after a later-in-time one takes the
/// first hole at or after its own time that holds it, instead of queueing behind the later request (with a
/// busy-until register an L2 hit waited +156 core cycles behind another initiator's requests in a fresh-eyes
/// review's probe, sixteenth session). A request older than every kept interval, once older ones were dropped,
/// is placed from the oldest kept interval on, as by the register (the dropped bookings are not known): so a
/// backlog deeper than N in time order is still timed exactly as by the register. A booking queued right behind
/// the latest one extends it in place (one busy stretch, the same union of busy time; thirty-ninth session:
/// every preset's bench_hw_gpu stats identical to separate intervals), so that a queue keeps its latest start
/// early and later requests stay on the in-order path.
template <std::uint32_t N>
class BusyIntervals {
  static_assert(N >= 2 && (N & (N - 1)) == 0, "N must be a power of two");

 public:
  /// Books `d` ps at or after `t`; returns the start.
  ps_t book(ps_t t, ps_t d) {
    if (n_ == 0 || t >= start(n_ - 1)) {  // time order
      const ps_t st = n_ ? std::max(t, end(n_ - 1)) : t;
      if (n_ && st == end(n_ - 1)) {  // queued right behind the latest booking: one busy stretch, extended
        iv_[(head_ + n_ - 1) & (N - 1)].end = st + d;
        return st;
      }
      insert(n_, st, st + d);
      return st;
    }
    return book_out_of_order(t, d);
  }
  /// End of the latest booking (0: none).
  ps_t latest_end() const { return n_ ? end(n_ - 1) : 0; }

 private:
  ps_t start(std::uint32_t i) const { return iv_[(head_ + i) & (N - 1)].start; }
  ps_t end(std::uint32_t i) const { return iv_[(head_ + i) & (N - 1)].end; }
  [[gnu::noinline]] ps_t book_out_of_order(ps_t t, ps_t d) {
    std::uint32_t i = n_;
    while (i > 0 && start(i - 1) > t) --i;  // [0, i) start at or before t
    // Older than the kept history: from the oldest kept interval on (the holes before it are not known).
    ps_t st = i > 0 ? std::max(t, end(i - 1)) : dropped_ ? start(0) : t;
    std::uint32_t j = i;
    for (; j < n_; ++j) {  // the first hole at or after st that holds d
      if (st + d <= start(j)) break;
      st = std::max(st, end(j));
    }
    insert(j, st, st + d);
    return st;
  }
  void insert(std::uint32_t pos, ps_t st, ps_t en) {
    if (n_ == N) {  // full: drop the oldest (or this one, if it would be the oldest)
      dropped_ = true;
      if (pos == 0) return;
      head_ = (head_ + 1) & (N - 1);
      --n_;
      --pos;
    }
    for (std::uint32_t j = n_; j > pos; --j) iv_[(head_ + j) & (N - 1)] = iv_[(head_ + j - 1) & (N - 1)];
    iv_[(head_ + pos) & (N - 1)] = {st, en};
    ++n_;
  }
  struct Interval {
    ps_t start, end;
  };
  // The ring's state first, then the intervals with each start beside its end: a booking in time order
  // reads two host cache lines (the state and the latest interval), not three.
  std::uint32_t head_ = 0, n_ = 0;
  bool dropped_ = false;
  Interval iv_[N] = {};
};

}  // namespace spartan::hw::gpu
