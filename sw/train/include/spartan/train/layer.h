// Layers of the training engine. Every layer has forward and backward on NCHW float tensors; layers
// keep what their backward needs from the last forward (so forward/backward must alternate).
// Conv2d and Linear ("GEMM layers") run their three GEMMs through the GemmRunner with the activation
// operand marked sparse: forward and backward-weight mark the input activation (im2col matrix for
// conv), backward-data marks the incoming gradient (ReLU-masked where a ReLU follows directly; where a
// batch norm sits between the layer and its ReLU, the gradient is that of BN's backward, dense in training).
//
// Device-resident path: with Context::exec set (executor.h), tensors and parameters live in the executor's
// buffers (Tensor::buf, Param::d_*) and every layer runs the same computation as executor operations
// (layer_exec.cpp); Model::to_exec / from_exec move the parameters (and batch-norm running statistics).
#pragma once
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "spartan/common/aligned.h"
#include "spartan/train/executor.h"
#include "spartan/train/gemm_runner.h"
#include "spartan/train/tensor.h"

namespace spartan::train {

/// Output length of a `k`-wide window moved by `stride` over `in` elements padded by `pad` on each side, floor mode:
/// (in + 2*pad - k) / stride + 1, or 0 when the window does not fit (in + 2*pad < k), which the plain formula would
/// round up to 1 (integer division truncates toward zero). Conv2d, MaxPool2d and build_model size their outputs
/// with it and refuse a 0.
int window_output_size(int in, int k, int stride, int pad = 0);

/// A trainable parameter with its gradient and SGD momentum buffer (same size).
struct Param {
  std::string name;
  AlignedVector<float> value, grad, velocity;  ///< value: a GEMM operand (spartan/common/aligned.h)
  bool weight_decay = true;  ///< false for biases and batch-norm shift/scale
  /// Executor copies of value / grad / velocity (Layer::to_exec); null on the CPU path.
  std::shared_ptr<Buffer> d_value, d_grad, d_velocity;
  explicit Param(std::string n = {}, std::size_t size = 0, bool decay = true)
      : name(std::move(n)), value(size, 0.0f), grad(size, 0.0f), velocity(size, 0.0f), weight_decay(decay) {}
};

/// Per-pass state shared by all layers.
struct Context {
  bool training = true;
  std::mt19937_64* rng = nullptr;  ///< dropout masks (seeded by the trainer)
  GemmRunner* gemm = nullptr;
  /// Non-null: the device-resident path on this executor (inputs and outputs are executor tensors).
  Executor* exec = nullptr;
  /// Backward keeps, per GEMM layer with a ReLU after it, which elements of its backward-data GEMM's sparse
  /// operand were non-zero (GemmLayer::bwd_operand_mask; the trace's `dz_mask`). Set on capture steps.
  bool keep_bwd_operand_mask = false;
};

class ReLU;

class Layer {
 public:
  virtual ~Layer() = default;
  virtual Tensor forward(const Tensor& x, Context& ctx) = 0;
  /// Returns dL/dx given dL/dy; writes (overwrites) the parameter gradients into Param::grad.
  virtual Tensor backward(const Tensor& dy, Context& ctx) = 0;
  virtual std::vector<Param*> params() { return {}; }
  /// Short description, e.g. "conv3x3 16->32 s1 p1".
  virtual std::string describe() const = 0;
  /// Appends this layer's GEMM layers (itself, or its children for composite layers) in forward order.
  virtual void gemm_layers(std::vector<class GemmLayer*>& out) { (void)out; }
  /// Copies the parameters (value, velocity; grad zeroed) and any other state the executor path needs to
  /// `ex`'s memory; from_exec copies value, grad and velocity (and that state) back to the host vectors.
  virtual void to_exec(Executor& ex);
  virtual void from_exec(Executor& ex);
};

/// GEMM shapes of one pass, C[M x N] = A[M x K] * B[K x N] with A the activation-derived (sparse)
/// operand: the convention of docs/trace-format.md, section 4.1.
struct GemmShape {
  int M = 0, N = 0, K = 0;
};

/// A conv or fully-connected layer: its GEMMs, and what trace capture records about it.
class GemmLayer : public Layer {
 public:
  int id = 0;                    ///< index in the model's GEMM-layer list (trace `L{id}`)
  const ReLU* next_relu = nullptr;  ///< ReLU whose mask gates this layer's output gradient (may be null)
  virtual std::string kind() const = 0;  ///< "conv" or "fc"
  /// The activation that fed the last forward (NCHW).
  virtual const Tensor& input() const = 0;
  /// Output shape of the last forward.
  virtual const Tensor& output_shape() const = 0;
  virtual GemmShape shape(GemmPass p) const = 0;
  /// Executor path: downloads input()'s elements into its host vector (trace capture).
  virtual void fetch_input(Executor& ex) = 0;
  void gemm_layers(std::vector<GemmLayer*>& out) override { out.push_back(this); }
  /// Layers with next_relu only (others: 1 and empty). Non-zero fraction of the sparse operand A of the last
  /// backward-data GEMM, i.e. of the output gradient dY as that GEMM received it (after the ReLU mask, and
  /// after batch norm's backward where a BN sits between the layer and its ReLU, which makes it dense).
  double bwd_operand_density() const { return bwd_density_; }
  /// 1 where that operand was non-zero, 0 where it was zero (+0.0 or -0.0), one byte per element in the
  /// NCHW order of the layer's output (FC: b*out + j); filled by a backward with Context::keep_bwd_operand_mask,
  /// empty after one without.
  const std::vector<std::uint8_t>& bwd_operand_mask() const { return bwd_mask_; }

