// The device that runs training: CPU, or (builds with SPARTAN_HAVE_CUDA) a CUDA GPU whose cuBLAS /
// CUDA tile-sparse engines (sw/gemm, spartan/gemm/cuda.h) compute the conv/FC GEMMs.
#pragma once
#include <string>

namespace spartan::train {

/// True when this build can use CUDA engines and a GPU is present whose architecture the build has kernels
/// for (gemm::cuda_unusable_reason() empty).
bool cuda_available();
/// "cuda: <GPU name> (sm_XY)" of device 0. Throws spartan::InputError ("<option>: <why>", e.g. "--device cuda: no
/// CUDA GPU available") when no GPU is usable or the build has no CUDA support; `option` names what asked for it.
std::string cuda_device_name(const std::string& option = "--device cuda");

}  // namespace spartan::train
