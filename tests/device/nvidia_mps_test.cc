// The nvidia controller against a stand-in nvidia-cuda-mps-control (testdata/), which records
// every command in control.log: start, health check, limits, quit, watchdog, stale recovery.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "dfw/device/mps_controller.h"
#include "device/process_info.h"
#include "test_util.h"

namespace dfw::device {
namespace {

using dfw::testing::Eventually;
using dfw::testing::ReadFile;

class NvidiaMpsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    job_dir_ = tmp_.path();
    options_.dirs = MpsDirsForJob(job_dir_);
    options_.control_program = std::string(DFW_SOURCE_DIR) + "/tests/device/testdata/fake-nvidia-cuda-mps-control";
    options_.default_active_thread_percentage = 50;
    options_.default_pinned_mem_limit_bytes = 4ull << 30;
  }
  void TearDown() override {
    ::unsetenv("FAKE_MPS_FAIL_START");
  }
  std::string Log() { return ReadFile(options_.dirs.log_dir + "/control.log"); }

  dfw::testing::TempDir tmp_;
  std::string job_dir_;
  MpsDaemonOptions options_;
};

TEST_F(NvidiaMpsTest, StartsSetsDefaultLimitsListsClientsAndQuits) {
  Result<std::unique_ptr<MpsController>> mps = MakeMpsController("nvidia", options_);
  ASSERT_TRUE(mps.ok()) << mps.status().ToString();
  ASSERT_TRUE((*mps)->Start().ok());
  pid_t daemon = (*mps)->daemon_pid();
  ASSERT_GT(daemon, 0);
  EXPECT_TRUE(ProcessAlive(daemon, 0));
  EXPECT_TRUE((*mps)->HealthCheck().ok());
  std::string log = Log();
  EXPECT_NE(log.find("-d threads=50"), std::string::npos) << log;
  EXPECT_NE(log.find("get_server_list"), std::string::npos) << log;
  EXPECT_NE(log.find("set_default_device_pinned_mem_limit 0 4096M"), std::string::npos) << log;
  EXPECT_NE(log.find("set_default_active_thread_percentage 50"), std::string::npos) << log;

  Result<std::vector<MpsClientInfo>> clients = (*mps)->ListClients();
  ASSERT_TRUE(clients.ok());
  ASSERT_EQ(clients->size(), 2u);
  EXPECT_EQ((*clients)[0].pid, 4242);
  EXPECT_EQ((*clients)[1].name, "dfworker");

  auto env = (*mps)->ClientEnv({});
  ASSERT_EQ(env.size(), 2u);
  EXPECT_EQ(env[0].second, options_.dirs.pipe_dir);

  ASSERT_TRUE((*mps)->Quit().ok());
  EXPECT_TRUE(Eventually([&] { return !ProcessAlive(daemon, 0); }));
  EXPECT_NE(Log().find("quit"), std::string::npos);
  EXPECT_EQ((*mps)->HealthCheck().code(), StatusCode::kUnavailable);
}

TEST_F(NvidiaMpsTest, WatchdogQuitsTheDaemonWhenTheLauncherIsKilled) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  pid_t launcher = ::fork();
  if (launcher == 0) {
    Result<std::unique_ptr<MpsController>> c = MakeNvidiaMpsController(options_);
    pid_t daemon = c.ok() && (*c)->Start().ok() ? (*c)->daemon_pid() : 0;
    if (::write(fds[1], &daemon, sizeof daemon) != sizeof daemon) ::_exit(3);
    for (;;) ::pause();
  }
  pid_t daemon = 0;
  ASSERT_EQ(::read(fds[0], &daemon, sizeof daemon), static_cast<ssize_t>(sizeof daemon));
  ASSERT_GT(daemon, 0);
  ::kill(launcher, SIGKILL);
  ::waitpid(launcher, nullptr, 0);
  EXPECT_TRUE(Eventually([&] { return !ProcessAlive(daemon, 0); }));
  EXPECT_NE(Log().find("quit"), std::string::npos);
}

TEST_F(NvidiaMpsTest, RecoversFromADaemonLeftByAKilledRun) {
  Result<std::unique_ptr<MpsController>> first = MakeNvidiaMpsController(options_);
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE((*first)->Start().ok());
  pid_t old_daemon = (*first)->daemon_pid();
  // A second controller on the same job dir (as after a SIGKILLed launcher and --resume).
  Result<std::unique_ptr<MpsController>> second = MakeNvidiaMpsController(options_);
  ASSERT_TRUE(second.ok());
  ASSERT_TRUE((*second)->Start().ok());
  EXPECT_TRUE(Eventually([&] { return !ProcessAlive(old_daemon, 0); }));
  EXPECT_NE((*second)->daemon_pid(), old_daemon);
  EXPECT_TRUE((*second)->HealthCheck().ok());
}

TEST_F(NvidiaMpsTest, ReportsAFailedStartAndAMissingProgram) {
  ::setenv("FAKE_MPS_FAIL_START", "1", 1);
  Result<std::unique_ptr<MpsController>> mps = MakeNvidiaMpsController(options_);
  ASSERT_TRUE(mps.ok());
  Status s = (*mps)->Start();
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_NE(s.message().find("already running"), std::string::npos) << s.message();

  options_.control_program = "no-such-nvidia-cuda-mps-control";
  EXPECT_EQ(MakeNvidiaMpsController(options_).status().code(), StatusCode::kNotFound);
  Result<std::unique_ptr<MpsController>> fallback = MakeMpsController("auto", options_);
  ASSERT_TRUE(fallback.ok());
  EXPECT_EQ((*fallback)->kind(), "emulated");
}

// The real daemon, on a machine with a GPU: scripts/gpu-check.sh sets DFW_TEST_MPS_CONTROL to the
// path of nvidia-cuda-mps-control. Skipped everywhere else.
TEST_F(NvidiaMpsTest, RealDaemonStartsAnswersAndQuits) {
  const char* real = std::getenv("DFW_TEST_MPS_CONTROL");
  if (real == nullptr || *real == '\0') GTEST_SKIP() << "DFW_TEST_MPS_CONTROL not set (no real MPS daemon here)";
  options_.control_program = real;
  Result<std::unique_ptr<MpsController>> mps = MakeNvidiaMpsController(options_);
  ASSERT_TRUE(mps.ok()) << mps.status().ToString();
  Status started = (*mps)->Start();
  ASSERT_TRUE(started.ok()) << started.ToString();
  pid_t daemon = (*mps)->daemon_pid();
  ASSERT_GT(daemon, 0);
  EXPECT_TRUE((*mps)->HealthCheck().ok());
  Result<std::vector<MpsClientInfo>> clients = (*mps)->ListClients();
  EXPECT_TRUE(clients.ok()) << clients.status().ToString();
  ASSERT_TRUE((*mps)->Quit().ok());
  EXPECT_TRUE(Eventually([&] { return !ProcessAlive(daemon, 0); }));
  std::cout << "control.log:\n" << Log();
}

}  // namespace
}  // namespace dfw::device
