// The job server (RunLauncher's loop: coordinator, supervisor, commits) against a fake
// ProcessLauncher: no SDK process is forked. A started "process" is a thread of this test that
// speaks the coordinator protocol on the real socket, as the SDK harness does, and ends through
// the fake (which raises SIGCHLD, as the kernel would). The launcher accepts only connections from
// pids it started, so the connecting process is given this test's own pid.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include "common/fake_process_launcher.h"
#include "dfw/common/unix_socket.h"
#include "dfw/job/line_channel.h"
#include "dfw/job/manifest.h"
#include "dfw/job/protocol.h"
#include "dfw/launcher/launcher.h"
#include "test_util.h"

namespace dfw::job_server_test {
namespace {

namespace fs = std::filesystem;
using fakes::ExitedWith;
using fakes::FakeProcessLauncher;
using fakes::KilledBy;

struct LeaseSeen {
  std::string bundle;
  int attempt = 0;
  bool operator==(const LeaseSeen& o) const { return bundle == o.bundle && attempt == o.attempt; }
};

std::string ValueAfter(const ProcessSpec& spec, const std::string& flag) {
  auto it = std::find(spec.argv.begin(), spec.argv.end(), flag);
  return it == spec.argv.end() || it + 1 == spec.argv.end() ? "" : *(it + 1);
}

class JobServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = tmp_.path();
  }
  void TearDown() override {
    for (std::thread& t : sdks_) t.join();
  }

  LauncherOptions Options(std::vector<std::string> bundles, int processes) {
    LauncherOptions o;
    o.job_dir = (dir_ / "job").string();
    o.job.job_id = "job-under-test";
    o.job.bundles = std::move(bundles);
    o.job.executor = "lines";
    o.processes = processes;
    o.sdk_command = {"/opt/dfworker", "sdk_harness"};
    o.process_launcher = &fake_;
    return o;
  }

  // An SDK process on a thread: hello, then lease requests until "done"; each lease is committed,
  // except that with `die_holding_lease` the process ends (SIGKILL) holding its first one.
  void RunSdk(pid_t pid, const ProcessSpec& spec, bool die_holding_lease) {
    const std::string socket = ValueAfter(spec, "--coordinator_socket");
    const int index = std::stoi(ValueAfter(spec, "--index"));
    sdks_.emplace_back([this, pid, socket, index, die_holding_lease] {
      fake_.Exit(pid, Converse(pid, socket, index, die_holding_lease));
    });
  }

  // The conversation of one SDK process; how it ends. Its connection is closed on return, before
  // its exit reaches the launcher, as a dying process's would be.
  ChildExit Converse(pid_t pid, const std::string& socket, int index, bool die_holding_lease) {
    Result<OwnedFd> fd = ConnectUnix(socket, "the coordinator");
    if (!fd.ok()) return ExitedWith(1);
    LineChannel ch(std::move(*fd));
    Message hello;
    hello.type = MessageType::kHello;
    hello.index = index;
    hello.pid = pid;
    if (!ch.WriteLine(EncodeMessage(hello)).ok()) return ExitedWith(1);
    for (;;) {
      Message request;
      request.type = MessageType::kLeaseRequest;
      if (!ch.WriteLine(EncodeMessage(request)).ok()) return ExitedWith(1);
      Result<Message> reply = Read(ch);
      if (!reply.ok()) return ExitedWith(1);
      if (reply->type == MessageType::kDone) return ExitedWith(0);
      if (reply->type != MessageType::kLease) return ExitedWith(1);
      {
        std::lock_guard<std::mutex> lock(mu_);
        leases_.push_back({reply->bundle, reply->attempt});
      }
      if (die_holding_lease) return KilledBy(SIGKILL);
      Message commit;
      commit.type = MessageType::kCommit;
      commit.lease = reply->lease;
      commit.bundle = reply->bundle;
      if (!ch.WriteLine(EncodeMessage(commit)).ok()) return ExitedWith(1);
      Result<Message> ack = Read(ch);
      if (!ack.ok() || ack->type != MessageType::kAck || !ack->accepted) return ExitedWith(1);
    }
  }

  static Result<Message> Read(LineChannel& ch) {
    ASSIGN_OR_RETURN(std::string line, ch.ReadLine());
    return DecodeMessage(line);
  }

  std::set<std::string> Committed() {
    auto manifest = Manifest::Open((dir_ / "job" / "manifest.jsonl").string());
    EXPECT_TRUE(manifest.ok()) << manifest.status().ToString();
    return manifest.ok() ? manifest->committed() : std::set<std::string>{};
  }

  std::vector<LeaseSeen> leases() {
    std::lock_guard<std::mutex> lock(mu_);
    return leases_;
  }

  dfw::testing::TempDir tmp_;
  fs::path dir_;
  FakeProcessLauncher fake_;
  std::vector<std::thread> sdks_;  // joined in TearDown (RunLauncher has closed their sockets by then)
  std::mutex mu_;
  std::vector<LeaseSeen> leases_;  // in the order they were granted
};

