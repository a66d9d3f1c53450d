// The CUDA executor's kernels on the host (executor.h, make_simt_executor): cudaops::KernelExecutor with host
// memory standing for device memory and spartan::simt::launch (spartan/common/simt.h) for the launches.
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

#include "kernel_executor.h"
#include "spartan/common/error.h"
#include "spartan/common/simt.h"
#include "spartan/train/executor.h"

namespace spartan::train {

namespace {

/// cudaMalloc's alignment (256 bytes, CUDA C++ Programming Guide, "Device Memory Accesses").
constexpr std::size_t kDeviceAllocAlignBytes = 256;

/// "Device" memory: exactly `bytes` on the heap (a kernel reading past them is caught by AddressSanitizer),
/// filled with 0xFF bytes (float and double NaN) as a stand-in for cudaMalloc's uninitialised memory: a layer
/// that reads a buffer before writing it gets NaN rather than zeros.
class SimtBuffer final : public Buffer {
 public:
  SimtBuffer(std::size_t bytes, const void* owner) {
    bytes_ = bytes;
    owner_ = owner;
    p_ = ::operator new(bytes ? bytes : 1, std::align_val_t(kDeviceAllocAlignBytes), std::nothrow);
    if (!p_) throw Error("cuda (simt) executor: out of memory allocating " + std::to_string(bytes) + " bytes");
    std::memset(p_, 0xFF, bytes);
  }
  ~SimtBuffer() override { ::operator delete(p_, std::align_val_t(kDeviceAllocAlignBytes)); }
};

class SimtDev {
 public:
  std::string name() const { return "cuda (simt)"; }
  std::shared_ptr<Buffer> alloc(std::size_t bytes, const void* owner) {
    return std::make_shared<SimtBuffer>(bytes, owner);
  }
  void upload(void* dst, const void* host, std::size_t bytes) { std::memcpy(dst, host, bytes); }
  void download(void* host, const void* src, std::size_t bytes) { std::memcpy(host, src, bytes); }
  void fill_zero(void* dst, std::size_t bytes) { std::memset(dst, 0, bytes); }
  /// Errors of the emulation are rethrown as spartan::Error with the kernel's name in front: a block or grid
  /// outside CUDA's limits or a barrier in divergent code keep their exit code; a misuse the emulation
  /// reports as std::logic_error (a barrier in a kernel launched with uses_syncthreads false) is an internal
  /// error (exit code 1).
  template <class... P, class... A>
  void launch(const char* what, unsigned grid, unsigned block, bool uses_syncthreads, void (*kernel)(P...),
              A... args) {
    try {
      simt::launch({grid, 1, 1}, {block, 1, 1}, 0, uses_syncthreads, [&] { kernel(args...); });
    } catch (const Error& e) {
      throw Error(std::string(what) + " kernel (simt): " + e.what(), e.exit_code());
    } catch (const std::logic_error& e) {
      throw Error(std::string(what) + " kernel (simt): " + e.what(), 1);
    }
  }
};

}  // namespace

std::unique_ptr<Executor> make_simt_executor() { return std::make_unique<cudaops::KernelExecutor<SimtDev>>(); }

}  // namespace spartan::train
