#include <boost/program_options/errors.hpp>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <iterator>
#include <map>
#include <vector>
#include <memory>
#include <regex>
#include <string>
#include <stdexcept>

#include "spartan/common/aligned.h"
#include "spartan/common/atomic_file.h"
#include "spartan/common/build_info.h"
#include "spartan/common/cli.h"
#include "spartan/common/error.h"

namespace fs = std::filesystem;
using namespace spartan;

// Small blocks (heap) and large ones (glibc maps those, 16 bytes into a page) both start on a 64-byte line,
// after construction, growth and copies alike.
TEST(AlignedVector, DataStartsOnACacheLineWhateverTheSize) {
  auto line = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % spartan::kCacheLineBytes; };
  for (std::size_t n : {std::size_t(1), std::size_t(3), std::size_t(17), std::size_t(1000), std::size_t(1) << 16,
                        std::size_t(3) << 20}) {
    spartan::AlignedVector<float> v(n, 1.0f);
    EXPECT_EQ(line(v.data()), 0u) << n;
    v.resize(n * 2 + 5);
    EXPECT_EQ(line(v.data()), 0u) << n;
    EXPECT_EQ(v[0], 1.0f);
    const spartan::AlignedVector<float> copy = v;
    EXPECT_EQ(line(copy.data()), 0u) << n;
    EXPECT_EQ(copy.size(), n * 2 + 5);
  }
  // n * sizeof(T) would wrap: refused instead of allocating a few bytes.
  EXPECT_THROW(spartan::CacheLineAllocator<float>().allocate(SIZE_MAX / 2), std::bad_alloc);
}

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

// The temporary's name is predictable: a symbolic link (or any file) already at `<target>.tmp.<pid>` is neither
// followed nor truncated; the temporary takes the next free name (review finding 106: fopen("wb") wrote the
// output through a planted link into the link's target).
TEST(AtomicFile, NeverWritesThroughAFileAlreadyAtTheTemporaryName) {
  fs::path dir = fs::temp_directory_path() / ("spartan_common_link_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string target = (dir / "out.bin").string(), victim = (dir / "victim").string();
  const std::string planted = target + ".tmp." + std::to_string(::getpid());
  {
    std::FILE* v = std::fopen(victim.c_str(), "wb");
    ASSERT_NE(v, nullptr);
    std::fputs("keep", v);
    std::fclose(v);
  }
  fs::create_symlink(victim, planted);
  {
    AtomicFile f(target);
    EXPECT_NE(f.temp_path(), planted);
    f.write("new");
    f.commit();
  }
  EXPECT_EQ(read_file(victim), "keep");
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(planted)));  // left as it was
  EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(target)));
  EXPECT_EQ(read_file(target), "new");
  fs::remove_all(dir);
}

// A run killed by SIGINT/SIGTERM/SIGHUP while an output is open leaves no `<path>.tmp.<pid>` (issue 12):
// a forked child opens an AtomicFile inside run_cli (which installs the handlers) and signals itself; it
// must die of that signal (default action re-raised) with neither the temporary nor the target present.
// sync() flushes and closes without renaming, so several files can be synced before any is renamed (replay's
// stats.json + summary.txt); a file synced but never committed leaves nothing.
TEST(AtomicFile, SyncThenCommitAndSyncedButUncommittedLeavesNothing) {
  fs::path dir = fs::temp_directory_path() / ("spartan_common_sync_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string a = (dir / "a.txt").string(), b = (dir / "b.txt").string();
  {
    AtomicFile fa(a), fb(b);
    fa.write("A");
    fb.write("B");
    fa.sync();
    fb.sync();
    fa.sync();  // twice is fine
    EXPECT_THROW(fa.write("x"), spartan::IoError);
    EXPECT_FALSE(fs::exists(a));
    EXPECT_TRUE(fs::exists(fa.temp_path()));
    fa.commit();
    EXPECT_THROW(fa.commit(), spartan::IoError);
    EXPECT_THROW(fa.sync(), spartan::IoError);
  }  // fb synced, never committed
  EXPECT_EQ(read_file(a), "A");
  EXPECT_FALSE(fs::exists(b));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator{}), 1);
  fs::remove_all(dir);
}

