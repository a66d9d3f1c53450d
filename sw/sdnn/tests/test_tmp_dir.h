// A per-process scratch directory for the sdnn tests, removed when the test program exits (the tests used
// to leave one behind per run; reliability finding 76).
#pragma once
#include <unistd.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace spartan::sdnn::testing {

/// Path of `name` in <temp>/<prefix><pid>/ (created on first use, removed at exit).
inline std::string tmp_path(const std::string& prefix, const std::string& name) {
  static const struct Dir {
    std::filesystem::path path;
    explicit Dir(const std::string& p)
        : path(std::filesystem::temp_directory_path() / (p + std::to_string(::getpid()))) {}
    ~Dir() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  } dir(prefix);
  std::filesystem::create_directories(dir.path);
  return (dir.path / name).string();
}

}  // namespace spartan::sdnn::testing
