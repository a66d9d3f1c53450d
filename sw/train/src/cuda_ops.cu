// CUDA executor of the device-resident training path (executor.h): device buffers from a size-keyed pool
// (cudaMalloc / cudaFree), and kernels that are thin loops over the per-element functions of kernels_hd.h.
// Built with --fmad=false (sw/train/CMakeLists.txt) so that the kernels do the same float operations as the
// host reference executor and the CPU layers (no fused multiply-adds).
//
// Streams: every kernel, cuBLAS call (sw/gemm CUDA engines) and copy is issued on the legacy default stream,
// so they execute in issue order; downloads are synchronous cudaMemcpy calls, which wait for all earlier work,
// and buffers returned to the pool are only reused by work issued later on the same stream.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "spartan/common/error.h"
#include "spartan/gemm/cuda.h"
#include "spartan/train/executor.h"

namespace spartan::train {

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw Error(std::string("cuda: ") + what + ": " + cudaGetErrorString(e));
}

/// Size-keyed pool of device blocks: training allocates the same shapes every step, so after the first step
/// no cudaMalloc / cudaFree (which synchronises the device) is issued.
class Pool {
 public:
  ~Pool() {
    for (auto& kv : free_) cudaFree(kv.second);  // errors at teardown are ignored
  }
  void* get(std::size_t bytes) {
    std::lock_guard<std::mutex> lock(m_);
    auto it = free_.find(bytes);
    if (it != free_.end()) {
      void* p = it->second;
      free_.erase(it);
      return p;
    }
    void* p = nullptr;
    cudaError_t e = cudaMalloc(&p, bytes);
    if (e == cudaErrorMemoryAllocation) {  // release the cache and retry once
      cudaGetLastError();
      for (auto& kv : free_) cudaFree(kv.second);
      free_.clear();
      e = cudaMalloc(&p, bytes);
    }
    check(e, ("cudaMalloc of " + std::to_string(bytes) + " bytes").c_str());
    return p;
  }
  void put(void* p, std::size_t bytes) {
    std::lock_guard<std::mutex> lock(m_);
    free_.emplace(bytes, p);
  }

 private:
  std::mutex m_;
  std::multimap<std::size_t, void*> free_;
};

class CudaBuffer final : public Buffer {
 public:
  CudaBuffer(std::shared_ptr<Pool> pool, std::size_t bytes, const void* owner)
      : pool_(std::move(pool)), rounded_((bytes + 255) / 256 * 256) {
    if (rounded_ == 0) rounded_ = 256;
    bytes_ = bytes;
    owner_ = owner;
    p_ = pool_->get(rounded_);
  }
  ~CudaBuffer() override { pool_->put(p_, rounded_); }

 private:
  std::shared_ptr<Pool> pool_;  // buffers may outlive the executor (parameters stay in the model)
  std::size_t rounded_;
};

constexpr int kThreads = 256;

unsigned blocks_for(std::int64_t n) {
  const std::int64_t b = (n + kThreads - 1) / kThreads;
  return unsigned(std::max<std::int64_t>(1, std::min<std::int64_t>(b, 1 << 20)));
}

#define SPARTAN_GRID_LOOP(i, n) \
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); i += std::int64_t(gridDim.x) * blockDim.x)

