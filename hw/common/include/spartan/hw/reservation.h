// Bandwidth reservation of a shared resource (a crossbar port, a bus) in a loosely-timed model.
//
// A plain "busy until" register is exact only when requests arrive in time order; in a temporally
// decoupled model they do not (a response computed for t + 1 us may be reserved before one for t + 10 ns),
// and a single register would then make the early request queue behind the late one. BandwidthCalendar
// keeps the capacity per time bin over a sliding horizon instead: a transfer of n flits arriving at t
// takes free capacity from bin(t) onward and finishes where its last flit fits, so out-of-order
// reservations see the contention that really exists at their own time. Bins are `bin_cycles` cycles
// wide (granularity of the queueing delay). A request older than the horizon (its bins were dropped when a
// later reservation slid the horizon) is timed at the port's rate from its own time, without booking, and
// counted (stale_reservations): until the sixteenth session it was charged at the horizon's start, so that
// one port with responses booked far ahead (a DRAM hot spot) delayed an unrelated L2 hit on the same port
// by the whole backlog (~200 us in a fresh-eyes review's probe). The error is now bounded by the port's
// occupancy at the stale request's own time, which the calendar no longer knows.
//
// Layout (both calendars, chosen for simulation speed): a ring of twice the horizon, in words of 64 bins.
// Each word has a bit per bin ("full") and the ring lap it belongs to; a word of an older lap reads as
// empty, so moving the horizon needs no clearing pass over old bins (they are reset when next touched).
// Runs of full bins are skipped 64 at a time with a count-trailing-zeros; BandwidthCalendar counts whole
// flits (one per cycle), 4 bits per bin, in the same 64-byte block as the word's bits. A calendar's hot
// window is then a few hundred bytes. The results are identical to walking bins one by one and clearing
// old bins eagerly (what the first version did; test_reservation.cpp compares the two).
//
// Host-cache layout (twentieth session): a GPU model holds hundreds of calendars (4 per crossbar port
// pair, 5 + 2 x pseudo_channels per DRAM channel) and touches a few of them per line transaction, so each one's state is cold
// in the host's L1 by the time it is used again. Each calendar therefore keeps what a reservation reads of
// it in its first 64-byte line (alignas(64)): the ring pointer, horizon, origin and search hints (a
// SlotCalendar's second line holds only the unit counts of slots with more than one unit); its constants
// (bin width and exact divisors, capacity, horizon size) live in one shared Shape per distinct set of
// parameters (detail::interned_shape), which stays in L1 because every calendar of that kind uses it.
// callgrind's cache model of `bench_hw_gpu v100 2`: 16.2 -> 11.8 M L1 read misses; docs/bench/gpu.md.
#pragma once
#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "spartan/hw/clock.h"
#include "spartan/hw/fast_div.h"

