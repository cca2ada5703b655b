// What the device module enforces for tenants (`dfworker run --tenants`): the ledger holds each
// tenant's processes together to its budget, and the emulated MPS daemon's client registry keeps
// each client's limits and priority under its tenant's name.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <optional>

#include "dfw/device/memory_ledger.h"
#include "dfw/device/mps_client.h"
#include "dfw/device/mps_controller.h"
#include "test_util.h"

namespace dfw::device {
namespace {

using dfw::testing::kGiB;

class TenantLimitsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = tmp_.path();
    path_ = LedgerPathForJob(dir_);
  }
  void TearDown() override {
    for (pid_t p : children_) {
      ::kill(p, SIGKILL);
      ::waitpid(p, nullptr, 0);
    }
  }

  // A child process of `tenant` that allocates `bytes` and then waits to be killed; returns its
  // pid once the allocation is recorded (read from a pipe, no sleeping).
  pid_t Holder(const std::string& tenant, uint64_t bytes) {
    int fds[2];
    EXPECT_EQ(::pipe(fds), 0);
    pid_t pid = ::fork();
    if (pid == 0) {
      ::close(fds[0]);
      Result<MemoryLedger> l = MemoryLedger::Open(path_);
      LedgerClient c;
      c.pid = ::getpid();
      c.name = tenant + "/sdk-0";
      c.tenant = tenant;
      char ok = l.ok() && l->Allocate(c, bytes).ok() ? 'y' : 'n';
      if (::write(fds[1], &ok, 1) != 1) ::_exit(3);
      for (;;) ::pause();
    }
    ::close(fds[1]);
    char ok = 0;
    EXPECT_EQ(::read(fds[0], &ok, 1), 1);
    ::close(fds[0]);
    EXPECT_EQ(ok, 'y');
    children_.push_back(pid);
    return pid;
  }

  static LedgerClient Me(const std::string& tenant) {
    LedgerClient c;
    c.pid = ::getpid();
    c.name = "test";
    c.tenant = tenant;
    return c;
  }

  dfw::testing::TempDir tmp_;
  std::string dir_, path_;
  std::vector<pid_t> children_;
};

TEST_F(TenantLimitsTest, TheLedgerHoldsEachTenantsProcessesTogetherToItsBudget) {
  Result<MemoryLedger> l = MemoryLedger::Create(path_, "nvidia-l4 (emulated)", 24 * kGiB);
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  ASSERT_TRUE(l->SetTenantBudget("a", 4 * kGiB).ok());
  ASSERT_TRUE(l->SetTenantBudget("b", 8 * kGiB).ok());
  pid_t holder = Holder("a", 3 * kGiB);
  // A second process of 'a' is refused past a's budget although the device has 21 GiB free ...
  Status over = l->Allocate(Me("a"), 2 * kGiB);
  EXPECT_EQ(over.code(), StatusCode::kResourceExhausted) << over.ToString();
  EXPECT_NE(over.message().find("tenant 'a'"), std::string::npos) << over.message();
  EXPECT_NE(over.message().find("budget of 4.0 GiB"), std::string::npos) << over.message();
  // ... while tenant 'b' is not affected by a's use.
  ASSERT_TRUE(l->Allocate(Me("b"), 6 * kGiB).ok());
  EXPECT_EQ(l->Allocate(Me("c"), kGiB).code(), StatusCode::kFailedPrecondition) << "a tenant without a budget";

  Result<LedgerSnapshot> s = l->Snapshot();
  ASSERT_TRUE(s.ok());
  ASSERT_EQ(s->tenants.size(), 2u);
  EXPECT_EQ(s->tenants[0].name, "a");
  EXPECT_EQ(s->tenants[0].used_bytes, 3 * kGiB);
  EXPECT_EQ(s->tenants[1].used_bytes, 6 * kGiB);
  bool found = false;
  for (const LedgerEntry& e : s->entries) found |= e.pid == holder && e.tenant == "a";
  EXPECT_TRUE(found);

  // The holder dies: its memory comes back to 'a', and a's peak stays on record.
  ::kill(holder, SIGKILL);
  ::waitpid(holder, nullptr, 0);
  children_.clear();
  s = l->Snapshot();
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->tenants[0].used_bytes, 0u);
  EXPECT_EQ(s->tenants[0].peak_bytes, 3 * kGiB);
  EXPECT_EQ(s->tenants[1].peak_bytes, 6 * kGiB);
  EXPECT_TRUE(l->Allocate(Me("b"), 2 * kGiB).ok());
  EXPECT_EQ(l->Allocate(Me("b"), 1).code(), StatusCode::kResourceExhausted) << "b is at its 8 GiB";
}

