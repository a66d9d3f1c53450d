// Executors of the device-resident training path. With Context::exec set, every layer keeps its tensors and
// parameters in the executor's buffers and runs its non-GEMM work as executor operations; the GEMMs go through
// the GemmRunner with GemmCall::device_pointers = Executor::device_pointers(). Three executors:
//  - "cuda" (make_cuda_executor, builds with SPARTAN_HAVE_CUDA): buffers in GPU memory (cudaMalloc), operations
//    are the CUDA kernels of sw/train/src/cuda_ops_kernels.h; everything is issued on the legacy default
//    stream, and every download is a synchronous cudaMemcpy that waits for the work before it.
//  - "cuda (simt)" (make_simt_executor, every build): the same kernels with the same launch shapes
//    (sw/train/src/kernel_executor.h), run on the host by the CUDA emulation of spartan/common/simt.h. It tests
//    the kernels' code on machines without a GPU (test_train_simt).
//  - "host-reference" (make_reference_executor): host buffers, the same per-element functions
//    (spartan/train/kernels_hd.h) in plain loops, in the kernels' reduction order. test_train_kernels runs the
//    models through it and compares with the CPU path; test_train_simt checks that the emulated kernels give
//    its results bit for bit.
// Pointers passed to the operations are executor buffer pointers (device pointers for "cuda"), never host
// memory, except where a parameter says `host`.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "spartan/train/kernels_hd.h"

namespace spartan::train {

/// A block of executor memory (RAII: freed, or returned to the executor's pool, on destruction).
class Buffer {
 public:
  virtual ~Buffer() = default;
  void* ptr() const { return p_; }
  std::size_t bytes() const { return bytes_; }
  template <class T>
  T* as() const { return static_cast<T*>(p_); }
  /// The executor whose alloc() made this buffer (identity only; buffers may outlive it).
  const void* owner() const { return owner_; }

 protected:
  void* p_ = nullptr;
  std::size_t bytes_ = 0;
  const void* owner_ = nullptr;
};

class Executor {
 public:
  virtual ~Executor() = default;
  virtual std::string name() const = 0;
  /// True when buffers are device memory (GEMM calls then set GemmCall::device_pointers).
  virtual bool device_pointers() const = 0;
  /// Uninitialised buffer of `bytes` (>= 0). Throws spartan::Error (with the CUDA message) when out of memory.
  virtual std::shared_ptr<Buffer> alloc(std::size_t bytes) = 0;
  virtual void upload(void* dst, const void* host, std::size_t bytes) = 0;
  /// Copies to the host after all previously issued work has finished.
  virtual void download(void* host, const void* src, std::size_t bytes) = 0;
  virtual void fill_zero(void* dst, std::size_t bytes) = 0;

  // Operations (n = element counts; layouts as in kernels_hd.h).
  virtual void im2col(const float* x, const hd::ConvGeom& g, float* col) = 0;          ///< col: kdim x N*P
  virtual void col2im(const float* dcolt, const hd::ConvGeom& g, float* dx) = 0;       ///< dcolt: N*P x kdim
  virtual void conv_out(const float* yt, const float* bias, int n, int cout, int p, float* y) = 0;  ///< bias may be null
  virtual void conv_dyt(const float* dy, int n, int cout, int p, float* dyt) = 0;
  virtual void transpose(const float* m, int rows, int cols, float* out) = 0;
  virtual void add_row_bias(float* y, const float* bias, int rows, int cols) = 0;  ///< y[r][c] += bias[c]
  virtual void relu_fwd(const float* x, float* y, std::size_t n) = 0;
  virtual void relu_bwd(const float* dy, const float* y, float* dx, std::size_t n) = 0;
  virtual void maxpool_fwd(const float* x, int planes, int h, int w, int k, int s, int oh, int ow, float* y,
                           std::int32_t* argmax) = 0;
  virtual void maxpool_bwd(const float* dy, const std::int32_t* argmax, int planes, int h, int w, int k, int s, int oh,
                           int ow, float* dx) = 0;
  virtual void gap_fwd(const float* x, int planes, int per, float* y) = 0;
  virtual void gap_bwd(const float* dy, int planes, int per, float* dx) = 0;
  virtual void mul(const float* x, const float* scale, float* y, std::size_t n) = 0;  ///< dropout
  virtual void add(const float* a, const float* b, float* y, std::size_t n) = 0;      ///< residual
  /// Per-channel sum of a (N x C x per) into out[c] (float), e.g. a bias gradient.
  virtual void channel_sum(const float* a, int n, int channels, int per, float* out) = 0;
  /// Batch norm forward over x (N x C x per). Training: batch statistics, running statistics updated;
  /// eval: running statistics. Writes y, xhat and inv_std[C] (float); mean_scratch is C doubles.
  virtual void bn_fwd(const float* x, int n, int channels, int per, const float* gamma, const float* beta,
                      float* running_mean, float* running_var, bool training, float momentum, float eps, float* y,
                      float* xhat, float* inv_std, double* mean_scratch) = 0;
  /// Batch norm backward: writes dx and the gradients of gamma/beta; sums_scratch is 2*C doubles.
  virtual void bn_bwd(const float* dy, const float* xhat, const float* gamma, const float* inv_std, int n,
                      int channels, int per, bool training, float* dx, float* dgamma, float* dbeta,
                      double* sums_scratch) = 0;
  /// Softmax cross-entropy: writes dlogits; downloads the per-sample losses and hits and returns the mean loss
  /// (summed on the host in sample order) and, in *correct, the number of argmax hits.
  virtual double softmax_xent(const float* logits, const std::int32_t* labels, int n, int k, float* dlogits,
                              int* correct) = 0;
  virtual void sgd(float* w, float* v, const float* g, std::size_t n, float lr, float momentum, float wd) = 0;
  /// Number of elements equal to +-0.0 (downloads one scalar).
  virtual std::uint64_t count_zeros(const float* p, std::size_t n) = 0;
};

/// Host reference executor (plain loops over kernels_hd.h).
std::unique_ptr<Executor> make_reference_executor();
/// CUDA executor on device 0. Throws spartan::InputError when the build has no CUDA support or no GPU is
/// usable.
std::unique_ptr<Executor> make_cuda_executor();
/// "cuda (simt)": the CUDA executor's kernels and launch shapes run on the host by the emulation of
/// spartan/common/simt.h, host memory standing for device memory (buffers 0xFF-filled: NaN until written).
/// device_pointers() is true: pair it with the CUDA engines' host emulations (spartan/gemm/simt.h,
/// make_simt_dense_engine / make_simt_tile_sparse_engine). Built in every configuration, for tests; slow (each
/// element a call, each reduction thread a fiber). Operations throw spartan::Error naming the kernel when a
/// kernel breaks the emulation's checks (barriers in divergent code, a barrier in a launch without
/// uses_syncthreads: exit_code() 1; launch limits: 2).
std::unique_ptr<Executor> make_simt_executor();

}  // namespace spartan::train
