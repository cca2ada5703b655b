// The fork+exec seam with real processes: environment, fd mapping (overlapping included), signal
// mask and dispositions, exec failures, death with the parent, reaping with a deadline.
#include "dfw/common/process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>

#include <fstream>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

namespace dfw {
namespace {

using std::chrono::milliseconds;

// Runs `script` under /bin/sh with `spec`'s settings and returns what it wrote to fd 1.
std::string RunShell(SpawnSpec spec, const std::string& script, ChildExit* exit = nullptr) {
  int out[2];
  EXPECT_EQ(::pipe2(out, O_CLOEXEC), 0);
  spec.argv = {"/bin/sh", "-c", script};
  spec.fds.insert(spec.fds.begin(), {out[1], 1});
  auto pid = Spawn(spec);
  ::close(out[1]);
  EXPECT_TRUE(pid.ok()) << pid.status().ToString();
  std::string text;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(out[0], buf, sizeof buf)) > 0) text.append(buf, static_cast<std::size_t>(n));
  ::close(out[0]);
  if (pid.ok()) {
    Reaped r = ReapWithin(*pid, milliseconds(10000));
    EXPECT_FALSE(r.running);
    if (exit) *exit = r.exit;
  }
  return text;
}

TEST(Spawn, TheChildGetsExactlyTheStatedEnvironment) {
  SpawnSpec spec;
  spec.env = {"A=1", "PATH=/usr/bin:/bin", "WITH_SPACE=x y"};
  std::string env = RunShell(spec, "env | grep -v '^PWD=\\|^SHLVL=\\|^_=' | sort");
  EXPECT_EQ(env, "A=1\nPATH=/usr/bin:/bin\nWITH_SPACE=x y\n");
}

TEST(Spawn, FdsAreMappedEvenWhenTargetsAndSourcesOverlap) {
  // Two pipes whose write ends are swapped into each other's numbers: a naive dup2 order clobbers one.
  int a[2], b[2];
  ASSERT_EQ(::pipe2(a, O_CLOEXEC), 0);
  ASSERT_EQ(::pipe2(b, O_CLOEXEC), 0);
  SpawnSpec spec;
  spec.fds = {{a[1], b[1]}, {b[1], a[1]}, {-1, 0}};
  std::string script = "echo to-b >&" + std::to_string(b[1]) + "; echo to-a >&" + std::to_string(a[1]) +
                       "; cat; echo done";
  std::string out = RunShell(spec, script);
  EXPECT_EQ(out, "done\n") << "stdin was /dev/null, so cat ended at once";
  ::close(a[1]);
  ::close(b[1]);
  char buf[64] = {};
  ASSERT_GT(::read(a[0], buf, sizeof buf - 1), 0);
  EXPECT_STREQ(buf, "to-b\n") << "a's write end was mapped to b's number";
  std::fill(std::begin(buf), std::end(buf), 0);
  ASSERT_GT(::read(b[0], buf, sizeof buf - 1), 0);
  EXPECT_STREQ(buf, "to-a\n");
  ::close(a[0]);
  ::close(b[0]);
}

TEST(Spawn, UnmappedFdsDoNotReachTheChild) {
  int secret = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(secret, 0);
  std::string out = RunShell(SpawnSpec{}, "[ -e /proc/self/fd/" + std::to_string(secret) + " ] && echo leaked || echo closed");
  EXPECT_EQ(out, "closed\n");
  ::close(secret);
}

// The hex mask of a /proc/self/status line ("SigBlk:", "SigIgn:") of the child.
uint64_t ChildMask(const SpawnSpec& spec, const std::string& field) {
  std::string line = RunShell(spec, "grep '^" + field + "' /proc/self/status | cut -f2");
  return std::stoull(line, nullptr, 16);
}

TEST(Spawn, SignalMaskAndSigintAreAsStatedAndOthersAreDefault) {
  SpawnSpec spec;
  spec.blocked_signals = {SIGTERM, SIGHUP};
  spec.ignore_sigint = true;
  const uint64_t bit = 1;
  EXPECT_EQ(ChildMask(spec, "SigBlk:"), (bit << (SIGTERM - 1)) | (bit << (SIGHUP - 1)));
  EXPECT_EQ(ChildMask(spec, "SigIgn:"), bit << (SIGINT - 1));
  // A parent that ignores SIGPIPE (or blocks SIGTERM) passes neither on: exec keeps both otherwise.
  struct sigaction ignore {}, old {};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGPIPE, &ignore, &old);
  sigset_t block, old_mask;
  sigemptyset(&block);
  sigaddset(&block, SIGUSR1);
  ::pthread_sigmask(SIG_BLOCK, &block, &old_mask);
  EXPECT_EQ(ChildMask(SpawnSpec{}, "SigIgn:"), 0u);
  EXPECT_EQ(ChildMask(SpawnSpec{}, "SigBlk:"), 0u);
  ::pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  ::sigaction(SIGPIPE, &old, nullptr);
}

