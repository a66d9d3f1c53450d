// Test shim for bench_gemm.rows (LD_PRELOAD): cblas_sgemm computes the product and then adds 1 to C[0], so that
// the OpenBLAS side of bench-gemm (baseline and reference) differs from the tile-sparse kernels wherever they do
// not themselves run one sgemm of the whole call: the bench's result check must print WRONG for those rows, leave
// them out of the means and the target count, and exit 1.
#include <cblas.h>
#include <dlfcn.h>

extern "C" void cblas_sgemm(OPENBLAS_CONST enum CBLAS_ORDER order, OPENBLAS_CONST enum CBLAS_TRANSPOSE ta,
                            OPENBLAS_CONST enum CBLAS_TRANSPOSE tb, OPENBLAS_CONST blasint m, OPENBLAS_CONST blasint n,
                            OPENBLAS_CONST blasint k, OPENBLAS_CONST float alpha, OPENBLAS_CONST float* a,
                            OPENBLAS_CONST blasint lda, OPENBLAS_CONST float* b, OPENBLAS_CONST blasint ldb,
                            OPENBLAS_CONST float beta, float* c, OPENBLAS_CONST blasint ldc) {
  using Fn = void (*)(enum CBLAS_ORDER, enum CBLAS_TRANSPOSE, enum CBLAS_TRANSPOSE, blasint, blasint, blasint, float,
                      const float*, blasint, const float*, blasint, float, float*, blasint);
  static Fn real = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, "cblas_sgemm"));
  real(order, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  if (m > 0 && n > 0) c[0] += 1.0f;
}
