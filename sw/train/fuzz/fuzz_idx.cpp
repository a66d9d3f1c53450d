// libFuzzer target for the IDX reader (sw/train/src/idx.cpp): any byte string (raw or gzip) must either
// decode to dims whose product equals the data size, or throw spartan::Error. Never a crash, never an
// allocation driven by an unchecked header (huge dims in a short file must be rejected before allocating).
// Run: build-fuzz/bin/fuzz_train_idx sw/train/fuzz/corpus/fuzz_train_idx
#include <cstdlib>

#include "fuzz_memfd.h"
#include "spartan/common/error.h"
#include "spartan/train/idx.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = spartan::fuzz::memfd_path(data, size);
  if (path.empty()) return 0;
  try {
    const spartan::train::IdxArray a = spartan::train::read_idx(path);
    unsigned long long n = 1;
    for (std::uint32_t d : a.dims) n *= d;
    if (n != a.data.size()) std::abort();
  } catch (const spartan::Error&) {
  }
  return 0;
}