 protected:
  /// Both backward paths call this with the output gradient before the backward-data GEMM; dY's elements are
  /// that GEMM's A operand (conv: transposed to (N*P) x Cout, the same values).
  void note_bwd_operand(const Tensor& dy, Context& ctx);

 private:
  double bwd_density_ = 1.0;
  std::vector<std::uint8_t> bwd_mask_;
};

/// 2-D convolution via im2col + GEMM. Weights Cout x (Cin*kh*kw), bias Cout. He-normal init.
/// im2col matrix `col` stored kdim x P with kdim = Cin*kh*kw (channel-major, then kernel row, kernel
/// col) and P = N*OH*OW (image-major, then output row, output col). With A always the sparse operand:
/// fwd: Y^T[P x Cout] = col^T * W^T (M=P, N=Cout, K=kdim);
/// bwd_data: dcol^T[P x kdim] = dY^T * W (M=P, N=kdim, K=Cout; dY the output gradient: ReLU-masked where a ReLU
/// follows directly, dense after batch norm's backward), then col2im;
/// bwd_weight: dW^T[kdim x Cout] = col * dY^T (M=kdim, N=Cout, K=P).
/// forward throws spartan::InputError for a channel mismatch or a padded input smaller than the kernel
/// (H + 2*pad < k or W + 2*pad < k).
class Conv2d final : public GemmLayer {
 public:
  Conv2d(int cin, int cout, int k, int stride, int pad, bool bias, std::mt19937_64& init_rng);
  Tensor forward(const Tensor& x, Context& ctx) override;
  Tensor backward(const Tensor& dy, Context& ctx) override;
  std::vector<Param*> params() override;
  std::string describe() const override;
  std::string kind() const override { return "conv"; }
  const Tensor& input() const override { return x_; }
  const Tensor& output_shape() const override { return yshape_; }
  GemmShape shape(GemmPass p) const override;
  void fetch_input(Executor& ex) override;
  int cin, cout, k, stride, pad;
  Param weight, bias;
  bool has_bias;

