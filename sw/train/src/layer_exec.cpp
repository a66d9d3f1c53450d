// The device-resident (executor) path of every layer: the same computation as the CPU layers (conv2d.cpp,
// simple_layers.cpp, basic_block.cpp), with tensors and parameters in executor memory and the non-GEMM work as
// executor operations (executor.h). GEMM calls are the CPU path's, with executor pointers.
#include "spartan/common/error.h"
#include "spartan/train/layer.h"
#include "spartan/train/model.h"

namespace spartan::train {

namespace {

float* bptr(const std::shared_ptr<Buffer>& b, const char* what) {
  if (!b) throw Error(std::string("executor path: ") + what + " is not in executor memory (Model::to_exec not called?)");
  return b->as<float>();
}

/// Scratch of at least `bytes` in `ex`'s memory (reallocated when too small or made by another executor).
void ensure(Executor& ex, std::shared_ptr<Buffer>& b, std::size_t bytes) {
  if (!b || b->bytes() < bytes || b->owner() != &ex) b = ex.alloc(bytes);
}

/// A buffer that backward needs from the last forward on this executor.
float* saved(const std::shared_ptr<Buffer>& b, const Executor& ex, const char* layer) {
  if (!b || b->owner() != &ex)
    throw Error(std::string(layer) + ": backward without a forward on this executor");
  return b->as<float>();
}

template <class Vec>  // std::vector<float> or AlignedVector<float>
void upload_vec(Executor& ex, std::shared_ptr<Buffer>& b, const Vec& v) {
  b = ex.alloc(v.size() * sizeof(float));
  ex.upload(b->ptr(), v.data(), v.size() * sizeof(float));
}

template <class Vec>
void download_vec(Executor& ex, const std::shared_ptr<Buffer>& b, Vec& v) {
  if (b) ex.download(v.data(), b->ptr(), v.size() * sizeof(float));
}

gemm::GemmCall exec_call(const Executor& ex) {
  gemm::GemmCall c;
  c.device_pointers = ex.device_pointers();
  return c;
}

Tensor like(Executor& ex, const Tensor& t) { return exec_tensor(ex, t.n, t.c, t.h, t.w); }

}  // namespace

Tensor exec_tensor(Executor& ex, int n, int c, int h, int w) {
  Tensor t;
  t.n = n, t.c = c, t.h = h, t.w = w;
  t.buf = ex.alloc(t.count() * sizeof(float));
  return t;
}

float* exec_ptr(const Tensor& t) {
  if (!t.buf) throw Error("executor path: tensor " + t.shape_str() + " is not in executor memory");
  return t.buf->as<float>();
}

Tensor upload_tensor(Executor& ex, const Tensor& host) {
  Tensor t = like(ex, host);
  ex.upload(t.buf->ptr(), host.data(), host.numel() * sizeof(float));
  return t;
}

void fetch_host(Executor& ex, Tensor& t) {
  t.v.resize(t.count());
  ex.download(t.v.data(), exec_ptr(t), t.count() * sizeof(float));
}

void Layer::to_exec(Executor& ex) {
  for (Param* p : params()) {
    upload_vec(ex, p->d_value, p->value);
    upload_vec(ex, p->d_velocity, p->velocity);
    p->d_grad = ex.alloc(p->grad.size() * sizeof(float));
    ex.fill_zero(p->d_grad->ptr(), p->grad.size() * sizeof(float));
  }
}

void Layer::from_exec(Executor& ex) {
  for (Param* p : params()) {
    download_vec(ex, p->d_value, p->value);
    download_vec(ex, p->d_grad, p->grad);
    download_vec(ex, p->d_velocity, p->velocity);
  }
}

void Model::to_exec(Executor& ex) {
  for (auto& l : layers_) l->to_exec(ex);
}

void Model::from_exec(Executor& ex) {
  for (auto& l : layers_) l->from_exec(ex);
}

// ------------------------------------------------------------------------------------------------ conv / fc

Tensor Conv2d::forward_exec(const Tensor& x, Context& ctx) {
  Executor& ex = *ctx.exec;
  begin_forward(x);
  const int oh = yshape_.h, ow = yshape_.w;
  const hd::ConvGeom g{x.n, cin, x.h, x.w, k, stride, pad, oh, ow};
  const int kdim = g.kdim(), p = g.p();
  const std::int64_t np = g.np();
  ensure(ex, d_col_, std::size_t(kdim) * np * sizeof(float));
  ex.im2col(exec_ptr(x), g, d_col_->as<float>());
  ensure(ex, d_ytmp_, std::size_t(cout) * np * sizeof(float));
  gemm::GemmCall c = exec_call(ex);  // Y^T[N*P x Cout] = col^T[N*P x kdim] * W^T[kdim x Cout]
  c.op_a = gemm::Op::T;
  c.op_b = gemm::Op::T;
  c.M = static_cast<int>(np); c.N = cout; c.K = kdim;
  c.A = d_col_->as<float>(); c.lda = static_cast<int>(np);
  c.B = bptr(weight.d_value, "conv weight"); c.ldb = kdim;
  c.C = d_ytmp_->as<float>(); c.ldc = cout;
  c.sparse = gemm::SparseOperand::A;
  ctx.gemm->run(id, GemmPass::Forward, c);
  Tensor y = exec_tensor(ex, x.n, cout, oh, ow);
  ex.conv_out(d_ytmp_->as<float>(), has_bias ? bptr(bias.d_value, "conv bias") : nullptr, x.n, cout, p, exec_ptr(y));
  return y;
}

Tensor Conv2d::backward_exec(const Tensor& dy, Context& ctx) {
  Executor& ex = *ctx.exec;
  note_bwd_operand(dy, ctx);
  const hd::ConvGeom g{x_.n, cin, x_.h, x_.w, k, stride, pad, yshape_.h, yshape_.w};
  const int p = g.p(), kdim = g.kdim();
  const std::int64_t np = g.np();
  float* dyt = saved(d_ytmp_, ex, "conv");  // dY as (N*P) x Cout
  saved(d_col_, ex, "conv");
  ex.conv_dyt(exec_ptr(dy), dy.n, cout, p, dyt);
  if (has_bias) ex.channel_sum(dyt, static_cast<int>(np), cout, 1, bptr(bias.d_grad, "conv bias gradient"));
  ensure(ex, d_dwt_, std::size_t(kdim) * cout * sizeof(float));
  gemm::GemmCall cw = exec_call(ex);  // dW^T[kdim x Cout] = col[kdim x N*P] * dY[N*P x Cout]
  cw.M = kdim; cw.N = cout; cw.K = static_cast<int>(np);
  cw.A = d_col_->as<float>(); cw.lda = static_cast<int>(np);
  cw.B = dyt; cw.ldb = cout;
  cw.C = d_dwt_->as<float>(); cw.ldc = cout;
  cw.sparse = gemm::SparseOperand::A;
  ctx.gemm->run(id, GemmPass::BackwardWeight, cw);
  ex.transpose(d_dwt_->as<float>(), kdim, cout, bptr(weight.d_grad, "conv weight gradient"));

  gemm::GemmCall cd = exec_call(ex);  // dcol^T[N*P x kdim] = dY[N*P x Cout] * W[Cout x kdim]; col reused
  cd.M = static_cast<int>(np); cd.N = kdim; cd.K = cout;
  cd.A = dyt; cd.lda = cout;
  cd.B = bptr(weight.d_value, "conv weight"); cd.ldb = kdim;
  cd.C = d_col_->as<float>(); cd.ldc = kdim;
  cd.sparse = gemm::SparseOperand::A;
  ctx.gemm->run(id, GemmPass::BackwardData, cd);
  Tensor dx = like(ex, x_);
  ex.col2im(d_col_->as<float>(), g, exec_ptr(dx));
  return dx;
}

Tensor Linear::forward_exec(const Tensor& x, Context& ctx) {
  Executor& ex = *ctx.exec;
  if (static_cast<int>(x.per_sample()) != in)
    throw InputError("fc: input " + x.shape_str() + " has " + std::to_string(x.per_sample()) + " features, layer expects " +
                     std::to_string(in));
  x_ = x;
  yshape_ = Tensor();
  yshape_.n = x.n; yshape_.c = out; yshape_.h = 1; yshape_.w = 1;
  Tensor y = exec_tensor(ex, x.n, out, 1, 1);
  gemm::GemmCall c = exec_call(ex);
  c.op_b = gemm::Op::T;
  c.M = x.n; c.N = out; c.K = in;
  c.A = exec_ptr(x); c.lda = in;
  c.B = bptr(weight.d_value, "fc weight"); c.ldb = in;
  c.C = exec_ptr(y); c.ldc = out;
  c.sparse = gemm::SparseOperand::A;
  ctx.gemm->run(id, GemmPass::Forward, c);
  ex.add_row_bias(exec_ptr(y), bptr(bias.d_value, "fc bias"), x.n, out);
  return y;
}

Tensor Linear::backward_exec(const Tensor& dy, Context& ctx) {
  Executor& ex = *ctx.exec;
  note_bwd_operand(dy, ctx);
  ex.channel_sum(exec_ptr(dy), dy.n, out, 1, bptr(bias.d_grad, "fc bias gradient"));
  ensure(ex, d_dwt_, std::size_t(in) * out * sizeof(float));
  gemm::GemmCall cw = exec_call(ex);  // dW^T[in x out] = x^T[in x N] * dy[N x out]
  cw.op_a = gemm::Op::T;
  cw.M = in; cw.N = out; cw.K = dy.n;
  cw.A = exec_ptr(x_); cw.lda = in;
  cw.B = exec_ptr(dy); cw.ldb = out;
  cw.C = d_dwt_->as<float>(); cw.ldc = out;
  cw.sparse = gemm::SparseOperand::A;
  ctx.gemm->run(id, GemmPass::BackwardWeight, cw);
  ex.transpose(d_dwt_->as<float>(), in, out, bptr(weight.d_grad, "fc weight gradient"));
  Tensor dx = like(ex, x_);
  gemm::GemmCall cd = exec_call(ex);  // dx[N x in] = dy * W
  cd.M = dy.n; cd.N = in; cd.K = out;
  cd.A = exec_ptr(dy); cd.lda = out;
  cd.B = bptr(weight.d_value, "fc weight"); cd.ldb = in;
  cd.C = exec_ptr(dx); cd.ldc = in;
  cd.sparse = gemm::SparseOperand::A;
  ctx.gemm->run(id, GemmPass::BackwardData, cd);
  return dx;
}

// ------------------------------------------------------------------------------------------ element-wise

Tensor ReLU::forward_exec(const Tensor& x, Context& ctx) {
  Tensor y = like(*ctx.exec, x);
  ctx.exec->relu_fwd(exec_ptr(x), exec_ptr(y), x.count());
  y_ = y;
  return y;
}

Tensor ReLU::backward_exec(const Tensor& dy, Context& ctx) {
  Tensor dx = like(*ctx.exec, dy);
  ctx.exec->relu_bwd(exec_ptr(dy), exec_ptr(y_), exec_ptr(dx), dy.count());
  return dx;
}

Tensor MaxPool2d::forward_exec(const Tensor& x, Context& ctx) {
  Executor& ex = *ctx.exec;
  const int oh = window_output_size(x.h, k_, s_), ow = window_output_size(x.w, k_, s_);
  if (oh <= 0 || ow <= 0) throw InputError("maxpool: input " + x.shape_str() + " too small for " + describe());
  xshape_ = Tensor();
  xshape_.n = x.n; xshape_.c = x.c; xshape_.h = x.h; xshape_.w = x.w;
  Tensor y = exec_tensor(ex, x.n, x.c, oh, ow);
  ensure(ex, d_argmax_, y.count() * sizeof(std::int32_t));
  ex.maxpool_fwd(exec_ptr(x), x.n * x.c, x.h, x.w, k_, s_, oh, ow, exec_ptr(y), d_argmax_->as<std::int32_t>());
  return y;
}

Tensor MaxPool2d::backward_exec(const Tensor& dy, Context& ctx) {
  Tensor dx = like(*ctx.exec, xshape_);
  saved(d_argmax_, *ctx.exec, "maxpool");
  ctx.exec->maxpool_bwd(exec_ptr(dy), d_argmax_->as<std::int32_t>(), dy.n * dy.c, xshape_.h, xshape_.w, k_, s_, dy.h,
                        dy.w, exec_ptr(dx));
  return dx;
}

Tensor GlobalAvgPool::forward_exec(const Tensor& x, Context& ctx) {
  xshape_ = Tensor();
  xshape_.n = x.n; xshape_.c = x.c; xshape_.h = x.h; xshape_.w = x.w;
  Tensor y = exec_tensor(*ctx.exec, x.n, x.c, 1, 1);
  ctx.exec->gap_fwd(exec_ptr(x), x.n * x.c, x.h * x.w, exec_ptr(y));
  return y;
}

Tensor GlobalAvgPool::backward_exec(const Tensor& dy, Context& ctx) {
  Tensor dx = like(*ctx.exec, xshape_);
  ctx.exec->gap_bwd(exec_ptr(dy), dy.n * dy.c, xshape_.h * xshape_.w, exec_ptr(dx));
  return dx;
}

Tensor Dropout::forward_exec(const Tensor& x, Context& ctx) {
  if (!ctx.training || p_ <= 0.0f) {
    scale_.clear();
    return x;
  }
  if (!ctx.rng) throw InputError("dropout: no random generator in the context");
  // The mask is drawn on the host exactly as the CPU path draws it, then uploaded.
  scale_.resize(x.count());
  std::bernoulli_distribution keep(1.0 - p_);
  const float s = 1.0f / (1.0f - p_);
  for (std::size_t i = 0; i < scale_.size(); ++i) scale_[i] = keep(*ctx.rng) ? s : 0.0f;
  Executor& ex = *ctx.exec;
  ensure(ex, d_scale_, scale_.size() * sizeof(float));
  ex.upload(d_scale_->ptr(), scale_.data(), scale_.size() * sizeof(float));
  Tensor y = like(ex, x);
  ex.mul(exec_ptr(x), d_scale_->as<float>(), exec_ptr(y), x.count());
  return y;
}

Tensor Dropout::backward_exec(const Tensor& dy, Context& ctx) {
  if (scale_.empty()) return dy;
  Tensor dx = like(*ctx.exec, dy);
  ctx.exec->mul(exec_ptr(dy), d_scale_->as<float>(), exec_ptr(dx), dy.count());
  return dx;
}

// ------------------------------------------------------------------------------------------- batch norm

void BatchNorm::to_exec(Executor& ex) {
  Layer::to_exec(ex);
  upload_vec(ex, d_running_mean_, running_mean);
  upload_vec(ex, d_running_var_, running_var);
}

void BatchNorm::from_exec(Executor& ex) {
  Layer::from_exec(ex);
  download_vec(ex, d_running_mean_, running_mean);
  download_vec(ex, d_running_var_, running_var);
}

Tensor BatchNorm::forward_exec(const Tensor& x, Context& ctx) {
  Executor& ex = *ctx.exec;
  if (x.c != c_) throw InputError("batchnorm: input has " + std::to_string(x.c) + " channels, expected " + std::to_string(c_));
  Tensor y = like(ex, x);
  xhat_ = like(ex, x);
  ensure(ex, d_inv_std_, std::size_t(c_) * sizeof(float));
  ensure(ex, d_scratch_, 2 * std::size_t(c_) * sizeof(double));
  ex.bn_fwd(exec_ptr(x), x.n, c_, x.h * x.w, bptr(gamma.d_value, "batchnorm gamma"), bptr(beta.d_value, "batchnorm beta"),
            bptr(d_running_mean_, "batchnorm running mean"), bptr(d_running_var_, "batchnorm running variance"),
            ctx.training, momentum_, eps_, exec_ptr(y), exec_ptr(xhat_), d_inv_std_->as<float>(),
            d_scratch_->as<double>());
  return y;
}

Tensor BatchNorm::backward_exec(const Tensor& dy, Context& ctx) {
  Executor& ex = *ctx.exec;
  Tensor dx = like(ex, dy);
  saved(d_scratch_, ex, "batchnorm");  // throws on backward without a forward (d_scratch_ null) before it is used
  ex.bn_bwd(exec_ptr(dy), exec_ptr(xhat_), bptr(gamma.d_value, "batchnorm gamma"), saved(d_inv_std_, ex, "batchnorm"), dy.n, c_,
            dy.h * dy.w, ctx.training, exec_ptr(dx), bptr(gamma.d_grad, "batchnorm gamma gradient"),
            bptr(beta.d_grad, "batchnorm beta gradient"), d_scratch_->as<double>());
  return dx;
}

// ------------------------------------------------------------------------------------------ basic block

void BasicBlock::to_exec(Executor& ex) {
  for (Layer* l : std::initializer_list<Layer*>{conv1_.get(), bn1_.get(), conv2_.get(), bn2_.get(), proj_.get(), proj_bn_.get()})
    if (l) l->to_exec(ex);
}

void BasicBlock::from_exec(Executor& ex) {
  for (Layer* l : std::initializer_list<Layer*>{conv1_.get(), bn1_.get(), conv2_.get(), bn2_.get(), proj_.get(), proj_bn_.get()})
    if (l) l->from_exec(ex);
}

Tensor BasicBlock::forward_exec(const Tensor& x, Context& ctx) {
  Tensor h = relu1_.forward(bn1_->forward(conv1_->forward(x, ctx), ctx), ctx);
  const Tensor y = bn2_->forward(conv2_->forward(h, ctx), ctx);
  const Tensor s = proj_ ? proj_bn_->forward(proj_->forward(x, ctx), ctx) : x;
  Tensor sum = like(*ctx.exec, y);
  ctx.exec->add(exec_ptr(y), exec_ptr(s), exec_ptr(sum), y.count());
  return relu_out_.forward(sum, ctx);
}

Tensor BasicBlock::backward_exec(const Tensor& dy, Context& ctx) {
  const Tensor dsum = relu_out_.backward(dy, ctx);
  const Tensor dx = conv1_->backward(bn1_->backward(relu1_.backward(conv2_->backward(bn2_->backward(dsum, ctx), ctx), ctx), ctx), ctx);
  const Tensor ds = proj_ ? proj_->backward(proj_bn_->backward(dsum, ctx), ctx) : dsum;
  Tensor out = like(*ctx.exec, dx);
  ctx.exec->add(exec_ptr(dx), exec_ptr(ds), exec_ptr(out), dx.count());
  return out;
}

// ------------------------------------------------------------------------------------------------- loss

double softmax_cross_entropy_exec(Executor& ex, const Tensor& logits, const std::int32_t* labels, Tensor& dlogits,
                                  int* correct) {
  dlogits = like(ex, logits);
  return ex.softmax_xent(exec_ptr(logits), labels, logits.n, static_cast<int>(logits.per_sample()), exec_ptr(dlogits),
                         correct);
}

}  // namespace spartan::train

namespace spartan::train {
void Conv2d::fetch_input(Executor& ex) { fetch_host(ex, x_); }
void Linear::fetch_input(Executor& ex) { fetch_host(ex, x_); }
}  // namespace spartan::train
