// The worker's memory cgroup, on this host's real cgroup file system: made with its limit, joined
// by a real child, the kernel's OOM killer counted, removed at the end. Where the host offers no
// memory cgroup (no permission, v2 without the controller delegated), the tests skip saying why.
#include "dfw/launcher/memory_cgroup.h"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <string>

namespace dfw {
namespace {

bool Exists(const std::string& p) {
  struct stat st{};
  return ::stat(p.c_str(), &st) == 0;
}

// Forks a child that joins `dir` and touches `mb` MiB; its wait status.
int ChildTouching(const std::string& dir, int mb) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (!JoinMemoryCgroup(dir).ok()) ::_exit(3);
    const std::size_t n = static_cast<std::size_t>(mb) << 20;
    auto* p = static_cast<volatile char*>(std::malloc(n));
    if (p == nullptr) ::_exit(4);
    for (std::size_t i = 0; i < n; i += 4096) p[i] = 1;
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

TEST(MemoryCgroup, ChildrenAboveTheLimitAreOomKilledAndCounted) {
  std::string dir;
  {
    auto cg = MemoryCgroup::Create("dfw-test-" + std::to_string(::getpid()), uint64_t{64} << 20);
    if (!cg.ok()) GTEST_SKIP() << cg.status().message();
    dir = cg->dir();
    EXPECT_TRUE(Exists(dir + "/cgroup.procs"));
    EXPECT_EQ(cg->OomKills(), 0);
    const int small = ChildTouching(dir, 16);  // well under the limit
    EXPECT_TRUE(WIFEXITED(small) && WEXITSTATUS(small) == 0) << small;
    const int big = ChildTouching(dir, 256);  // 4x the limit: the kernel ends it
    ASSERT_TRUE(WIFSIGNALED(big)) << "the child was not killed: status " << big;
    EXPECT_EQ(WTERMSIG(big), SIGKILL);
    EXPECT_EQ(cg->OomKills(), 1);
  }
  EXPECT_FALSE(Exists(dir)) << "the cgroup was not removed";
}

// The launcher's side: a child moved in by its parent is in the cgroup, says so, and its own join
// is then a no-op; a process that was never moved is not in it.
TEST(MemoryCgroup, AChildMovedInByItsParentIsInItAndItsJoinChangesNothing) {
  auto cg = MemoryCgroup::Create("dfw-test-move-" + std::to_string(::getpid()), uint64_t{256} << 20);
  if (!cg.ok()) GTEST_SKIP() << cg.status().message();
  int go[2];
  ASSERT_EQ(::pipe(go), 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(go[1]);
    char c;
    if (::read(go[0], &c, 1) != 1) ::_exit(2);  // moved by the parent by now
    if (!InMemoryCgroup(cg->dir(), ::getpid())) ::_exit(3);
    if (!JoinMemoryCgroup(cg->dir()).ok()) ::_exit(4);
    ::_exit(InMemoryCgroup(cg->dir(), ::getpid()) ? 0 : 5);
  }
  ::close(go[0]);
  EXPECT_FALSE(InMemoryCgroup(cg->dir(), pid));
  EXPECT_TRUE(MoveIntoMemoryCgroup(cg->dir(), pid).ok());
  EXPECT_TRUE(InMemoryCgroup(cg->dir(), pid));
  EXPECT_FALSE(InMemoryCgroup(cg->dir(), ::getpid()));  // the parent stays where it was
  ASSERT_EQ(::write(go[1], "x", 1), 1);
  ::close(go[1]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_FALSE(MoveIntoMemoryCgroup(cg->dir(), pid).ok());  // gone: the kernel refuses, nothing else happens
}

TEST(MemoryCgroup, JoiningWhatIsNotACgroupIsAnError) {
  EXPECT_FALSE(JoinMemoryCgroup("/nonexistent/dfw-cgroup").ok());
}

}  // namespace
}  // namespace dfw
