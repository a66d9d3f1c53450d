#include <cmath>

#include "spartan/common/error.h"
#include "spartan/train/layer.h"
#include "spartan/train/threads.h"

namespace spartan::train {

namespace {

void he_normal(AlignedVector<float>& w, int fan_in, std::mt19937_64& rng) {
  std::normal_distribution<float> dist(0.0f, std::sqrt(2.0f / static_cast<float>(fan_in)));
  for (float& v : w) v = dist(rng);
}

}  // namespace

void GemmLayer::note_bwd_operand(const Tensor& dy, Context& ctx) {
  bwd_mask_.clear();
  bwd_density_ = 1.0;
  if (!next_relu) return;
  const std::size_t n = dy.count();
  if (!ctx.keep_bwd_operand_mask) {  // density only: counted where dY lives
    if (n == 0) return;
    const double zeros = ctx.exec ? static_cast<double>(ctx.exec->count_zeros(exec_ptr(dy), n))
                                  : zero_fraction(dy.data(), n) * static_cast<double>(n);
    bwd_density_ = 1.0 - zeros / static_cast<double>(n);
    return;
  }
  Tensor host;
  const Tensor* t = &dy;
  if (ctx.exec) {  // capture step: dY comes down to the host
    host = dy;
    fetch_host(*ctx.exec, host);
    t = &host;
  }
  bwd_mask_.resize(n);
  std::size_t nz = 0;
  for (std::size_t i = 0; i < n; ++i) nz += bwd_mask_[i] = t->v[i] != 0.0f;
  if (n) bwd_density_ = static_cast<double>(nz) / static_cast<double>(n);
}

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
    case GemmPass::Forward: return {np, cout, kdim};
    case GemmPass::BackwardData: return {np, kdim, cout};
    case GemmPass::BackwardWeight: return {kdim, cout, np};
  }
  return {};
}

void Conv2d::begin_forward(const Tensor& x) {
  if (x.c != cin) throw InputError("conv: input has " + std::to_string(x.c) + " channels, layer expects " + std::to_string(cin));
  const int oh = window_output_size(x.h, k, stride, pad), ow = window_output_size(x.w, k, stride, pad);
  if (oh <= 0 || ow <= 0) throw InputError("conv: input " + x.shape_str() + " too small for " + describe());
  x_ = x;
  yshape_ = Tensor();
  yshape_.n = x.n; yshape_.c = cout; yshape_.h = oh; yshape_.w = ow;
}

Tensor Conv2d::forward(const Tensor& x, Context& ctx) {
  if (ctx.exec) return forward_exec(x, ctx);
  begin_forward(x);
  const int oh = yshape_.h, ow = yshape_.w;
  const int kdim = cin * k * k, p = oh * ow;
  const std::ptrdiff_t np = std::ptrdiff_t(x.n) * p;
  col_.assign(std::size_t(kdim) * np, 0.0f);
  // im2col, stored kdim x (N*P): row r = (ci, ki, kj), column (n, oy, ox).
#pragma omp parallel for collapse(2) schedule(static) if (parallel_worth(col_.size()))
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
  gemm::GemmCall c;  // Y^T[N*P x Cout] = col^T[N*P x kdim] * W^T[kdim x Cout]
  c.op_a = gemm::Op::T;
  c.op_b = gemm::Op::T;
  c.M = static_cast<int>(np); c.N = cout; c.K = kdim;
  c.A = col_.data(); c.lda = static_cast<int>(np);
  c.B = weight.value.data(); c.ldb = kdim;
  c.C = ytmp_.data(); c.ldc = cout;
  c.sparse = gemm::SparseOperand::A;
  ctx.gemm->run(id, GemmPass::Forward, c);
  Tensor y(x.n, cout, oh, ow);
#pragma omp parallel for schedule(static) if (parallel_worth(y.numel()))
  for (int n = 0; n < x.n; ++n)
    for (int i = 0; i < p; ++i) {
      const float* src = ytmp_.data() + (std::size_t(n) * p + i) * cout;
      float* dst = y.data() + std::size_t(n) * cout * p + i;
      for (int co = 0; co < cout; ++co) dst[std::size_t(co) * p] = src[co] + (has_bias ? bias.value[co] : 0.0f);
    }
  return y;
}