TEST_F(TenantLimitsTest, BudgetsAreBoundedAndNamed) {
  Result<MemoryLedger> l = MemoryLedger::Create(path_, "x", kGiB);
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->SetTenantBudget("", kGiB).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(l->SetTenantBudget(std::string(40, 'x'), kGiB).code(), StatusCode::kInvalidArgument);
  for (std::size_t i = 0; i < MemoryLedger::kMaxTenants; ++i) ASSERT_TRUE(l->SetTenantBudget("t" + std::to_string(i), kGiB).ok());
  EXPECT_EQ(l->SetTenantBudget("one-too-many", kGiB).code(), StatusCode::kResourceExhausted);
  EXPECT_TRUE(l->SetTenantBudget("t3", 2 * kGiB).ok()) << "changing an existing budget needs no new slot";
}

TEST_F(TenantLimitsTest, TheDaemonsRegistryKeepsEachClientsTenantLimitsAndPriority) {
  MpsDaemonOptions o;
  o.dirs = MpsDirsForJob(dir_);
  Result<std::unique_ptr<MpsController>> mps = MakeMpsController("emulated", o);
  ASSERT_TRUE(mps.ok());
  ASSERT_TRUE((*mps)->Start().ok());
  MpsClientLimits limits;
  limits.active_thread_percentage = 40;
  limits.pinned_mem_limit_bytes = 3 * kGiB;
  limits.client_priority = 1;
  for (const auto& [k, v] : (*mps)->ClientEnv(limits)) ::setenv(k.c_str(), v.c_str(), 1);
  ::setenv(std::string(kTenantEnv).c_str(), "embed", 1);
  EXPECT_STREQ(std::getenv(std::string(kClientPriorityEnv).c_str()), "1");
  Result<std::optional<MpsClientSession>> s = MpsClientSession::RegisterFromEnv("sdk-1");
  for (const auto& [k, v] : (*mps)->ClientEnv(limits)) ::unsetenv(k.c_str());
  ::unsetenv(std::string(kTenantEnv).c_str());
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_TRUE(s->has_value());
  Result<std::vector<MpsClientInfo>> clients = (*mps)->ListClients();
  ASSERT_TRUE(clients.ok());
  ASSERT_EQ(clients->size(), 1u);
  EXPECT_EQ((*clients)[0].name, "embed/sdk-1");
  EXPECT_EQ((*clients)[0].active_thread_percentage, 40);
  EXPECT_EQ((*clients)[0].pinned_mem_limit_bytes.value_or(0), 3 * kGiB);
  EXPECT_EQ((*clients)[0].priority, 1);
  EXPECT_EQ(ParseClientPriority("2").status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE((*mps)->Quit().ok());
}

TEST_F(TenantLimitsTest, AFaultIsToldToWatchersAndRefusesClientsUntilEveryClientHasExited) {
  MpsDaemonOptions o;
  o.dirs = MpsDirsForJob(dir_);
  Result<std::unique_ptr<MpsController>> mps = MakeMpsController("emulated", o);
  ASSERT_TRUE(mps.ok());
  ASSERT_TRUE((*mps)->Start().ok());
  const std::string pipe = o.dirs.pipe_dir;
  Result<int> watch = MpsWatch(pipe);
  ASSERT_TRUE(watch.ok()) << watch.status().ToString();
  std::optional<MpsClientSession> client;
  {
    Result<MpsClientSession> s = MpsClientSession::Register(pipe, "a/sdk-0", {});
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    client.emplace(std::move(*s));
  }
  ASSERT_TRUE(MpsControlCommand(pipe, "inject_fault").ok());
  char buf[16] = {};
  ASSERT_EQ(::read(*watch, buf, sizeof buf - 1), 6);  // blocks until the daemon tells the watcher
  EXPECT_STREQ(buf, "fault\n");
  EXPECT_NE(MpsControlCommand(pipe, "ping")->find("state=FAULT"), std::string::npos);
  Result<MpsClientSession> refused = MpsClientSession::Register(pipe, "b/sdk-0", {});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("mps-server-not-ready"), std::string::npos) << refused.status().ToString();
  // The last client leaves: the server takes clients again.
  ASSERT_TRUE(client->Unregister().ok());
  client.reset();
  bool active = false;
  for (int i = 0; i < 500 && !active; ++i) {  // the daemon drops the closed connection on its next poll
    active = MpsControlCommand(pipe, "ping")->find("state=ACTIVE") != std::string::npos;
    if (!active) ::usleep(10000);
  }
  EXPECT_TRUE(active);
  EXPECT_TRUE(MpsClientSession::Register(pipe, "b/sdk-0", {}).ok());
  ::close(*watch);
  EXPECT_TRUE((*mps)->Quit().ok());
}

}  // namespace
}  // namespace dfw::device
