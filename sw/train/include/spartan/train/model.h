// Sequential CNN models and the named, scaled-down networks of the Spartan paper (AlexNet, VGG-16,
// ResNet-18) plus LeNet-5, sized for 28x28 single-channel inputs (Fashion-MNIST) on a small CPU.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "spartan/train/layer.h"

namespace spartan::train {

class Model {
 public:
  explicit Model(std::string name) : name_(std::move(name)) {}
  /// Appends a layer. A ReLU that follows a GEMM layer (possibly through a BatchNorm) becomes that
  /// layer's `next_relu`: such a layer records the zero pattern of its backward-data GEMM's operand (the trace's
  /// `dz_mask`; dense where a BatchNorm sits between). GEMM layers are numbered in order.
  void add(std::unique_ptr<Layer> layer);
  Tensor forward(const Tensor& x, Context& ctx);
  Tensor backward(const Tensor& dy, Context& ctx);
  std::vector<Param*> params();
  const std::vector<GemmLayer*>& gemm_layers() const { return gemm_layers_; }
  const std::vector<std::unique_ptr<Layer>>& layers() const { return layers_; }
  const std::string& name() const { return name_; }
  std::size_t num_parameters();
  /// Moves parameters and state to / from executor memory (Layer::to_exec / from_exec).
  void to_exec(Executor& ex);
  void from_exec(Executor& ex);

 private:
  std::string name_;
  std::vector<std::unique_ptr<Layer>> layers_;
  std::vector<GemmLayer*> gemm_layers_;
  GemmLayer* pending_ = nullptr;
};

/// Names accepted by build_model: lenet5, alexnet-s, vgg-s, resnet-s.
std::vector<std::string> model_names();
/// Throws spartan::InputError ("unknown model 'x' (choose one of: ...)") unless `name` is in model_names().
void check_model_name(const std::string& name);

/// Builds a named model for `in_c` x `in_h` x `in_w` inputs and `classes` outputs; weights He-initialised
/// from `seed`. Throws spartan::InputError for an unknown name, a size < 1, or inputs too small for the model: every
/// conv and pool window must fit the feature map it slides over (e.g. lenet5 needs at least 12x12, vgg-s 8x8,
/// alexnet-s 15x15).
/// Conv and hidden FC weights are He-normal; the classifier is LeCun-normal (N(0, 1/fan_in)).
///  - lenet5 (LeCun et al. 1998, with ReLU and max-pool): conv5x5(6,p2)-pool-conv5x5(16)-pool-fc120-fc84-fc.
///  - alexnet-s (Krizhevsky et al. 2012 pattern): conv5x5(32)-pool3s2-conv5x5(64)-pool3s2-conv3x3(96,96,64)
///    -pool3s2-[dropout-fc256]x2-fc; overlapping 3x3/s2 pooling, no LRN.
///  - vgg-s (Simonyan & Zisserman 2015, VGG-16 with BN): 13 conv3x3 in blocks of 2,2,3,3,3 with widths
///    16,32,64,64,64, 2x2 max-pool after blocks 1-3 (28->14->7->3) and 3x3 after block 5, then
///    fc256-ReLU-dropout-fc256-ReLU-dropout-fc (dropout 0.5 as in VGG). The last pool covers the whole feature map
///    (H x H), so vgg-s needs square inputs (in_h == in_w) and refuses others.
///  - resnet-s (He et al. 2016, ResNet-18 pattern): conv3x3(16)-BN-ReLU, 4 stages x 2 basic blocks with
///    widths 16,32,64,128 (stride 2 and 1x1 projection shortcut at stages 2-4), global average pool, fc.
std::unique_ptr<Model> build_model(const std::string& name, int in_c, int in_h, int in_w, int classes,
                                   std::uint64_t seed);

}  // namespace spartan::train
