// The CUDA kernels of the training path's executor (executor.h), one source for the GPU and for the host
// emulation (spartan/common/simt.h): cuda_ops.cu launches them on the GPU, simt_executor.cpp through
// spartan::simt::launch. Each kernel is a thin loop over the per-element functions of kernels_hd.h; the
// reductions are one block of hd::kReduceThreads threads per channel, in the partial / tree order of
// kernels_hd.h that the host reference executor (reference_executor.cpp) repeats in plain loops.
//
// Launch shapes (kernel_executor.h): element-wise kernels run kThreads threads per block over blocks_for(n)
// blocks and stride over the rest (SPARTAN_GRID_LOOP: a grid of at most 2^20 blocks covers any n); the channel
// reductions run `channels` blocks of hd::kReduceThreads threads; count_zeros at most 1024 blocks of kThreads.
#pragma once
#include <algorithm>
#include <cstdint>

#include "spartan/common/simt.h"
#include "spartan/train/kernels_hd.h"

namespace spartan::train::cudaops {
// Everything here and in kernel_executor.h is in the inline namespace: the nvcc and host builds of this header
// live in one library, and code naming a kernel must name the kernel of its own build.
inline namespace SPARTAN_SIMT_ABI {
SPARTAN_SIMT_NAMES

/// Threads per block of the element-wise kernels and of count_zeros (a power of two: count_zeros' tree).
inline constexpr int kThreads = 256;
/// Blocks of an element-wise launch over n elements: ceil(n / kThreads), at least 1, at most 2^20.
inline unsigned blocks_for(std::int64_t n) {
  const std::int64_t b = (n + kThreads - 1) / kThreads;
  return unsigned(std::max<std::int64_t>(1, std::min<std::int64_t>(b, 1 << 20)));
}
/// Blocks of count_zeros: blocks_for(n), at most 1024 (one atomic add per block).
inline unsigned count_zeros_blocks(std::int64_t n) { return std::min(blocks_for(n), 1024u); }

#define SPARTAN_GRID_LOOP(i, n)                                                             \
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += std::int64_t(gridDim.x) * blockDim.x)

SPARTAN_KERNEL void im2col_kernel(const float* x, hd::ConvGeom g, float* col) {
  const std::int64_t np = g.np(), total = np * g.kdim();
  SPARTAN_GRID_LOOP(i, total) col[i] = hd::im2col_at(x, g, int(i / np), i % np);
}
SPARTAN_KERNEL void col2im_kernel(const float* dcolt, hd::ConvGeom g, float* dx, std::int64_t total) {
  SPARTAN_GRID_LOOP(e, total) dx[e] = hd::col2im_at(dcolt, g, e);
}
SPARTAN_KERNEL void conv_out_kernel(const float* yt, const float* bias, int cout, int p, float* y, std::int64_t total) {
  SPARTAN_GRID_LOOP(e, total) y[e] = hd::conv_out_at(yt, bias, cout, p, e);
}
SPARTAN_KERNEL void conv_dyt_kernel(const float* dy, int cout, int p, float* dyt, std::int64_t total) {
  SPARTAN_GRID_LOOP(j, total) dyt[j] = hd::conv_dyt_at(dy, cout, p, j);
}
SPARTAN_KERNEL void transpose_kernel(const float* m, int rows, int cols, float* out, std::int64_t total) {
  SPARTAN_GRID_LOOP(j, total) out[j] = hd::transpose_at(m, rows, cols, j);
}
SPARTAN_KERNEL void add_row_bias_kernel(float* y, const float* bias, int cols, std::int64_t total) {
  SPARTAN_GRID_LOOP(j, total) y[j] += bias[j % cols];
}
SPARTAN_KERNEL void relu_fwd_kernel(const float* x, float* y, std::int64_t n) {
  SPARTAN_GRID_LOOP(i, n) y[i] = hd::relu_fwd(x[i]);
}
SPARTAN_KERNEL void relu_bwd_kernel(const float* dy, const float* y, float* dx, std::int64_t n) {
  SPARTAN_GRID_LOOP(i, n) dx[i] = hd::relu_bwd(dy[i], y[i]);
}
SPARTAN_KERNEL void maxpool_fwd_kernel(const float* x, int h, int w, int k, int s, int oh, int ow, float* y,
                                       std::int32_t* argmax, std::int64_t total) {
  SPARTAN_GRID_LOOP(o, total) hd::maxpool_fwd_at(x, h, w, k, s, oh, ow, o, y, argmax);
}
SPARTAN_KERNEL void maxpool_bwd_kernel(const float* dy, const std::int32_t* argmax, int h, int w, int k, int s, int oh,
                                       int ow, float* dx, std::int64_t total) {
  SPARTAN_GRID_LOOP(e, total) dx[e] = hd::maxpool_bwd_at(dy, argmax, h, w, k, s, oh, ow, e);
}
SPARTAN_KERNEL void gap_fwd_kernel(const float* x, int per, float* y, std::int64_t planes) {
  SPARTAN_GRID_LOOP(pl, planes) y[pl] = hd::gap_fwd_at(x, per, pl);
}
SPARTAN_KERNEL void gap_bwd_kernel(const float* dy, int per, float* dx, std::int64_t total) {
  SPARTAN_GRID_LOOP(e, total) dx[e] = hd::gap_bwd_at(dy, per, e);
}
SPARTAN_KERNEL void mul_kernel(const float* x, const float* scale, float* y, std::int64_t n) {
  SPARTAN_GRID_LOOP(i, n) y[i] = hd::dropout_apply(x[i], scale[i]);
}
SPARTAN_KERNEL void add_kernel(const float* a, const float* b, float* y, std::int64_t n) {
  SPARTAN_GRID_LOOP(i, n) y[i] = hd::residual_add(a[i], b[i]);
}
SPARTAN_KERNEL void sgd_kernel(float* w, float* v, const float* g, std::int64_t n, float lr, float momentum, float wd) {
  SPARTAN_GRID_LOOP(i, n) hd::sgd_update(w + i, v + i, g[i], lr, momentum, wd);
}

/// Block-wide channel reduction (blockDim.x == hd::kReduceThreads, `part` that many doubles of shared memory):
/// the partial / tree order of kernels_hd.h. Every thread returns the block's sum.
SPARTAN_DEVICE double block_channel_reduce(double* part, hd::RedOp op, const float* a, const float* b, double mean,
                                           int c, int channels, int per, std::int64_t count) {
  constexpr int T = hd::kReduceThreads;
  const int t = int(threadIdx.x);
  part[t] = hd::reduce_partial(op, a, b, mean, c, channels, per, count, t, T);
  SPARTAN_SYNCTHREADS();
  for (int s = T / 2; s > 0; s /= 2) {
    if (t < s) part[t] += part[t + s];
    SPARTAN_SYNCTHREADS();
  }
  const double r = part[0];
  SPARTAN_SYNCTHREADS();  // part[] may be reused by the caller
  return r;
}

SPARTAN_KERNEL void channel_sum_kernel(const float* a, int n, int channels, int per, float* out) {
  SPARTAN_SHARED_ARRAY(double, part, hd::kReduceThreads);
  const int c = int(blockIdx.x);
  const double s = block_channel_reduce(part, hd::RedOp::Sum, a, nullptr, 0.0, c, channels, per, std::int64_t(n) * per);
  if (threadIdx.x == 0) out[c] = static_cast<float>(s);
}

SPARTAN_KERNEL void bn_stats_kernel(const float* x, int n, int channels, int per, float* running_mean,
                                    float* running_var, int training, float momentum, float eps, float* inv_std,
                                    double* mean_out) {
  SPARTAN_SHARED_ARRAY(double, part, hd::kReduceThreads);
  const int c = int(blockIdx.x);
  const std::int64_t m = std::int64_t(n) * per;
  double mean, var;
  if (training) {
    mean = block_channel_reduce(part, hd::RedOp::Sum, x, nullptr, 0.0, c, channels, per, m) / double(m);
    const double sq = block_channel_reduce(part, hd::RedOp::SqDev, x, nullptr, mean, c, channels, per, m);
    var = sq / double(m);
    if (threadIdx.x == 0) hd::bn_running_update(running_mean + c, running_var + c, mean, sq, double(m), momentum);
  } else {
    mean = running_mean[c];
    var = running_var[c];
  }
  if (threadIdx.x == 0) {
    inv_std[c] = hd::bn_inv_std(var, eps);
    mean_out[c] = mean;
  }
}

SPARTAN_KERNEL void bn_norm_kernel(const float* x, int channels, int per, const float* gamma, const float* beta,
                                   const double* mean, const float* inv_std, float* y, float* xhat,
                                   std::int64_t total) {
  SPARTAN_GRID_LOOP(e, total) {
    const int c = int((e / per) % channels);
    y[e] = hd::bn_fwd_elem(x[e], static_cast<float>(mean[c]), inv_std[c], gamma[c], beta[c], xhat + e);
  }
}

SPARTAN_KERNEL void bn_bwd_sums_kernel(const float* dy, const float* xhat, int n, int channels, int per, double* sums,
                                       float* dgamma, float* dbeta) {
  SPARTAN_SHARED_ARRAY(double, part, hd::kReduceThreads);
  const int c = int(blockIdx.x);
  const std::int64_t m = std::int64_t(n) * per;
  const double sdy = block_channel_reduce(part, hd::RedOp::Sum, dy, nullptr, 0.0, c, channels, per, m);
  const double sdyx = block_channel_reduce(part, hd::RedOp::Product, dy, xhat, 0.0, c, channels, per, m);
  if (threadIdx.x == 0) {
    sums[c] = sdy;
    sums[channels + c] = sdyx;
    dgamma[c] = static_cast<float>(sdyx);
    dbeta[c] = static_cast<float>(sdy);
  }
}

SPARTAN_KERNEL void bn_bwd_elem_kernel(const float* dy, const float* xhat, const float* gamma, const float* inv_std,
                                       int channels, int per, double m, const double* sums, int training, float* dx,
                                       std::int64_t total) {
  SPARTAN_GRID_LOOP(e, total) {
    const int c = int((e / per) % channels);
    dx[e] = hd::bn_bwd_elem(dy[e], xhat[e], gamma[c], inv_std[c], m, sums[c], sums[channels + c], training != 0);
  }
}

SPARTAN_KERNEL void softmax_kernel(const float* z, const std::int32_t* labels, int n, int k, float* d, double* loss,
                                   int* hit) {
  SPARTAN_GRID_LOOP(i, n) loss[i] = hd::softmax_xent_sample(z + i * k, k, labels[i], n, d + i * k, hit + i);
}

/// Zeros of p[0..n): per-thread counts over the grid-stride loop, a block tree of kThreads, one atomic add per
/// block into *out (which the caller zeroed).
SPARTAN_KERNEL void count_zeros_kernel(const float* p, std::int64_t n, unsigned long long* out) {
  SPARTAN_SHARED_ARRAY(unsigned long long, part, kThreads);
  unsigned long long z = 0;
  SPARTAN_GRID_LOOP(i, n) z += hd::is_zero(p[i]);
  part[threadIdx.x] = z;
  SPARTAN_SYNCTHREADS();
  for (int s = kThreads / 2; s > 0; s /= 2) {
    if (int(threadIdx.x) < s) part[threadIdx.x] += part[threadIdx.x + s];
    SPARTAN_SYNCTHREADS();
  }
  if (threadIdx.x == 0) simt::atomic_add(out, part[0]);
}

#undef SPARTAN_GRID_LOOP

}  // namespace SPARTAN_SIMT_ABI
}  // namespace spartan::train::cudaops
