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

/// Which of the three training GEMMs of a conv layer (all with the activation-side operand sparse).
enum class Pass { Fwd, BwdData, BwdWeight };
const char* pass_name(Pass p);

/// How the three GEMMs are laid out (im2col, row-major; the same M, N, K up to transposing C, HW = batch x
/// output pixels, CKK = Cin x KH x KW):
///   Train, as spartan-train issues them (sw/train/src/conv2d.cpp): Y and dY with one row per output pixel,
///   col stored [CKK x HW]; the sparse operand is A in all three:
///     fwd:        Y^T[HW x Cout]   = col^T * W^T                op T T, A = col (im2col of the ReLU output)
///     bwd-data:   dcol^T[HW x CKK] = dY^T[HW x Cout] * W        op N N, A = dY^T (ReLU-masked gradient)
///     bwd-weight: dW^T[CKK x Cout] = col * dY^T[HW x Cout]      op N N, A = col
///   Caffe (Jia et al., 2014; one row per output channel); the sparse operand is B in all three:
///     fwd:        Y[Cout x HW]     = W[Cout x CKK] * col[CKK x HW]   op N N, B = col
///     bwd-data:   dcol[CKK x HW]   = W^T * dY[Cout x HW]             op T N, B = dY
///     bwd-weight: dW[Cout x CKK]   = dY * col^T                      op N T, B = col
enum class Layout { Train, Caffe };

struct GemmShape {
  std::string name;  ///< net.layer
  Pass pass;
  Op op_a, op_b;
  int M, N, K;
  SparseOperand sparse;  ///< the activation-side operand
};

/// Representative AlexNet (torchvision), VGG-16, ResNet-18 (ImageNet 224x224) conv layers whose input
/// is a ReLU output (first convs excluded), and the vgg-s layers on 28x28 inputs (sw/train model).
std::vector<ConvShape> conv_layers();
/// The GEMMs of `layers` at `batch` (HW = batch x output pixels) in `layout`; the backward passes only
/// with `all_passes`.
std::vector<GemmShape> gemm_shapes(const std::vector<ConvShape>& layers, int batch, bool all_passes, Layout layout);

}  // namespace spartan::gemm::bench