TEST(AtomicFile, KilledBySignalLeavesNoTemporary) {
  for (const int sig : {SIGTERM, SIGINT, SIGHUP}) {
    SCOPED_TRACE(sig);
    const std::string path = ::testing::TempDir() + "/atomic_signal_" + std::to_string(sig) + ".json";
    std::remove(path.c_str());
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      const int rc = spartan::run_cli("test", [&] {
        spartan::AtomicFile other(path + ".second");  // two live temporaries: both must go
        spartan::AtomicFile f(path);
        f.write("{\"partial\": ");
        std::fflush(f.stream());
        if (::access(f.temp_path().c_str(), F_OK) != 0) ::_exit(10);  // the temporary must exist now
        ::kill(::getpid(), sig);
        return 11;  // not reached: the handler re-raises with the default action
      });
      ::_exit(rc == 11 ? 12 : 13);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFSIGNALED(status)) << "child exited with " << (WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    EXPECT_EQ(WTERMSIG(status), sig);
    const std::string tmp = path + ".tmp." + std::to_string(child);
    const std::string tmp2 = path + ".second.tmp." + std::to_string(child);
    EXPECT_FALSE(std::filesystem::exists(tmp)) << tmp;
    EXPECT_FALSE(std::filesystem::exists(tmp2)) << tmp2;
    EXPECT_FALSE(std::filesystem::exists(path));
    std::remove(tmp.c_str());
    std::remove(tmp2.c_str());
  }
}

// spartan-sdnn generate holds one temporary per layer until its final renames (1920 for the Graph Challenge's
// deepest network): a signal must remove them all, not the first 64 (the registry's old size). Some slots are
// freed and taken again first (a slot keeps its path buffer), with a longer name than before.
TEST(AtomicFile, KilledBySignalRemovesThousandsOfTemporaries) {
  const fs::path dir = fs::path(::testing::TempDir()) / ("atomic_many_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  constexpr int kFiles = 2000;
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const int rc = spartan::run_cli("test", [&] {
      {
        std::vector<std::unique_ptr<spartan::AtomicFile>> early;
        for (int i = 0; i < 100; ++i) early.push_back(std::make_unique<spartan::AtomicFile>((dir / ("e" + std::to_string(i))).string()));
      }  // destroyed: their slots are free again
      std::vector<std::unique_ptr<spartan::AtomicFile>> files;
      for (int i = 0; i < kFiles; ++i) {
        files.push_back(std::make_unique<spartan::AtomicFile>((dir / ("layer-with-a-longer-name-" + std::to_string(i))).string()));
        files.back()->write("x");
        files.back()->sync();
      }
      if (std::distance(fs::directory_iterator(dir), fs::directory_iterator{}) != kFiles) ::_exit(10);
      ::kill(::getpid(), SIGTERM);
      return 11;  // not reached
    });
    ::_exit(rc == 11 ? 12 : 13);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status)) << "child exited with " << (WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator{}), 0);
  fs::remove_all(dir);
}

TEST(AtomicFile, UnwritableDirectoryThrowsIoError) {
  EXPECT_THROW(AtomicFile("/nonexistent-dir-spartan/x.bin"), IoError);
  EXPECT_THROW(read_file("/nonexistent-dir-spartan/x.bin"), IoError);
}