Tensor Conv2d::backward(const Tensor& dy, Context& ctx) {
  if (ctx.exec) return backward_exec(dy, ctx);
  note_bwd_operand(dy, ctx);
  const int p = yshape_.h * yshape_.w, kdim = cin * k * k;
  const std::ptrdiff_t np = std::ptrdiff_t(dy.n) * p;
  // dY as (N*P) x Cout, one row per output pixel (reuses ytmp_).
#pragma omp parallel for schedule(static) if (parallel_worth(dy.numel()))
  for (int n = 0; n < dy.n; ++n)
    for (int i = 0; i < p; ++i) {
      float* dst = ytmp_.data() + (std::size_t(n) * p + i) * cout;
      const float* src = dy.data() + std::size_t(n) * cout * p + i;
      for (int co = 0; co < cout; ++co) dst[co] = src[std::size_t(co) * p];
    }
  if (has_bias) {
    std::vector<double> s(cout, 0.0);
    for (std::ptrdiff_t i = 0; i < np; ++i)
      for (int co = 0; co < cout; ++co) s[co] += ytmp_[std::size_t(i) * cout + co];
    for (int co = 0; co < cout; ++co) bias.grad[co] = static_cast<float>(s[co]);
  }
  dwt_.assign(std::size_t(kdim) * cout, 0.0f);
  gemm::GemmCall cw;  // dW^T[kdim x Cout] = col[kdim x N*P] * dY[N*P x Cout]
  cw.M = kdim; cw.N = cout; cw.K = static_cast<int>(np);
  cw.A = col_.data(); cw.lda = static_cast<int>(np);
  cw.B = ytmp_.data(); cw.ldb = cout;
  cw.C = dwt_.data(); cw.ldc = cout;
  cw.sparse = gemm::SparseOperand::A;
  ctx.gemm->run(id, GemmPass::BackwardWeight, cw);
  for (int co = 0; co < cout; ++co)
    for (int r = 0; r < kdim; ++r) weight.grad[std::size_t(co) * kdim + r] = dwt_[std::size_t(r) * cout + co];

  gemm::GemmCall cd;  // dcol^T[N*P x kdim] = dY[N*P x Cout] * W[Cout x kdim]; col_ is reused for it
  cd.M = static_cast<int>(np); cd.N = kdim; cd.K = cout;
  cd.A = ytmp_.data(); cd.lda = cout;
  cd.B = weight.value.data(); cd.ldb = kdim;
  cd.C = col_.data(); cd.ldc = kdim;
  cd.sparse = gemm::SparseOperand::A;
  ctx.gemm->run(id, GemmPass::BackwardData, cd);

  Tensor dx(x_.n, x_.c, x_.h, x_.w);
  const int oh = yshape_.h, ow = yshape_.w;
  // col2im: each (n, ci) plane is written by one thread.
#pragma omp parallel for collapse(2) schedule(static) if (parallel_worth(std::size_t(np) * kdim))
  for (int n = 0; n < dx.n; ++n)
    for (int ci = 0; ci < cin; ++ci) {
      float* dst = dx.data() + (std::size_t(n) * cin + ci) * x_.h * x_.w;
      for (int kk = 0; kk < k * k; ++kk) {
        const int ki = kk / k, kj = kk % k, r = ci * k * k + kk;
        const float* src = col_.data() + std::size_t(n) * p * kdim + r;
        for (int oy = 0; oy < oh; ++oy) {
          const int iy = oy * stride - pad + ki;
          if (iy < 0 || iy >= x_.h) continue;
          for (int ox = 0; ox < ow; ++ox) {
            const int ix = ox * stride - pad + kj;
            if (ix >= 0 && ix < x_.w) dst[iy * x_.w + ix] += src[std::size_t(oy * ow + ox) * kdim];
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
    case GemmPass::BackwardWeight: return {in, out, b};
  }
  return {};
}

Tensor Linear::forward(const Tensor& x, Context& ctx) {
  if (ctx.exec) return forward_exec(x, ctx);
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
  if (ctx.exec) return backward_exec(dy, ctx);
  note_bwd_operand(dy, ctx);
  for (int o = 0; o < out; ++o) {
    double s = 0;
    for (int n = 0; n < dy.n; ++n) s += dy.v[std::size_t(n) * out + o];
    bias.grad[o] = static_cast<float>(s);
  }
  AlignedVector<float> dwt(std::size_t(in) * out);
  gemm::GemmCall cw;  // dW^T[in x out] = x^T[in x N] * dy[N x out]
  cw.op_a = gemm::Op::T;
  cw.M = in; cw.N = out; cw.K = dy.n;
  cw.A = x_.data(); cw.lda = in;
  cw.B = dy.data(); cw.ldb = out;
  cw.C = dwt.data(); cw.ldc = out;
  cw.sparse = gemm::SparseOperand::A;
  ctx.gemm->run(id, GemmPass::BackwardWeight, cw);
  for (int o = 0; o < out; ++o)
    for (int i = 0; i < in; ++i) weight.grad[std::size_t(o) * in + i] = dwt[std::size_t(i) * out + o];
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
