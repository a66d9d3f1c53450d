#include "shapes.h"

namespace spartan::gemm::bench {

const char* pass_name(Pass p) {
  switch (p) {
    case Pass::Fwd: return "fwd";
    case Pass::BwdData: return "bwd-data";
    case Pass::BwdWeight: return "bwd-weight";
  }
  return "?";
}

std::vector<ConvShape> conv_layers() {
  // {net, layer, Cout, Cin, kh, kw, Hout, Wout}; ImageNet 224x224, stride-1 3x3 convs unless noted.
  return {
      {"alexnet", "conv2", 192, 64, 5, 5, 27, 27},     // torchvision AlexNet
      {"alexnet", "conv3", 384, 192, 3, 3, 13, 13},
      {"alexnet", "conv5", 256, 256, 3, 3, 13, 13},
      {"vgg16", "conv2_2", 128, 128, 3, 3, 112, 112},
      {"vgg16", "conv3_2", 256, 256, 3, 3, 56, 56},
      {"vgg16", "conv4_2", 512, 512, 3, 3, 28, 28},
      {"vgg16", "conv5_2", 512, 512, 3, 3, 14, 14},
      {"resnet18", "conv2_x", 64, 64, 3, 3, 56, 56},
      {"resnet18", "conv3_x", 128, 128, 3, 3, 28, 28},
      {"resnet18", "conv4_x", 256, 256, 3, 3, 14, 14},
      {"resnet18", "conv5_x", 512, 512, 3, 3, 7, 7},
      {"vgg-s", "b0c2", 16, 16, 3, 3, 28, 28},  // sw/train vgg-s on 28x28 (Fashion-MNIST)
      {"vgg-s", "b1c2", 32, 32, 3, 3, 14, 14},
      {"vgg-s", "b2c2", 64, 64, 3, 3, 7, 7},
  };
}

std::vector<GemmShape> gemm_shapes(const std::vector<ConvShape>& layers, int batch, bool all_passes, Layout layout) {
  std::vector<GemmShape> out;
  const SparseOperand A = SparseOperand::A, B = SparseOperand::B;
  for (const auto& l : layers) {
    const int ckk = l.cin * l.kh * l.kw, hw = batch * l.hout * l.wout;
    const std::string n = l.net + "." + l.layer;
    if (layout == Layout::Train) {
      out.push_back({n, Pass::Fwd, Op::T, Op::T, hw, l.cout, ckk, A});
      if (all_passes) {
        out.push_back({n, Pass::BwdData, Op::N, Op::N, hw, ckk, l.cout, A});
        out.push_back({n, Pass::BwdWeight, Op::N, Op::N, ckk, l.cout, hw, A});
      }
    } else {
      out.push_back({n, Pass::Fwd, Op::N, Op::N, l.cout, hw, ckk, B});
      if (all_passes) {
        out.push_back({n, Pass::BwdData, Op::T, Op::N, ckk, hw, l.cout, B});
        out.push_back({n, Pass::BwdWeight, Op::N, Op::T, l.cout, ckk, hw, B});
      }
    }
  }
  return out;
}

}  // namespace spartan::gemm::bench
