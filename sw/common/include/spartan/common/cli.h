// Uniform error handling for the project's executables.
#pragma once
#include <exception>
#include <functional>
#include <string>

namespace spartan {

/// How run_cli reports a failure: the exit code, whether the line says "internal error" rather than
/// "error", and the one-line message (control characters escaped, error.h one_line). The one mapping of
/// exceptions to exit codes, shared by run_cli and sdnn::MpiSession::agree (which prints one rank's line for
/// all ranks):
///   spartan::ReportedError -> its exit_code(), printed_elsewhere (nothing to print);
///   spartan::Error -> its exit_code() (2 for bad input, error.h);
///   Boost.Program_options errors -> 2, the message followed by " (see --help)";
///   std::filesystem::filesystem_error -> 2 (a path the user gave cannot be created or read);
///   std::bad_alloc -> 2, "out of memory";
///   any other exception -> 1, internal.
struct CliFailure {
  int exit_code = 1;
  bool internal = false;
  bool printed_elsewhere = false;
  std::string message;
  /// The text after "<tool>: ", e.g. "error: no such file" or "internal error: bad state".
  std::string line() const { return (internal ? "internal error: " : "error: ") + message; }
};

/// Describes `ep` (which must not be null) as run_cli would report it. Never throws an exception other than
/// std::bad_alloc.
CliFailure describe_failure(const std::exception_ptr& ep);

/// Runs `body` and converts exceptions to one line on stderr and an exit code:
/// spartan::Error -> its exit_code() (2 for bad input; a ReportedError prints nothing), Boost.Program_options errors -> 2,
/// anything else -> 1 ("internal error"). `tool` prefixes the line, e.g. "spartan-trace: error: ...".
/// First installs the SIGINT/SIGTERM/SIGHUP handlers that remove AtomicFile temporaries
/// (install_temp_cleanup_handlers, atomic_file.h).
int run_cli(const char* tool, const std::function<int()>& body);

/// Called by run_cli with the exit code after it has printed an error, before it returns. The MPI session
/// (sdnn::MpiSession) sets it while an error on one rank leaves the others blocked in a collective: the
/// hook then ends the whole job (MPI_Abort) instead of letting this rank finalise and the others hang.
/// nullptr (the default) does nothing.
void set_cli_error_hook(void (*hook)(int exit_code));

}  // namespace spartan
