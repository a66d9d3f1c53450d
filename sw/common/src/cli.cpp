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
  } catch (const ReportedError& e) {
    return e.exit_code();  // printed elsewhere (error.h)
  } catch (const Error& e) {
    std::fprintf(stderr, "%s: error: %s\n", tool, e.what());
    return e.exit_code();
  } catch (const boost::program_options::error& e) {
    std::fprintf(stderr, "%s: error: %s (see --help)\n", tool, one_line(e.what()).c_str());
    return 2;
  } catch (const std::filesystem::filesystem_error& e) {
    // A path the user gave cannot be created or read (e.g. an output directory under a regular file):
    // bad input, not an internal error (found by the reliability tests, docs/reliability.md).
    std::fprintf(stderr, "%s: error: %s\n", tool, one_line(e.what()).c_str());
    return 2;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "%s: error: out of memory\n", tool);
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: internal error: %s\n", tool, one_line(e.what()).c_str());
    return 1;
  }
}
}  // namespace

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
