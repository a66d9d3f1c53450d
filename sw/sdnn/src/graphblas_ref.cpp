// GraphBLAS oracle / baseline (see graphblas_ref.h).
#include "spartan/sdnn/graphblas_ref.h"

extern "C" {  // GraphBLAS.h (v7) has no C++ linkage guard
#include <GraphBLAS.h>
}

#include <string>

#include "spartan/common/error.h"

namespace spartan::sdnn::graphblas {
namespace {

void check(GrB_Info info, const char* what) {
  if (info != GrB_SUCCESS && info != GrB_NO_VALUE) throw Error(std::string("GraphBLAS ") + what + " failed (GrB_Info " + std::to_string(static_cast<int>(info)) + ")", 1);
}

void ensure_init() {
  static bool done = [] {
    check(GrB_init(GrB_NONBLOCKING), "GrB_init");
    return true;
  }();
  (void)done;
}

GrB_Matrix to_grb(const Csr& a) {
  GrB_Matrix m = nullptr;
  check(GrB_Matrix_new(&m, GrB_FP32, static_cast<GrB_Index>(a.rows), static_cast<GrB_Index>(a.cols)), "Matrix_new");
  std::vector<GrB_Index> I, J;
  I.reserve(a.col_idx.size());
  J.reserve(a.col_idx.size());
  for (std::int64_t r = 0; r < a.rows; ++r)
    for (auto k = a.row_ptr[r]; k < a.row_ptr[r + 1]; ++k) {
      I.push_back(static_cast<GrB_Index>(r));
      J.push_back(static_cast<GrB_Index>(a.col_idx[k]));
    }
  check(GrB_Matrix_build_FP32(m, I.data(), J.data(), a.values.data(), static_cast<GrB_Index>(I.size()), GrB_PLUS_FP32), "Matrix_build");
  check(GrB_Matrix_wait(m, GrB_MATERIALIZE), "wait");
  return m;
}

}  // namespace

struct Problem::Impl {
  GrB_Matrix y0 = nullptr;
  std::vector<GrB_Matrix> w;
};

Problem::Problem(const Csr& y0, const std::vector<Csr>& weights) : impl_(new Impl) {
  ensure_init();
  impl_->y0 = to_grb(y0);
  for (const auto& w : weights) impl_->w.push_back(to_grb(w));
}

Problem::~Problem() {
  GrB_Matrix_free(&impl_->y0);
  for (auto& w : impl_->w) GrB_Matrix_free(&w);
  delete impl_;
}

Csr Problem::run(float bias, float ymax) {
  GrB_Index rows = 0, cols = 0;
  check(GrB_Matrix_nrows(&rows, impl_->y0), "nrows");
  check(GrB_Matrix_ncols(&cols, impl_->y0), "ncols");
  GrB_Matrix y = nullptr;
  check(GrB_Matrix_dup(&y, impl_->y0), "dup");
  for (GrB_Matrix w : impl_->w) {
    GrB_Matrix z = nullptr;
    GrB_Index wc = 0;
    check(GrB_Matrix_ncols(&wc, w), "ncols");
    check(GrB_Matrix_new(&z, GrB_FP32, rows, wc), "Matrix_new");
    check(GrB_mxm(z, nullptr, nullptr, GrB_PLUS_TIMES_SEMIRING_FP32, y, w, nullptr), "mxm");
    check(GrB_Matrix_apply_BinaryOp2nd_FP32(z, nullptr, nullptr, GrB_PLUS_FP32, z, bias, nullptr), "apply bias");
    check(GrB_Matrix_select_FP32(z, nullptr, nullptr, GrB_VALUEGT_FP32, z, 0.0f, nullptr), "select > 0");
    check(GrB_Matrix_apply_BinaryOp2nd_FP32(z, nullptr, nullptr, GrB_MIN_FP32, z, ymax, nullptr), "apply min");
    GrB_Matrix_free(&y);
    y = z;
  }
  // Extract to CSR.
  GrB_Index nvals = 0;
  check(GrB_Matrix_nvals(&nvals, y), "nvals");
  std::vector<GrB_Index> I(nvals), J(nvals);
  std::vector<float> X(nvals);
  GrB_Index n = nvals;
  check(GrB_Matrix_extractTuples_FP32(I.data(), J.data(), X.data(), &n, y), "extractTuples");
  GrB_Matrix_free(&y);
  std::vector<Triple> t(n);
  for (GrB_Index k = 0; k < n; ++k) t[k] = {static_cast<std::int64_t>(I[k]), static_cast<std::int64_t>(J[k]), X[k]};
  return csr_from_triples(static_cast<std::int64_t>(rows), static_cast<std::int64_t>(cols), std::move(t));
}

}  // namespace spartan::sdnn::graphblas
