// CUDA executor of the device-resident training path (executor.h): device buffers from a size-keyed pool
// (cudaMalloc / cudaFree), and the kernels of cuda_ops_kernels.h, issued by cudaops::KernelExecutor
// (kernel_executor.h; simt_executor.cpp runs the same on the host).
// Built with --fmad=false (sw/train/CMakeLists.txt) so that the kernels do the same float operations as the
// host reference executor and the CPU layers (no fused multiply-adds).
//
// Streams: every kernel, cuBLAS call (sw/gemm CUDA engines) and copy is issued on the legacy default stream,
// so they execute in issue order; downloads are synchronous cudaMemcpy calls, which wait for all earlier work,
// and buffers returned to the pool are only reused by work issued later on the same stream.
#include <cuda_runtime.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "kernel_executor.h"
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

/// The CUDA side of cudaops::KernelExecutor (kernel_executor.h): device memory from the pool, launches on the
/// legacy default stream.
class CudaDev {
 public:
  CudaDev() : pool_(std::make_shared<Pool>()) {
    if (const std::string why = gemm::cuda_unusable_reason(); !why.empty()) throw InputError("--device cuda: " + why);
    check(cudaSetDevice(0), "cudaSetDevice");
  }
  std::string name() const { return "cuda"; }
  std::shared_ptr<Buffer> alloc(std::size_t bytes, const void* owner) {
    return std::make_shared<CudaBuffer>(pool_, bytes, owner);
  }
  void upload(void* dst, const void* host, std::size_t bytes) {
    check(cudaMemcpy(dst, host, bytes, cudaMemcpyHostToDevice), "cudaMemcpy H2D");
  }
  void download(void* host, const void* src, std::size_t bytes) {
    check(cudaMemcpy(host, src, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy D2H");
  }
  void fill_zero(void* dst, std::size_t bytes) { check(cudaMemset(dst, 0, bytes), "cudaMemset"); }
  template <class... P, class... A>
  void launch(const char* what, unsigned grid, unsigned block, bool /*uses_syncthreads*/, void (*kernel)(P...),
              A... args) {
    kernel<<<grid, block>>>(args...);
    launched(what);
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
};

}  // namespace

std::unique_ptr<Executor> make_cuda_executor() { return std::make_unique<cudaops::KernelExecutor<CudaDev>>(); }

}  // namespace spartan::train
