#include "spartan/common/atomic_file.h"

#include <climits>
#include <csignal>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <new>
#include <atomic>
#include <fcntl.h>
#include <sys/types.h>
#include <unistd.h>

#include "spartan/common/error.h"

namespace spartan {

namespace {
// Process-wide registry of live temporary paths, read by the signal handler. The slot table is fixed and
// preallocated, and a slot's path buffer is allocated when the slot is first filled (never by the handler),
// so that the handler only reads memory and calls unlink() (async-signal-safe, POSIX.1-2017 2.4.3). A slot is
// 0 (free), 1 (being filled or cleared) or 2 (live); `pid` keeps a forked child that has not exec'ed yet from
// unlinking its parent's files. 16384 slots (256 KiB, untouched pages not resident; 4 KiB more per slot in
// use): spartan-sdnn generate holds one temporary per layer until its final renames, 1920 for the Graph
// Challenge's deepest network.
constexpr int kTempSlots = 16384;
struct TempSlot {
  std::atomic<int> state{0};
  pid_t pid = 0;
  char* path = nullptr;  // PATH_MAX bytes from the slot's first use on (see register_temp)
};
TempSlot g_temp_slots[kTempSlots];
std::atomic<int> g_temp_hint{0};  // where the search for a free slot starts (slots are taken roughly in order)

int register_temp(const std::string& path) {
  if (path.size() >= PATH_MAX) return -1;
  const int start = g_temp_hint.load(std::memory_order_relaxed);
  for (int k = 0; k < kTempSlots; ++k) {
    const int i = (start + k) % kTempSlots;
    int expected = 0;
    if (g_temp_slots[i].state.compare_exchange_strong(expected, 1)) {
      TempSlot& s = g_temp_slots[i];
      if (!s.path) {
        // PATH_MAX bytes on the slot's first use, kept for every later use: the buffer never moves or grows, so
        // a handler on another thread that saw the slot live just before it was released and taken again reads
        // valid memory (a path of the same or the next file, never freed memory), and nothing leaks.
        s.path = new (std::nothrow) char[PATH_MAX];
        if (!s.path) {
          s.state.store(0);
          return -1;
        }
      }
      std::memcpy(s.path, path.c_str(), path.size() + 1);
      s.pid = ::getpid();
      s.state.store(2);
      g_temp_hint.store((i + 1) % kTempSlots, std::memory_order_relaxed);
      return i;
    }
  }
  return -1;  // table full: this file is still removed by the destructor, just not on a signal
}

void unregister_temp(int slot) {
  if (slot < 0) return;
  g_temp_slots[slot].state.store(0);
  int hint = g_temp_hint.load(std::memory_order_relaxed);
  while (slot < hint && !g_temp_hint.compare_exchange_weak(hint, slot, std::memory_order_relaxed)) {
  }
}

extern "C" void remove_temps_and_reraise(int sig) {
  const pid_t self = ::getpid();
  for (TempSlot& s : g_temp_slots)
    if (s.state.load() == 2 && s.pid == self) ::unlink(s.path);
  ::signal(sig, SIG_DFL);  // then die of the same signal, so the parent sees the usual status
  ::raise(sig);
}
}  // namespace

void install_temp_cleanup_handlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (const int sig : {SIGINT, SIGTERM, SIGHUP}) {
      struct sigaction old {};
      if (::sigaction(sig, nullptr, &old) != 0) continue;
      if (old.sa_handler == SIG_IGN || (old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL)
        continue;  // respect nohup (SIG_IGN) and handlers the program installed itself
      struct sigaction sa {};
      sa.sa_handler = remove_temps_and_reraise;
      sigemptyset(&sa.sa_mask);
      sa.sa_flags = SA_RESETHAND;
      ::sigaction(sig, &sa, nullptr);
    }
  });
}

