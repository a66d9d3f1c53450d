#include "spartan/train/device.h"

#include "spartan/common/error.h"
#ifdef SPARTAN_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "spartan/gemm/cuda.h"
#endif

namespace spartan::train {

#ifdef SPARTAN_HAVE_CUDA
bool cuda_available() { return gemm::cuda_unusable_reason().empty(); }

std::string cuda_device_name(const std::string& option) {
  if (const std::string why = gemm::cuda_unusable_reason(); !why.empty()) throw InputError(option + ": " + why);
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) throw InputError(option + ": cannot query device 0");
  return std::string("cuda: ") + prop.name + " (sm_" + std::to_string(prop.major) + std::to_string(prop.minor) + ")";
}
#else
bool cuda_available() { return false; }
std::string cuda_device_name(const std::string& option) {
  throw InputError(option + ": this build has no CUDA support");
}
#endif

}  // namespace spartan::train
