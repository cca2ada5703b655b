#include "dfw/device/memory_ledger.h"
#include "test_util.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace dfw::device {
namespace {

using dfw::testing::kGiB;
using dfw::testing::kMiB;

class MemoryLedgerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = tmp_.path();
    path_ = LedgerPathForJob(dir_);
  }

  // Forks a child that allocates `bytes` as "sdk-N", signals readiness through a pipe, then
  // sleeps until killed. Returns its pid.
  pid_t SpawnHolder(uint64_t bytes) {
    int fds[2];
    EXPECT_EQ(::pipe(fds), 0);
    pid_t pid = ::fork();
    if (pid == 0) {
      ::close(fds[0]);
      Result<MemoryLedger> l = MemoryLedger::Open(path_);
      char ok = l.ok() && l->Allocate({::getpid(), "holder", std::nullopt}, bytes).ok() ? 'y' : 'n';
      if (::write(fds[1], &ok, 1) != 1) ::_exit(3);
      for (;;) ::pause();
    }
    ::close(fds[1]);
    char ok = 0;
    EXPECT_EQ(::read(fds[0], &ok, 1), 1);
    ::close(fds[0]);
    EXPECT_EQ(ok, 'y');
    return pid;
  }

  dfw::testing::TempDir tmp_;
  std::string dir_;
  std::string path_;
};

TEST_F(MemoryLedgerTest, TracksAllocationsPerProcessAndFrees) {
  Result<MemoryLedger> l = MemoryLedger::Create(path_, "nvidia-tesla-t4 (emulated)", 16 * kGiB);
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  LedgerClient me{::getpid(), "sdk-0", std::nullopt};
  ASSERT_TRUE(l->Allocate(me, 3 * kGiB).ok());
  ASSERT_TRUE(l->Allocate(me, 1 * kGiB).ok());
  ASSERT_TRUE(l->Free(::getpid(), 512 * kMiB).ok());
  Result<LedgerSnapshot> s = l->Snapshot();
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->device_name, "nvidia-tesla-t4 (emulated)");
  EXPECT_EQ(s->capacity_bytes, 16 * kGiB);
  EXPECT_EQ(s->used_bytes, 3 * kGiB + 512 * kMiB);
  EXPECT_EQ(s->free_bytes(), 12 * kGiB + 512 * kMiB);
  ASSERT_EQ(s->entries.size(), 1u);
  EXPECT_EQ(s->entries[0].name, "sdk-0");

  Status over_free = l->Free(::getpid(), 8 * kGiB);
  EXPECT_EQ(over_free.code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(l->Release(::getpid()).ok());
  EXPECT_EQ(l->Snapshot()->used_bytes, 0u);
}

