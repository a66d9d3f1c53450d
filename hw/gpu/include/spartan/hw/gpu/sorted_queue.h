// A min-queue kept as a sorted ring: the same interface and the same sequence of tops as MinHeap
// (min_heap.h), cheaper when the values put in mostly arrive in ascending order, as the model's completion
// times do (an MSHR's fill, a write-back's end, an SM's in-flight request: each later call usually ends
// later). replace_top() drops the front and inserts the new value by scanning from the back: O(1) for a
// value at or above every other, O(k) for one k places from the back. A MinHeap's sift-down costs
// O(log n) compares and moves every time (the new value usually sinks to the bottom).
// Equivalence: both return the smallest element of the same multiset, so every top() is equal (ties are
// equal values). test_queues.cpp checks this against MinHeap on random and near-sorted streams.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace spartan::hw::gpu {

template <typename T>
class SortedQueue {
 public:
  bool empty() const noexcept { return n_ == 0; }
  std::size_t size() const noexcept { return n_; }
  /// The smallest element (the queue must not be empty).
  const T& top() const noexcept { return v_[head_]; }
  /// The largest element (the queue must not be empty).
  const T& back() const noexcept { return v_[(head_ + n_ - 1) & mask_]; }
  void clear() noexcept { head_ = n_ = 0; }
  void push(const T& x) {
    if (n_ == v_.size()) grow();
    insert(x);
  }
  /// Removes the smallest element and inserts `x` (the queue must not be empty).
  void replace_top(const T& x) {
    head_ = (head_ + 1) & mask_;
    --n_;
    insert(x);
  }
  void pop() noexcept {
    head_ = (head_ + 1) & mask_;
    --n_;
  }

 private:
  T& at(std::size_t i) noexcept { return v_[(head_ + i) & mask_]; }
  /// Places `x` after every element not greater than it (room for one more is guaranteed).
  void insert(const T& x) {
    std::size_t p = n_;
    while (p > 0) {
      T& prev = at(p - 1);
      if (!(x < prev)) break;
      at(p) = prev;
      --p;
    }
    at(p) = x;
    ++n_;
  }
  void grow() {  // capacity: a power of two, so that ring positions wrap with a mask
    std::vector<T> w(v_.empty() ? 16 : 2 * v_.size());
    for (std::size_t i = 0; i < n_; ++i) w[i] = at(i);
    v_.swap(w);
    head_ = 0;
    mask_ = v_.size() - 1;
  }
  std::vector<T> v_;
  std::size_t head_ = 0, n_ = 0, mask_ = 0;
};

}  // namespace spartan::hw::gpu
