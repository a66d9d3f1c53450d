// Dense float tensors in NCHW layout (batch, channels, height, width). Fully-connected activations
// are N x F x 1 x 1, so every layer sees the same 4-D view.
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "spartan/common/aligned.h"

namespace spartan::train {

class Buffer;

/// On the CPU path the elements are in `v`. On the executor (device-resident) path (executor.h) they are in
/// `buf` (executor memory, shared between the tensor copies that layers keep for backward; never modified after
/// the layer that produced it returns) and `v` is empty unless fetched to the host (fetch_host, exec_tensor.h).
struct Tensor {
  int n = 0, c = 0, h = 0, w = 0;
  AlignedVector<float> v;  ///< 64-byte aligned: GEMM operands (spartan/common/aligned.h)
  std::shared_ptr<Buffer> buf;

  Tensor() = default;
  Tensor(int n_, int c_, int h_, int w_) : n(n_), c(c_), h(h_), w(w_), v(std::size_t(n_) * c_ * h_ * w_, 0.0f) {}
  std::size_t numel() const { return v.size(); }
  /// Elements of the shape (== numel() for host tensors).
  std::size_t count() const { return std::size_t(n) * c * h * w; }
  std::size_t per_sample() const { return std::size_t(c) * h * w; }
  float* data() { return v.data(); }
  const float* data() const { return v.data(); }
  float& at(int ni, int ci, int hi, int wi) { return v[((std::size_t(ni) * c + ci) * h + hi) * w + wi]; }
  float at(int ni, int ci, int hi, int wi) const { return v[((std::size_t(ni) * c + ci) * h + hi) * w + wi]; }
  bool same_shape(const Tensor& o) const { return n == o.n && c == o.c && h == o.h && w == o.w; }
  std::string shape_str() const {
    return "[" + std::to_string(n) + "," + std::to_string(c) + "," + std::to_string(h) + "," + std::to_string(w) + "]";
  }
};

/// Fraction of exactly-zero elements (0 for an empty range).
double zero_fraction(const float* p, std::size_t n);

}  // namespace spartan::train