namespace spartan::hw {

namespace detail {
/// Exact division by a run-time constant (fast_div.h: shift or multiply-high, no divide instruction).
using ExactDiv = FastDiv;

/// 64 consecutive bins of a calendar ring: bit i set = bin (64 * k + i) full; `lap` = absolute bin >>
/// log2(ring bins) the word holds (a word of another lap is empty); `next` (full words only) = distance
/// in words to a later word such that every word in between is full (path-compressed links).
struct CalendarWord {
  std::uint64_t bits = 0;
  std::uint32_t lap = 0, next = 1;
  /// Sets bin `i` (0..63) full; a word that becomes full links to the next word.
  void set(std::uint64_t i) {
    bits |= std::uint64_t(1) << i;
    if (bits == ~std::uint64_t(0)) next = 1;
  }
  /// Empties the word for lap `l` (its old lap's bins are long gone).
  void reset(std::uint32_t l) { lap = l, bits = 0; }
};

/// A CalendarWord with the units taken in each of its 64 bins, 4 bits per bin (0..15), in the same
/// 64-byte cache line (BandwidthCalendar: one line per bin looked at, not one for the bits and another for
/// the counts).
struct alignas(64) CalendarBlock : CalendarWord {
  std::uint64_t used[4] = {0, 0, 0, 0};  ///< bin i's count in bits 4 * (i % 16) of used[i / 16]
  void reset(std::uint32_t l) {
    CalendarWord::reset(l);
    used[0] = used[1] = used[2] = used[3] = 0;
  }
  std::uint32_t count(std::uint64_t i) const { return std::uint32_t(used[i >> 4] >> ((i & 15) * 4)) & 15u; }
  /// Adds `n` units to bin `i`; the caller keeps the count <= 15.
  void add(std::uint64_t i, std::uint64_t n) { used[i >> 4] += n << ((i & 15) * 4); }
};

/// The ring both calendars use: 2 x `horizon` bins (at least 128), so that the bins of one horizon never
/// share a word with bins of another lap. `W`: CalendarWord or CalendarBlock.
template <class W>
class CalendarRingT {
 public:
  explicit CalendarRingT(std::uint64_t horizon)
      : words_(new W[std::max<std::uint64_t>(2 * horizon, 128) / 64]()),
        wmask_(std::uint32_t(std::max<std::uint64_t>(2 * horizon, 128) / 64 - 1)),
        shift_(std::uint32_t(__builtin_ctzll(std::max<std::uint64_t>(2 * horizon, 128)))) {}
  CalendarRingT(const CalendarRingT& o) : wmask_(o.wmask_), shift_(o.shift_) {
    if (!o.words_) return;  // a moved-from ring: the copy is moved-from too
    words_.reset(new W[wmask_ + std::uint64_t(1)]);
    std::copy(o.words_.get(), o.words_.get() + wmask_ + 1, words_.get());
  }
  CalendarRingT(CalendarRingT&&) noexcept = default;
  CalendarRingT& operator=(CalendarRingT o) noexcept {
    std::swap(words_, o.words_), std::swap(wmask_, o.wmask_), std::swap(shift_, o.shift_);
    return *this;
  }
  std::uint64_t ring_bins() const { return (wmask_ + std::uint64_t(1)) * 64; }
  /// The word of absolute bin `bin`; `fresh` is set when it was reset (stale lap).
  W& word(std::uint64_t bin, bool& fresh) {
    W& w = words_[(bin >> 6) & wmask_];
    std::uint32_t lap = std::uint32_t(bin >> shift_);
    fresh = w.lap != lap;
    if (fresh) w.reset(lap);
    return w;
  }
  /// First bin in [bin, lim) that is not full, or lim. Whole full words are skipped through their links;
  /// the full words passed are then linked to the word where the search ended. `on_fresh(ctx, bin)` is
  /// called for each word reset on the way (nullptr: none).
  std::uint64_t first_free(std::uint64_t bin, std::uint64_t lim, void (*on_fresh)(void*, std::uint64_t),
                           void* ctx) {
    constexpr int kPath = 16;
    W* path[kPath];
    std::uint64_t path_w[kPath];
    int n = 0;
    std::uint64_t r = lim;
    while (bin < lim) {
      bool fresh;
      W& w = word(bin, fresh);
      if (fresh && on_fresh) on_fresh(ctx, bin);
      std::uint64_t free = ~w.bits >> (bin & 63);
      if (free) {
        r = std::min(lim, bin + std::uint64_t(__builtin_ctzll(free)));
        break;
      }
      std::uint64_t wi = bin >> 6;
      if (w.bits == ~std::uint64_t(0)) {  // full word: follow its link
        if (n < kPath) path[n] = &w, path_w[n] = wi, ++n;
        bin = (wi + w.next) << 6;
      } else {
        bin = (wi + 1) << 6;
      }
    }
    const std::uint64_t root_w = std::min(r, lim) >> 6;
    for (int i = 0; i < n; ++i)
      if (root_w > path_w[i]) path[i]->next = std::uint32_t(root_w - path_w[i]);
    return r;
  }

