// libFuzzer target for the .sptrace reader: any byte string must either open (and then every tensor
// converts, every structured metadata key parses or throws) or throw spartan::Error. Never a crash.
// Build with clang: cmake -DCMAKE_CXX_COMPILER=clang++ -DSPARTAN_FUZZ=ON ... --target fuzz_sptrace_reader
// Run:  build/bin/fuzz_sptrace_reader -max_total_time=60 traces/samples
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "spartan/common/error.h"
#include "spartan/trace/metadata.h"
#include "spartan/trace/sptrace.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const int fd = ::memfd_create("sptrace_fuzz", MFD_CLOEXEC);
  static const std::string path = "/proc/self/fd/" + std::to_string(fd);
  if (fd < 0 || ::ftruncate(fd, 0) != 0) return 0;
  if (size && ::pwrite(fd, data, size, 0) != static_cast<ssize_t>(size)) return 0;
  try {
    spartan::trace::TraceReader r(path);
    for (const auto& t : r.tensors()) (void)r.to_f32(t.name);
    (void)r.keys();
    try {
      spartan::trace::check_metadata(r);
    } catch (const spartan::Error&) {
    }
  } catch (const spartan::Error&) {
  }
  return 0;
}