 private:
  /// Checks `x` against the layer (channels, size), keeps it as the saved input and sets the output shape;
  /// both forward paths start here. Throws InputError.
  void begin_forward(const Tensor& x);
  Tensor forward_exec(const Tensor& x, Context& ctx);
  Tensor backward_exec(const Tensor& dy, Context& ctx);
  Tensor x_, yshape_;
  AlignedVector<float> col_, ytmp_, dwt_;  // GEMM operands: rows start on cache lines (spartan/common/aligned.h)
  std::shared_ptr<Buffer> d_col_, d_ytmp_, d_dwt_;
};

/// Fully connected: y[N x out] = x[N x in] * W^T + b, W stored out x in. He-normal init.
/// fwd: M=N_batch, N=out, K=in (sparse A = x); bwd_data: dx = dy * W (M=N_batch, N=in, K=out,
/// sparse A = dy); bwd_weight: dW^T = x^T * dy (M=in, N=out, K=N_batch, sparse A = x^T).
class Linear final : public GemmLayer {
 public:
  Linear(int in, int out, std::mt19937_64& init_rng);
  Tensor forward(const Tensor& x, Context& ctx) override;
  Tensor backward(const Tensor& dy, Context& ctx) override;
  std::vector<Param*> params() override { return {&weight, &bias}; }
  std::string describe() const override;
  std::string kind() const override { return "fc"; }
  const Tensor& input() const override { return x_; }
  const Tensor& output_shape() const override { return yshape_; }
  GemmShape shape(GemmPass p) const override;
  void fetch_input(Executor& ex) override;
  int in, out;
  Param weight, bias;

 private:
  Tensor forward_exec(const Tensor& x, Context& ctx);
  Tensor backward_exec(const Tensor& dy, Context& ctx);
  Tensor x_, yshape_;
  std::shared_ptr<Buffer> d_dwt_;
};

class ReLU final : public Layer {
 public:
  Tensor forward(const Tensor& x, Context& ctx) override;
  Tensor backward(const Tensor& dy, Context& ctx) override;
  std::string describe() const override { return "relu"; }
  /// Output of the last forward (mask = output > 0).
  const Tensor& output() const { return y_; }

 private:
  Tensor forward_exec(const Tensor& x, Context& ctx);
  Tensor backward_exec(const Tensor& dy, Context& ctx);
  Tensor y_;
};

/// Max pooling, kernel k x k, stride s, no padding (floor mode). Ties: the first maximum wins. forward throws
/// spartan::InputError for an input smaller than the kernel (H < k or W < k).
class MaxPool2d final : public Layer {
 public:
  MaxPool2d(int k, int stride) : k_(k), s_(stride) {}
  Tensor forward(const Tensor& x, Context& ctx) override;
  Tensor backward(const Tensor& dy, Context& ctx) override;
  std::string describe() const override;

 private:
  Tensor forward_exec(const Tensor& x, Context& ctx);
  Tensor backward_exec(const Tensor& dy, Context& ctx);
  int k_, s_;
  Tensor xshape_;
  std::vector<std::int32_t> argmax_;
  std::shared_ptr<Buffer> d_argmax_;
};

/// Global average pooling: N x C x H x W -> N x C x 1 x 1.
class GlobalAvgPool final : public Layer {
 public:
  Tensor forward(const Tensor& x, Context& ctx) override;
  Tensor backward(const Tensor& dy, Context& ctx) override;
  std::string describe() const override { return "global-avg-pool"; }

 private:
  Tensor forward_exec(const Tensor& x, Context& ctx);
  Tensor backward_exec(const Tensor& dy, Context& ctx);
  Tensor xshape_;
};

/// Batch normalisation (Ioffe & Szegedy, ICML 2015) over N,H,W per channel (for N x F x 1 x 1 inputs:
/// per feature). Training: batch statistics (biased variance), running mean/var updated with
/// momentum 0.1 (unbiased variance), as in PyTorch's BatchNorm2d. Eval: running statistics. eps 1e-5.
class BatchNorm final : public Layer {
 public:
  explicit BatchNorm(int channels, float momentum = 0.1f, float eps = 1e-5f);
  Tensor forward(const Tensor& x, Context& ctx) override;
  Tensor backward(const Tensor& dy, Context& ctx) override;
  std::vector<Param*> params() override { return {&gamma, &beta}; }
  std::string describe() const override { return "batchnorm " + std::to_string(c_); }
  Param gamma, beta;
  std::vector<float> running_mean, running_var;
  void to_exec(Executor& ex) override;
  void from_exec(Executor& ex) override;

