#include "spartan/common/atomic_file.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <unistd.h>

#include "spartan/common/error.h"

namespace spartan {

AtomicFile::AtomicFile(const std::string& path) : path_(path) {
  tmp_ = path + ".tmp." + std::to_string(::getpid());
  fp_ = std::fopen(tmp_.c_str(), "wb");
  if (!fp_) throw IoError(path + ": cannot open for writing: " + std::strerror(errno));
}

AtomicFile::~AtomicFile() {
  if (fp_) std::fclose(fp_);
  if (!committed_) std::remove(tmp_.c_str());
}

void AtomicFile::write(const void* data, std::size_t bytes) {
  if (bytes == 0) return;
  if (!fp_) throw IoError(path_ + ": write after commit");
  if (std::fwrite(data, 1, bytes, fp_) != bytes) throw IoError(path_ + ": write failed: " + std::strerror(errno));
  size_ += bytes;
}

void AtomicFile::commit() {
  if (!fp_) throw IoError(path_ + ": commit twice");
  bool ok = std::fflush(fp_) == 0 && ::fsync(::fileno(fp_)) == 0;
  ok = (std::fclose(fp_) == 0) && ok;
  fp_ = nullptr;
  if (!ok) throw IoError(path_ + ": cannot flush: " + std::strerror(errno));
  if (std::rename(tmp_.c_str(), path_.c_str()) != 0)
    throw IoError(path_ + ": cannot rename temporary file: " + std::strerror(errno));
  committed_ = true;
}

void write_file_atomic(const std::string& path, const std::string& contents) {
  AtomicFile f(path);
  f.write(contents);
  f.commit();
}

void check_output_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  if (dir.empty()) throw IoError("output directory: empty path");
  std::error_code ec;
  fs::path p = fs::absolute(fs::path(dir), ec);
  if (ec) throw IoError(dir + ": " + ec.message());
  for (;;) {
    const fs::file_status st = fs::status(p, ec);
    if (fs::exists(st)) {
      if (!fs::is_directory(st))
        throw IoError(dir + ": cannot create output directory: " + p.string() + " is not a directory");
      if (::access(p.c_str(), W_OK | X_OK) != 0)
        throw IoError(dir + ": cannot write output directory: " + p.string() + ": " + std::strerror(errno));
      return;
    }
    if (!p.has_parent_path() || p.parent_path() == p) throw IoError(dir + ": no existing parent directory");
    p = p.parent_path();
  }
}

void ensure_output_dir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (!std::filesystem::is_directory(dir))
    throw IoError(dir + ": cannot create output directory" + (ec ? ": " + ec.message() : std::string()));
}

std::string read_file(const std::string& path) {
  std::FILE* fp = std::fopen(path.c_str(), "rb");
  if (!fp) throw IoError(path + ": cannot open: " + std::strerror(errno));
  std::string out;
  char buf[1 << 16];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, fp)) > 0) out.append(buf, n);
  bool err = std::ferror(fp);
  std::fclose(fp);
  if (err) throw IoError(path + ": read failed");
  return out;
}

}  // namespace spartan
