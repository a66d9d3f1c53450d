// Runs a test body in a forked child process: SystemC elaborates once per process, so every test that
// builds a GpuSystem runs in its own child. The child returns a JSON document to the parent, which asserts.
#pragma once
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <functional>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

inline nlohmann::json run_in_child(const std::function<nlohmann::json()>& body) {
  int fd[2];
  if (pipe(fd) != 0) throw std::runtime_error("pipe");
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork");
  if (pid == 0) {
    close(fd[0]);
    std::string out;
    int rc = 0;
    try {
      out = body().dump();
    } catch (const std::exception& e) {
      out = nlohmann::json{{"child_error", e.what()}}.dump();
      rc = 1;
    }
    std::size_t off = 0;
    while (off < out.size()) {
      ssize_t n = write(fd[1], out.data() + off, out.size() - off);
      if (n <= 0) break;
      off += std::size_t(n);
    }
    close(fd[1]);
    _exit(rc);
  }
  close(fd[1]);
  std::string in;
  char buf[65536];
  ssize_t n;
  while ((n = read(fd[0], buf, sizeof buf)) > 0) in.append(buf, std::size_t(n));
  close(fd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (in.empty()) throw std::runtime_error("child produced no result (status " + std::to_string(status) + ")");
  auto j = nlohmann::json::parse(in);
  if (j.contains("child_error")) throw std::runtime_error("child: " + j["child_error"].get<std::string>());
  return j;
}
