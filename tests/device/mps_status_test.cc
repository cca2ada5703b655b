#include "dfw/device/mps_status.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "dfw/device/memory_ledger.h"
#include "dfw/device/mps_client.h"
#include "dfw/device/mps_controller.h"
#include "test_util.h"

namespace dfw::device {
namespace {

using dfw::testing::kGiB;

class MpsStatusTest : public ::testing::Test {
 protected:
  void SetUp() override {
    job_dir_ = tmp_.path();
  }
  dfw::testing::TempDir tmp_;
  std::string job_dir_;
};

TEST_F(MpsStatusTest, ListsClientsWithLimitsAndLedgerMemory) {
  Result<MemoryLedger> ledger = MemoryLedger::Create(LedgerPathForJob(job_dir_), "nvidia-tesla-t4 (emulated)", 15 * kGiB);
  ASSERT_TRUE(ledger.ok());
  MpsDaemonOptions o;
  o.dirs = MpsDirsForJob(job_dir_);
  Result<std::unique_ptr<MpsController>> mps = MakeEmulatedMpsController(o);
  ASSERT_TRUE(mps.ok());
  ASSERT_TRUE((*mps)->Start().ok());
  Result<MpsClientSession> client = MpsClientSession::Register(o.dirs.pipe_dir, "sdk-0", {25.0, 2 * kGiB});
  ASSERT_TRUE(client.ok());
  ASSERT_TRUE(ledger->Allocate({::getpid(), "sdk-0", 2 * kGiB}, 1536ull << 20).ok());

  Result<std::string> text = DescribeMpsStatus(job_dir_);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_NE(text->find("MPS daemon (emulated): pid " + std::to_string((*mps)->daemon_pid()) + ", 1 clients"),
            std::string::npos) << *text;
  EXPECT_NE(text->find("pid " + std::to_string(::getpid()) + "  sdk-0  threads 25%  pinned 2.0 GiB  allocated 1.5 GiB"),
            std::string::npos) << *text;
  EXPECT_NE(text->find("device memory: nvidia-tesla-t4 (emulated), 1.5 GiB used of 15.0 GiB (13.5 GiB free)"),
            std::string::npos) << *text;

  ASSERT_TRUE((*mps)->Quit().ok());
  Result<std::string> after = DescribeMpsStatus(job_dir_);
  ASSERT_TRUE(after.ok());
  EXPECT_NE(after->find("MPS daemon: not running"), std::string::npos) << *after;
}

TEST_F(MpsStatusTest, SaysWhenTheDirIsNotAJob) {
  Result<std::string> text = DescribeMpsStatus(job_dir_);
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), StatusCode::kNotFound);
  EXPECT_NE(text.status().message().find(job_dir_), std::string::npos);
}

}  // namespace
}  // namespace dfw::device
