// Internal: the cache lines of one band's ELL payload, walked a few per step, for the AVX-512 wide gather's
// software prefetch of the next band (cpu_kernels_avx512.cpp; TileSparseOptions::payload_prefetch).
//
// Why: the wide gather reads the payload once per panel, a few KiB per band, and the hardware prefetchers did not
// run ahead of it when it came from L3 or memory: in a probe of VGG-16 conv2_2's forward (12544 x 1152 op(A) at
// 97 %, 16 x 256 tiles, 128 output floats) the gather took 1.6-1.9x as long as on a payload that stayed cached,
// and 1.5x less with the next band prefetched into L1 while the current one is gathered (T0; T1 / T2 and two or
// four bands ahead no better). docs/bench/gemm.md, forty-fourth session.
#pragma once
#include <cstddef>
#include <cstdint>

#include "cpu_kernels.h"

namespace spartan::gemm::detail {

/// The 64-byte lines of a band's ELL payload: for each of its nt tiles t[i], the index block (rows x t[i].w bytes
/// at t[i].idx) and then the value block (rows x t[i].w floats at t[i].val), every line that overlaps a block once
/// (a line shared by two blocks is visited for each). step(sink) calls sink(line address) for the next
/// ceil(lines / steps) lines, so `steps` calls visit them all. Only addresses are formed: nothing is read from the
/// payload, only the EllTileRef entries (pointers and widths).
class PayloadLineWalk {
 public:
  PayloadLineWalk(const EllTileRef* t, int nt, int rows, int steps) : t_(t), nt_(nt), rows_(std::uint32_t(rows)) {
    std::size_t lines = 0;
    for (int i = 0; i < nt; ++i) lines += block_lines(i, false) + block_lines(i, true);
    per_step_ = steps > 0 ? (lines + std::size_t(steps) - 1) / std::size_t(steps) : 0;
    next_block();
  }
  template <class Sink>
  void step(Sink&& sink) {
    for (std::size_t n = per_step_; n > 0 && ti_ < nt_; --n) {
      sink(p_);
      p_ += 64;
      if (p_ >= end_) next_block();
    }
  }

 private:
  std::uintptr_t begin(int i, bool val) const {
    return val ? reinterpret_cast<std::uintptr_t>(t_[i].val) : reinterpret_cast<std::uintptr_t>(t_[i].idx);
  }
  std::uintptr_t bytes(int i, bool val) const {
    return std::uintptr_t(t_[i].w) * rows_ * (val ? sizeof(float) : 1u);
  }
  std::size_t block_lines(int i, bool val) const {
    const std::uintptr_t b = begin(i, val), e = b + bytes(i, val);
    return e > b ? std::size_t(((e + 63) & ~std::uintptr_t(63)) - (b & ~std::uintptr_t(63))) / 64 : 0;
  }
  // Moves to the next non-empty block (the value block after the index block, then the next tile's).
  void next_block() {
    for (;;) {
      if (val_) ++ti_;
      val_ = !val_;
      if (ti_ >= nt_) return;
      const std::uintptr_t b = begin(ti_, val_), e = b + bytes(ti_, val_);
      if (e > b) {
        p_ = b & ~std::uintptr_t(63), end_ = e;
        return;
      }
    }
  }
  const EllTileRef* t_;
  int nt_, ti_ = -1;
  std::uint32_t rows_;
  bool val_ = true;  // with ti_ = -1: next_block() starts at tile 0's index block
  std::size_t per_step_ = 0;
  std::uintptr_t p_ = 0, end_ = 0;
};

}  // namespace spartan::gemm::detail
