// libFuzzer target for the MatrixMarket reader (sw/sdnn/src/io.cpp): any byte string (plain or gzip) must
// either give a well-formed CSR (row_ptr monotone, column indices sorted, unique and in range) or throw
// spartan::Error. Run: build-fuzz/bin/fuzz_sdnn_matrix_market sw/sdnn/fuzz/corpus/fuzz_sdnn_matrix_market
#include <cstdlib>

#include "fuzz_memfd.h"
#include "spartan/common/error.h"
#include "spartan/sdnn/sparse.h"

namespace {
void check_csr(const spartan::sdnn::Csr& a) {
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
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = spartan::fuzz::memfd_path(data, size);
  if (path.empty()) return 0;
  try {
    check_csr(spartan::sdnn::read_matrix_market(path));
  } catch (const spartan::Error&) {
  }
  return 0;
}
