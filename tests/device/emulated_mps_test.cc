#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "dfw/common/unix_socket.h"
#include "dfw/device/mps_client.h"
#include "dfw/device/mps_controller.h"
#include "device/control_socket.h"
#include "device/process_info.h"
#include "test_util.h"

namespace dfw::device {
namespace {

using dfw::testing::Eventually;
using dfw::testing::ReadFile;
using dfw::testing::kGiB;

class EmulatedMpsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    job_dir_ = tmp_.path();
    options_.dirs = MpsDirsForJob(job_dir_);
    options_.max_clients_per_device = 4;
    options_.default_active_thread_percentage = 50;
    options_.default_pinned_mem_limit_bytes = 4 * kGiB;
  }

  std::unique_ptr<MpsController> StartDaemon() {
    Result<std::unique_ptr<MpsController>> c = MakeMpsController("emulated", options_);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    Status s = (*c)->Start();
    EXPECT_TRUE(s.ok()) << s.ToString();
    return std::move(*c);
  }

  dfw::testing::TempDir tmp_;
  std::string job_dir_;
  MpsDaemonOptions options_;
};

TEST_F(EmulatedMpsTest, StartsWithPrivateDirsAnswersAndQuits) {
  std::unique_ptr<MpsController> mps = StartDaemon();
  EXPECT_EQ(mps->kind(), "emulated");
  pid_t pid = mps->daemon_pid();
  ASSERT_GT(pid, 0);
  EXPECT_TRUE(mps->HealthCheck().ok());
  for (const std::string& dir : {options_.dirs.pipe_dir, options_.dirs.log_dir}) {
    auto perms = std::filesystem::status(dir).permissions();
    EXPECT_EQ(perms, std::filesystem::perms::owner_all) << dir;
  }
  ASSERT_TRUE(mps->Quit().ok());
  EXPECT_EQ(mps->daemon_pid(), 0);
  EXPECT_FALSE(ProcessAlive(pid, 0));
  EXPECT_FALSE(std::filesystem::exists(ControlSocketPath(options_.dirs.pipe_dir)));
  EXPECT_EQ(mps->HealthCheck().code(), StatusCode::kUnavailable);
  EXPECT_TRUE(mps->Quit().ok());  // idempotent
  std::string log = ReadFile(options_.dirs.log_dir + "/control.log");
  EXPECT_NE(log.find("Control " + std::to_string(pid) + "] Starting emulated MPS control daemon"), std::string::npos) << log;
  EXPECT_NE(log.find("User command: quit"), std::string::npos) << log;
}