TEST_F(JobServerTest, TheRunEndsOnceEveryBundleIsCommittedAndAProcessThatNeverConnectedIsStopped) {
  // Process 0 does all the work; process 1 is still loading when the job finishes.
  const pid_t self = ::getpid();
  fake_.pid_for = [self](int n) { return n == 0 ? self : 5000 + n; };
  fake_.on_start = [&](pid_t pid, const ProcessSpec& spec) {
    if (pid == self) RunSdk(pid, spec, false);
  };
  LaunchResult r = RunLauncher(Options({"b0", "b1", "b2"}, 2));
  EXPECT_EQ(r.code, ExitCode::kSuccess) << r.message;
  EXPECT_EQ(r.message, "");
  EXPECT_EQ(Committed(), (std::set<std::string>{"b0", "b1", "b2"}));
  EXPECT_TRUE(fs::exists(dir_ / "job" / "FINISHED"));
  EXPECT_EQ(leases(), (std::vector<LeaseSeen>{{"b0", 1}, {"b1", 1}, {"b2", 1}}));

  const std::vector<FakeProcessLauncher::Started> started = fake_.started();
  ASSERT_EQ(started.size(), 2u) << "no process ended early, none was restarted";
  EXPECT_EQ(ValueAfter(started[1].spec, "--index"), "1");
  EXPECT_EQ(ValueAfter(started[1].spec, "--job_dir"), (dir_ / "job").string());
  EXPECT_EQ(started[1].spec.log_path, (dir_ / "job" / "logs" / "sdk-1.log").string());
  // The connected process is told "done" and exits by itself; only the other gets SIGTERM.
  EXPECT_EQ(fake_.signals(), (std::vector<std::pair<pid_t, int>>{{5001, SIGTERM}}));
}

TEST_F(JobServerTest, AProcessThatDiesHoldingALeaseIsReplacedAndItsBundleIsLeasedAgain) {
  const pid_t self = ::getpid();
  fake_.pid_for = [self](int) { return self; };  // one process at a time: each is this test
  int starts = 0;
  fake_.on_start = [&](pid_t pid, const ProcessSpec& spec) { RunSdk(pid, spec, /*die_holding_lease=*/starts++ == 0); };
  LauncherOptions o = Options({"b0", "b1"}, 1);
  // Only the process's end, not a silence, gives its lease back within this test's time.
  o.coordinator.lease_timeout = std::chrono::minutes(10);
  LaunchResult r = RunLauncher(o);
  EXPECT_EQ(r.code, ExitCode::kSuccess) << r.message;
  EXPECT_EQ(Committed(), (std::set<std::string>{"b0", "b1"}));
  // The dead process's bundle goes back to the front of the queue, as its second attempt.
  EXPECT_EQ(leases(), (std::vector<LeaseSeen>{{"b0", 1}, {"b0", 2}, {"b1", 1}}));
  const std::vector<FakeProcessLauncher::Started> started = fake_.started();
  ASSERT_EQ(started.size(), 2u) << "the dead process was replaced once";
  EXPECT_EQ(started[1].spec.argv, started[0].spec.argv) << "in the same slot, with the same command";
}

TEST_F(JobServerTest, ProcessesThatKeepExitingWithoutCommittingFailTheRunNamingTheLastExit) {
  // Each process exits with code 3 as soon as it starts. The run gives up after more than
  // max(8, 4 x processes) ends without a commit.
  struct Case {
    int processes;
    std::size_t starts;  // the first ones, and a restart per end up to the limit
  };
  for (const Case& c : {Case{1, 1 + 8}, Case{3, 3 + 12}}) {
    SCOPED_TRACE("processes " + std::to_string(c.processes));
    FakeProcessLauncher fake;
    fake.on_start = [&fake](pid_t pid, const ProcessSpec&) { fake.Exit(pid, ExitedWith(3)); };
    LauncherOptions o = Options({"b0", "b1"}, c.processes);
    o.job_dir = (dir_ / ("job-" + std::to_string(c.processes))).string();
    o.process_launcher = &fake;
    LaunchResult r = RunLauncher(o);
    EXPECT_EQ(r.code, ExitCode::kRunFailed);
    EXPECT_EQ(fake.started().size(), c.starts);
    EXPECT_EQ(r.message.rfind("SDK processes keep ending without committing work; last: SDK process ", 0), 0u) << r.message;
    EXPECT_NE(r.message.find(") exited with code 3; see " + o.job_dir + "/logs"), std::string::npos) << r.message;
    EXPECT_FALSE(fs::exists(o.job_dir + "/FINISHED"));
  }
}

TEST_F(JobServerTest, TheLastExitNamedIsTheOneThatTookTheRunOverTheLimit) {
  fake_.on_start = [this](pid_t pid, const ProcessSpec&) { fake_.Exit(pid, pid == 1008 ? KilledBy(SIGSEGV) : ExitedWith(3)); };
  LaunchResult r = RunLauncher(Options({"b0"}, 1));
  EXPECT_EQ(r.code, ExitCode::kRunFailed);
  EXPECT_EQ(r.message, "SDK processes keep ending without committing work; last: SDK process 0 (pid 1008) killed by signal 11 "
                       "(SIGSEGV); see " + (dir_ / "job" / "logs").string());
}

}  // namespace
}  // namespace dfw::job_server_test