 private:
  Tensor forward_exec(const Tensor& x, Context& ctx);
  Tensor backward_exec(const Tensor& dy, Context& ctx);
  std::shared_ptr<Buffer> d_running_mean_, d_running_var_, d_inv_std_, d_scratch_;
  int c_;
  float momentum_, eps_;
  Tensor xhat_;
  std::vector<float> inv_std_;
};

/// Inverted dropout with drop probability p (kept values scaled by 1/(1-p)); identity in eval.
/// The mask is drawn from Context::rng, so runs are reproducible for a seed. On the executor path the mask is
/// drawn on the host from the same generator, in the same order, and uploaded: CPU and CUDA runs of a seed
/// drop the same elements.
class Dropout final : public Layer {
 public:
  explicit Dropout(float p) : p_(p) {}
  Tensor forward(const Tensor& x, Context& ctx) override;
  Tensor backward(const Tensor& dy, Context& ctx) override;
  std::string describe() const override;

 private:
  Tensor forward_exec(const Tensor& x, Context& ctx);
  Tensor backward_exec(const Tensor& dy, Context& ctx);
  float p_;
  std::vector<float> scale_;  ///< 0 or 1/(1-p) per element; empty in eval mode
  std::shared_ptr<Buffer> d_scale_;
};

/// ResNet basic block (He et al., CVPR 2016, Fig. 2/Table 1): conv3x3(stride) - BN - ReLU - conv3x3 - BN,
/// plus a shortcut (identity, or 1x1 conv(stride) - BN "projection" when shape changes), add, ReLU.
class BasicBlock final : public Layer {
 public:
  BasicBlock(int cin, int cout, int stride, std::mt19937_64& init_rng);
  Tensor forward(const Tensor& x, Context& ctx) override;
  Tensor backward(const Tensor& dy, Context& ctx) override;
  std::vector<Param*> params() override;
  std::string describe() const override;
  void gemm_layers(std::vector<GemmLayer*>& out) override;
  void to_exec(Executor& ex) override;
  void from_exec(Executor& ex) override;
  bool projection() const { return static_cast<bool>(proj_); }
  /// bn1, bn2 and (projection blocks) the shortcut's BN, for inspecting running statistics.
  std::vector<const BatchNorm*> batch_norms() const {
    std::vector<const BatchNorm*> v{bn1_.get(), bn2_.get()};
    if (proj_bn_) v.push_back(proj_bn_.get());
    return v;
  }

 private:
  Tensor forward_exec(const Tensor& x, Context& ctx);
  Tensor backward_exec(const Tensor& dy, Context& ctx);
  std::unique_ptr<Conv2d> conv1_, conv2_, proj_;
  std::unique_ptr<BatchNorm> bn1_, bn2_, proj_bn_;
  ReLU relu1_, relu_out_;
};

/// Mean softmax cross-entropy over the batch. `logits` N x classes x 1 x 1.
/// Returns the loss and writes dL/dlogits into `dlogits`; `correct` counts argmax hits.
double softmax_cross_entropy(const Tensor& logits, const std::uint8_t* labels, Tensor& dlogits, int* correct);
/// The same on the executor path: `logits` an executor tensor, `labels` executor memory (n int32, each
/// checked < classes by the caller); `dlogits` becomes an executor tensor.
double softmax_cross_entropy_exec(Executor& ex, const Tensor& logits, const std::int32_t* labels, Tensor& dlogits,
                                  int* correct);

/// Executor-tensor helpers: a new (uninitialised) tensor in `ex`'s memory; its element pointer; a host tensor
/// uploaded; the elements downloaded into t.v (for trace capture).
Tensor exec_tensor(Executor& ex, int n, int c, int h, int w);
float* exec_ptr(const Tensor& t);
Tensor upload_tensor(Executor& ex, const Tensor& host);
void fetch_host(Executor& ex, Tensor& t);

}  // namespace spartan::train