__global__ void im2col_kernel(const float* x, hd::ConvGeom g, float* col) {
  const std::int64_t np = g.np(), total = np * g.kdim();
  SPARTAN_GRID_LOOP(i, total) col[i] = hd::im2col_at(x, g, int(i / np), i % np);
}
__global__ void col2im_kernel(const float* dcolt, hd::ConvGeom g, float* dx, std::int64_t total) {
  SPARTAN_GRID_LOOP(e, total) dx[e] = hd::col2im_at(dcolt, g, e);
}
__global__ void conv_out_kernel(const float* yt, const float* bias, int cout, int p, float* y, std::int64_t total) {
  SPARTAN_GRID_LOOP(e, total) y[e] = hd::conv_out_at(yt, bias, cout, p, e);
}
__global__ void conv_dyt_kernel(const float* dy, int cout, int p, float* dyt, std::int64_t total) {
  SPARTAN_GRID_LOOP(j, total) dyt[j] = hd::conv_dyt_at(dy, cout, p, j);
}
__global__ void transpose_kernel(const float* m, int rows, int cols, float* out, std::int64_t total) {
  SPARTAN_GRID_LOOP(j, total) out[j] = hd::transpose_at(m, rows, cols, j);
}
__global__ void add_row_bias_kernel(float* y, const float* bias, int cols, std::int64_t total) {
  SPARTAN_GRID_LOOP(j, total) y[j] += bias[j % cols];
}
__global__ void relu_fwd_kernel(const float* x, float* y, std::int64_t n) {
  SPARTAN_GRID_LOOP(i, n) y[i] = hd::relu_fwd(x[i]);
}
__global__ void relu_bwd_kernel(const float* dy, const float* y, float* dx, std::int64_t n) {
  SPARTAN_GRID_LOOP(i, n) dx[i] = hd::relu_bwd(dy[i], y[i]);
}
__global__ void maxpool_fwd_kernel(const float* x, int h, int w, int k, int s, int oh, int ow, float* y,
                                   std::int32_t* argmax, std::int64_t total) {
  SPARTAN_GRID_LOOP(o, total) hd::maxpool_fwd_at(x, h, w, k, s, oh, ow, o, y, argmax);
}
__global__ void maxpool_bwd_kernel(const float* dy, const std::int32_t* argmax, int h, int w, int k, int s, int oh,
                                   int ow, float* dx, std::int64_t total) {
  SPARTAN_GRID_LOOP(e, total) dx[e] = hd::maxpool_bwd_at(dy, argmax, h, w, k, s, oh, ow, e);
}
__global__ void gap_fwd_kernel(const float* x, int per, float* y, std::int64_t planes) {
  SPARTAN_GRID_LOOP(pl, planes) y[pl] = hd::gap_fwd_at(x, per, pl);
}
__global__ void gap_bwd_kernel(const float* dy, int per, float* dx, std::int64_t total) {
  SPARTAN_GRID_LOOP(e, total) dx[e] = hd::gap_bwd_at(dy, per, e);
}
__global__ void mul_kernel(const float* x, const float* scale, float* y, std::int64_t n) {
  SPARTAN_GRID_LOOP(i, n) y[i] = hd::dropout_apply(x[i], scale[i]);
}
__global__ void add_kernel(const float* a, const float* b, float* y, std::int64_t n) {
  SPARTAN_GRID_LOOP(i, n) y[i] = hd::residual_add(a[i], b[i]);
}
__global__ void sgd_kernel(float* w, float* v, const float* g, std::int64_t n, float lr, float momentum, float wd) {
  SPARTAN_GRID_LOOP(i, n) hd::sgd_update(w + i, v + i, g[i], lr, momentum, wd);
}

/// Block-wide channel reduction (blockDim.x == kReduceThreads): the reference executor's partial/tree order.
__device__ double block_channel_reduce(double* part, hd::RedOp op, const float* a, const float* b, double mean, int c,
                                       int channels, int per, std::int64_t count) {
  constexpr int T = hd::kReduceThreads;
  const int t = threadIdx.x;
  part[t] = hd::reduce_partial(op, a, b, mean, c, channels, per, count, t, T);
  __syncthreads();
  for (int s = T / 2; s > 0; s /= 2) {
    if (t < s) part[t] += part[t + s];
    __syncthreads();
  }
  const double r = part[0];
  __syncthreads();  // part[] may be reused by the caller
  return r;
}

__global__ void channel_sum_kernel(const float* a, int n, int channels, int per, float* out) {
  __shared__ double part[hd::kReduceThreads];
  const int c = blockIdx.x;
  const double s = block_channel_reduce(part, hd::RedOp::Sum, a, nullptr, 0.0, c, channels, per, std::int64_t(n) * per);
  if (threadIdx.x == 0) out[c] = static_cast<float>(s);
}

__global__ void bn_stats_kernel(const float* x, int n, int channels, int per, float* running_mean, float* running_var,
                                int training, float momentum, float eps, float* inv_std, double* mean_out) {
  __shared__ double part[hd::kReduceThreads];
  const int c = blockIdx.x;
  const std::int64_t m = std::int64_t(n) * per;
  double mean, var;
  if (training) {
    mean = block_channel_reduce(part, hd::RedOp::Sum, x, nullptr, 0.0, c, channels, per, m) / double(m);
    const double sq = block_channel_reduce(part, hd::RedOp::SqDev, x, nullptr, mean, c, channels, per, m);
    var = sq / double(m);
    if (threadIdx.x == 0) hd::bn_running_update(running_mean + c, running_var + c, mean, sq, double(m), momentum);
  } else {
    mean = running_mean[c];
    var = running_var[c];
  }
  if (threadIdx.x == 0) {
    inv_std[c] = hd::bn_inv_std(var, eps);
    mean_out[c] = mean;
  }
}

