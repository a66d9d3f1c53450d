// The training path's kernel executor (executor.h), templated on where its kernels run: the CUDA executor
// (cuda_ops.cu: device memory, <<<>>> launches) and its host emulation (simt_executor.cpp: host memory,
// spartan::simt::launch) issue the same kernels (cuda_ops_kernels.h) with the same launch shapes, so the
// emulation tests the GPU path's kernels (indexing, grid-stride loops, reduction trees and barriers) on machines
// without a GPU. `uses_syncthreads` is for the emulation (the GPU ignores it): true for every kernel that
// reaches SPARTAN_SYNCTHREADS(), else the emulation throws.
//
// Dev provides (all errors as spartan::Error):
//   std::string name() const;
//   std::shared_ptr<Buffer> alloc(std::size_t bytes, const void* owner);   // uninitialised
//   void upload(void* dst, const void* host, std::size_t bytes);           // bytes > 0
//   void download(void* host, const void* src, std::size_t bytes);         // after all issued work; bytes > 0
//   void fill_zero(void* dst, std::size_t bytes);                          // bytes > 0
//   template <class... P, class... A>
//   void launch(const char* what, unsigned grid, unsigned block, bool uses_syncthreads, void (*kernel)(P...), A... args);
//     // kernel<<<grid, block>>>(args...): 1-D grids and blocks, no dynamic shared memory (the training kernels
//     // need neither; SPARTAN_SHARED_ARRAY gives a kernel fixed-size shared memory)
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cuda_ops_kernels.h"
#include "spartan/train/executor.h"

