// Project-wide error types. Library code throws these; executables catch them in spartan::run_cli
// (cli.h), print one line and exit with the code the error carries (2 = bad input).
#pragma once
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>

namespace spartan {

/// `msg` with every ASCII control character (a newline, a tab, ESC, DEL...) written as a C escape (`\n`,
/// `\t`, `\x1b`): an error message quotes names from the user's files (a tensor name may hold a newline), and
/// the CLIs promise one line on stderr. Well-formed UTF-8 sequences (a non-ASCII file name) are kept, except the
/// C1 controls, U+2028/U+2029 and the bidi controls, which are escaped byte by byte as `\xNN`, like every other
/// byte >= 0x80 (binary content quoted from a file, e.g. gzip bytes).
inline std::string one_line(const std::string& msg) {
  std::string out;
  out.reserve(msg.size());
  const std::size_t n = msg.size();
  auto byte = [&](std::size_t i) { return static_cast<unsigned char>(msg[i]); };
  // Length of the well-formed UTF-8 sequence at i (RFC 3629: no overlong forms, surrogates or > U+10FFFF), or 0.
  auto utf8_len = [&](std::size_t i) -> std::size_t {
    const unsigned char c = byte(i);
    std::size_t len;
    unsigned char lo = 0x80, hi = 0xBF;  // the range of the second byte
    if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c >= 0xE0 && c <= 0xEF) len = 3, lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
    else if (c >= 0xF0 && c <= 0xF4) len = 4, lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
    else return 0;
    if (i + len > n || byte(i + 1) < lo || byte(i + 1) > hi) return 0;
    for (std::size_t k = 2; k < len; ++k)
      if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
    return len;
  };
  for (std::size_t i = 0; i < n; ++i) {
    const unsigned char c = byte(i);
    if (c >= 0x80) {
      if (const std::size_t len = utf8_len(i)) {
        std::uint32_t cp = c & (0xFFu >> (len + 1));
        for (std::size_t k = 1; k < len; ++k) cp = (cp << 6) | (byte(i + k) & 0x3Fu);
        // Characters that end or reorder a line in a terminal or a splitlines(): C1 controls (U+0085 NEL, U+009B
        // CSI), the line and paragraph separators, bidi embeddings/overrides/isolates: escaped like C0 controls.
        const bool control = cp <= 0x9F || cp == 0x2028 || cp == 0x2029 || (cp >= 0x202A && cp <= 0x202E) ||
                             (cp >= 0x2066 && cp <= 0x2069);
        if (!control) {
          out.append(msg, i, len);
          i += len - 1;
          continue;
        }
        for (std::size_t k = 0; k < len; ++k) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\x%02x", unsigned(byte(i + k)));
          out += buf;
        }
        i += len - 1;
        continue;
      }
    }
    if (c >= 0x20 && c < 0x7f) {
      out += char(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", unsigned(c));
      out += buf;
    }
  }
  return out;
}

/// Base of every error the project throws on purpose. `what()` is the full one-line message (control
/// characters escaped by one_line()).
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& msg, int exit_code = 2)
      : std::runtime_error(one_line(msg)), exit_code_(exit_code) {}
  /// Process exit code an executable should use for this error (2 = bad input, by convention).
  int exit_code() const noexcept { return exit_code_; }

 private:
  int exit_code_;
};

/// Bad user input: a malformed file, an impossible option, a wrong config key. Exit code 2.
class InputError : public Error {
 public:
  explicit InputError(const std::string& msg) : Error(msg, 2) {}
};

/// A file that cannot be parsed: carries the file, the offending field/tensor and the byte offset
/// (or line number) so that the message names where the problem is. offset_kind nullptr: no position
/// (a field of a parsed document names the place itself).
class FormatError : public InputError {
 public:
  FormatError(const std::string& file, const std::string& field, std::uint64_t offset, const std::string& what,
              const char* offset_kind = "byte offset")
      : InputError(file + ": " + (field.empty() ? std::string() : field + ": ") + what +
                   (offset_kind ? std::string(" (") + offset_kind + " " + std::to_string(offset) + ")" : std::string())),
        file_(file), field_(field), offset_(offset) {}
  const std::string& file() const noexcept { return file_; }
  const std::string& field() const noexcept { return field_; }
  std::uint64_t offset() const noexcept { return offset_; }

 private:
  std::string file_, field_;
  std::uint64_t offset_;
};

/// A configuration error: names the config file and the key.
class ConfigError : public InputError {
 public:
  ConfigError(const std::string& file, const std::string& key, const std::string& what)
      : InputError(file + ": key '" + key + "': " + what), file_(file), key_(key) {}
  const std::string& file() const noexcept { return file_; }
  const std::string& key() const noexcept { return key_; }

 private:
  std::string file_, key_;
};

/// An operating-system I/O failure (cannot open, cannot write, cannot rename). Exit code 2: in
/// practice these are missing files and unwritable output directories named by the user.
class IoError : public Error {
 public:
  explicit IoError(const std::string& msg) : Error(msg, 2) {}
};

/// An error whose line another process has already printed (e.g. rank 0 of an MPI job reports an input error
/// every rank found): run_cli (cli.h) exits with `exit_code` without printing anything.
class ReportedError : public Error {
 public:
  explicit ReportedError(int exit_code) : Error("(reported by another process)", exit_code) {}
};

/// A number for an error message, "%g" (6 significant digits): std::to_string(1e300) prints 300 digits.
inline std::string format_g(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

}  // namespace spartan