// The rename that makes an output atomic would replace a device, FIFO or socket with a plain file (as root,
// `--out-json /dev/null` replaced /dev/null; thirty-eighth session's review): such targets are refused before
// anything is written, and a symbolic link is followed, so the link stays and its target gets the contents.
TEST(AtomicFile, FollowsLinksAndRefusesNonRegularTargets) {
  fs::path dir = fs::temp_directory_path() / ("spartan_common_links_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "sub");
  const fs::path real = dir / "sub" / "real.json", link = dir / "link.json", link2 = dir / "link2.json";
  write_file_atomic(real.string(), "old");
  fs::create_symlink(fs::path("sub") / "real.json", link);  // relative, resolved against the link's directory
  fs::create_symlink(link, link2);                           // a chain of two
  write_file_atomic(link2.string(), "new");
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(link2)));
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(link)));
  EXPECT_EQ(read_file(real.string()), "new");
  EXPECT_EQ(resolve_output_file(link2.string()), (dir / "sub" / "real.json").string());
  // a dangling link: its target is created, the link stays
  const fs::path dangling = dir / "dangling.json";
  fs::create_symlink(fs::path("sub") / "later.json", dangling);
  write_file_atomic(dangling.string(), "x");
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(dangling)));
  EXPECT_EQ(read_file((dir / "sub" / "later.json").string()), "x");
  // a FIFO (and a link to it): refused, still a FIFO, no temporary left
  const fs::path fifo = dir / "fifo", fifo_link = dir / "fifo_link";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  fs::create_symlink(fifo, fifo_link);
  for (const fs::path& p : {fifo, fifo_link}) {
    try {
      AtomicFile f(p.string());
      ADD_FAILURE() << p << " accepted";
    } catch (const IoError& e) {
      EXPECT_NE(std::string(e.what()).find("is a FIFO"), std::string::npos) << e.what();
    }
  }
  EXPECT_TRUE(fs::is_fifo(fs::status(fifo)));
  // a character device (not written: the check comes before the temporary file is created)
  EXPECT_THROW(resolve_output_file("/dev/null"), IoError);
  EXPECT_THROW(write_file_atomic("/dev/null", "x"), IoError);
  EXPECT_TRUE(fs::is_character_file(fs::status("/dev/null")));
  EXPECT_THROW(resolve_output_file(dir.string()), IoError);  // a directory
  // a link loop
  fs::create_symlink(dir / "loop_b", dir / "loop_a");
  fs::create_symlink(dir / "loop_a", dir / "loop_b");
  EXPECT_THROW(write_file_atomic((dir / "loop_a").string(), "x"), IoError);
  std::size_t entries = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    EXPECT_EQ(e.path().string().find(".tmp."), std::string::npos) << e.path();
    ++entries;
  }
  EXPECT_EQ(entries, 10u);  // sub, real, later, link, link2, dangling, fifo, fifo_link, loop_a, loop_b
  fs::remove_all(dir);
}

TEST(Cli, MapsErrorsToExitCodes) {
  EXPECT_EQ(run_cli("t", [] { return 0; }), 0);
  EXPECT_EQ(run_cli("t", []() -> int { throw InputError("bad"); }), 2);
  EXPECT_EQ(run_cli("t", []() -> int { throw FormatError("f.bin", "x", 12, "bad"); }), 2);
  EXPECT_EQ(run_cli("t", []() -> int { throw std::logic_error("bug"); }), 1);
  FormatError e("f.bin", "tensor a", 40, "shape mismatch");
  EXPECT_STREQ(e.what(), "f.bin: tensor a: shape mismatch (byte offset 40)");
}

// describe_failure is the one mapping that run_cli prints and sdnn::MpiSession::agree reports for all ranks.
TEST(Cli, DescribeFailureIsTheMappingRunCliPrints) {
  auto of = [](auto&& thrower) {
    try {
      thrower();
    } catch (...) {
      return spartan::describe_failure(std::current_exception());
    }
    ADD_FAILURE() << "nothing thrown";
    return spartan::CliFailure{};
  };
  const auto input = of([] { throw InputError("no such file: x"); });
  EXPECT_EQ(input.exit_code, 2);
  EXPECT_FALSE(input.internal);
  EXPECT_EQ(input.line(), "error: no such file: x");
  const auto opt = of([] { throw boost::program_options::unknown_option("--bogus"); });
  EXPECT_EQ(opt.exit_code, 2);
  EXPECT_FALSE(opt.internal);
  EXPECT_NE(opt.message.find("--bogus"), std::string::npos) << opt.message;
  EXPECT_NE(opt.message.find("(see --help)"), std::string::npos) << opt.message;
  const auto mem = of([] { throw std::bad_alloc(); });
  EXPECT_EQ(mem.exit_code, 2);
  EXPECT_EQ(mem.line(), "error: out of memory");
  const auto bug = of([] { throw std::logic_error("bad\nstate"); });
  EXPECT_EQ(bug.exit_code, 1);
  EXPECT_TRUE(bug.internal);
  EXPECT_EQ(bug.line(), "internal error: bad\\nstate");
  const auto other = of([] { throw 42; });
  EXPECT_EQ(other.exit_code, 1);
  EXPECT_EQ(other.line(), "internal error: unknown exception");
  const auto reported = of([] { throw spartan::ReportedError(3); });
  EXPECT_EQ(reported.exit_code, 3);
  EXPECT_TRUE(reported.printed_elsewhere);
  // run_cli prints exactly line() after the tool's name, and nothing for a ReportedError.
  testing::internal::CaptureStderr();
  EXPECT_EQ(run_cli("t", []() -> int { throw boost::program_options::unknown_option("--bogus"); }), 2);
  EXPECT_EQ(run_cli("t", []() -> int { throw spartan::ReportedError(3); }), 3);
  EXPECT_EQ(run_cli("t", []() -> int { throw 42; }), 1);
  EXPECT_EQ(testing::internal::GetCapturedStderr(),
            "t: " + opt.line() + "\nt: internal error: unknown exception\n");
}

