// Atomic output files: write to `<path>.tmp.<pid>` beside the target, then rename over it. The temporary is
// created exclusively (O_EXCL | O_NOFOLLOW): a file or symbolic link already at that name is never followed or
// truncated; the next free name `<path>.tmp.<pid>.<k>` is taken instead.
// A run that fails (exception, early return) removes the temporary file and leaves the target as it
// was, so no half-written output is ever visible under the final name; a run killed by SIGINT, SIGTERM or
// SIGHUP removes it too once install_temp_cleanup_handlers() ran (run_cli does).
#pragma once
#include <cstddef>
#include <cstdio>
#include <string>

namespace spartan {

/// The file an output to `path` replaces: `path` itself, or, if it is a symbolic link, the file the link
/// chain ends at (so the link stays a link and its target gets the contents, as an editor's save does). Throws
/// IoError if that file exists but is not a regular file (a device such as /dev/null, a FIFO, a socket, a
/// directory: renaming over it would replace it with a plain file; thirty-eighth session's review) or the chain
/// has more than 40 links.
std::string resolve_output_file(const std::string& path);

class AtomicFile {
 public:
  /// Opens the temporary file beside resolve_output_file(path). Throws IoError if that fails (see there) or
  /// the directory is missing or not writable.
  explicit AtomicFile(const std::string& path);
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  /// Removes the temporary file unless commit() succeeded.
  ~AtomicFile();

  /// Appends bytes. Throws IoError on a short write (disk full, ...).
  void write(const void* data, std::size_t bytes);
  void write(const std::string& s) { write(s.data(), s.size()); }
  /// Bytes written so far.
  std::size_t size() const noexcept { return size_; }
  /// The underlying stream, for libraries that need a FILE* (seek/tell allowed).
  std::FILE* stream() noexcept { return fp_; }
  /// Flushes, fsyncs and closes the temporary file without renaming it (no more writes). Throws IoError on
  /// failure (disk full shows here, not in write()). Lets several files be synced before any is renamed.
  void sync();
  /// sync() if not done yet, then renames the temporary file to the target. Throws IoError on failure.
  void commit();

  const std::string& path() const noexcept { return path_; }  ///< as given (a link stays a link)
  const std::string& temp_path() const noexcept { return tmp_; }

 private:
  std::string path_, target_, tmp_;  // as given; the file renamed over (resolve_output_file); the temporary
  std::FILE* fp_ = nullptr;
  std::size_t size_ = 0;
  bool committed_ = false;
  int slot_ = -1;  // index in the process-wide registry of live temporary files (-1: not registered)
};

/// Installs, once per process, SIGINT/SIGTERM/SIGHUP handlers that unlink every live AtomicFile temporary
/// file of this process and then re-raise the signal with its default action (so a killed run leaves no
/// `<path>.tmp.<pid>` behind and still dies of the signal). Signals that are ignored (nohup) or already
/// handled are left alone. The handler only calls unlink/signal/raise (async-signal-safe); the registry
/// is a fixed table of 16384 paths of up to PATH_MAX bytes (more live files are still removed on normal
/// exit and on exceptions, not on signals). Called by run_cli (cli.h); safe to call more than once.
void install_temp_cleanup_handlers();

/// Writes a whole string to `path` atomically.
void write_file_atomic(const std::string& path, const std::string& contents);

/// Checks, without creating anything, that output directory `dir` exists as a writable directory or can
/// be created: its nearest existing ancestor must be a writable directory. Commands call it before
/// their (slow) work so that a bad --out fails at once and leaves nothing behind. Throws IoError.
void check_output_dir(const std::string& dir);

/// Creates `dir` (and its parents) if missing, when the outputs are about to be written. Throws IoError.
void ensure_output_dir(const std::string& dir);

/// Reads a whole file. Throws IoError naming the file if it cannot be opened or read.
std::string read_file(const std::string& path);

}  // namespace spartan
