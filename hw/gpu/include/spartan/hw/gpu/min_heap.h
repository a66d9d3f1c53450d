// A binary min-heap with replace_top(): the SmScheduler's issue order takes one element out and puts one
// in per request (queues whose values arrive mostly in ascending order use SortedQueue, which is tested
// against this heap). std::priority_queue needs a pop() and a push() for that (two sift passes);
// replace_top() is one sift-down. Elements compare with operator< and the order is total in every use, so
// the sequence of tops is the same as with std::priority_queue<T, std::vector<T>, std::greater<T>>.
#pragma once
#include <cstddef>
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
      if (c + 1 < n && v_[c + 1] < v_[c]) ++c;
      if (!(v_[c] < x)) break;
      v_[i] = v_[c];
      i = c;
    }
    v_[i] = x;
  }
  std::vector<T> v_;
};

}  // namespace spartan::hw::gpu