TEST(Spawn, ExecFailureIsReportedOnTheStatedFdAndExits127) {
  int err[2];
  ASSERT_EQ(::pipe2(err, O_CLOEXEC), 0);
  SpawnSpec spec;
  spec.argv = {"/nonexistent/program"};
  spec.fds = {{err[1], 5}};
  spec.exec_error = "cannot exec it\n";
  spec.exec_error_fd = 5;
  auto pid = Spawn(spec);
  ASSERT_TRUE(pid.ok());
  ::close(err[1]);
  char buf[64] = {};
  ASSERT_GT(::read(err[0], buf, sizeof buf - 1), 0);
  EXPECT_STREQ(buf, "cannot exec it\n");
  ::close(err[0]);
  Reaped r = ReapWithin(*pid, milliseconds(5000));
  ASSERT_FALSE(r.running);
  EXPECT_TRUE(r.exit.exited);
  EXPECT_EQ(r.exit.exit_code, 127);
}

TEST(Spawn, EmptyCommandAndBadFdsAreRefused) {
  EXPECT_EQ(Spawn(SpawnSpec{}).status().code(), StatusCode::kInvalidArgument);
  SpawnSpec spec;
  spec.argv = {"/bin/true"};
  spec.fds = {{0, 100000}};
  EXPECT_EQ(Spawn(spec).status().code(), StatusCode::kInvalidArgument);
}

bool Alive(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  if (text.empty()) return false;
  auto close = text.rfind(')');
  return close != std::string::npos && close + 2 < text.size() && text[close + 2] != 'Z';
}

TEST(Spawn, ChildWithADeathSignalDiesWithItsParent) {
  // A middle process starts the grandchild with death_signal = SIGKILL, reports its pid, exits.
  int report[2];
  ASSERT_EQ(::pipe2(report, O_CLOEXEC), 0);
  SpawnSpec middle;
  middle.fds = {{report[1], 3}};
  middle.child_main = [] {
    SpawnSpec grandchild;
    grandchild.argv = {"/bin/sleep", "30"};
    grandchild.death_signal = SIGKILL;
    auto pid = Spawn(grandchild);
    if (!pid.ok()) return 1;
    pid_t p = *pid;
    // No wait here: whether the middle exits before or after the grandchild's prctl, the
    // grandchild dies (killed by its death signal, or exiting 127 on finding its parent gone).
    return ::write(3, &p, sizeof p) == sizeof p ? 0 : 1;
  };
  auto pid = Spawn(middle);
  ASSERT_TRUE(pid.ok());
  ::close(report[1]);
  pid_t grandchild = 0;
  ASSERT_EQ(::read(report[0], &grandchild, sizeof grandchild), static_cast<ssize_t>(sizeof grandchild));
  ::close(report[0]);
  Reaped middle_end = ReapWithin(*pid, milliseconds(10000));
  ASSERT_FALSE(middle_end.running);
  EXPECT_TRUE(middle_end.exit.success());
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (Alive(grandchild) && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(milliseconds(10));
  EXPECT_FALSE(Alive(grandchild)) << "pid " << grandchild << " outlived its parent";
}

TEST(Reap, DeadlineAndStopChild) {
  SpawnSpec spec;
  spec.argv = {"/bin/sleep", "30"};
  auto pid = Spawn(spec);
  ASSERT_TRUE(pid.ok());
  EXPECT_TRUE(TryReap(*pid).running);
  EXPECT_TRUE(ReapWithin(*pid, milliseconds(30)).running);
  ChildExit e = StopChild(*pid, milliseconds(2000));
  EXPECT_TRUE(e.signaled);
  EXPECT_EQ(e.signal, SIGTERM);
  EXPECT_TRUE(TryReap(*pid).unknown) << "reaped once";
  // A child that ignores SIGTERM is killed after the grace.
  SpawnSpec stubborn;
  stubborn.argv = {"/bin/sh", "-c", "trap '' TERM; sleep 30"};
  auto s = Spawn(stubborn);
  ASSERT_TRUE(s.ok());
  // Wait until the shell has set its trap (SIGTERM shows as ignored), so the grace is what is tested.
  auto ignores_term = [&] {
    std::ifstream status("/proc/" + std::to_string(*s) + "/status");
    for (std::string line; std::getline(status, line);) {
      if (line.rfind("SigIgn:", 0) == 0) return (std::stoull(line.substr(7), nullptr, 16) >> (SIGTERM - 1)) & 1;
    }
    return 0ull;
  };
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!ignores_term() && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(milliseconds(2));
  ChildExit k = StopChild(*s, milliseconds(200));
  EXPECT_TRUE(k.signaled);
  EXPECT_EQ(k.signal, SIGKILL);
}

}  // namespace
}  // namespace dfw
