// ModelHostGroup's rules against a fake ProcessLauncher (no processes): how a host is started and
// judged by its ready line, the failed start that stops the hosts already up, the watchdog's
// restarts up to max_restarts, and what Stop() reports. The real processes: tests/cli/model_hosts_test.cc.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <optional>

#include "common/fake_process_launcher.h"
#include "launcher/model_hosts.h"

namespace dfw::model_host_group_test {
namespace {

using fakes::ExitedWith;
using fakes::FakeProcessLauncher;
using fakes::KilledBy;
using SignalLog = std::vector<std::pair<pid_t, int>>;

// A host stopped by SIGTERM cleans up and exits 0, as `dfworker model_host` does.
std::optional<ChildExit> HostAnswer(pid_t, int signal) {
  if (signal == SIGTERM) return ExitedWith(0);
  if (signal == SIGKILL) return KilledBy(SIGKILL);
  return std::nullopt;
}

class ModelHostGroupTest : public ::testing::Test {
 protected:
  void SetUp() override { fake_.on_signal = HostAnswer; }

  ModelHostGroupOptions Options(int max_restarts) {
    ModelHostGroupOptions o;
    o.self_exe = "/opt/dfworker";
    o.models_dir = "/job/models";
    o.log_dir = "/job/logs";
    o.extra_env = {"DFW_GPU_MEMORY_LEDGER=/job/ledger"};
    o.timeout_ms = 50;
    o.max_restarts = max_restarts;
    o.watch_interval_ms = 1;
    o.process_launcher = &fake_;
    return o;
  }

  static std::vector<ModelHostSpec> Hosts(int n) {
    std::vector<ModelHostSpec> out;
    for (int i = 0; i < n; ++i) out.push_back({"/models/m.safetensors", i, "model-host-" + std::to_string(i), "CPU"});
    return out;
  }