TEST(Cli, ErrorMessagesAreOneLineWhateverTheNamesTheyQuote) {
  // A tensor name read from a file may hold control characters: the message escapes them.
  FormatError e("f.bin", std::string("tensor a\nb\tc\x1b[31m\x7f\xc3\xa9"), 8, "bad\r");
  EXPECT_STREQ(e.what(), "f.bin: tensor a\\nb\\tc\\x1b[31m\\x7f\xc3\xa9: bad\\r (byte offset 8)");
  // Well-formed UTF-8 is kept (2, 3 and 4 bytes); bytes that are not (binary content quoted from a gzip file, a
  // truncated sequence, an overlong form, a surrogate) are escaped like control characters (new-user review).
  EXPECT_EQ(one_line("\xe2\x82\xac \xf0\x9f\x98\x80"), "\xe2\x82\xac \xf0\x9f\x98\x80");
  EXPECT_EQ(one_line("\x1f\x8b\x08\xfd"), "\\x1f\\x8b\\x08\\xfd");
  EXPECT_EQ(one_line("a\xc3"), "a\\xc3");                  // truncated at the end
  EXPECT_EQ(one_line("\xc0\xaf"), "\\xc0\\xaf");          // overlong '/'
  EXPECT_EQ(one_line("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // a UTF-16 surrogate
  // Well-formed but line-breaking or reordering: NEL, CSI, U+2028/2029, a bidi override (second review).
  EXPECT_EQ(one_line("a\xc2\x85" "b\xc2\x9b" "c\xe2\x80\xa8" "d\xe2\x80\xa9" "e\xe2\x80\xae" "f"),
            "a\\xc2\\x85b\\xc2\\x9bc\\xe2\\x80\\xa8d\\xe2\\x80\\xa9e\\xe2\\x80\\xaef");
  EXPECT_EQ(one_line("\xc2\xa0\xe2\x80\x94"), "\xc2\xa0\xe2\x80\x94");  // NBSP and an em dash are kept
  // Errors from outside the project's types (a filesystem error quoting a path) are escaped when printed.
  testing::internal::CaptureStderr();
  EXPECT_EQ(run_cli("t", []() -> int { throw std::filesystem::filesystem_error("cannot", "dir\nx", std::error_code()); }), 2);
  EXPECT_EQ(run_cli("t", []() -> int { throw std::logic_error("bug\nhere"); }), 1);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 2) << err;
  EXPECT_NE(err.find("dir\\nx"), std::string::npos) << err;
  EXPECT_NE(err.find("t: internal error: bug\\nhere\n"), std::string::npos) << err;
}

// The build's provenance (recorded in the tools' JSON outputs): a git commit hash (with "-dirty-" and a digest
// of the diff for an uncommitted tree) or "unknown" outside a git checkout; the build type and compiler are set.
// (scripts/tests/test_build_info.py checks the hash against the checkout.)
TEST(BuildInfo, NamesTheCommitBuildTypeAndCompiler) {
  const spartan::BuildInfo& b = spartan::build_info();
  const std::string commit = b.commit;
  EXPECT_TRUE(std::regex_match(commit, std::regex("unknown|[0-9a-f]{12,40}(-dirty-([0-9a-f]{8}|unknown))?"))) << commit;
  EXPECT_FALSE(std::string(b.build_type).empty());
  EXPECT_FALSE(std::string(b.compiler).empty());
  struct J {  // the smallest JSON-like type build_info_json() needs
    std::map<std::string, std::string> m;
    std::string& operator[](const char* k) { return m[k]; }
  };
  const J j = spartan::build_info_json<J>();
  EXPECT_EQ(j.m.at("commit"), commit);
  EXPECT_EQ(j.m.size(), 3u);
}
