#include "spartan/train/model.h"

#include <cmath>

#include "spartan/common/error.h"

namespace spartan::train {

void Model::add(std::unique_ptr<Layer> layer) {
  Layer* l = layer.get();
  layers_.push_back(std::move(layer));
  std::vector<GemmLayer*> g;
  l->gemm_layers(g);
  for (GemmLayer* gl : g) {
    gl->id = static_cast<int>(gemm_layers_.size());
    gemm_layers_.push_back(gl);
  }
  if (auto* gl = dynamic_cast<GemmLayer*>(l)) {
    pending_ = gl;
  } else if (auto* r = dynamic_cast<ReLU*>(l)) {
    if (pending_) pending_->next_relu = r;
    pending_ = nullptr;
  } else if (!dynamic_cast<BatchNorm*>(l)) {
    pending_ = nullptr;
  }
}

Tensor Model::forward(const Tensor& x, Context& ctx) {
  Tensor t = x;
  for (auto& l : layers_) t = l->forward(t, ctx);
  return t;
}

Tensor Model::backward(const Tensor& dy, Context& ctx) {
  Tensor t = dy;
  for (auto it = layers_.rbegin(); it != layers_.rend(); ++it) t = (*it)->backward(t, ctx);
  return t;
}

std::vector<Param*> Model::params() {
  std::vector<Param*> out;
  for (auto& l : layers_)
    for (Param* p : l->params()) out.push_back(p);
  return out;
}

std::size_t Model::num_parameters() {
  std::size_t n = 0;
  for (Param* p : params()) n += p->value.size();
  return n;
}

std::vector<std::string> model_names() { return {"lenet5", "alexnet-s", "vgg-s", "resnet-s"}; }

void check_model_name(const std::string& name) {
  std::string list;
  for (const auto& n : model_names()) {
    if (n == name) return;
    list += (list.empty() ? "" : ", ") + n;
  }
  throw InputError("unknown model '" + name + "' (choose one of: " + list + ")");
}

namespace {

struct Builder {
  Model& m;
  std::mt19937_64& rng;
  int c, h, w;
  int in_h, in_w;  ///< the model's input size (error messages)
  /// Throws InputError when a layer's window does not fit its input (output size oh x ow has a 0).
  void check_fits(const std::string& layer, int oh, int ow) const {
    if (oh <= 0 || ow <= 0)
      throw InputError("model " + m.name() + ": " + std::to_string(in_h) + "x" + std::to_string(in_w) +
                       " input too small (" + layer + " over " + std::to_string(h) + "x" + std::to_string(w) + ")");
  }
  void conv(int cout, int k, int stride, int pad, bool bn) {
    m.add(std::make_unique<Conv2d>(c, cout, k, stride, pad, !bn, rng));
    c = cout;
    check_fits("conv" + std::to_string(k) + "x" + std::to_string(k), window_output_size(h, k, stride, pad),
               window_output_size(w, k, stride, pad));
    h = window_output_size(h, k, stride, pad);
    w = window_output_size(w, k, stride, pad);
    if (bn) m.add(std::make_unique<BatchNorm>(cout));
    m.add(std::make_unique<ReLU>());
  }
  void pool(int k, int s) {
    m.add(std::make_unique<MaxPool2d>(k, s));
    check_fits("maxpool " + std::to_string(k) + "x" + std::to_string(k), window_output_size(h, k, s),
               window_output_size(w, k, s));
    h = window_output_size(h, k, s);
    w = window_output_size(w, k, s);
  }
  void fc(int out, bool relu) {
    auto l = std::make_unique<Linear>(c * h * w, out, rng);
    if (!relu) {
      // Classifier (no ReLU after it): LeCun-normal N(0, 1/fan_in) instead of He (2/fan_in), which halves the
      // initial logits' variance. The logits' scale still follows the classifier input's second moment: the
      // first-step loss (seeds 1-3, batch 64) is 2.4-3.1 for lenet5 and 2.5-2.8 for resnet-s but 3.2-4.1 for
      // alexnet-s and 4.9-7.1 for vgg-s (max-pooled BN-ReLU features and inverted dropout before the
      // classifier), against ln(10) = 2.30.
      std::normal_distribution<float> d(0.0f, std::sqrt(1.0f / static_cast<float>(c * h * w)));
      for (float& v : l->weight.value) v = d(rng);
    }
    m.add(std::move(l));
    c = out;
    h = w = 1;
    if (relu) m.add(std::make_unique<ReLU>());
  }
  void dropout(float p) { m.add(std::make_unique<Dropout>(p)); }
  void block(int cout, int stride) {
    m.add(std::make_unique<BasicBlock>(c, cout, stride, rng));
    c = cout;
    h = (h + 2 - 3) / stride + 1;
    w = (w + 2 - 3) / stride + 1;
  }
};

}  // namespace

std::unique_ptr<Model> build_model(const std::string& name, int in_c, int in_h, int in_w, int classes,
                                   std::uint64_t seed) {
  auto m = std::make_unique<Model>(name);
  std::mt19937_64 rng(seed);
  if (in_c < 1 || in_h < 1 || in_w < 1 || classes < 1)
    throw InputError("model " + name + ": bad input " + std::to_string(in_c) + "x" + std::to_string(in_h) + "x" +
                     std::to_string(in_w) + " / " + std::to_string(classes) + " classes");
  Builder b{*m, rng, in_c, in_h, in_w, in_h, in_w};
  if (name == "lenet5") {
    b.conv(6, 5, 1, 2, false);
    b.pool(2, 2);
    b.conv(16, 5, 1, 0, false);
    b.pool(2, 2);
    b.fc(120, true);
    b.fc(84, true);
    b.fc(classes, false);
  } else if (name == "alexnet-s") {
    b.conv(32, 5, 1, 2, false);
    b.pool(3, 2);
    b.conv(64, 5, 1, 2, false);
    b.pool(3, 2);
    b.conv(96, 3, 1, 1, false);
    b.conv(96, 3, 1, 1, false);
    b.conv(64, 3, 1, 1, false);
    b.pool(3, 2);
    b.dropout(0.5f);
    b.fc(256, true);
    b.dropout(0.5f);
    b.fc(256, true);
    b.fc(classes, false);
  } else if (name == "vgg-s") {
    // The last pool covers the whole (square) feature map: non-square inputs are refused, not cropped.
    if (in_h != in_w)
      throw InputError("model vgg-s: needs square input images (got " + std::to_string(in_h) + "x" + std::to_string(in_w) + ")");
    const int widths[5] = {16, 32, 64, 64, 64}, convs[5] = {2, 2, 3, 3, 3};
    for (int blk = 0; blk < 5; ++blk) {
      for (int i = 0; i < convs[blk]; ++i) b.conv(widths[blk], 3, 1, 1, true);
      if (blk < 3) b.pool(2, 2);
      if (blk == 4) b.pool(b.h, b.h);
    }
    b.fc(256, true);
    b.dropout(0.5f);
    b.fc(256, true);
    b.dropout(0.5f);
    b.fc(classes, false);
  } else if (name == "resnet-s") {
    b.conv(16, 3, 1, 1, true);
    const int widths[4] = {16, 32, 64, 128};
    for (int s = 0; s < 4; ++s) {
      b.block(widths[s], s == 0 ? 1 : 2);
      b.block(widths[s], 1);
    }
    m->add(std::make_unique<GlobalAvgPool>());
    b.h = b.w = 1;
    b.fc(classes, false);
  } else {
    check_model_name(name);  // throws: not a known name
  }
  return m;
}

}  // namespace spartan::train