TEST_F(MemoryLedgerTest, RefusesPastCapacityNamingProcessRequestAndFreeMemory) {
  Result<MemoryLedger> l = MemoryLedger::Create(path_, "nvidia-tesla-t4 (emulated)", 15 * kGiB);
  ASSERT_TRUE(l.ok());
  LedgerClient me{::getpid(), "sdk-3", std::nullopt};
  ASSERT_TRUE(l->Allocate(me, 14 * kGiB).ok());
  Status s = l->Allocate(me, 2 * kGiB);
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(s.message().find("'sdk-3' (pid " + std::to_string(::getpid()) + ")"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("requested 2.0 GiB"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("1.0 GiB free of 15.0 GiB"), std::string::npos) << s.message();
  // The refused request changed nothing; exactly the free remainder still fits.
  EXPECT_TRUE(l->Allocate(me, 1 * kGiB).ok());
  EXPECT_EQ(l->Snapshot()->free_bytes(), 0u);
}

TEST_F(MemoryLedgerTest, EnforcesPinnedLimitAndOnlyLetsItBeLowered) {
  Result<MemoryLedger> l = MemoryLedger::Create(path_, "gpu", 40 * kGiB);
  ASSERT_TRUE(l.ok());
  LedgerClient capped{::getpid(), "sdk-1", 2 * kGiB};
  ASSERT_TRUE(l->Allocate(capped, 1536 * kMiB).ok());
  Status s = l->Allocate(capped, 1 * kGiB);
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(s.message().find("pinned limit CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=2.0 GiB"), std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("512.0 MiB left"), std::string::npos) << s.message();
  // A later, higher limit is ignored (a client may only lower its limit).
  EXPECT_FALSE(l->Allocate({::getpid(), "sdk-1", 8 * kGiB}, 1 * kGiB).ok());
  EXPECT_TRUE(l->Allocate(capped, 512 * kMiB).ok());
  EXPECT_EQ(l->Snapshot()->entries.at(0).pinned_limit_bytes.value(), 2 * kGiB);
}

TEST_F(MemoryLedgerTest, RejectsBadRequestsAndBadFiles) {
  Result<MemoryLedger> l = MemoryLedger::Create(path_, "gpu", kGiB);
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->Allocate({0, "x", std::nullopt}, 1).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(l->Allocate({::getpid(), "x", std::nullopt}, 0).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(MemoryLedger::Create(path_, "gpu", 0).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(MemoryLedger::Open(dir_ + "/absent").status().code(), StatusCode::kNotFound);
  std::string junk = dir_ + "/junk";
  ASSERT_EQ(std::system(("echo hello > " + junk).c_str()), 0);
  EXPECT_EQ(MemoryLedger::Open(junk).status().code(), StatusCode::kDataLoss);
}

TEST_F(MemoryLedgerTest, ReleasesMemoryOfASigkilledProcess) {
  Result<MemoryLedger> l = MemoryLedger::Create(path_, "gpu", 16 * kGiB);
  ASSERT_TRUE(l.ok());
  pid_t reaped = SpawnHolder(4 * kGiB);
  pid_t zombie = SpawnHolder(6 * kGiB);
  ASSERT_EQ(l->Snapshot()->used_bytes, 10 * kGiB);
  // Six more GiB do not fit while both holders live.
  EXPECT_FALSE(l->Allocate({::getpid(), "launcher", std::nullopt}, 7 * kGiB).ok());

  ASSERT_EQ(::kill(reaped, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(reaped, &status, 0), reaped);
  EXPECT_EQ(l->Snapshot()->used_bytes, 6 * kGiB);

  // Killed but not yet reaped (a zombie) counts as dead too.
  ASSERT_EQ(::kill(zombie, SIGKILL), 0);
  siginfo_t info{};
  ASSERT_EQ(::waitid(P_PID, static_cast<id_t>(zombie), &info, WEXITED | WNOWAIT), 0);
  Result<uint64_t> reclaimed = l->ReclaimDead();
  ASSERT_TRUE(reclaimed.ok());
  EXPECT_EQ(*reclaimed, 6 * kGiB);
  ASSERT_EQ(::waitpid(zombie, &status, 0), zombie);
  EXPECT_TRUE(l->Allocate({::getpid(), "launcher", std::nullopt}, 16 * kGiB).ok());
}

TEST_F(MemoryLedgerTest, ConcurrentProcessesNeverOvercommit) {
  constexpr int kProcs = 8;
  constexpr int kTries = 40;  // 8 x 40 MiB requested against 100 MiB
  ASSERT_TRUE(MemoryLedger::Create(path_, "gpu", 100 * kMiB).ok());
  // Each child reports how many MiB it was granted, then stays alive (an exited child's memory
  // would be reclaimed and handed to the others) until the parent kills it.
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  pid_t pids[kProcs];
  for (pid_t& pid : pids) {
    pid = ::fork();
    if (pid == 0) {
      ::close(fds[0]);
      Result<MemoryLedger> l = MemoryLedger::Open(path_);
      unsigned char granted = 0;
      for (int i = 0; l.ok() && i < kTries; ++i) granted += l->Allocate({::getpid(), "sdk", std::nullopt}, kMiB).ok();
      if (!l.ok()) granted = 255;
      if (::write(fds[1], &granted, 1) != 1) ::_exit(3);
      for (;;) ::pause();
    }
  }
  ::close(fds[1]);
  int total = 0;
  for (int i = 0; i < kProcs; ++i) {
    unsigned char granted = 0;
    ASSERT_EQ(::read(fds[0], &granted, 1), 1);
    ASSERT_NE(granted, 255);
    total += granted;
  }
  ::close(fds[0]);
  EXPECT_EQ(MemoryLedger::Open(path_)->Snapshot()->used_bytes, 100 * kMiB);
  for (pid_t pid : pids) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
  }
  EXPECT_EQ(total, 100);
}

}  // namespace
}  // namespace dfw::device
