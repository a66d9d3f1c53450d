// Scratch directories and tool processes removed on errors and interrupts (see cleanup.h).
#include "spartan/area/cleanup.h"

#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <set>
#include <thread>

#include "spartan/common/error.h"

extern char** environ;

namespace spartan::area {
namespace fs = std::filesystem;

namespace {

// The live directories and tool processes. The interrupt thread takes the lock and never gives it back (the
// process dies holding it): a tool cannot start, nor a finished one be reaped, while it cleans up, so the
// process groups it signals stay valid.
std::mutex g_mu;
std::set<std::string> g_dirs;
std::set<pid_t> g_children;
bool g_interrupted = false;

void remove_dir(const std::string& p) {
  std::error_code ec;
  fs::remove_all(p, ec);
}

bool exited(pid_t pid) {
  siginfo_t si{};
  // WNOWAIT: the worker thread waiting for this child still reaps it.
  if (::waitid(P_PID, static_cast<id_t>(pid), &si, WEXITED | WNOHANG | WNOWAIT) != 0) return true;  // gone
  return si.si_pid == pid;
}

[[noreturn]] void on_interrupt(int sig) {
  g_mu.lock();
  g_interrupted = true;
  for (pid_t pid : g_children) ::kill(-pid, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  for (pid_t pid : g_children)
    while (!exited(pid) && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  for (pid_t pid : g_children) ::kill(-pid, SIGKILL);  // what is left of the group (ABC under Yosys)
  for (const auto& d : g_dirs) remove_dir(d);
  if (!g_children.empty()) {  // a file a dying tool wrote last
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    for (const auto& d : g_dirs) remove_dir(d);
  }
  // Die of the signal: run_cli's handler (if installed) removes the AtomicFile temporaries and re-raises.
  sigset_t one;
  sigemptyset(&one);
  sigaddset(&one, sig);
  ::pthread_sigmask(SIG_UNBLOCK, &one, nullptr);
  ::raise(sig);
  ::signal(sig, SIG_DFL);
  ::raise(sig);
  std::_Exit(128 + sig);
}

}  // namespace

void install_interrupt_cleanup() {
  static std::once_flag once;
  std::call_once(once, [] {
    sigset_t set;
    sigemptyset(&set);
    for (const int sig : {SIGINT, SIGTERM, SIGHUP}) {
      struct sigaction old {};
      if (::sigaction(sig, nullptr, &old) == 0 && old.sa_handler == SIG_IGN) continue;  // nohup
      sigaddset(&set, sig);
    }
    ::pthread_sigmask(SIG_BLOCK, &set, nullptr);
    std::thread([set] {
      int sig = 0;
      while (::sigwait(&set, &sig) != 0) {
      }
      on_interrupt(sig);
    }).detach();
  });
}

TempDir::TempDir(const std::string& parent, const std::string& prefix, const std::string& what) {
  std::string templ = (fs::path(parent) / (prefix + "XXXXXX")).string();
  std::lock_guard<std::mutex> lk(g_mu);  // registered before an interrupt can look
  if (!::mkdtemp(templ.data()))
    throw IoError(what + ": cannot create a directory " + templ + ": " + std::strerror(errno));
  path_ = templ;
  g_dirs.insert(path_);
  live_ = true;
}

TempDir::TempDir(const std::string& path) : path_(path) {
  std::lock_guard<std::mutex> lk(g_mu);
  g_dirs.insert(path_);
  live_ = true;
}

TempDir::~TempDir() {
  if (!live_) return;
  std::lock_guard<std::mutex> lk(g_mu);
  remove_dir(path_);
  g_dirs.erase(path_);
}

void TempDir::release() {
  if (!live_) return;
  std::lock_guard<std::mutex> lk(g_mu);
  g_dirs.erase(path_);
  live_ = false;
}

int run_process(const std::vector<std::string>& argv, const std::string& log_path, const std::string& tmpdir) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<std::string> env_s;
  std::vector<char*> env;
  if (!tmpdir.empty()) {
    for (char** e = environ; *e; ++e)
      if (std::strncmp(*e, "TMPDIR=", 7) != 0) env_s.emplace_back(*e);
    env_s.push_back("TMPDIR=" + tmpdir);
    for (auto& e : env_s) env.push_back(e.data());
    env.push_back(nullptr);
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  // Own process group (an interrupt ends the tool with its children); no signal blocked (the mask of this
  // thread, set by install_interrupt_cleanup, would be inherited).
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK);
  posix_spawnattr_setpgroup(&attr, 0);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  pid_t pid = 0;
  int rc = 0;
  {
    std::lock_guard<std::mutex> lk(g_mu);
    rc = g_interrupted ? EINTR
                       : posix_spawn(&pid, args[0], &fa, &attr, args.data(), tmpdir.empty() ? environ : env.data());
    if (rc == 0) g_children.insert(pid);
  }
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) return 127;
  siginfo_t si{};
  while (::waitid(P_PID, static_cast<id_t>(pid), &si, WEXITED | WNOWAIT) != 0 && errno == EINTR) {
  }
  {
    std::lock_guard<std::mutex> lk(g_mu);  // blocks while an interrupt cleans up (the group stays valid)
    g_children.erase(pid);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return 127;
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

}  // namespace spartan::area
