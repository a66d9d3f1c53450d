// Host reference executor: the per-element functions of kernels_hd.h in plain loops, in the iteration
// structure of the CUDA kernels (cuda_ops_kernels.h), including the partial-sum / tree order of the reductions.
// Its loops are written independently of the kernels' grid-stride loops and shared-memory trees, so that
// test_train_simt's bit-for-bit comparison checks the kernels' own code.
#include <cstring>
#include <new>
#include <vector>

#include "spartan/common/aligned.h"
#include "spartan/common/error.h"
#include "spartan/train/executor.h"

namespace spartan::train {

namespace {

class HostBuffer final : public Buffer {
 public:
  HostBuffer(std::size_t bytes, const void* owner) {
    bytes_ = bytes;
    owner_ = owner;
    // 64-byte aligned like the CPU path's buffers (spartan/common/aligned.h): GEMM operands on lines.
    p_ = ::operator new(bytes ? bytes : 1, std::align_val_t(kCacheLineBytes), std::nothrow);
    if (!p_) throw Error("host reference executor: out of memory allocating " + std::to_string(bytes) + " bytes");
  }
  ~HostBuffer() override { ::operator delete(p_, std::align_val_t(kCacheLineBytes)); }
};

/// The channel reduction as the GPU block does it: kReduceThreads strided partials, then the fixed tree.
double channel_reduce(hd::RedOp op, const float* a, const float* b, double mean, int c, int channels, int per,
                      std::int64_t count) {
  constexpr int T = hd::kReduceThreads;
  double part[T];
  for (int t = 0; t < T; ++t) part[t] = hd::reduce_partial(op, a, b, mean, c, channels, per, count, t, T);
  for (int s = T / 2; s > 0; s /= 2)
    for (int i = 0; i < s; ++i) part[i] += part[i + s];
  return part[0];
}

class ReferenceExecutor final : public Executor {
 public:
  std::string name() const override { return "host-reference"; }
  bool device_pointers() const override { return false; }
  std::shared_ptr<Buffer> alloc(std::size_t bytes) override { return std::make_shared<HostBuffer>(bytes, this); }
  void upload(void* dst, const void* host, std::size_t bytes) override {
    if (bytes) std::memcpy(dst, host, bytes);
  }
  void download(void* host, const void* src, std::size_t bytes) override {
    if (bytes) std::memcpy(host, src, bytes);
  }
  void fill_zero(void* dst, std::size_t bytes) override {
    if (bytes) std::memset(dst, 0, bytes);
  }

