#include <cblas.h>

#include <string>

#include "spartan/common/error.h"
#include "spartan/gemm/gemm.h"

namespace spartan::gemm {

void validate(const GemmCall& c) {
  if (c.device_pointers)
    throw InputError("gemm: a CPU engine was given device pointers (GemmCall::device_pointers); use a CUDA engine "
                     "(cuda-dense, cuda-tile-sparse) for the device-resident path");
  validate_shape(c);
}

void validate_shape(const GemmCall& c) {
  if (c.M < 0 || c.N < 0 || c.K < 0) throw InputError("gemm: negative dimension");
  const int a_cols = c.op_a == Op::N ? c.K : c.M;
  const int b_cols = c.op_b == Op::N ? c.N : c.K;
  if (c.lda < (a_cols > 0 ? a_cols : 1) || c.ldb < (b_cols > 0 ? b_cols : 1) || c.ldc < (c.N > 0 ? c.N : 1))
    throw InputError("gemm: leading dimension smaller than the row length");
  if (c.M > 0 && c.N > 0 && (!c.C || (c.K > 0 && (!c.A || !c.B)))) throw InputError("gemm: null operand");
}

namespace {
class DenseEngine final : public GemmEngine {
 public:
  void run(const GemmCall& c) override {
    validate(c);
    if (c.M == 0 || c.N == 0) return;
    cblas_sgemm(CblasRowMajor, c.op_a == Op::N ? CblasNoTrans : CblasTrans, c.op_b == Op::N ? CblasNoTrans : CblasTrans,
                c.M, c.N, c.K, c.alpha, c.A, c.lda, c.B, c.ldb, c.beta, c.C, c.ldc);
  }
  std::string name() const override { return "dense"; }
};
}  // namespace

std::unique_ptr<GemmEngine> make_dense_engine() { return std::make_unique<DenseEngine>(); }

}  // namespace spartan::gemm