__global__ void bn_norm_kernel(const float* x, int channels, int per, const float* gamma, const float* beta,
                               const double* mean, const float* inv_std, float* y, float* xhat, std::int64_t total) {
  SPARTAN_GRID_LOOP(e, total) {
    const int c = int((e / per) % channels);
    y[e] = hd::bn_fwd_elem(x[e], static_cast<float>(mean[c]), inv_std[c], gamma[c], beta[c], xhat + e);
  }
}

__global__ void bn_bwd_sums_kernel(const float* dy, const float* xhat, int n, int channels, int per, double* sums,
                                   float* dgamma, float* dbeta) {
  __shared__ double part[hd::kReduceThreads];
  const int c = blockIdx.x;
  const std::int64_t m = std::int64_t(n) * per;
  const double sdy = block_channel_reduce(part, hd::RedOp::Sum, dy, nullptr, 0.0, c, channels, per, m);
  const double sdyx = block_channel_reduce(part, hd::RedOp::Product, dy, xhat, 0.0, c, channels, per, m);
  if (threadIdx.x == 0) {
    sums[c] = sdy;
    sums[channels + c] = sdyx;
    dgamma[c] = static_cast<float>(sdyx);
    dbeta[c] = static_cast<float>(sdy);
  }
}

__global__ void bn_bwd_elem_kernel(const float* dy, const float* xhat, const float* gamma, const float* inv_std,
                                   int channels, int per, double m, const double* sums, int training, float* dx,
                                   std::int64_t total) {
  SPARTAN_GRID_LOOP(e, total) {
    const int c = int((e / per) % channels);
    dx[e] = hd::bn_bwd_elem(dy[e], xhat[e], gamma[c], inv_std[c], m, sums[c], sums[channels + c], training != 0);
  }
}

__global__ void softmax_kernel(const float* z, const std::int32_t* labels, int n, int k, float* d, double* loss,
                               int* hit) {
  SPARTAN_GRID_LOOP(i, n) loss[i] = hd::softmax_xent_sample(z + i * k, k, labels[i], n, d + i * k, hit + i);
}