namespace spartan::train::cudaops {
inline namespace SPARTAN_SIMT_ABI {  // each build's executor names its own build's kernels (cuda_ops_kernels.h)

template <class Dev>
class KernelExecutor final : public Executor {
 public:
  template <class... A>
  explicit KernelExecutor(A&&... dev_args) : dev_(std::forward<A>(dev_args)...) {}
  std::string name() const override { return dev_.name(); }
  bool device_pointers() const override { return true; }
  std::shared_ptr<Buffer> alloc(std::size_t bytes) override { return dev_.alloc(bytes, this); }
  void upload(void* dst, const void* host, std::size_t bytes) override {
    if (bytes) dev_.upload(dst, host, bytes);
  }
  void download(void* host, const void* src, std::size_t bytes) override {
    if (bytes) dev_.download(host, src, bytes);
  }
  void fill_zero(void* dst, std::size_t bytes) override {
    if (bytes) dev_.fill_zero(dst, bytes);
  }

  void im2col(const float* x, const hd::ConvGeom& g, float* col) override {
    dev_.launch("im2col", blocks_for(g.np() * g.kdim()), kThreads, false, im2col_kernel, x, g, col);
  }
  void col2im(const float* dcolt, const hd::ConvGeom& g, float* dx) override {
    const std::int64_t total = std::int64_t(g.n) * g.c * g.h * g.w;
    dev_.launch("col2im", blocks_for(total), kThreads, false, col2im_kernel, dcolt, g, dx, total);
  }
  void conv_out(const float* yt, const float* bias, int n, int cout, int p, float* y) override {
    const std::int64_t total = std::int64_t(n) * cout * p;
    dev_.launch("conv_out", blocks_for(total), kThreads, false, conv_out_kernel, yt, bias, cout, p, y, total);
  }
  void conv_dyt(const float* dy, int n, int cout, int p, float* dyt) override {
    const std::int64_t total = std::int64_t(n) * cout * p;
    dev_.launch("conv_dyt", blocks_for(total), kThreads, false, conv_dyt_kernel, dy, cout, p, dyt, total);
  }
  void transpose(const float* m, int rows, int cols, float* out) override {
    const std::int64_t total = std::int64_t(rows) * cols;
    dev_.launch("transpose", blocks_for(total), kThreads, false, transpose_kernel, m, rows, cols, out, total);
  }
  void add_row_bias(float* y, const float* bias, int rows, int cols) override {
    const std::int64_t total = std::int64_t(rows) * cols;
    dev_.launch("add_row_bias", blocks_for(total), kThreads, false, add_row_bias_kernel, y, bias, cols, total);
  }
  void relu_fwd(const float* x, float* y, std::size_t n) override {
    dev_.launch("relu_fwd", blocks_for(std::int64_t(n)), kThreads, false, relu_fwd_kernel, x, y, std::int64_t(n));
  }
  void relu_bwd(const float* dy, const float* y, float* dx, std::size_t n) override {
    dev_.launch("relu_bwd", blocks_for(std::int64_t(n)), kThreads, false, relu_bwd_kernel, dy, y, dx,
                std::int64_t(n));
  }
  void maxpool_fwd(const float* x, int planes, int h, int w, int k, int s, int oh, int ow, float* y,
                   std::int32_t* argmax) override {
    const std::int64_t total = std::int64_t(planes) * oh * ow;
    dev_.launch("maxpool_fwd", blocks_for(total), kThreads, false, maxpool_fwd_kernel, x, h, w, k, s, oh, ow, y,
                argmax, total);
  }
  void maxpool_bwd(const float* dy, const std::int32_t* argmax, int planes, int h, int w, int k, int s, int oh, int ow,
                   float* dx) override {
    const std::int64_t total = std::int64_t(planes) * h * w;
    dev_.launch("maxpool_bwd", blocks_for(total), kThreads, false, maxpool_bwd_kernel, dy, argmax, h, w, k, s, oh, ow,
                dx, total);
  }
  void gap_fwd(const float* x, int planes, int per, float* y) override {
    dev_.launch("gap_fwd", blocks_for(planes), kThreads, false, gap_fwd_kernel, x, per, y, std::int64_t(planes));
  }
  void gap_bwd(const float* dy, int planes, int per, float* dx) override {
    const std::int64_t total = std::int64_t(planes) * per;
    dev_.launch("gap_bwd", blocks_for(total), kThreads, false, gap_bwd_kernel, dy, per, dx, total);
  }
  void mul(const float* x, const float* scale, float* y, std::size_t n) override {
    dev_.launch("dropout mul", blocks_for(std::int64_t(n)), kThreads, false, mul_kernel, x, scale, y, std::int64_t(n));
  }
  void add(const float* a, const float* b, float* y, std::size_t n) override {
    dev_.launch("residual add", blocks_for(std::int64_t(n)), kThreads, false, add_kernel, a, b, y, std::int64_t(n));
  }
  void channel_sum(const float* a, int n, int channels, int per, float* out) override {
    if (channels == 0) return;
    dev_.launch("channel_sum", unsigned(channels), hd::kReduceThreads, true, channel_sum_kernel, a, n, channels, per,
                out);
  }
  void bn_fwd(const float* x, int n, int channels, int per, const float* gamma, const float* beta, float* running_mean,
              float* running_var, bool training, float momentum, float eps, float* y, float* xhat, float* inv_std,
              double* mean_scratch) override {
    if (channels == 0) return;
    dev_.launch("bn_stats", unsigned(channels), hd::kReduceThreads, true, bn_stats_kernel, x, n, channels, per,
                running_mean, running_var, training ? 1 : 0, momentum, eps, inv_std, mean_scratch);
    const std::int64_t total = std::int64_t(n) * channels * per;
    dev_.launch("bn_norm", blocks_for(total), kThreads, false, bn_norm_kernel, x, channels, per, gamma, beta,
                mean_scratch, inv_std, y, xhat, total);
  }
  void bn_bwd(const float* dy, const float* xhat, const float* gamma, const float* inv_std, int n, int channels, int per,
              bool training, float* dx, float* dgamma, float* dbeta, double* sums) override {
    if (channels == 0) return;
    dev_.launch("bn_bwd_sums", unsigned(channels), hd::kReduceThreads, true, bn_bwd_sums_kernel, dy, xhat, n, channels,
                per, sums, dgamma, dbeta);
    const std::int64_t total = std::int64_t(n) * channels * per;
    dev_.launch("bn_bwd_elem", blocks_for(total), kThreads, false, bn_bwd_elem_kernel, dy, xhat, gamma, inv_std,
                channels, per, double(std::int64_t(n) * per), sums, training ? 1 : 0, dx, total);
  }
  double softmax_xent(const float* logits, const std::int32_t* labels, int n, int k, float* dlogits,
                      int* correct) override {
    if (n == 0) {
      if (correct) *correct = 0;
      return 0.0;
    }
    if (!loss_ || loss_->bytes() < std::size_t(n) * sizeof(double)) loss_ = alloc(std::size_t(n) * sizeof(double));
    if (!hit_ || hit_->bytes() < std::size_t(n) * sizeof(int)) hit_ = alloc(std::size_t(n) * sizeof(int));
    dev_.launch("softmax_xent", blocks_for(n), kThreads, false, softmax_kernel, logits, labels, n, k, dlogits,
                loss_->as<double>(), hit_->as<int>());
    std::vector<double> loss(n);
    std::vector<int> hit(n);
    download(loss.data(), loss_->ptr(), loss.size() * sizeof(double));
    download(hit.data(), hit_->ptr(), hit.size() * sizeof(int));
    double sum = 0;
    int hits = 0;
    for (int i = 0; i < n; ++i) {  // sample order, as the CPU path
      sum += loss[i];
      hits += hit[i];
    }
    if (correct) *correct = hits;
    return sum / n;
  }
  void sgd(float* w, float* v, const float* g, std::size_t n, float lr, float momentum, float wd) override {
    dev_.launch("sgd", blocks_for(std::int64_t(n)), kThreads, false, sgd_kernel, w, v, g, std::int64_t(n), lr, momentum,
                wd);
  }
  std::uint64_t count_zeros(const float* p, std::size_t n) override {
    if (n == 0) return 0;
    if (!count_) count_ = alloc(sizeof(unsigned long long));
    fill_zero(count_->ptr(), sizeof(unsigned long long));
    dev_.launch("count_zeros", count_zeros_blocks(std::int64_t(n)), kThreads, true, count_zeros_kernel, p,
                std::int64_t(n), count_->as<unsigned long long>());
    unsigned long long z = 0;
    download(&z, count_->ptr(), sizeof(z));
    return z;
  }

 private:
  Dev dev_;
  std::shared_ptr<Buffer> loss_, hit_, count_;
};

}  // namespace SPARTAN_SIMT_ABI
}  // namespace spartan::train::cudaops