 private:
  std::unique_ptr<W[]> words_;   ///< (one pointer: the ring is part of its calendar's first cache line)
  std::uint32_t wmask_, shift_;  ///< words - 1 and log2(ring bins)
};

/// The one shared instance of `Shape(args...)` (created on first use and never freed, not even at exit, so
/// that a calendar used from a static destructor still finds it; LeakSanitizer sees it as reachable): the
/// constants of a calendar live in one place for all calendars of the same kind, so that they stay in the
/// host's L1 cache while each calendar's own state is one cache line. Thread-safe.
template <class Shape, class... Args>
const Shape* interned_shape(Args... args) {
  static std::mutex* const mutex = new std::mutex;
  static auto* const shapes = new std::map<std::tuple<Args...>, std::unique_ptr<const Shape>>;
  std::lock_guard<std::mutex> lock(*mutex);
  auto& p = (*shapes)[std::make_tuple(args...)];
  if (!p) p = std::make_unique<const Shape>(args...);
  return p.get();
}
using CalendarRing = CalendarRingT<CalendarWord>;
}  // namespace detail

/// Port bandwidth over time: a transfer moves one flit of `bytes_per_cycle` bytes per cycle (sizes are
/// rounded up to whole flits); bins of `bin_cycles` cycles (1..15: a bin's flit count is kept in 4 bits
/// beside its full bit) over a horizon of `bins` bins (power of two).
class alignas(64) BandwidthCalendar {
 public:
  /// `bytes_per_cycle` of capacity in `clk`; bins of `bin_cycles`; horizon of `bins` bins (power of two).
  /// Throws std::invalid_argument for a zero rate, bin_cycles outside 1..15 or a horizon that is not a power
  /// of two >= 2.
  BandwidthCalendar(const ClockDomain& clk, std::uint32_t bytes_per_cycle, std::uint32_t bin_cycles = 4,
                    std::uint32_t bins = 1u << 14)
      : sh_(detail::interned_shape<Shape>(std::max<ps_t>(1, clk.cycles_to_ps(bin_cycles)), bytes_per_cycle,
                                          bin_cycles, bins)),
        ring_(bins) {}

  /// Counts the requests older than the horizon (timed without booking; see the header) in `*c`, an owner's stats
  /// counter that several calendars may share (nullptr: not counted).
  void count_stale_in(std::uint64_t* c) { stale_counter_ = c; }
  /// Forgets every reservation and counts bins from `origin` on (bin k = [origin + k * bin, ...)). Call only
  /// when nothing is reserved at or after `origin` (an idle hierarchy): then what follows is timed exactly
  /// as on a fresh calendar started at `origin`, whatever ran before (GpuSystem::align_to_refresh).
  void rebase(ps_t origin) {
    ring_ = Ring(sh_->size);
    base_ = full_until_ = 0;
    origin_ = origin;
  }

  /// Reserves `bytes` (rounded up to whole flits) starting no earlier than `t`; returns the time the
  /// transfer completes. Full bins are skipped 64 at a time; the result is the same as walking the bins
  /// one by one. Until the twentieth session capacity was counted in bytes: the results are the same for
  /// sizes that are whole flits (all the crossbar books), a partial flit now occupies a whole cycle.
  ps_t reserve(ps_t t_abs, std::uint64_t bytes) {
    return reserve_flits(t_abs, sh_->flit_div.div(bytes + sh_->flit_bytes - 1));
  }
  /// reserve() of `flits` whole flits (bytes_per_cycle bytes each).
  ps_t reserve_flits(ps_t t_abs, std::uint64_t flits) {
    const Shape& sh = *sh_;
    const ps_t t = t_abs > origin_ ? t_abs - origin_ : 0;  // bins count from the origin
    std::uint64_t bin = sh.bin_div.div(t);
    if (__builtin_expect(bin < base_, 0)) {  // older than the horizon: see the header
      if (stale_counter_) ++*stale_counter_;
      return t_abs + sh.cap_div.div(sh.bin_ps * flits);
    }
    if (bin < full_until_) bin = full_until_;  // every bin before the watermark is full
    if (bin >= base_ + sh.half) slide(bin);
    ps_t end = t + sh.cap_div.div(sh.bin_ps * flits);  // never faster than the port's rate
    while (flits) {
      if (bin >= base_ + sh.size) slide(bin);
      bool fresh;
      detail::CalendarBlock& w = ring_.word(bin, fresh);
      const std::uint64_t i = bin & 63;
      if (w.bits >> i & 1) {  // full: jump to the first bin with free capacity (or the horizon's end)
        std::uint64_t nx = ring_.first_free(bin, base_ + sh.size, nullptr, nullptr);
        if (bin == full_until_) full_until_ = nx;
        bin = nx;
        continue;
      }
      const std::uint32_t u0 = w.count(i);
      const std::uint64_t take = std::min<std::uint64_t>(flits, sh.cap - u0);
      w.add(i, take);
      const std::uint64_t u = u0 + take;
      flits -= take;
      if (!flits) {
        // The transfer ends where its last flit's bin fills: bin start + the bin's fill time. Only the last
        // bin counts: an earlier bin's end (start + fill time <= start + bin width) never exceeds a later
        // bin's start, so the maximum over the bins taken is this one.
        end = std::max(end, bin * sh.bin_ps + sh.cap_div.div(sh.bin_ps * u));
      }
      if (u >= sh.cap) {
        w.set(i);
        if (bin == full_until_) ++full_until_;
      }
      ++bin;
    }
    return end + origin_;
  }