__global__ void count_zeros_kernel(const float* p, std::int64_t n, unsigned long long* out) {
  __shared__ unsigned long long part[kThreads];
  unsigned long long z = 0;
  SPARTAN_GRID_LOOP(i, n) z += hd::is_zero(p[i]);
  part[threadIdx.x] = z;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s /= 2) {
    if (int(threadIdx.x) < s) part[threadIdx.x] += part[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(out, part[0]);
}

class CudaExecutor final : public Executor {
 public:
  CudaExecutor() : pool_(std::make_shared<Pool>()) {
    if (const std::string why = gemm::cuda_unusable_reason(); !why.empty()) throw InputError("--device cuda: " + why);
    check(cudaSetDevice(0), "cudaSetDevice");
  }
  std::string name() const override { return "cuda"; }
  bool device_pointers() const override { return true; }
  std::shared_ptr<Buffer> alloc(std::size_t bytes) override { return std::make_shared<CudaBuffer>(pool_, bytes, this); }
  void upload(void* dst, const void* host, std::size_t bytes) override {
    if (bytes) check(cudaMemcpy(dst, host, bytes, cudaMemcpyHostToDevice), "cudaMemcpy H2D");
  }
  void download(void* host, const void* src, std::size_t bytes) override {
    if (bytes) check(cudaMemcpy(host, src, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy D2H");
  }
  void fill_zero(void* dst, std::size_t bytes) override {
    if (bytes) check(cudaMemset(dst, 0, bytes), "cudaMemset");
  }

  void im2col(const float* x, const hd::ConvGeom& g, float* col) override {
    im2col_kernel<<<blocks_for(g.np() * g.kdim()), kThreads>>>(x, g, col);
    launched("im2col");
  }
  void col2im(const float* dcolt, const hd::ConvGeom& g, float* dx) override {
    const std::int64_t total = std::int64_t(g.n) * g.c * g.h * g.w;
    col2im_kernel<<<blocks_for(total), kThreads>>>(dcolt, g, dx, total);
    launched("col2im");
  }
  void conv_out(const float* yt, const float* bias, int n, int cout, int p, float* y) override {
    const std::int64_t total = std::int64_t(n) * cout * p;
    conv_out_kernel<<<blocks_for(total), kThreads>>>(yt, bias, cout, p, y, total);
    launched("conv_out");
  }
  void conv_dyt(const float* dy, int n, int cout, int p, float* dyt) override {
    const std::int64_t total = std::int64_t(n) * cout * p;
    conv_dyt_kernel<<<blocks_for(total), kThreads>>>(dy, cout, p, dyt, total);
    launched("conv_dyt");
  }
  void transpose(const float* m, int rows, int cols, float* out) override {
    const std::int64_t total = std::int64_t(rows) * cols;
    transpose_kernel<<<blocks_for(total), kThreads>>>(m, rows, cols, out, total);
    launched("transpose");
  }
  void add_row_bias(float* y, const float* bias, int rows, int cols) override {
    const std::int64_t total = std::int64_t(rows) * cols;
    add_row_bias_kernel<<<blocks_for(total), kThreads>>>(y, bias, cols, total);
    launched("add_row_bias");
  }
  void relu_fwd(const float* x, float* y, std::size_t n) override {
    relu_fwd_kernel<<<blocks_for(std::int64_t(n)), kThreads>>>(x, y, std::int64_t(n));
    launched("relu_fwd");
  }
  void relu_bwd(const float* dy, const float* y, float* dx, std::size_t n) override {
    relu_bwd_kernel<<<blocks_for(std::int64_t(n)), kThreads>>>(dy, y, dx, std::int64_t(n));
    launched("relu_bwd");
  }
  void maxpool_fwd(const float* x, int planes, int h, int w, int k, int s, int oh, int ow, float* y,
                   std::int32_t* argmax) override {
    const std::int64_t total = std::int64_t(planes) * oh * ow;
    maxpool_fwd_kernel<<<blocks_for(total), kThreads>>>(x, h, w, k, s, oh, ow, y, argmax, total);
    launched("maxpool_fwd");
  }
  void maxpool_bwd(const float* dy, const std::int32_t* argmax, int planes, int h, int w, int k, int s, int oh, int ow,
                   float* dx) override {
    const std::int64_t total = std::int64_t(planes) * h * w;
    maxpool_bwd_kernel<<<blocks_for(total), kThreads>>>(dy, argmax, h, w, k, s, oh, ow, dx, total);
    launched("maxpool_bwd");
  }
  void gap_fwd(const float* x, int planes, int per, float* y) override {
    gap_fwd_kernel<<<blocks_for(planes), kThreads>>>(x, per, y, planes);
    launched("gap_fwd");
  }
  void gap_bwd(const float* dy, int planes, int per, float* dx) override {
    const std::int64_t total = std::int64_t(planes) * per;
    gap_bwd_kernel<<<blocks_for(total), kThreads>>>(dy, per, dx, total);
    launched("gap_bwd");
  }
  void mul(const float* x, const float* scale, float* y, std::size_t n) override {
    mul_kernel<<<blocks_for(std::int64_t(n)), kThreads>>>(x, scale, y, std::int64_t(n));
    launched("dropout mul");
  }
  void add(const float* a, const float* b, float* y, std::size_t n) override {
    add_kernel<<<blocks_for(std::int64_t(n)), kThreads>>>(a, b, y, std::int64_t(n));
    launched("residual add");
  }
  void channel_sum(const float* a, int n, int channels, int per, float* out) override {
    if (channels == 0) return;
    channel_sum_kernel<<<channels, hd::kReduceThreads>>>(a, n, channels, per, out);
    launched("channel_sum");
  }
  void bn_fwd(const float* x, int n, int channels, int per, const float* gamma, const float* beta, float* running_mean,
              float* running_var, bool training, float momentum, float eps, float* y, float* xhat, float* inv_std,
              double* mean_scratch) override {
    if (channels == 0) return;
    bn_stats_kernel<<<channels, hd::kReduceThreads>>>(x, n, channels, per, running_mean, running_var, training ? 1 : 0,
                                                       momentum, eps, inv_std, mean_scratch);
    launched("bn_stats");
    const std::int64_t total = std::int64_t(n) * channels * per;
    bn_norm_kernel<<<blocks_for(total), kThreads>>>(x, channels, per, gamma, beta, mean_scratch, inv_std, y, xhat, total);
    launched("bn_norm");
  }
  void bn_bwd(const float* dy, const float* xhat, const float* gamma, const float* inv_std, int n, int channels, int per,
              bool training, float* dx, float* dgamma, float* dbeta, double* sums) override {
    if (channels == 0) return;
    bn_bwd_sums_kernel<<<channels, hd::kReduceThreads>>>(dy, xhat, n, channels, per, sums, dgamma, dbeta);
    launched("bn_bwd_sums");
    const std::int64_t total = std::int64_t(n) * channels * per;
    bn_bwd_elem_kernel<<<blocks_for(total), kThreads>>>(dy, xhat, gamma, inv_std, channels, per,
                                                         double(std::int64_t(n) * per), sums, training ? 1 : 0, dx, total);
    launched("bn_bwd_elem");
  }
  double softmax_xent(const float* logits, const std::int32_t* labels, int n, int k, float* dlogits,
                      int* correct) override {
    if (n == 0) {
      if (correct) *correct = 0;
      return 0.0;
    }
    if (!loss_ || loss_->bytes() < std::size_t(n) * sizeof(double)) loss_ = alloc(std::size_t(n) * sizeof(double));
    if (!hit_ || hit_->bytes() < std::size_t(n) * sizeof(int)) hit_ = alloc(std::size_t(n) * sizeof(int));
    softmax_kernel<<<blocks_for(n), kThreads>>>(logits, labels, n, k, dlogits, loss_->as<double>(), hit_->as<int>());
    launched("softmax_xent");
    std::vector<double> loss(n);
    std::vector<int> hit(n);
    download(loss.data(), loss_->ptr(), loss.size() * sizeof(double));
    download(hit.data(), hit_->ptr(), hit.size() * sizeof(int));
    double sum = 0;
    int hits = 0;
    for (int i = 0; i < n; ++i) {  // sample order, as the CPU path
      sum += loss[i];
      hits += hit[i];
    }
    if (correct) *correct = hits;
    return sum / n;
  }
  void sgd(float* w, float* v, const float* g, std::size_t n, float lr, float momentum, float wd) override {
    sgd_kernel<<<blocks_for(std::int64_t(n)), kThreads>>>(w, v, g, std::int64_t(n), lr, momentum, wd);
    launched("sgd");
  }
  std::uint64_t count_zeros(const float* p, std::size_t n) override {
    if (n == 0) return 0;
    if (!count_) count_ = alloc(sizeof(unsigned long long));
    fill_zero(count_->ptr(), sizeof(unsigned long long));
    count_zeros_kernel<<<std::min(blocks_for(std::int64_t(n)), 1024u), kThreads>>>(p, std::int64_t(n),
                                                                                    count_->as<unsigned long long>());
    launched("count_zeros");
    unsigned long long z = 0;
    download(&z, count_->ptr(), sizeof(z));
    return z;
  }

 private:
  /// Checks the launch; with SPARTAN_CUDA_SYNC_CHECK=1 in the environment also synchronises and checks the
  /// kernel's execution, so that a fault is reported by the kernel that caused it (debugging; slow).
  static void launched(const char* what) {
    check(cudaGetLastError(), (std::string(what) + " kernel launch").c_str());
    static const bool sync_check = [] {
      const char* v = std::getenv("SPARTAN_CUDA_SYNC_CHECK");
      return v && std::string(v) == "1";
    }();
    if (sync_check)
      check(cudaDeviceSynchronize(), (std::string(what) + " kernel execution (SPARTAN_CUDA_SYNC_CHECK)").c_str());
  }
  std::shared_ptr<Pool> pool_;
  std::shared_ptr<Buffer> loss_, hit_, count_;
};

}  // namespace

std::unique_ptr<Executor> make_cuda_executor() { return std::make_unique<CudaExecutor>(); }

}  // namespace spartan::train