  void im2col(const float* x, const hd::ConvGeom& g, float* col) override {
    const std::int64_t np = g.np();
    for (int r = 0; r < g.kdim(); ++r)
      for (std::int64_t j = 0; j < np; ++j) col[r * np + j] = hd::im2col_at(x, g, r, j);
  }
  void col2im(const float* dcolt, const hd::ConvGeom& g, float* dx) override {
    const std::int64_t n = std::int64_t(g.n) * g.c * g.h * g.w;
    for (std::int64_t e = 0; e < n; ++e) dx[e] = hd::col2im_at(dcolt, g, e);
  }
  void conv_out(const float* yt, const float* bias, int n, int cout, int p, float* y) override {
    const std::int64_t total = std::int64_t(n) * cout * p;
    for (std::int64_t e = 0; e < total; ++e) y[e] = hd::conv_out_at(yt, bias, cout, p, e);
  }
  void conv_dyt(const float* dy, int n, int cout, int p, float* dyt) override {
    const std::int64_t total = std::int64_t(n) * cout * p;
    for (std::int64_t j = 0; j < total; ++j) dyt[j] = hd::conv_dyt_at(dy, cout, p, j);
  }
  void transpose(const float* m, int rows, int cols, float* out) override {
    const std::int64_t total = std::int64_t(rows) * cols;
    for (std::int64_t j = 0; j < total; ++j) out[j] = hd::transpose_at(m, rows, cols, j);
  }
  void add_row_bias(float* y, const float* bias, int rows, int cols) override {
    for (std::int64_t j = 0; j < std::int64_t(rows) * cols; ++j) y[j] += bias[j % cols];
  }
  void relu_fwd(const float* x, float* y, std::size_t n) override {
    for (std::size_t i = 0; i < n; ++i) y[i] = hd::relu_fwd(x[i]);
  }
  void relu_bwd(const float* dy, const float* y, float* dx, std::size_t n) override {
    for (std::size_t i = 0; i < n; ++i) dx[i] = hd::relu_bwd(dy[i], y[i]);
  }
  void maxpool_fwd(const float* x, int planes, int h, int w, int k, int s, int oh, int ow, float* y,
                   std::int32_t* argmax) override {
    for (std::int64_t o = 0; o < std::int64_t(planes) * oh * ow; ++o) hd::maxpool_fwd_at(x, h, w, k, s, oh, ow, o, y, argmax);
  }
  void maxpool_bwd(const float* dy, const std::int32_t* argmax, int planes, int h, int w, int k, int s, int oh, int ow,
                   float* dx) override {
    for (std::int64_t e = 0; e < std::int64_t(planes) * h * w; ++e) dx[e] = hd::maxpool_bwd_at(dy, argmax, h, w, k, s, oh, ow, e);
  }
  void gap_fwd(const float* x, int planes, int per, float* y) override {
    for (std::int64_t pl = 0; pl < planes; ++pl) y[pl] = hd::gap_fwd_at(x, per, pl);
  }
  void gap_bwd(const float* dy, int planes, int per, float* dx) override {
    for (std::int64_t e = 0; e < std::int64_t(planes) * per; ++e) dx[e] = hd::gap_bwd_at(dy, per, e);
  }
  void mul(const float* x, const float* scale, float* y, std::size_t n) override {
    for (std::size_t i = 0; i < n; ++i) y[i] = hd::dropout_apply(x[i], scale[i]);
  }
  void add(const float* a, const float* b, float* y, std::size_t n) override {
    for (std::size_t i = 0; i < n; ++i) y[i] = hd::residual_add(a[i], b[i]);
  }
  void channel_sum(const float* a, int n, int channels, int per, float* out) override {
    for (int c = 0; c < channels; ++c)
      out[c] = static_cast<float>(channel_reduce(hd::RedOp::Sum, a, nullptr, 0.0, c, channels, per, std::int64_t(n) * per));
  }
  void bn_fwd(const float* x, int n, int channels, int per, const float* gamma, const float* beta, float* running_mean,
              float* running_var, bool training, float momentum, float eps, float* y, float* xhat, float* inv_std,
              double* mean_scratch) override {
    const std::int64_t m = std::int64_t(n) * per;
    for (int c = 0; c < channels; ++c) {
      double mean, var;
      if (training) {
        mean = channel_reduce(hd::RedOp::Sum, x, nullptr, 0.0, c, channels, per, m) / double(m);
        const double sq = channel_reduce(hd::RedOp::SqDev, x, nullptr, mean, c, channels, per, m);
        var = sq / double(m);
        hd::bn_running_update(running_mean + c, running_var + c, mean, sq, double(m), momentum);
      } else {
        mean = running_mean[c];
        var = running_var[c];
      }
      inv_std[c] = hd::bn_inv_std(var, eps);
      mean_scratch[c] = mean;
    }
    for (std::int64_t e = 0; e < m * channels; ++e) {
      const int c = int((e / per) % channels);
      y[e] = hd::bn_fwd_elem(x[e], static_cast<float>(mean_scratch[c]), inv_std[c], gamma[c], beta[c], xhat + e);
    }
  }
  void bn_bwd(const float* dy, const float* xhat, const float* gamma, const float* inv_std, int n, int channels, int per,
              bool training, float* dx, float* dgamma, float* dbeta, double* sums) override {
    const std::int64_t m = std::int64_t(n) * per;
    for (int c = 0; c < channels; ++c) {
      sums[c] = channel_reduce(hd::RedOp::Sum, dy, nullptr, 0.0, c, channels, per, m);
      sums[channels + c] = channel_reduce(hd::RedOp::Product, dy, xhat, 0.0, c, channels, per, m);
      dgamma[c] = static_cast<float>(sums[channels + c]);
      dbeta[c] = static_cast<float>(sums[c]);
    }
    for (std::int64_t e = 0; e < m * channels; ++e) {
      const int c = int((e / per) % channels);
      dx[e] = hd::bn_bwd_elem(dy[e], xhat[e], gamma[c], inv_std[c], double(m), sums[c], sums[channels + c], training);
    }
  }
  double softmax_xent(const float* logits, const std::int32_t* labels, int n, int k, float* dlogits,
                      int* correct) override {
    double loss = 0;
    int hits = 0;
    for (int i = 0; i < n; ++i) {
      int hit = 0;
      loss += hd::softmax_xent_sample(logits + std::size_t(i) * k, k, labels[i], n, dlogits + std::size_t(i) * k, &hit);
      hits += hit;
    }
    if (correct) *correct = hits;
    return n ? loss / n : 0.0;
  }
  void sgd(float* w, float* v, const float* g, std::size_t n, float lr, float momentum, float wd) override {
    for (std::size_t i = 0; i < n; ++i) hd::sgd_update(w + i, v + i, g[i], lr, momentum, wd);
  }
  std::uint64_t count_zeros(const float* p, std::size_t n) override {
    std::uint64_t z = 0;
    for (std::size_t i = 0; i < n; ++i) z += hd::is_zero(p[i]);
    return z;
  }
};

}  // namespace

std::unique_ptr<Executor> make_reference_executor() { return std::make_unique<ReferenceExecutor>(); }

}  // namespace spartan::train