 private:
  using Ring = detail::CalendarRingT<detail::CalendarBlock>;
  /// The constants of a calendar (detail::interned_shape: one instance for all calendars alike).
  struct Shape {
    Shape(ps_t bin_ps_, std::uint32_t bytes_per_cycle, std::uint32_t bin_cycles, std::uint32_t bins)
        : bin_ps(bin_ps_),
          bin_div(bin_ps),
          half(bins / 2),
          size(bins),
          cap(bin_cycles),
          cap_div(bin_cycles),
          flit_div(bytes_per_cycle),
          flit_bytes(bytes_per_cycle) {
      if (bin_cycles < 1 || bin_cycles > 15 || bytes_per_cycle == 0 || bins < 2 || (bins & (bins - 1)))
        throw std::invalid_argument(
            "BandwidthCalendar: bin_cycles must be 1..15, bytes_per_cycle > 0 and bins a power of two >= 2");
    }
    ps_t bin_ps;               ///< bin width
    detail::ExactDiv bin_div;  ///< / bin_ps
    std::uint64_t half, size;  ///< half the horizon and the horizon, in bins
    std::uint64_t cap;         ///< flits per bin (= bin_cycles)
    detail::ExactDiv cap_div;  ///< / cap
    detail::ExactDiv flit_div; ///< / bytes_per_cycle
    std::uint64_t flit_bytes;  ///< bytes_per_cycle
  };
  void slide(std::uint64_t bin) {  // keep `bin` in the upper half of the horizon (older bins drop out)
    base_ = bin - sh_->half;
    if (full_until_ < base_) full_until_ = base_;
  }
  // One cache line: everything reserve() reads of the calendar itself (the shape is shared).
  const Shape* sh_;
  Ring ring_;
  ps_t origin_ = 0;  ///< time of bin 0 (rebase)
  std::uint64_t base_ = 0, full_until_ = 0;
  std::uint64_t* stale_counter_ = nullptr;  ///< an owner's count of requests older than the horizon
};

/// Slots of a command/data resource (a DRAM data bus: one burst per tBURST; ACTs of a pseudo-channel: one per
/// tRRD, and four per tFAW with per_slot 4). Like BandwidthCalendar, correct for out-of-time-order reservations: a slot is
/// granted in the first bin at or after t with free capacity; full bins are skipped 64 at a time.
/// Bins are `slot_ps` wide with `per_slot` units each; the horizon is `bins` slots (power of two); older
/// requests are charged at its start.
class alignas(64) SlotCalendar {
 public:
  SlotCalendar(ps_t slot_ps, std::uint32_t per_slot = 1, std::uint32_t bins = 1u << 15)
      : sh_(detail::interned_shape<Shape>(std::max<ps_t>(1, slot_ps), std::max<std::uint32_t>(1, per_slot), bins)),
        ring_(bins),
        used_(sh_->per > 1 ? ring_.ring_bins() : 0, 0) {}

  /// Forgets every reservation and counts slots from `origin` on; the same precondition and purpose as
  /// BandwidthCalendar::rebase.
  void rebase(ps_t origin) {
    ring_ = detail::CalendarRing(sh_->size);
    std::fill(used_.begin(), used_.end(), 0u);
    base_ = 0, run_lo_ = run_hi_ = 0;
    origin_ = origin;
  }

