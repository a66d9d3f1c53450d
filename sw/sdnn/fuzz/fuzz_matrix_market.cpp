// libFuzzer target for the MatrixMarket reader (sw/sdnn/src/io.cpp): any byte string (plain or gzip) must
// either give a well-formed CSR (row_ptr monotone, column indices sorted, unique and in range) or throw
// spartan::Error. Run: build-fuzz/bin/fuzz_sdnn_matrix_market sw/sdnn/fuzz/corpus/fuzz_sdnn_matrix_market
#include <cstdlib>

#include "fuzz_csr_check.h"
#include "fuzz_memfd.h"
#include "spartan/common/error.h"
#include "spartan/sdnn/sparse.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = spartan::fuzz::memfd_path(data, size);
  if (path.empty()) return 0;
  try {
    spartan::fuzz::check_csr(spartan::sdnn::read_matrix_market(path));
  } catch (const spartan::Error&) {
  }
  return 0;
}
