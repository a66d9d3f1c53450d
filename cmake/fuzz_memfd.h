// Shared helper for the libFuzzer targets: the readers under test take a path, so each input is written to
// an anonymous memory file (memfd) and opened as /proc/self/fd/N (no disk traffic, nothing left behind).
#pragma once
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace spartan::fuzz {

/// Writes `data` into a process-wide memfd and returns its path; "" if the memfd cannot be used.
inline std::string memfd_path(const std::uint8_t* data, std::size_t size) {
  static const int fd = ::memfd_create("spartan_fuzz", MFD_CLOEXEC);
  static const std::string path = "/proc/self/fd/" + std::to_string(fd);
  if (fd < 0 || ::ftruncate(fd, 0) != 0) return {};
  if (size && ::pwrite(fd, data, size, 0) != static_cast<ssize_t>(size)) return {};
  return path;
}

}  // namespace spartan::fuzz
