// A binary min-heap with replace_top(): the SmScheduler's issue order takes one element out and puts one
// in per request (queues whose values arrive mostly in ascending order use SortedQueue, which is tested
// against this heap). std::priority_queue needs a pop() and a push() for that (two sift passes);
// replace_top() is one sift-down. Elements compare with operator< and the order is total in every use, so
// the sequence of tops is the same as with std::priority_queue<T, std::vector<T>, std::greater<T>>.
#pragma once
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace spartan::hw::gpu {

template <typename T>
class MinHeap {
 public:
  bool empty() const noexcept { return v_.empty(); }
  std::size_t size() const noexcept { return v_.size(); }
  const T& top() const noexcept { return v_.front(); }
  void clear() noexcept { v_.clear(); }
  void push(const T& x) {
    v_.push_back(x);
    std::size_t i = v_.size() - 1;
    while (i > 0) {
      std::size_t p = (i - 1) / 2;
      if (!(x < v_[p])) break;
      v_[i] = v_[p];
      i = p;
    }
    v_[i] = x;
  }
  /// Removes the smallest element and inserts `x` (one sift-down).
  void replace_top(const T& x) { sift_down(0, x); }
  void pop() {
    T last = v_.back();
    v_.pop_back();
    if (!v_.empty()) sift_down(0, last);
  }

 private:
  void sift_down(std::size_t i, const T& x) {
    const std::size_t n = v_.size();
    for (;;) {
      std::size_t c = 2 * i + 1;
      if (c >= n) break;
      // The smaller child without a branch on the compare (which goes either way at random: a sift costs a
      // misprediction per level otherwise); equal to `if (v_[c + 1] < v_[c]) ++c`.
      if (c + 1 < n) c += std::size_t(v_[c + 1] < v_[c]);
      if (!(v_[c] < x)) break;
      v_[i] = v_[c];
      i = c;
    }
    v_[i] = x;
  }
  std::vector<T> v_;
};

}  // namespace spartan::hw::gpu

namespace spartan::hw::gpu {

/// A min-queue of (time, index) pairs, index < `indices` (the SmScheduler's issue order), ordered by time
/// then index. Kept as one 64-bit key per entry, time << bits | index, while every time fits in the upper
/// 64 - bits bits (2^57 ps = 40 hours of simulated time for 80 SMs), where the key order is exactly the
/// pair order and a compare is one integer compare; the first time that does not fit moves every entry
/// to a MinHeap of pairs, which serves from then on. The tops are the same as a MinHeap of pairs' either way.
class IssueQueue {
 public:
  using Entry = std::pair<std::uint64_t, std::uint32_t>;
  /// Empties the queue for indices 0 .. indices-1.
  void reset(std::size_t indices) {
    bits_ = 1;
    while ((std::uint64_t(1) << bits_) < indices) ++bits_;
    lim_ = std::uint64_t(1) << (64 - bits_);
    packed_.clear(), pairs_.clear();
    use_pairs_ = false;
  }
  bool empty() const noexcept { return use_pairs_ ? pairs_.empty() : packed_.empty(); }
  Entry top() const noexcept {
    if (use_pairs_) return pairs_.top();
    const std::uint64_t k = packed_.top();
    return {k >> bits_, std::uint32_t(k & ((std::uint64_t(1) << bits_) - 1))};
  }
  void push(std::uint64_t t, std::uint32_t i) {
    if (!use_pairs_ && t < lim_) return packed_.push(t << bits_ | i);
    spill();
    pairs_.push({t, i});
  }
  /// Removes the top entry and inserts (t, i).
  void replace_top(std::uint64_t t, std::uint32_t i) {
    if (!use_pairs_ && t < lim_) return packed_.replace_top(t << bits_ | i);
    spill();
    pairs_.replace_top({t, i});
  }
  void pop() {
    if (use_pairs_) pairs_.pop();
    else packed_.pop();
  }
  /// Whether the entries are kept as pairs (a time reached 2^(64 - bits)); for tests.
  bool spilled() const noexcept { return use_pairs_; }

 private:
  void spill() {
    if (use_pairs_) return;
    for (; !packed_.empty(); packed_.pop()) pairs_.push(top());
    use_pairs_ = true;
  }
  unsigned bits_ = 1;
  std::uint64_t lim_ = std::uint64_t(1) << 63;
  bool use_pairs_ = false;
  MinHeap<std::uint64_t> packed_;
  MinHeap<Entry> pairs_;
};

}  // namespace spartan::hw::gpu