  /// Takes one unit in the first slot at or after `t`; returns the slot's start time (>= t).
  ps_t reserve(ps_t t) {
    const std::uint64_t from = sh_->slot_div.div(rel(t));
    detail::CalendarWord* w;
    const std::uint64_t bin = find(from, w);  // w: bin's word, current
    const bool full = sh_->per == 1 || ++used_[bin & umask()] >= sh_->per;
    if (full) w->set(bin & 63);
    note_full_run(from, full ? bin + 1 : bin);
    return std::max<ps_t>(t, origin_ + bin * sh_->slot_ps);
  }
  /// The slot reserve(t) would grant now, without taking it (for fit checks before committing).
  ps_t peek(ps_t t) { return peek_slot(t).start; }
  /// A slot found by peek_slot(): its grant time (what reserve(t) would return) and its bin.
  struct Slot {
    ps_t start;
    std::uint64_t bin;
  };
  /// peek(t), also naming the slot's bin, so that take() can book it without searching again.
  /// peek_slot, take and find are always inlined: a DRAM burst calls them 3-4 times each, and GCC 12 had left
  /// them out of line (callgrind, bench_hw_gpu v100 2: -2 % instructions inlined; twenty-first session).
  [[gnu::always_inline]] Slot peek_slot(ps_t t) {
    const std::uint64_t from = sh_->slot_div.div(rel(t));
    detail::CalendarWord* w;
    const std::uint64_t bin = find(from, w);
    note_full_run(from, bin);
    return {std::max<ps_t>(t, origin_ + bin * sh_->slot_ps), bin};
  }
  /// What peek(s.start) does to the calendar for a slot `s` that peek_slot() just found free (it would find
  /// the same bin): only the horizon moves, when the bin lies in its upper half. A caller that skips such a
  /// repeated peek calls this instead, so that the calendar's state stays what the peek would have left.
  void touch(const Slot& s) {
    if (s.bin >= mid()) slide(s.bin);
  }
  /// Takes one unit of slot `s`, which peek_slot() returned with no other call on this calendar since:
  /// exactly reserve(s.start) (which would find this same bin again), without the second search.
  [[gnu::always_inline]] void take(const Slot& s) {
    touch(s);
    bool fresh;
    detail::CalendarWord& w = ring_.word(s.bin, fresh);  // current: peek_slot() searched it last
    if (fresh) clear_used(s.bin);
    if (sh_->per == 1 || ++used_[s.bin & umask()] >= sh_->per) {
      w.set(s.bin & 63);
      note_full_run(s.bin, s.bin + 1);
    }
  }
  /// Marks every slot that starts in [from, to) as taken (e.g. a refresh window on a bus).
  void block(ps_t from_abs, ps_t to_abs) {
    const ps_t from = rel(from_abs), to = rel(to_abs);
    const ps_t slot_ps = sh_->slot_ps;
    for (std::uint64_t bin = (from + slot_ps - 1) / slot_ps; bin * slot_ps < to; ++bin) {
      if (bin < base_) continue;
      if (bin >= mid()) slide(bin);
      bool fresh;
      detail::CalendarWord& w = ring_.word(bin, fresh);
      if (fresh) clear_used(bin);
      w.set(bin & 63);
      if (sh_->per > 1) used_[bin & umask()] = sh_->per;
    }
  }