std::string resolve_output_file(const std::string& path) {
  namespace fs = std::filesystem;
  fs::path p(path);
  std::error_code ec;
  fs::file_status st = fs::symlink_status(p, ec);
  for (int hops = 0; fs::is_symlink(st); ++hops) {
    if (hops == 40) throw IoError(path + ": too many levels of symbolic links");
    const fs::path t = fs::read_symlink(p, ec);
    if (ec) throw IoError(path + ": cannot read symbolic link: " + ec.message());
    p = t.is_absolute() ? t : p.parent_path() / t;
    st = fs::symlink_status(p, ec);
  }
  if (fs::exists(st) && !fs::is_regular_file(st)) {
    const char* kind = fs::is_directory(st) ? "a directory"
                       : fs::is_character_file(st) || fs::is_block_file(st) ? "a device"
                       : fs::is_fifo(st) ? "a FIFO"
                       : fs::is_socket(st) ? "a socket" : "not a regular file";
    throw IoError(path + (p.string() == path ? "" : " (-> " + p.string() + ")") + ": is " + kind +
                  "; outputs are written to a temporary file and renamed over the target, which would replace it");
  }
  return p.string();
}

AtomicFile::AtomicFile(const std::string& path) : path_(path), target_(resolve_output_file(path)) {
  // The temporary's name is predictable, so it is created exclusively and never through a symbolic link: a file or
  // a planted link already at that name is neither followed nor truncated (review finding 106: fopen("wb") wrote
  // through a link at <target>.tmp.<pid> into the link's target). A name in use (a stale temporary of a killed run
  // whose pid came round again) moves on to the next suffix.
  const std::string base = target_ + ".tmp." + std::to_string(::getpid());
  for (int k = 0;; ++k) {
    tmp_ = k == 0 ? base : base + "." + std::to_string(k);
    slot_ = register_temp(tmp_);  // before creating the file: a signal in between unlinks nothing
    const int fd = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    const int err = errno;
    if (fd >= 0) {
      fp_ = ::fdopen(fd, "wb");
      if (fp_) return;
      const int ferr = errno;
      ::close(fd);
      std::remove(tmp_.c_str());
      unregister_temp(slot_);
      throw IoError(path + ": cannot open for writing: " + std::strerror(ferr));
    }
    unregister_temp(slot_);
    if (err != EEXIST || k == 99)
      throw IoError(path + ": cannot open for writing: " + std::strerror(err) + " (" + tmp_ + ")");
  }
}

AtomicFile::~AtomicFile() {
  if (fp_) std::fclose(fp_);
  if (!committed_) std::remove(tmp_.c_str());
  unregister_temp(slot_);
}

void AtomicFile::write(const void* data, std::size_t bytes) {
  if (bytes == 0) return;
  if (!fp_) throw IoError(path_ + ": write after sync or commit");
  if (std::fwrite(data, 1, bytes, fp_) != bytes) throw IoError(path_ + ": write failed: " + std::strerror(errno));
  size_ += bytes;
}

void AtomicFile::sync() {
  if (committed_) throw IoError(path_ + ": sync after commit");
  if (!fp_) return;  // synced already
  bool ok = std::fflush(fp_) == 0 && ::fsync(::fileno(fp_)) == 0;
  ok = (std::fclose(fp_) == 0) && ok;
  fp_ = nullptr;
  if (!ok) throw IoError(path_ + ": cannot flush: " + std::strerror(errno));
}

void AtomicFile::commit() {
  if (committed_) throw IoError(path_ + ": commit twice");
  sync();
  if (std::rename(tmp_.c_str(), target_.c_str()) != 0)
    throw IoError(path_ + ": cannot rename temporary file: " + std::strerror(errno));
  committed_ = true;
  unregister_temp(slot_);
  slot_ = -1;
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
  const bool err = std::ferror(fp);
  const int e = errno;
  std::fclose(fp);
  if (err) throw IoError(path + ": read failed: " + std::strerror(e));
  return out;
}

}  // namespace spartan
