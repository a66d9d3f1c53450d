// sptrace_container_check: the C++ reader's container verdict, for the differential test of the two readers
// (reader_diff_fuzz.py). It opens a file with TraceReader only: the container checks of docs/trace-format.md
// section 1 and the format_version of section 6, which is what read_sptrace.py checks. `spartan-trace check` and
// `info` also check the metadata schemas (check_metadata), which the Python reader does not.
//   sptrace_container_check FILE             prints "ok" (exit 0), or one error line on stderr (exit 2)
//   sptrace_container_check --batch FILE...  one record per file on stdout (below), exit 0
// A batch record is four tab-separated fields: the exit status the single-file form gives, then for a
// FormatError its byte offset and its field in hex ("-" otherwise), then the error line (after the tool's name
// and ": ") in hex ("-" when accepted). The single-file form and the batch form share the same body and the
// same exception mapping (spartan::describe_failure, as run_cli).
#include <cstdio>
#include <exception>
#include <string>

#include "spartan/common/cli.h"
#include "spartan/common/error.h"
#include "spartan/trace/sptrace.h"

namespace {

/// Opens `path` as run_cli's body would: TraceReader's validation and nothing else.
void open_container(const std::string& path) { spartan::trace::TraceReader r(path); }

std::string hex(const std::string& s) {
  static const char* const kDigits = "0123456789abcdef";
  std::string out;
  out.reserve(2 * s.size());
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    out += kDigits[u >> 4];
    out += kDigits[u & 15];
  }
  return out.empty() ? "-" : out;
}

/// One batch record for `path` (see the file comment).
void batch_record(const std::string& path) {
  try {
    open_container(path);
    std::printf("0\t-\t-\t-\n");
  } catch (...) {
    const std::exception_ptr ep = std::current_exception();
    std::string offset = "-", field = "-";
    try {
      std::rethrow_exception(ep);
    } catch (const spartan::FormatError& e) {
      offset = std::to_string(e.offset());
      field = e.field().empty() ? "" : hex(e.field());
    } catch (...) {
    }
    const spartan::CliFailure f = spartan::describe_failure(ep);
    std::printf("%d\t%s\t%s\t%s\n", f.exit_code, offset.c_str(), field.c_str(), hex(f.line()).c_str());
  }
}
}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::string(argv[1]) == "--batch") {
    for (int i = 2; i < argc; ++i) batch_record(argv[i]);
    return std::fflush(stdout) == 0 ? 0 : 1;
  }
  return spartan::run_cli("sptrace_container_check", [&]() -> int {
    if (argc != 2) throw spartan::InputError("usage: sptrace_container_check FILE | --batch FILE...");
    open_container(argv[1]);
    std::printf("ok\n");
    return 0;
  });
}
