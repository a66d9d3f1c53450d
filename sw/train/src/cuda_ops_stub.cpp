// Builds without CUDA (SPARTAN_HAVE_CUDA off): the CUDA executor does not exist.
#include "spartan/common/error.h"
#include "spartan/train/executor.h"

namespace spartan::train {

std::unique_ptr<Executor> make_cuda_executor() {
  throw InputError("--device cuda: this build has no CUDA support (configure where nvcc exists)");
}

}  // namespace spartan::train