 private:
  /// The constants of a calendar (detail::interned_shape: one instance for all calendars alike).
  struct Shape {
    Shape(ps_t slot_ps_, std::uint32_t per_, std::uint32_t bins)
        : slot_ps(slot_ps_), slot_div(slot_ps_), per(per_), half(bins / 2), size(bins) {
      if (bins < 2 || (bins & (bins - 1)))
        throw std::invalid_argument("SlotCalendar: bins must be a power of two >= 2");
    }
    ps_t slot_ps;
    detail::ExactDiv slot_div;  ///< / slot_ps
    std::uint32_t per;          ///< units per slot
    std::uint64_t half, size;   ///< half the horizon and the horizon, in slots
  };
  std::uint64_t mid() const { return base_ + sh_->half; }  ///< the horizon's upper half starts here
  std::uint64_t lim() const { return base_ + sh_->size; }  ///< the horizon's end
  std::uint64_t umask() const { return ring_.ring_bins() - 1; }
  // First bin >= `bin` with a free unit (sliding the horizon when every bin up to its end is full); `w` is
  // set to that bin's word (current).
  [[gnu::always_inline]] std::uint64_t find(std::uint64_t bin, detail::CalendarWord*& w) {
    if (bin < base_) bin = base_;
    if (bin >= mid()) slide(bin);
    // Known run of full bins: the first free bin at or after `bin` is the first at or after its end. The
    // horizon test above used the requested bin, as without the hint; a run reaching the horizon's end
    // takes the general path (which slides the horizon there). run_lo_ <= run_hi_ always.
    if (bin - run_lo_ < run_hi_ - run_lo_ && run_hi_ < lim()) bin = run_hi_;
    {  // Inline fast path: a free slot in bin's own word. This is what first_free() finds on its first
       // step (no full word passed, so no links to update); only the searches that skip words go out of line.
      bool fresh;
      w = &ring_.word(bin, fresh);
      if (fresh) clear_used(bin);
      const std::uint64_t free = ~w->bits >> (bin & 63);
      if (free) {
        const std::uint64_t r = bin + std::uint64_t(__builtin_ctzll(free));
        if (r < lim()) return r;
      }
    }
    for (;;) {
      const std::uint64_t lim_now = lim();
      std::uint64_t r =
          ring_.first_free(bin, lim_now, sh_->per > 1 ? &SlotCalendar::clear_used_cb : nullptr, this);
      if (r < lim_now) {
        bool fresh;
        w = &ring_.word(r, fresh);  // first_free() made it current
        return r;
      }
      slide(lim_now);  // the bins past the old horizon are empty: lim is free after the slide
      bin = lim_now;
    }
  }
  /// Records that every bin in [from, to) is full (a search from `from` found its first free bin at `to`,
  /// or reserved the last unit there). Joined with the kept run when the two touch or overlap; else the
  /// later run is kept (the booked-out stretch behind the frontier, where most searches start).
  void note_full_run(std::uint64_t from, std::uint64_t to) {
    if (from < base_) from = base_;
    if (from >= to) return;
    if (from <= run_hi_ && to >= run_lo_) {
      run_lo_ = std::min(run_lo_, from), run_hi_ = std::max(run_hi_, to);
    } else if (to > run_hi_) {
      run_lo_ = from, run_hi_ = to;
    }
  }
  void clear_used(std::uint64_t bin) {
    if (sh_->per > 1) std::fill_n(used_.begin() + std::ptrdiff_t((bin & umask()) & ~std::uint64_t(63)), 64, 0u);
  }
  static void clear_used_cb(void* self, std::uint64_t bin) { static_cast<SlotCalendar*>(self)->clear_used(bin); }
  void slide(std::uint64_t bin) {  // keep `bin` in the upper half of the horizon (older bins drop out)
    std::uint64_t nb = bin - sh_->half;
    if (nb > base_) base_ = nb;
  }
  ps_t rel(ps_t t) const { return t > origin_ ? t - origin_ : 0; }  // slots count from the origin
  // The first cache line: what every search reads of the calendar itself (the shape is shared).
  const Shape* sh_;
  detail::CalendarRing ring_;
  ps_t origin_ = 0;  ///< time of slot 0 (rebase)
  std::uint64_t base_ = 0;
  /// Every bin in [run_lo_, run_hi_) that is not older than the horizon (>= base_) is full: a search
  /// hint, exact because bins only fill up (a bin's word is reset only for a lap more than a horizon
  /// later, after base_ has passed the bin). Most reservations of a busy DRAM bus start inside the
  /// booked-out run behind its frontier; the hint skips the run instead of walking its words' links.
  std::uint64_t run_lo_ = 0, run_hi_ = 0;
  std::vector<std::uint32_t> used_;  ///< units taken per ring bin (only when per_slot > 1)
};

static_assert(sizeof(BandwidthCalendar) == 64, "a BandwidthCalendar's state is one host cache line");
static_assert(sizeof(SlotCalendar) == 128, "a SlotCalendar's search state is its first cache line");

}  // namespace spartan::hw