TEST_F(EmulatedMpsTest, RegistersClientsWithEffectiveLimitsAndRefusesPastTheClientLimit) {
  std::unique_ptr<MpsController> mps = StartDaemon();
  std::vector<MpsClientSession> sessions;
  // A client may lower the defaults (50 %, 4 GiB) but not raise them.
  const MpsClientLimits asks[] = {{25.0, 1 * kGiB}, {80.0, 8 * kGiB}, {std::nullopt, std::nullopt}, {50.0, 2 * kGiB}};
  const double want_threads[] = {25, 50, 50, 50};
  const uint64_t want_pinned[] = {1 * kGiB, 4 * kGiB, 4 * kGiB, 2 * kGiB};
  for (int i = 0; i < 4; ++i) {
    Result<MpsClientSession> s = MpsClientSession::Register(options_.dirs.pipe_dir, "sdk-" + std::to_string(i), asks[i]);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    EXPECT_DOUBLE_EQ(s->active_thread_percentage(), want_threads[i]) << i;
    EXPECT_EQ(s->pinned_mem_limit_bytes().value(), want_pinned[i]) << i;
    sessions.push_back(std::move(*s));
  }
  Result<MpsClientSession> fifth = MpsClientSession::Register(options_.dirs.pipe_dir, "sdk-4", {});
  ASSERT_FALSE(fifth.ok());
  EXPECT_EQ(fifth.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(fifth.status().message().find("mps-client-limit"), std::string::npos) << fifth.status().message();

  Result<std::vector<MpsClientInfo>> clients = mps->ListClients();
  ASSERT_TRUE(clients.ok());
  ASSERT_EQ(clients->size(), 4u);
  EXPECT_EQ((*clients)[0].pid, ::getpid());

  ASSERT_TRUE(sessions[1].Unregister().ok());
  EXPECT_EQ(mps->ListClients()->size(), 3u);
  EXPECT_TRUE(MpsClientSession::Register(options_.dirs.pipe_dir, "sdk-4", {}).ok());
}

TEST_F(EmulatedMpsTest, DropsAClientThatIsKilled) {
  std::unique_ptr<MpsController> mps = StartDaemon();
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  pid_t child = ::fork();
  if (child == 0) {
    Result<MpsClientSession> s = MpsClientSession::Register(options_.dirs.pipe_dir, "doomed", {});
    char ok = s.ok() ? 'y' : 'n';
    if (::write(fds[1], &ok, 1) != 1) ::_exit(3);
    for (;;) ::pause();
  }
  char ok = 0;
  ASSERT_EQ(::read(fds[0], &ok, 1), 1);
  ASSERT_EQ(ok, 'y');
  ASSERT_EQ(mps->ListClients()->size(), 1u);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  EXPECT_TRUE(Eventually([&] { return mps->ListClients()->empty(); }));
  EXPECT_NE(ReadFile(options_.dirs.log_dir + "/control.log").find("Client " + std::to_string(child) + " (doomed) d"), std::string::npos);
}

TEST_F(EmulatedMpsTest, DaemonDiesWithItsParent) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  pid_t launcher = ::fork();
  if (launcher == 0) {
    Result<std::unique_ptr<MpsController>> c = MakeEmulatedMpsController(options_);
    pid_t daemon = c.ok() && (*c)->Start().ok() ? (*c)->daemon_pid() : 0;
    if (::write(fds[1], &daemon, sizeof daemon) != sizeof daemon) ::_exit(3);
    for (;;) ::pause();
  }
  pid_t daemon = 0;
  ASSERT_EQ(::read(fds[0], &daemon, sizeof daemon), static_cast<ssize_t>(sizeof daemon));
  ASSERT_GT(daemon, 0);
  ASSERT_TRUE(ProcessAlive(daemon, 0));
  ::kill(launcher, SIGKILL);
  ::waitpid(launcher, nullptr, 0);
  EXPECT_TRUE(Eventually([&] { return !ProcessAlive(daemon, 0); }));
  EXPECT_NE(ReadFile(options_.dirs.log_dir + "/control.log").find("parent exited"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(ControlSocketPath(options_.dirs.pipe_dir)));
}

TEST_F(EmulatedMpsTest, RecoversAStalePipeDirAndRefusesALiveOne) {
  // A socket file nobody listens on, as a SIGKILLed daemon leaves it.
  ASSERT_TRUE(PrepareMpsDirs(options_.dirs).ok());
  {
    Result<OwnedFd> stale = ListenUnix(ControlSocketPath(options_.dirs.pipe_dir), SocketBlocking::kBlocking, "a socket");
    ASSERT_TRUE(stale.ok());
  }
  std::unique_ptr<MpsController> mps = StartDaemon();
  EXPECT_TRUE(mps->HealthCheck().ok());
  EXPECT_NE(ReadFile(options_.dirs.log_dir + "/control.log").find("Removed stale control socket"), std::string::npos);

  Result<std::unique_ptr<MpsController>> second = MakeEmulatedMpsController(options_);
  ASSERT_TRUE(second.ok());
  Status s = (*second)->Start();
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_NE(s.message().find("already answers"), std::string::npos) << s.message();
  EXPECT_TRUE(mps->HealthCheck().ok());  // the first daemon is untouched
}

TEST_F(EmulatedMpsTest, ControlCommandsChangeDefaultsAndRejectUnknownOnes) {
  std::unique_ptr<MpsController> mps = StartDaemon();
  const std::string& pipe = options_.dirs.pipe_dir;
  ASSERT_TRUE(MpsControlCommand(pipe, "set_default_active_thread_percentage 20").ok());
  EXPECT_EQ(*MpsControlCommand(pipe, "get_default_active_thread_percentage"), "ok 20\n");
  EXPECT_FALSE(MpsControlCommand(pipe, "set_default_active_thread_percentage 120").ok());
  EXPECT_FALSE(MpsControlCommand(pipe, "set_default_device_pinned_mem_limit 1 2G").ok());
  ASSERT_TRUE(MpsControlCommand(pipe, "set_default_device_pinned_mem_limit 0 1G").ok());
  Result<MpsClientSession> s = MpsClientSession::Register(pipe, "sdk-0", {});
  ASSERT_TRUE(s.ok());
  EXPECT_DOUBLE_EQ(s->active_thread_percentage(), 20);
  EXPECT_EQ(s->pinned_mem_limit_bytes().value(), kGiB);
  Result<std::string> bad = MpsControlCommand(pipe, "frobnicate");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("unknown command 'frobnicate'"), std::string::npos);
}