  FakeProcessLauncher fake_;
};

std::string ArgAfter(const ProcessSpec& spec, const std::string& flag) {
  auto it = std::find(spec.argv.begin(), spec.argv.end(), flag);
  return it == spec.argv.end() || it + 1 == spec.argv.end() ? "" : *(it + 1);
}

TEST_F(ModelHostGroupTest, StartsEachHostAsAModelHostProcessAndAwaitsItsReadyLine) {
  auto group = ModelHostGroup::Start(Options(0), Hosts(2));
  ASSERT_TRUE(group.ok()) << group.status().ToString();
  EXPECT_EQ((*group)->pids(), (std::vector<pid_t>{1000, 1001}));
  const std::vector<FakeProcessLauncher::Started> started = fake_.started();
  ASSERT_EQ(started.size(), 2u);
  const ProcessSpec& second = started[1].spec;
  EXPECT_EQ(started[1].ready_fd, 3);
  EXPECT_EQ(second.argv[0], "/opt/dfworker");
  EXPECT_EQ(second.argv[1], "model_host");
  EXPECT_EQ(ArgAfter(second, "--name"), "model-host-1");
  EXPECT_EQ(ArgAfter(second, "--copy"), "1");
  EXPECT_EQ(ArgAfter(second, "--ready_fd"), "3");
  EXPECT_EQ(ArgAfter(second, "--models_dir"), "/job/models");
  EXPECT_EQ(second.env, (std::vector<std::string>{"DFW_GPU_MEMORY_LEDGER=/job/ledger"}));
  // Its stderr (only) goes to its own log; it stops cleanly if the launcher dies.
  EXPECT_EQ(second.log_path, "/job/logs/model-host-1.log");
  EXPECT_FALSE(second.log_stdout);
  EXPECT_EQ(second.death_signal, SIGTERM);
  EXPECT_EQ(second.blocked_signals, (std::vector<int>{SIGTERM, SIGHUP}));

  EXPECT_TRUE((*group)->Stop().ok()) << "both hosts exit 0 on SIGTERM";
  EXPECT_EQ(fake_.signals(), (SignalLog{{1000, SIGTERM}, {1001, SIGTERM}}));
  EXPECT_EQ((*group)->pids(), (std::vector<pid_t>{0, 0}));
  EXPECT_TRUE((*group)->Stop().ok()) << "idempotent";
  EXPECT_EQ(fake_.signals().size(), 2u);
}

TEST_F(ModelHostGroupTest, AHostThatReportsOutOfGpuMemoryFailsTheStartAndTheOthersAreStopped) {
  fake_.ready_line = [](int n, const ProcessSpec&) {
    return n == 1 ? std::string("error: out of GPU memory: 3 GiB asked, 1 GiB free") : std::string("ready");
  };
  auto group = ModelHostGroup::Start(Options(3), Hosts(3));
  ASSERT_FALSE(group.ok());
  EXPECT_EQ(group.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(group.status().message(),
            "model host 'model-host-1' did not start: out of GPU memory: 3 GiB asked, 1 GiB free; see "
            "/job/logs/model-host-1.log");
  EXPECT_EQ(fake_.started().size(), 2u) << "the third host is never started";
  EXPECT_EQ(fake_.signals(), (SignalLog{{1001, SIGKILL}, {1000, SIGTERM}}));
}

TEST_F(ModelHostGroupTest, AHostThatSaysNothingInTimeIsUnavailableAndKilled) {
  fake_.ready_line = [](int, const ProcessSpec&) { return std::string(); };
  auto group = ModelHostGroup::Start(Options(3), Hosts(1));
  ASSERT_FALSE(group.ok());
  EXPECT_EQ(group.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(group.status().message(),
            "model host 'model-host-0' did not become ready within 50 ms; see /job/logs/model-host-0.log");
  EXPECT_EQ(fake_.signals(), (SignalLog{{1000, SIGKILL}}));
}

TEST_F(ModelHostGroupTest, AHostThatDiesIsRestartedUnderItsOwnName) {
  auto group = ModelHostGroup::Start(Options(3), Hosts(2));
  ASSERT_TRUE(group.ok()) << group.status().ToString();
  fake_.Exit(1000, KilledBy(SIGKILL));
  ASSERT_TRUE(fake_.Await([&] { return fake_.starts_locked() == 3; }));
  Status stopped = (*group)->Stop();

  const std::vector<FakeProcessLauncher::Started> started = fake_.started();
  ASSERT_EQ(started.size(), 3u) << "one restart, of the host that died";
  EXPECT_EQ(started[2].spec.argv, started[0].spec.argv) << "it republishes the same copy under the same name";
  EXPECT_EQ(started[2].ready_fd, 3) << "and is awaited like the first";
  EXPECT_EQ((*group)->restarts(), 1);
  // The restarted host and the one that never died are the ones stopped.
  EXPECT_EQ(fake_.signals(), (SignalLog{{1002, SIGTERM}, {1001, SIGTERM}}));
  // The copy was lost for a while: Stop() says so.
  EXPECT_EQ(stopped.code(), StatusCode::kUnavailable);
  EXPECT_EQ(stopped.message(), "model host 'model-host-0' (pid 1000) killed by signal 9 (SIGKILL) during the run");
}

TEST_F(ModelHostGroupTest, AHostIsRestartedAtMostMaxRestartsTimes) {
  // Every restarted host comes up and dies at once.
  fake_.on_start = [this](pid_t pid, const ProcessSpec&) {
    if (pid != 1000) fake_.Exit(pid, ExitedWith(1));
  };
  auto group = ModelHostGroup::Start(Options(2), Hosts(1));
  ASSERT_TRUE(group.ok()) << group.status().ToString();
  fake_.Exit(1000, KilledBy(SIGKILL));
  // The third death is the one not restarted: once it is reaped the group has given up.
  ASSERT_TRUE(fake_.Await([&] { return fake_.reaped_locked(1002); }));
  Status stopped = (*group)->Stop();

  EXPECT_EQ(fake_.started().size(), 3u) << "the first host and two restarts";
  EXPECT_EQ((*group)->restarts(), 2);
  EXPECT_TRUE(fake_.signals().empty()) << "nothing was left running to stop";
  EXPECT_EQ(stopped.code(), StatusCode::kUnavailable);
  EXPECT_EQ(stopped.message(),
            "model host 'model-host-0' (pid 1000) killed by signal 9 (SIGKILL) during the run; "
            "model host 'model-host-0' (pid 1001) exited with code 1 during the run; "
            "model host 'model-host-0' (pid 1002) exited with code 1 during the run (not restarted: 2 restarts already)");
}

TEST_F(ModelHostGroupTest, WithoutRestartsADeadHostIsReportedWhenTheGroupStops) {
  auto group = ModelHostGroup::Start(Options(0), Hosts(2));
  ASSERT_TRUE(group.ok()) << group.status().ToString();
  fake_.Exit(1001, ExitedWith(2));
  Status stopped = (*group)->Stop();
  EXPECT_EQ(fake_.started().size(), 2u) << "no watchdog, no restart";
  EXPECT_EQ(fake_.signals(), (SignalLog{{1000, SIGTERM}})) << "the dead host is not signalled";
  EXPECT_EQ(stopped.message(), "model host 'model-host-1' (pid 1001) exited with code 2 during the run");
}

TEST_F(ModelHostGroupTest, AHostThatIgnoresSigtermIsKilledAndReportedAsSuch) {
  fake_.on_signal = [](pid_t, int signal) -> std::optional<ChildExit> {
    if (signal == SIGKILL) return KilledBy(SIGKILL);
    return std::nullopt;
  };
  auto group = ModelHostGroup::Start(Options(0), Hosts(1));
  ASSERT_TRUE(group.ok()) << group.status().ToString();
  Status stopped = (*group)->Stop();
  EXPECT_EQ(fake_.signals(), (SignalLog{{1000, SIGTERM}, {1000, SIGKILL}}));
  EXPECT_EQ(stopped.message(), "model host 'model-host-0' (pid 1000) killed by signal 9 (SIGKILL) when stopped");
}

}  // namespace
}  // namespace dfw::model_host_group_test
