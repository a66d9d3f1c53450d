// Uniform error handling for the project's executables.
#pragma once
#include <functional>

namespace spartan {

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
