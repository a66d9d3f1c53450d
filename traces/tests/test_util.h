// Helpers for the trace tests: unique temp paths, raw file writing, running the CLI.
#pragma once
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

namespace spartan::trace::testutil {

inline std::string temp_path(const std::string& stem) {
  static int counter = 0;
  return ::testing::TempDir() + "sptrace_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++) +
         "_" + stem;
}

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

inline std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

/// A safetensors file from a header text (no padding) and a data section.
inline std::string make_file(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  const std::uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out + header + data;
}

struct CliResult {
  int rc = -1;
  std::string out, err;
};

/// Runs `spartan-trace ARGS`, capturing stdout and stderr.
inline CliResult run_cli(const std::string& args) {
  const std::string o = temp_path("cli.out"), e = temp_path("cli.err");
  const std::string cmd = std::string("'") + SPARTAN_TRACE_CLI + "' " + args + " > '" + o + "' 2> '" + e + "'";
  const int st = std::system(cmd.c_str());
  CliResult r;
  r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  r.out = read_bytes(o);
  r.err = read_bytes(e);
  std::remove(o.c_str());
  std::remove(e.c_str());
  return r;
}

inline int count_lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

}  // namespace spartan::trace::testutil
