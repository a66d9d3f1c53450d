// What neither an error nor an interrupt may leave behind in spartan-area: its scratch directories and the
// Yosys/OpenSTA processes it started (with their own children, e.g. Yosys's ABC).
//
// install_interrupt_cleanup() blocks SIGINT, SIGTERM and SIGHUP in the calling thread (and so in every thread
// started after it) and starts a thread that waits for them. On one it terminates the running tools (each runs
// in its own process group, so the whole group: SIGTERM, then SIGKILL after 2 s), removes every live TempDir,
// and then re-raises the signal: the handler run_cli installed (install_temp_cleanup_handlers, atomic_file.h)
// removes the AtomicFile temporaries and the process dies of the signal, as before. Signals that are ignored
// (nohup) are left alone. Unlike a signal handler, that thread may lock, wait and call std::filesystem.
#pragma once
#include <string>
#include <vector>

namespace spartan::area {

/// Installs the interrupt cleanup described above, once per process. Call from the main thread before any
/// other thread starts (run_cli first, so that its handler is the one re-raised into).
void install_interrupt_cleanup();

/// A directory removed with everything in it when the object is destroyed (unless release() was called) and
/// when the process is interrupted (install_interrupt_cleanup).
class TempDir {
 public:
  /// Creates a new directory `parent/<prefix>XXXXXX` (mkdtemp). Throws IoError naming `what` on failure.
  TempDir(const std::string& parent, const std::string& prefix, const std::string& what);
  /// Takes over an existing directory that this run created (removed like one made by the other constructor).
  explicit TempDir(const std::string& path);
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  /// Removes the directory and everything in it, unless release() was called.
  ~TempDir();
  /// The directory's path.
  const std::string& path() const noexcept { return path_; }
  /// Keeps the directory: neither the destructor nor an interrupt removes it any more.
  void release();

 private:
  std::string path_;
  bool live_ = false;
};

/// Runs `argv` (argv[0] a path) with stdin from /dev/null, stdout and stderr to `log_path`, TMPDIR set to
/// `tmpdir` when it is not empty (Yosys puts its yosys-abc-* directories there), in a process group of its own
/// that an interrupt terminates, and waits for it. Returns the exit status, 128 + the signal when it was
/// killed, 127 when it could not start or the process is being interrupted.
int run_process(const std::vector<std::string>& argv, const std::string& log_path, const std::string& tmpdir = "");

}  // namespace spartan::area
