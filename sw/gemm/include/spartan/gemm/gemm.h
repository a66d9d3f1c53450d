// One GEMM interface for the whole project. Every activation-sparse GEMM of the training engine
// goes through a GemmEngine; the implementation (dense OpenBLAS, tile-sparse CPU, CUDA) is chosen
// at run time.
//
// Convention: row-major storage, C[M x N] = alpha * op(A)[M x K] * op(B)[K x N] + beta * C,
// with op(X) = X or X^T as in BLAS; lda/ldb/ldc are row strides in elements of the stored
// (untransposed) matrices.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

namespace spartan::gemm {

enum class Op { N, T };

/// Which operand holds the (ReLU-)sparse activation, so that a sparse engine knows what to compact.
enum class SparseOperand { None, A, B };

struct GemmCall {
  Op op_a = Op::N, op_b = Op::N;
  int M = 0, N = 0, K = 0;
  float alpha = 1.0f, beta = 0.0f;
  const float* A = nullptr;
  int lda = 0;
  const float* B = nullptr;
  int ldb = 0;
  float* C = nullptr;
  int ldc = 0;
  SparseOperand sparse = SparseOperand::None;
  /// Version of the dense (non-sparse) operand's contents. Non-zero: an engine may keep the packed copy
  /// it makes of that operand and reuse it for later calls with the same pointer, shape, stride, op and
  /// version (weights are packed once per SGD step instead of once per call, cf. MKL's cblas_sgemm_pack).
  /// The caller must pass a new version whenever the contents (or the allocation behind the pointer)
  /// change, e.g. a counter bumped by every weight update. 0 (default): never reused.
  std::uint64_t dense_version = 0;
  /// A, B and C are CUDA device pointers (the device-resident training path). Only the CUDA engines accept
  /// such calls (they then copy nothing); the CPU engines throw spartan::InputError.
  bool device_pointers = false;
};

class GemmEngine {
 public:
  virtual ~GemmEngine() = default;
  /// Computes the call. Throws spartan::InputError on inconsistent shapes/strides.
  virtual void run(const GemmCall& call) = 0;
  /// "dense" (OpenBLAS sgemm), "tile-sparse", ...
  virtual std::string name() const = 0;
};

/// Dense reference engine: OpenBLAS cblas_sgemm.
std::unique_ptr<GemmEngine> make_dense_engine();

/// Checks shapes and strides of a call (M,N,K >= 0; ld >= row length of the stored matrix;
/// non-null pointers when sizes are non-zero) for a host engine: device_pointers must be false.
/// Throws spartan::InputError.
void validate(const GemmCall& call);
/// The shape/stride/null checks of validate() without the host-pointer requirement (CUDA engines).
void validate_shape(const GemmCall& call);

}  // namespace spartan::gemm
