#include <algorithm>
#include <cmath>
#include <limits>

#include "spartan/common/error.h"
#include "spartan/train/layer.h"
#include "spartan/train/threads.h"

namespace spartan::train {

Tensor ReLU::forward(const Tensor& x, Context& ctx) {
  if (ctx.exec) return forward_exec(x, ctx);
  y_ = x;
  const std::ptrdiff_t n = static_cast<std::ptrdiff_t>(y_.numel());
  float* p = y_.data();
#pragma omp parallel for schedule(static) if (parallel_worth(std::size_t(n)))
  for (std::ptrdiff_t i = 0; i < n; ++i) p[i] = p[i] > 0.0f ? p[i] : 0.0f;
  return y_;
}

Tensor ReLU::backward(const Tensor& dy, Context& ctx) {
  if (ctx.exec) return backward_exec(dy, ctx);
  Tensor dx = dy;
  const std::ptrdiff_t n = static_cast<std::ptrdiff_t>(dx.numel());
  float* p = dx.data();
  const float* y = y_.data();
#pragma omp parallel for schedule(static) if (parallel_worth(std::size_t(n)))
  for (std::ptrdiff_t i = 0; i < n; ++i)
    if (!(y[i] > 0.0f)) p[i] = 0.0f;
  return dx;
}

int window_output_size(int in, int k, int stride, int pad) {
  if (k < 1 || stride < 1 || in < 0 || pad < 0 || in + 2 * pad < k) return 0;
  return (in + 2 * pad - k) / stride + 1;
}

std::string MaxPool2d::describe() const { return "maxpool " + std::to_string(k_) + "x" + std::to_string(k_) + " s" + std::to_string(s_); }

Tensor MaxPool2d::forward(const Tensor& x, Context& ctx) {
  if (ctx.exec) return forward_exec(x, ctx);
  const int oh = window_output_size(x.h, k_, s_), ow = window_output_size(x.w, k_, s_);
  if (oh <= 0 || ow <= 0) throw InputError("maxpool: input " + x.shape_str() + " too small for " + describe());
  xshape_ = Tensor();
  xshape_.n = x.n; xshape_.c = x.c; xshape_.h = x.h; xshape_.w = x.w;
  Tensor y(x.n, x.c, oh, ow);
  argmax_.assign(y.numel(), 0);
  const int planes = x.n * x.c;
#pragma omp parallel for schedule(static) if (parallel_worth(x.numel()))
  for (int pl = 0; pl < planes; ++pl) {
    const float* src = x.data() + std::size_t(pl) * x.h * x.w;
    for (int oy = 0; oy < oh; ++oy)
      for (int ox = 0; ox < ow; ++ox) {
        float best = -std::numeric_limits<float>::infinity();
        int arg = (oy * s_) * x.w + ox * s_;
        for (int i = 0; i < k_; ++i)
          for (int j = 0; j < k_; ++j) {
            const int idx = (oy * s_ + i) * x.w + ox * s_ + j;
            if (src[idx] > best) { best = src[idx]; arg = idx; }
          }
        const std::size_t o = (std::size_t(pl) * oh + oy) * ow + ox;
        y.v[o] = best;
        argmax_[o] = arg;
      }
  }
  return y;
}

Tensor MaxPool2d::backward(const Tensor& dy, Context& ctx) {
  if (ctx.exec) return backward_exec(dy, ctx);
  Tensor dx(xshape_.n, xshape_.c, xshape_.h, xshape_.w);
  const int planes = dy.n * dy.c, per = dy.h * dy.w;
#pragma omp parallel for schedule(static) if (parallel_worth(dx.numel()))
  for (int pl = 0; pl < planes; ++pl) {
    float* dst = dx.data() + std::size_t(pl) * dx.h * dx.w;
    for (int i = 0; i < per; ++i) dst[argmax_[std::size_t(pl) * per + i]] += dy.v[std::size_t(pl) * per + i];
  }
  return dx;
}

Tensor GlobalAvgPool::forward(const Tensor& x, Context& ctx) {
  if (ctx.exec) return forward_exec(x, ctx);
  xshape_ = Tensor();
  xshape_.n = x.n; xshape_.c = x.c; xshape_.h = x.h; xshape_.w = x.w;
  Tensor y(x.n, x.c, 1, 1);
  const int per = x.h * x.w;
  for (std::size_t pl = 0; pl < y.numel(); ++pl) {
    double s = 0;
    for (int i = 0; i < per; ++i) s += x.v[pl * per + i];
    y.v[pl] = static_cast<float>(s / per);
  }
  return y;
}

Tensor GlobalAvgPool::backward(const Tensor& dy, Context& ctx) {
  if (ctx.exec) return backward_exec(dy, ctx);
  Tensor dx(xshape_.n, xshape_.c, xshape_.h, xshape_.w);
  const int per = dx.h * dx.w;
  for (std::size_t pl = 0; pl < dy.numel(); ++pl)
    for (int i = 0; i < per; ++i) dx.v[pl * per + i] = dy.v[pl] / static_cast<float>(per);
  return dx;
}

std::string Dropout::describe() const { return "dropout p=" + std::to_string(p_).substr(0, 4); }

Tensor Dropout::forward(const Tensor& x, Context& ctx) {
  if (ctx.exec) return forward_exec(x, ctx);
  if (!ctx.training || p_ <= 0.0f) {
    scale_.clear();
    return x;
  }
  if (!ctx.rng) throw InputError("dropout: no random generator in the context");
  scale_.resize(x.numel());
  std::bernoulli_distribution keep(1.0 - p_);
  const float s = 1.0f / (1.0f - p_);
  Tensor y = x;
  for (std::size_t i = 0; i < y.numel(); ++i) {
    scale_[i] = keep(*ctx.rng) ? s : 0.0f;
    y.v[i] *= scale_[i];
  }
  return y;
}

Tensor Dropout::backward(const Tensor& dy, Context& ctx) {
  if (ctx.exec) return backward_exec(dy, ctx);
  if (scale_.empty()) return dy;
  Tensor dx = dy;
  for (std::size_t i = 0; i < dx.numel(); ++i) dx.v[i] *= scale_[i];
  return dx;
}

BatchNorm::BatchNorm(int channels, float momentum, float eps)
    : gamma("gamma", channels, false), beta("beta", channels, false), running_mean(channels, 0.0f),
      running_var(channels, 1.0f), c_(channels), momentum_(momentum), eps_(eps) {
  std::fill(gamma.value.begin(), gamma.value.end(), 1.0f);
}

Tensor BatchNorm::forward(const Tensor& x, Context& ctx) {
  if (ctx.exec) return forward_exec(x, ctx);
  if (x.c != c_) throw InputError("batchnorm: input has " + std::to_string(x.c) + " channels, expected " + std::to_string(c_));
  const int per = x.h * x.w;
  const std::size_t m = std::size_t(x.n) * per;
  Tensor y(x.n, x.c, x.h, x.w);
  xhat_ = Tensor(x.n, x.c, x.h, x.w);
  inv_std_.assign(c_, 0.0f);
#pragma omp parallel for schedule(static) if (parallel_worth(x.numel()))
  for (int c = 0; c < c_; ++c) {
    double mean, var;
    if (ctx.training) {
      double s = 0, s2 = 0;
      for (int n = 0; n < x.n; ++n) {
        const float* p = x.data() + (std::size_t(n) * c_ + c) * per;
        for (int i = 0; i < per; ++i) s += p[i];
      }
      mean = s / double(m);
      for (int n = 0; n < x.n; ++n) {
        const float* p = x.data() + (std::size_t(n) * c_ + c) * per;
        for (int i = 0; i < per; ++i) s2 += (p[i] - mean) * (p[i] - mean);
      }
      var = s2 / double(m);
      const double unbiased = m > 1 ? s2 / double(m - 1) : var;
      running_mean[c] = static_cast<float>((1 - momentum_) * running_mean[c] + momentum_ * mean);
      running_var[c] = static_cast<float>((1 - momentum_) * running_var[c] + momentum_ * unbiased);
    } else {
      mean = running_mean[c];
      var = running_var[c];
    }
    const float inv = static_cast<float>(1.0 / std::sqrt(var + eps_));
    inv_std_[c] = inv;
    const float g = gamma.value[c], b = beta.value[c], mu = static_cast<float>(mean);
    for (int n = 0; n < x.n; ++n) {
      const std::size_t off = (std::size_t(n) * c_ + c) * per;
      for (int i = 0; i < per; ++i) {
        const float xh = (x.v[off + i] - mu) * inv;
        xhat_.v[off + i] = xh;
        y.v[off + i] = g * xh + b;
      }
    }
  }
  return y;
}

Tensor BatchNorm::backward(const Tensor& dy, Context& ctx) {
  if (ctx.exec) return backward_exec(dy, ctx);
  const int per = dy.h * dy.w;
  const double m = double(dy.n) * per;
  Tensor dx(dy.n, dy.c, dy.h, dy.w);
#pragma omp parallel for schedule(static) if (parallel_worth(dy.numel()))
  for (int c = 0; c < c_; ++c) {
    double sdy = 0, sdyx = 0;
    for (int n = 0; n < dy.n; ++n) {
      const std::size_t off = (std::size_t(n) * c_ + c) * per;
      for (int i = 0; i < per; ++i) {
        sdy += dy.v[off + i];
        sdyx += double(dy.v[off + i]) * xhat_.v[off + i];
      }
    }
    gamma.grad[c] = static_cast<float>(sdyx);
    beta.grad[c] = static_cast<float>(sdy);
    const double g = gamma.value[c], inv = inv_std_[c];
    for (int n = 0; n < dy.n; ++n) {
      const std::size_t off = (std::size_t(n) * c_ + c) * per;
      for (int i = 0; i < per; ++i) {
        if (ctx.training)
          dx.v[off + i] = static_cast<float>(g * inv / m * (m * dy.v[off + i] - sdy - xhat_.v[off + i] * sdyx));
        else
          dx.v[off + i] = static_cast<float>(g * inv * dy.v[off + i]);
      }
    }
  }
  return dx;
}

double softmax_cross_entropy(const Tensor& logits, const std::uint8_t* labels, Tensor& dlogits, int* correct) {
  const int n = logits.n, k = static_cast<int>(logits.per_sample());
  dlogits = Tensor(logits.n, logits.c, logits.h, logits.w);
  double loss = 0;
  int hits = 0;
  for (int i = 0; i < n; ++i) {
    const float* z = logits.data() + std::size_t(i) * k;
    float* d = dlogits.data() + std::size_t(i) * k;
    const int label = labels[i];
    if (label >= k) throw InputError("cross-entropy: label " + std::to_string(label) + " >= classes " + std::to_string(k));
    const int arg = static_cast<int>(std::max_element(z, z + k) - z);
    hits += arg == label;
    const double zmax = z[arg];
    double s = 0;
    for (int j = 0; j < k; ++j) s += std::exp(double(z[j]) - zmax);
    const double lse = zmax + std::log(s);
    loss += lse - z[label];
    for (int j = 0; j < k; ++j) d[j] = static_cast<float>((std::exp(double(z[j]) - lse) - (j == label)) / n);
  }
  if (correct) *correct = hits;
  return n ? loss / n : 0.0;
}

}  // namespace spartan::train
