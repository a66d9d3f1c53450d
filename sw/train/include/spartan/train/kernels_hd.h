// Per-element / per-output functions of the training engine's non-GEMM work, written once and run in three
// places: the CUDA kernels of the device-resident path (sw/train/src/cuda_ops_kernels.h, thin loops over these,
// built with --fmad=false so that the GPU does the same float operations in the same order), the same kernels
// under the host emulation of CUDA (make_simt_executor()), and the host "reference executor"
// (make_reference_executor(); both declared in spartan/train/executor.h), which the unit test
// test_train_kernels compares with the CPU layers (layer.h) on random data. The host side is built with
// -ffp-contract=off (sw/train/CMakeLists.txt) so that the compiler fuses no multiply-adds there either. Marked __host__ __device__ (SPARTAN_HD) under nvcc, plain inline functions
// otherwise; no allocation, no exceptions, no std:: calls that device code lacks.
//
// Layouts are the CPU layers' (layer.h): NCHW activations; im2col matrix kdim x (N*P) with kdim = C*k*k
// (channel, kernel row, kernel col) and P = OH*OW; conv GEMM outputs (N*P) x Cout.
//
// Reductions (batch-norm statistics, bias gradients) are split into T strided partial sums in double that are
// then added pairwise in a fixed tree (reduce_partial / tree order), identically on the GPU (one block of T
// threads per channel) and in the reference executor; against the CPU layers' sequential double sums they
// agree to rounding (the test's tolerance).
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "spartan/common/hd.h"

