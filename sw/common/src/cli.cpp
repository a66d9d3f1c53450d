#include "spartan/common/cli.h"

#include <boost/program_options/errors.hpp>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <new>

#include "spartan/common/atomic_file.h"
#include "spartan/common/error.h"

namespace spartan {

namespace {
void (*g_error_hook)(int) = nullptr;

int report(const char* tool, const std::function<int()>& body) {
  try {
    return body();
  } catch (...) {
    try {
      const CliFailure f = describe_failure(std::current_exception());
      if (!f.printed_elsewhere)
        std::fprintf(stderr, "%s: %s%s\n", tool, f.internal ? "internal error: " : "error: ", f.message.c_str());
      return f.exit_code;
    } catch (const std::bad_alloc&) {  // describing the failure needs a little memory
      std::fprintf(stderr, "%s: error: out of memory\n", tool);
      return 2;
    }
  }
}
}  // namespace

CliFailure describe_failure(const std::exception_ptr& ep) {
  CliFailure f;
  try {
    std::rethrow_exception(ep);
  } catch (const ReportedError& e) {
    f.exit_code = e.exit_code();  // printed elsewhere (error.h)
    f.printed_elsewhere = true;
    f.message = e.what();
  } catch (const Error& e) {
    f.exit_code = e.exit_code();
    f.message = e.what();
  } catch (const boost::program_options::error& e) {
    f.exit_code = 2;
    f.message = one_line(e.what()) + " (see --help)";
  } catch (const std::filesystem::filesystem_error& e) {
    // A path the user gave cannot be created or read (e.g. an output directory under a regular file):
    // bad input, not an internal error (found by the reliability tests, docs/reliability.md).
    f.exit_code = 2;
    f.message = one_line(e.what());
  } catch (const std::bad_alloc&) {
    f.exit_code = 2;
    f.message = "out of memory";
  } catch (const std::exception& e) {
    f.internal = true;
    f.message = one_line(e.what());
  } catch (...) {
    f.internal = true;
    f.message = "unknown exception";
  }
  return f;
}

void set_cli_error_hook(void (*hook)(int)) { g_error_hook = hook; }

int run_cli(const char* tool, const std::function<int()>& body) {
  install_temp_cleanup_handlers();  // a killed run leaves no AtomicFile temporaries (atomic_file.h)
  bool ok = false;
  const int rc = report(tool, [&] {
    const int r = body();
    ok = true;
    return r;
  });
  if (!ok && g_error_hook) {
    std::fflush(stderr);
    g_error_hook(rc);
  }
  return rc;
}

}  // namespace spartan