TEST_F(EmulatedMpsTest, DestroyingTheControllerStopsTheDaemon) {
  pid_t pid = 0;
  {
    std::unique_ptr<MpsController> mps = StartDaemon();
    pid = mps->daemon_pid();
    ASSERT_TRUE(ProcessAlive(pid, 0));
  }  // an early return or error path: no explicit Quit()
  EXPECT_FALSE(ProcessAlive(pid, 0));
  EXPECT_NE(ReadFile(options_.dirs.log_dir + "/control.log").find("User command: quit"), std::string::npos);
}

TEST_F(EmulatedMpsTest, AFailedStartSaysWhyAndLeavesNothingRunning) {
  // A plain file where the pipe dir's parent should be: the daemon cannot create its dirs.
  ASSERT_EQ(std::system(("touch " + job_dir_ + "/mps").c_str()), 0);
  Result<std::unique_ptr<MpsController>> mps = MakeEmulatedMpsController(options_);
  ASSERT_TRUE(mps.ok());
  Status s = (*mps)->Start();
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_NE(s.message().find("did not start"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find(options_.dirs.pipe_dir), std::string::npos) << s.message();
  EXPECT_EQ((*mps)->daemon_pid(), 0);
}

TEST_F(EmulatedMpsTest, ExecsTheDaemonCommandWhenGiven) {
  const std::string dfworker = std::string(DFW_BINARY_DIR) + "/src/cli/dfworker";
  if (::access(dfworker.c_str(), X_OK) != 0) GTEST_SKIP() << dfworker << " is not built";
  options_.daemon_command = {dfworker, "mps", "daemon"};
  std::unique_ptr<MpsController> mps = StartDaemon();
  pid_t pid = mps->daemon_pid();
  ASSERT_GT(pid, 0);
  EXPECT_NE(ReadFile("/proc/" + std::to_string(pid) + "/cmdline").find("--ready_fd"), std::string::npos);
  Result<MpsClientSession> s = MpsClientSession::Register(options_.dirs.pipe_dir, "sdk-0", {});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_DOUBLE_EQ(s->active_thread_percentage(), 50);  // the limits travelled as flags
  EXPECT_EQ(s->pinned_mem_limit_bytes().value(), 4 * kGiB);
  ASSERT_TRUE(mps->Quit().ok());
  EXPECT_FALSE(ProcessAlive(pid, 0));
}

TEST_F(EmulatedMpsTest, ABadDaemonCommandIsReportedNotHung) {
  options_.daemon_command = {"/nonexistent/dfworker", "mps", "daemon"};
  Result<std::unique_ptr<MpsController>> mps = MakeEmulatedMpsController(options_);
  ASSERT_TRUE(mps.ok());
  Status s = (*mps)->Start();
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_NE(s.message().find("cannot exec"), std::string::npos) << s.message();
}

TEST_F(EmulatedMpsTest, AChildRegistersFromItsEnvironment) {
  std::unique_ptr<MpsController> mps = StartDaemon();
  EXPECT_FALSE(MpsClientSession::RegisterFromEnv("sdk-0")->has_value());  // no CUDA_MPS_* here
  for (const auto& [k, v] : mps->ClientEnv({20.0, kGiB})) ::setenv(k.c_str(), v.c_str(), 1);
  Result<std::optional<MpsClientSession>> s = MpsClientSession::RegisterFromEnv("sdk-0");
  for (const auto& [k, v] : mps->ClientEnv({20.0, kGiB})) ::unsetenv(k.c_str());
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_TRUE(s->has_value());
  EXPECT_DOUBLE_EQ((*s)->active_thread_percentage(), 20);
  EXPECT_EQ((*s)->pinned_mem_limit_bytes().value(), kGiB);
  EXPECT_EQ(mps->ListClients()->size(), 1u);
}

TEST(MpsController, RejectsBadOptionsAndUnknownKinds) {
  MpsDaemonOptions o;
  o.dirs = MpsDirsForJob("/tmp/x");
  EXPECT_EQ(MakeMpsController("emulatd", o).status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(MakeMpsController("emulatd", o).status().message().find("did you mean 'emulated'"), std::string::npos);
  o.max_clients_per_device = 0;
  EXPECT_EQ(MakeEmulatedMpsController(o).status().code(), StatusCode::kInvalidArgument);
  o.max_clients_per_device = 48;
  o.default_active_thread_percentage = 0;
  EXPECT_EQ(MakeEmulatedMpsController(o).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(MpsClientLimitForComputeCapability(6), 16);
  EXPECT_EQ(MpsClientLimitForComputeCapability(7), 48);
  EXPECT_EQ(MpsClientLimitForComputeCapability(9), 48);
}

}  // namespace
}  // namespace dfw::device