namespace spartan::train::hd {

/// Geometry of one convolution (input N x C x H x W, kernel k x k, stride, zero padding).
struct ConvGeom {
  int n, c, h, w, k, stride, pad, oh, ow;
  SPARTAN_HD int kdim() const { return c * k * k; }
  SPARTAN_HD int p() const { return oh * ow; }
  SPARTAN_HD std::int64_t np() const { return std::int64_t(n) * oh * ow; }
};

/// im2col element (row r of kdim, column j of N*P): the input pixel it reads, or 0 in the padding.
SPARTAN_HD inline float im2col_at(const float* x, const ConvGeom& g, int r, std::int64_t j) {
  const int kk = g.k * g.k, ci = r / kk, ki = (r / g.k) % g.k, kj = r % g.k;
  const int p = g.p(), n = int(j / p), i = int(j % p), oy = i / g.ow, ox = i % g.ow;
  const int iy = oy * g.stride - g.pad + ki, ix = ox * g.stride - g.pad + kj;
  if (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w) return 0.0f;
  return x[((std::int64_t(n) * g.c + ci) * g.h + iy) * g.w + ix];
}

/// col2im as a gather for input element e = ((n*C + ci)*H + iy)*W + ix: the sum over the kernel taps that
/// read it, of dcol^T[(n*P + oy*OW + ox) * kdim + r] (dcol^T is (N*P) x kdim, the backward-data GEMM output),
/// added in ascending tap order starting from 0 - the CPU scatter's order for that element.
SPARTAN_HD inline float col2im_at(const float* dcolt, const ConvGeom& g, std::int64_t e) {
  const int ix = int(e % g.w), iy = int((e / g.w) % g.h), ci = int((e / (std::int64_t(g.w) * g.h)) % g.c);
  const int n = int(e / (std::int64_t(g.w) * g.h * g.c));
  const int kdim = g.kdim(), p = g.p();
  float acc = 0.0f;
  for (int ki = 0; ki < g.k; ++ki) {
    const int ty = iy + g.pad - ki;
    if (ty < 0 || ty % g.stride) continue;
    const int oy = ty / g.stride;
    if (oy >= g.oh) continue;
    for (int kj = 0; kj < g.k; ++kj) {
      const int tx = ix + g.pad - kj;
      if (tx < 0 || tx % g.stride) continue;
      const int ox = tx / g.stride;
      if (ox >= g.ow) continue;
      const int r = (ci * g.k + ki) * g.k + kj;
      acc += dcolt[(std::int64_t(n) * p + oy * g.ow + ox) * kdim + r];
    }
  }
  return acc;
}

/// Conv forward epilogue, output element e of Y (NCHW): Y^T[(n*P + i) * Cout + co] + bias (0 when null).
SPARTAN_HD inline float conv_out_at(const float* yt, const float* bias, int cout, int p, std::int64_t e) {
  const int i = int(e % p), co = int((e / p) % cout);
  const std::int64_t n = e / (std::int64_t(p) * cout);
  return yt[(n * p + i) * cout + co] + (bias ? bias[co] : 0.0f);
}

/// Conv backward prologue, element j of dY^T ((N*P) x Cout, row-major) from dY (NCHW).
SPARTAN_HD inline float conv_dyt_at(const float* dy, int cout, int p, std::int64_t j) {
  const int co = int(j % cout);
  const std::int64_t row = j / cout, n = row / p;
  const int i = int(row % p);
  return dy[(n * cout + co) * p + i];
}

/// Element j of the transpose of a rows x cols row-major matrix (out is cols x rows).
SPARTAN_HD inline float transpose_at(const float* m, int rows, int cols, std::int64_t j) {
  const int r = int(j % rows);
  const std::int64_t c = j / rows;
  return m[std::int64_t(r) * cols + c];
}

SPARTAN_HD inline float relu_fwd(float x) { return x > 0.0f ? x : 0.0f; }
/// dL/dx from dL/dy and the ReLU output y (the gradient passes where y > 0).
SPARTAN_HD inline float relu_bwd(float dy, float y) { return y > 0.0f ? dy : 0.0f; }

/// Max pool (k x k, stride s, no padding) output element o of plane-major output (planes x OH x OW): the max
/// of its window (first maximum wins) and its in-plane argmax index.
SPARTAN_HD inline void maxpool_fwd_at(const float* x, int h, int w, int k, int s, int oh, int ow, std::int64_t o,
                                      float* y, std::int32_t* argmax) {
  const int ox = int(o % ow), oy = int((o / ow) % oh);
  const std::int64_t pl = o / (std::int64_t(ow) * oh);
  const float* src = x + pl * h * w;
  float best = -INFINITY;
  int arg = (oy * s) * w + ox * s;
  for (int i = 0; i < k; ++i)
    for (int j = 0; j < k; ++j) {
      const int idx = (oy * s + i) * w + ox * s + j;
      if (src[idx] > best) {
        best = src[idx];
        arg = idx;
      }
    }
  y[o] = best;
  argmax[o] = arg;
}

/// Max pool backward as a gather for input element e (planes x H x W): the sum of dy over the windows whose
/// argmax is e, in ascending output order (the CPU scatter's order).
SPARTAN_HD inline float maxpool_bwd_at(const float* dy, const std::int32_t* argmax, int h, int w, int k, int s,
                                       int oh, int ow, std::int64_t e) {
  const int idx = int(e % (std::int64_t(h) * w)), iy = idx / w, ix = idx % w;
  const std::int64_t pl = e / (std::int64_t(h) * w);
  // Windows containing (iy, ix): oy*s <= iy <= oy*s + k - 1.
  const int oy0 = iy - k + 1 > 0 ? (iy - k + 1 + s - 1) / s : 0, oy1 = iy / s < oh - 1 ? iy / s : oh - 1;
  const int ox0 = ix - k + 1 > 0 ? (ix - k + 1 + s - 1) / s : 0, ox1 = ix / s < ow - 1 ? ix / s : ow - 1;
  float acc = 0.0f;
  for (int oy = oy0; oy <= oy1; ++oy)
    for (int ox = ox0; ox <= ox1; ++ox) {
      const std::int64_t o = (pl * oh + oy) * ow + ox;
      if (argmax[o] == idx) acc += dy[o];
    }
  return acc;
}

/// Global average pool, output plane pl: the mean of its `per` inputs (sequential double sum).
SPARTAN_HD inline float gap_fwd_at(const float* x, int per, std::int64_t pl) {
  double s = 0;
  for (int i = 0; i < per; ++i) s += x[pl * per + i];
  return static_cast<float>(s / per);
}
SPARTAN_HD inline float gap_bwd_at(const float* dy, int per, std::int64_t e) {
  return dy[e / per] / static_cast<float>(per);
}

SPARTAN_HD inline float dropout_apply(float x, float scale) { return x * scale; }
SPARTAN_HD inline float residual_add(float a, float b) { return a + b; }

/// Index of element j (0 <= j < N*per) of channel c in an N x C x per array.
SPARTAN_HD inline std::int64_t channel_index(std::int64_t j, int c, int channels, int per) {
  return ((j / per) * channels + c) * per + j % per;
}

/// What a channel reduction sums, per element index i of the N x C x per array(s).
enum class RedOp : int {
  Sum = 0,         ///< a[i]
  SqDev = 1,       ///< (a[i] - mean)^2 with the double `mean`
  Product = 2,     ///< double(a[i]) * b[i]
};

SPARTAN_HD inline double reduce_term(RedOp op, const float* a, const float* b, double mean, std::int64_t i) {
  switch (op) {
    case RedOp::Sum: return a[i];
    case RedOp::SqDev: return (a[i] - mean) * (a[i] - mean);
    case RedOp::Product: return double(a[i]) * b[i];
  }
  return 0.0;
}

/// Partial t of T of a channel reduction: the double sum of the terms of elements j = t, t+T, t+2T, ... of
/// channel c (count = N*per elements). The T partials are then combined by the fixed tree
/// `for (s = T/2; s > 0; s /= 2) part[i] += part[i + s] (i < s)` (T a power of two).
SPARTAN_HD inline double reduce_partial(RedOp op, const float* a, const float* b, double mean, int c, int channels,
                                        int per, std::int64_t count, int t, int T) {
  double s = 0;
  for (std::int64_t j = t; j < count; j += T) s += reduce_term(op, a, b, mean, channel_index(j, c, channels, per));
  return s;
}

/// Threads (partials) per channel reduction, on the GPU and in the reference executor.
inline constexpr int kReduceThreads = 256;

/// Batch-norm per-channel factors from the batch statistics (training) or running ones (eval):
/// inv_std = 1 / sqrt(var + eps) rounded to float, as the CPU layer does.
SPARTAN_HD inline float bn_inv_std(double var, float eps) { return static_cast<float>(1.0 / std::sqrt(var + eps)); }
/// Running statistics update (momentum, unbiased variance) as PyTorch's BatchNorm2d and the CPU layer.
SPARTAN_HD inline void bn_running_update(float* running_mean, float* running_var, double mean, double sq_dev_sum,
                                         double m, float momentum) {
  const double unbiased = m > 1 ? sq_dev_sum / (m - 1) : sq_dev_sum / m;
  *running_mean = static_cast<float>((1 - momentum) * *running_mean + momentum * mean);
  *running_var = static_cast<float>((1 - momentum) * *running_var + momentum * unbiased);
}
/// Normalise one element: writes xhat and returns y = gamma * xhat + beta.
SPARTAN_HD inline float bn_fwd_elem(float x, float mean_f, float inv_std, float gamma, float beta, float* xhat) {
  const float xh = (x - mean_f) * inv_std;
  *xhat = xh;
  return gamma * xh + beta;
}
/// Backward of one element given the channel sums sdy = sum dy, sdyx = sum dy * xhat over m elements.
SPARTAN_HD inline float bn_bwd_elem(float dy, float xhat, double gamma, double inv_std, double m, double sdy,
                                    double sdyx, bool training) {
  if (training) return static_cast<float>(gamma * inv_std / m * (m * dy - sdy - xhat * sdyx));
  return static_cast<float>(gamma * inv_std * dy);
}

/// Softmax cross-entropy of sample i (logits row z of k classes, `label` < k): writes dL/dz / n into d, sets
/// *hit when the first maximum is the label, returns the sample's loss (log-sum-exp - z[label]) in double.
SPARTAN_HD inline double softmax_xent_sample(const float* z, int k, int label, int n, float* d, int* hit) {
  int arg = 0;
  for (int j = 1; j < k; ++j)
    if (z[j] > z[arg]) arg = j;
  *hit = arg == label;
  const double zmax = z[arg];
  double s = 0;
  for (int j = 0; j < k; ++j) s += std::exp(double(z[j]) - zmax);
  const double lse = zmax + std::log(s);
  for (int j = 0; j < k; ++j) d[j] = static_cast<float>((std::exp(double(z[j]) - lse) - (j == label)) / n);
  return lse - z[label];
}

/// SGD with momentum and weight decay (PyTorch convention), one parameter element.
SPARTAN_HD inline void sgd_update(float* w, float* v, float g, float lr, float momentum, float wd) {
  *v = momentum * *v + g + wd * *w;
  *w -= lr * *v;
}

/// Zero test of the sparsity statistics (+0.0 and -0.0; NaN is non-zero), as zero_fraction().
SPARTAN_HD inline bool is_zero(float x) { return x == 0.0f; }

}  // namespace spartan::train::hd
