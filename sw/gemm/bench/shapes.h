// GEMM shapes of real conv layers (im2col, row-major) for bench-gemm.
#pragma once
#include <string>
#include <vector>

#include "spartan/gemm/gemm.h"

namespace spartan::gemm::bench {

/// One conv layer at batch `batch`: out channels, in channels x kernel area, output pixels.
struct ConvShape {
  std::string net, layer;
  int cout, cin, kh, kw, hout, wout;
};

/// Which of the three training GEMMs of a conv layer (all with the activation-side operand sparse):
///   fwd:  Y[Cout x HW]    = W[Cout x CKK] * col[CKK x HW]     sparse B (im2col of the ReLU output)
///   bwd-data: dcol[CKK x HW] = W^T * dY[Cout x HW]           sparse B (ReLU-masked gradient), op(A) = T
///   bwd-weight: dW[Cout x CKK] = dY[Cout x HW] * col^T       sparse B = col, op(B) = T
enum class Pass { Fwd, BwdData, BwdWeight };
const char* pass_name(Pass p);

struct GemmShape {
  std::string name;  ///< net.layer
  Pass pass;
  Op op_a, op_b;
  int M, N, K;
};

/// Representative AlexNet (torchvision), VGG-16, ResNet-18 (ImageNet 224x224) conv layers whose input
/// is a ReLU output (first convs excluded), and the vgg-s layers on 28x28 inputs (sw/train model).
std::vector<ConvShape> conv_layers();
/// The GEMMs of `layers` at `batch` (N = batch x HW); backward passes only for layers with `full`.
std::vector<GemmShape> gemm_shapes(const std::vector<ConvShape>& layers, int batch, bool all_passes);

}  // namespace spartan::gemm::bench
