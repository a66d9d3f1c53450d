#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <stdexcept>

#include "spartan/common/atomic_file.h"
#include "spartan/common/cli.h"
#include "spartan/common/error.h"

namespace fs = std::filesystem;
using namespace spartan;

TEST(AtomicFile, CommitRenamesAndAbortLeavesNothing) {
  fs::path dir = fs::temp_directory_path() / ("spartan_common_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::string target = (dir / "out.bin").string();
  {
    AtomicFile f(target);
    f.write("hello");
    EXPECT_FALSE(fs::exists(target));
    EXPECT_TRUE(fs::exists(f.temp_path()));
    f.commit();
  }
  EXPECT_EQ(read_file(target), "hello");
  std::string tmp;
  {
    AtomicFile f(target);
    tmp = f.temp_path();
    f.write("partial");
  }  // destroyed without commit
  EXPECT_FALSE(fs::exists(tmp));
  EXPECT_EQ(read_file(target), "hello");
  fs::remove_all(dir);
}

TEST(AtomicFile, UnwritableDirectoryThrowsIoError) {
  EXPECT_THROW(AtomicFile("/nonexistent-dir-spartan/x.bin"), IoError);
  EXPECT_THROW(read_file("/nonexistent-dir-spartan/x.bin"), IoError);
}

TEST(Cli, MapsErrorsToExitCodes) {
  EXPECT_EQ(run_cli("t", [] { return 0; }), 0);
  EXPECT_EQ(run_cli("t", []() -> int { throw InputError("bad"); }), 2);
  EXPECT_EQ(run_cli("t", []() -> int { throw FormatError("f.bin", "x", 12, "bad"); }), 2);
  EXPECT_EQ(run_cli("t", []() -> int { throw std::logic_error("bug"); }), 1);
  FormatError e("f.bin", "tensor a", 40, "shape mismatch");
  EXPECT_STREQ(e.what(), "f.bin: tensor a: shape mismatch (byte offset 40)");
}
