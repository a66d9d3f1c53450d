// use_passive_openmp_wait (threads.h): re-executes the process with OMP_WAIT_POLICY=passive unless the user
// set OMP_WAIT_POLICY or GOMP_SPINCOUNT.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "spartan/train/threads.h"

namespace {

// Runs in the re-executed test binary only (the marker variable is set by the parent test).
TEST(ThreadsReexec, ChildSeesPassiveWaitPolicy) {
  if (!std::getenv("SPARTAN_TEST_REEXEC_CHILD")) GTEST_SKIP() << "runs only as the re-executed child";
  const char* p = std::getenv("OMP_WAIT_POLICY");
  ASSERT_NE(p, nullptr);
  EXPECT_STREQ(p, "passive");
}

// Forks; the child prepares its environment with `setup` and calls use_passive_openmp_wait with an argv
// that, once re-executed, runs only ThreadsReexec.ChildSeesPassiveWaitPolicy. Returns the child's exit code
// (42: use_passive_openmp_wait returned without re-executing).
int run_child(void (*setup)()) {
  const pid_t pid = fork();
  if (pid == 0) {
    setup();
    setenv("SPARTAN_TEST_REEXEC_CHILD", "1", 1);
    std::string self = "test_train_threads", filter = "--gtest_filter=ThreadsReexec.ChildSeesPassiveWaitPolicy";
    char* argv[] = {self.data(), filter.data(), nullptr};
    spartan::train::use_passive_openmp_wait(argv);
    _exit(42);
  }
  int status = 0;
  if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

TEST(Threads, PassiveWaitPolicyReexecutesWhenUnset) {
  EXPECT_EQ(run_child([] {
              unsetenv("OMP_WAIT_POLICY");
              unsetenv("GOMP_SPINCOUNT");
            }),
            0);
}

TEST(Threads, UserWaitPolicyIsKept) {
  EXPECT_EQ(run_child([] {
              setenv("OMP_WAIT_POLICY", "active", 1);
              unsetenv("GOMP_SPINCOUNT");
            }),
            42);
  EXPECT_EQ(run_child([] {
              unsetenv("OMP_WAIT_POLICY");
              setenv("GOMP_SPINCOUNT", "1000", 1);
            }),
            42);
}

}  // namespace
