// The property both sdnn reader fuzz targets check: a CSR the reader returns is well formed
// (row_ptr starts at 0, is monotone and ends at nnz; column indices sorted, unique and in range).
// A violation aborts, which libFuzzer and the corpus replay test report as a crash.
#pragma once
#include <cstdlib>

#include "spartan/sdnn/sparse.h"

namespace spartan::fuzz {
inline void check_csr(const spartan::sdnn::Csr& a) {
  if (a.rows < 0 || a.cols < 0 || a.row_ptr.size() != static_cast<std::size_t>(a.rows) + 1) std::abort();
  if (a.row_ptr.front() != 0 || a.row_ptr.back() != a.nnz() || a.values.size() != a.col_idx.size()) std::abort();
  for (std::int64_t r = 0; r < a.rows; ++r) {
    if (a.row_ptr[r] > a.row_ptr[r + 1]) std::abort();
    for (std::int64_t k = a.row_ptr[r]; k < a.row_ptr[r + 1]; ++k) {
      if (a.col_idx[k] < 0 || a.col_idx[k] >= a.cols) std::abort();
      if (k > a.row_ptr[r] && a.col_idx[k] <= a.col_idx[k - 1]) std::abort();
    }
  }
}
}  // namespace spartan::fuzz
