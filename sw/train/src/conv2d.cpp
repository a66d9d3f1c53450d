#include <cmath>

#include "spartan/common/error.h"
#include "spartan/train/layer.h"

namespace spartan::train {

namespace {

void he_normal(std::vector<float>& w, int fan_in, std::mt19937_64& rng) {
  std::normal_distribution<float> dist(0.0f, std::sqrt(2.0f / static_cast<float>(fan_in)));
  for (float& v : w) v = dist(rng);
}

}  // namespace

Conv2d::Conv2d(int cin_, int cout_, int k_, int stride_, int pad_, bool bias_, std::mt19937_64& rng)
    : cin(cin_), cout(cout_), k(k_), stride(stride_), pad(pad_),
      weight("weight", std::size_t(cout_) * cin_ * k_ * k_), bias("bias", bias_ ? cout_ : 0, false), has_bias(bias_) {
  he_normal(weight.value, cin * k * k, rng);  // He et al., ICCV 2015: N(0, 2/fan_in)
}

std::vector<Param*> Conv2d::params() {
  if (has_bias) return {&weight, &bias};
  return {&weight};
}

std::string Conv2d::describe() const {
  return "conv" + std::to_string(k) + "x" + std::to_string(k) + " " + std::to_string(cin) + "->" +
         std::to_string(cout) + " s" + std::to_string(stride) + " p" + std::to_string(pad);
}

GemmShape Conv2d::shape(GemmPass p) const {
  const int kdim = cin * k * k, np = yshape_.n * yshape_.h * yshape_.w;
  switch (p) {
    case GemmPass::Forward: return {cout, np, kdim};
    case GemmPass::BackwardData: return {kdim, np, cout};
    case GemmPass::BackwardWeight: return {cout, kdim, np};
  }
  return {};
}

Tensor Conv2d::forward(const Tensor& x, Context& ctx) {
  if (x.c != cin) throw InputError("conv: input has " + std::to_string(x.c) + " channels, layer expects " + std::to_string(cin));
  const int oh = (x.h + 2 * pad - k) / stride + 1, ow = (x.w + 2 * pad - k) / stride + 1;
  if (oh <= 0 || ow <= 0) throw InputError("conv: input " + x.shape_str() + " too small for " + describe());
  x_ = x;
  yshape_ = Tensor();
  yshape_.n = x.n; yshape_.c = cout; yshape_.h = oh; yshape_.w = ow;
  const int kdim = cin * k * k, p = oh * ow;
  const std::ptrdiff_t np = std::ptrdiff_t(x.n) * p;
  col_.assign(std::size_t(kdim) * np, 0.0f);
  // im2col: row r = (ci, ki, kj), column (n, oy, ox).
#pragma omp parallel for collapse(2) schedule(static)
  for (int r = 0; r < kdim; ++r)
    for (int n = 0; n < x.n; ++n) {
      const int ci = r / (k * k), ki = (r / k) % k, kj = r % k;
      float* dst = col_.data() + std::size_t(r) * np + std::size_t(n) * p;
      const float* src = x.data() + (std::size_t(n) * cin + ci) * x.h * x.w;
      for (int oy = 0; oy < oh; ++oy) {
        const int iy = oy * stride - pad + ki;
        if (iy < 0 || iy >= x.h) continue;
        for (int ox = 0; ox < ow; ++ox) {
          const int ix = ox * stride - pad + kj;
          if (ix >= 0 && ix < x.w) dst[oy * ow + ox] = src[iy * x.w + ix];
        }
      }
    }
  ytmp_.assign(std::size_t(cout) * np, 0.0f);
  gemm::GemmCall c;
  c.M = cout; c.N = static_cast<int>(np); c.K = kdim;
  c.A = weight.value.data(); c.lda = kdim;
  c.B = col_.data(); c.ldb = static_cast<int>(np);
  c.C = ytmp_.data(); c.ldc = static_cast<int>(np);
  c.sparse = gemm::SparseOperand::B;
  ctx.gemm->run(id, GemmPass::Forward, c);
  Tensor y(x.n, cout, oh, ow);
#pragma omp parallel for collapse(2) schedule(static)
  for (int n = 0; n < x.n; ++n)
    for (int co = 0; co < cout; ++co) {
      const float b = has_bias ? bias.value[co] : 0.0f;
      const float* src = ytmp_.data() + std::size_t(co) * np + std::size_t(n) * p;
      float* dst = y.data() + (std::size_t(n) * cout + co) * p;
      for (int i = 0; i < p; ++i) dst[i] = src[i] + b;
    }
  return y;
}

Tensor Conv2d::backward(const Tensor& dy, Context& ctx) {
  const int p = yshape_.h * yshape_.w, kdim = cin * k * k;
  const std::ptrdiff_t np = std::ptrdiff_t(dy.n) * p;
  // Gather dY into Cout x (N*P), the GEMM layout (reuses ytmp_).
#pragma omp parallel for collapse(2) schedule(static)
  for (int n = 0; n < dy.n; ++n)
    for (int co = 0; co < cout; ++co) {
      const float* src = dy.data() + (std::size_t(n) * cout + co) * p;
      float* dst = ytmp_.data() + std::size_t(co) * np + std::size_t(n) * p;
      for (int i = 0; i < p; ++i) dst[i] = src[i];
    }
  if (has_bias) {
#pragma omp parallel for schedule(static)
    for (int co = 0; co < cout; ++co) {
      double s = 0;
      const float* row = ytmp_.data() + std::size_t(co) * np;
      for (std::ptrdiff_t i = 0; i < np; ++i) s += row[i];
      bias.grad[co] = static_cast<float>(s);
    }
  }
  gemm::GemmCall cw;  // dW = dY * col^T
  cw.op_b = gemm::Op::T;
  cw.M = cout; cw.N = kdim; cw.K = static_cast<int>(np);
  cw.A = ytmp_.data(); cw.lda = static_cast<int>(np);
  cw.B = col_.data(); cw.ldb = static_cast<int>(np);
  cw.C = weight.grad.data(); cw.ldc = kdim;
  cw.sparse = gemm::SparseOperand::B;
  ctx.gemm->run(id, GemmPass::BackwardWeight, cw);

  gemm::GemmCall cd;  // dcol = W^T * dY (col_ is reused as dcol)
  cd.op_a = gemm::Op::T;
  cd.M = kdim; cd.N = static_cast<int>(np); cd.K = cout;
  cd.A = weight.value.data(); cd.lda = kdim;
  cd.B = ytmp_.data(); cd.ldb = static_cast<int>(np);
  cd.C = col_.data(); cd.ldc = static_cast<int>(np);
  cd.sparse = gemm::SparseOperand::B;
  ctx.gemm->run(id, GemmPass::BackwardData, cd);

  Tensor dx(x_.n, x_.c, x_.h, x_.w);
  const int oh = yshape_.h, ow = yshape_.w;
  // col2im: each (n, ci) plane is written by one thread (rows r of the same ci go together).
#pragma omp parallel for collapse(2) schedule(static)
  for (int n = 0; n < dx.n; ++n)
    for (int ci = 0; ci < cin; ++ci) {
      float* dst = dx.data() + (std::size_t(n) * cin + ci) * x_.h * x_.w;
      for (int kk = 0; kk < k * k; ++kk) {
        const int ki = kk / k, kj = kk % k, r = ci * k * k + kk;
        const float* src = col_.data() + std::size_t(r) * np + std::size_t(n) * p;
        for (int oy = 0; oy < oh; ++oy) {
          const int iy = oy * stride - pad + ki;
          if (iy < 0 || iy >= x_.h) continue;
          for (int ox = 0; ox < ow; ++ox) {
            const int ix = ox * stride - pad + kj;
            if (ix >= 0 && ix < x_.w) dst[iy * x_.w + ix] += src[oy * ow + ox];
          }
        }
      }
    }
  return dx;
}

Linear::Linear(int in_, int out_, std::mt19937_64& rng)
    : in(in_), out(out_), weight("weight", std::size_t(in_) * out_), bias("bias", out_, false) {
  he_normal(weight.value, in, rng);
}

std::string Linear::describe() const { return "fc " + std::to_string(in) + "->" + std::to_string(out); }

GemmShape Linear::shape(GemmPass p) const {
  const int b = yshape_.n;
  switch (p) {
    case GemmPass::Forward: return {b, out, in};
    case GemmPass::BackwardData: return {b, in, out};
    case GemmPass::BackwardWeight: return {out, in, b};
  }
  return {};
}

Tensor Linear::forward(const Tensor& x, Context& ctx) {
  if (static_cast<int>(x.per_sample()) != in)
    throw InputError("fc: input " + x.shape_str() + " has " + std::to_string(x.per_sample()) + " features, layer expects " +
                     std::to_string(in));
  x_ = x;
  Tensor y(x.n, out, 1, 1);
  yshape_ = Tensor();
  yshape_.n = x.n; yshape_.c = out; yshape_.h = 1; yshape_.w = 1;
  gemm::GemmCall c;
  c.op_b = gemm::Op::T;
  c.M = x.n; c.N = out; c.K = in;
  c.A = x.data(); c.lda = in;
  c.B = weight.value.data(); c.ldb = in;
  c.C = y.data(); c.ldc = out;
  c.sparse = gemm::SparseOperand::A;
  ctx.gemm->run(id, GemmPass::Forward, c);
  for (int n = 0; n < x.n; ++n)
    for (int o = 0; o < out; ++o) y.v[std::size_t(n) * out + o] += bias.value[o];
  return y;
}

Tensor Linear::backward(const Tensor& dy, Context& ctx) {
  for (int o = 0; o < out; ++o) {
    double s = 0;
    for (int n = 0; n < dy.n; ++n) s += dy.v[std::size_t(n) * out + o];
    bias.grad[o] = static_cast<float>(s);
  }
  gemm::GemmCall cw;  // dW[out x in] = dy^T * x
  cw.op_a = gemm::Op::T;
  cw.M = out; cw.N = in; cw.K = dy.n;
  cw.A = dy.data(); cw.lda = out;
  cw.B = x_.data(); cw.ldb = in;
  cw.C = weight.grad.data(); cw.ldc = in;
  cw.sparse = gemm::SparseOperand::B;
  ctx.gemm->run(id, GemmPass::BackwardWeight, cw);
  Tensor dx(x_.n, x_.c, x_.h, x_.w);
  gemm::GemmCall cd;  // dx[N x in] = dy * W
  cd.M = dy.n; cd.N = in; cd.K = out;
  cd.A = dy.data(); cd.lda = out;
  cd.B = weight.value.data(); cd.ldb = in;
  cd.C = dx.data(); cd.ldc = in;
  cd.sparse = gemm::SparseOperand::A;
  ctx.gemm->run(id, GemmPass::BackwardData, cd);
  return dx;
}

}  // namespace spartan::train
