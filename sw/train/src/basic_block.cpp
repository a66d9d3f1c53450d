#include "spartan/train/layer.h"

namespace spartan::train {

BasicBlock::BasicBlock(int cin, int cout, int stride, std::mt19937_64& rng)
    : conv1_(std::make_unique<Conv2d>(cin, cout, 3, stride, 1, false, rng)),
      conv2_(std::make_unique<Conv2d>(cout, cout, 3, 1, 1, false, rng)),
      bn1_(std::make_unique<BatchNorm>(cout)), bn2_(std::make_unique<BatchNorm>(cout)) {
  if (stride != 1 || cin != cout) {
    proj_ = std::make_unique<Conv2d>(cin, cout, 1, stride, 0, false, rng);
    proj_bn_ = std::make_unique<BatchNorm>(cout);
  }
  conv1_->next_relu = &relu1_;
  conv2_->next_relu = &relu_out_;
  if (proj_) proj_->next_relu = &relu_out_;
}

std::vector<Param*> BasicBlock::params() {
  std::vector<Param*> out;
  for (Layer* l : std::initializer_list<Layer*>{conv1_.get(), bn1_.get(), conv2_.get(), bn2_.get(), proj_.get(), proj_bn_.get()})
    if (l)
      for (Param* p : l->params()) out.push_back(p);
  return out;
}

std::string BasicBlock::describe() const {
  return "basic-block " + std::to_string(conv1_->cin) + "->" + std::to_string(conv1_->cout) + " s" +
         std::to_string(conv1_->stride) + (proj_ ? " (projection shortcut)" : " (identity shortcut)");
}

void BasicBlock::gemm_layers(std::vector<GemmLayer*>& out) {
  out.push_back(conv1_.get());
  out.push_back(conv2_.get());
  if (proj_) out.push_back(proj_.get());
}

Tensor BasicBlock::forward(const Tensor& x, Context& ctx) {
  if (ctx.exec) return forward_exec(x, ctx);
  Tensor h = relu1_.forward(bn1_->forward(conv1_->forward(x, ctx), ctx), ctx);
  Tensor y = bn2_->forward(conv2_->forward(h, ctx), ctx);
  if (proj_) {
    const Tensor s = proj_bn_->forward(proj_->forward(x, ctx), ctx);
    for (std::size_t i = 0; i < y.numel(); ++i) y.v[i] += s.v[i];
  } else {
    for (std::size_t i = 0; i < y.numel(); ++i) y.v[i] += x.v[i];
  }
  return relu_out_.forward(y, ctx);
}

Tensor BasicBlock::backward(const Tensor& dy, Context& ctx) {
  if (ctx.exec) return backward_exec(dy, ctx);
  const Tensor dsum = relu_out_.backward(dy, ctx);
  Tensor dx = conv1_->backward(bn1_->backward(relu1_.backward(conv2_->backward(bn2_->backward(dsum, ctx), ctx), ctx), ctx), ctx);
  if (proj_) {
    const Tensor ds = proj_->backward(proj_bn_->backward(dsum, ctx), ctx);
    for (std::size_t i = 0; i < dx.numel(); ++i) dx.v[i] += ds.v[i];
  } else {
    for (std::size_t i = 0; i < dx.numel(); ++i) dx.v[i] += dsum.v[i];
  }
  return dx;
}

}  // namespace spartan::train
