// The SDK harness's bundle gate: a process whose parent is no longer the launcher that started it
// takes no more work (the launcher died; PR_SET_PDEATHSIG is the first line of defence, this the
// second). Before, the loop asked the coordinator for a lease whoever its parent was.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <thread>

#include "dfw/common/unix_socket.h"
#include "dfw/job/job_dir.h"
#include "dfw/job/protocol.h"
#include "dfw/worker/sdk_harness.h"
#include "test_util.h"

namespace dfw {
namespace {

class NeverRunExecutor final : public BundleExecutor {
 public:
  Status RunBundle(const std::string& bundle_id, const std::string&, MetricsSnapshot*) override {
    ADD_FAILURE() << "bundle '" << bundle_id << "' ran after the launcher was gone";
    return Status::OK();
  }
};

TEST(SdkHarness, TakesNoBundleOnceItsParentIsNoLongerTheLauncher) {
  testing::TempDir dir;
  JobInfo info;
  info.job_id = "gate";
  info.bundles = {"0-1"};
  info.executor = "lines";
  Result<JobDir> job = JobDir::Create(dir / "job", info, /*sync=*/false);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  Result<OwnedFd> listening = ListenUnix(dir / "c.sock", SocketBlocking::kBlocking, "the test coordinator");
  ASSERT_TRUE(listening.ok()) << listening.status().ToString();
  std::string received;
  std::thread coordinator([&] {
    int c = ::accept(listening->get(), nullptr, nullptr);
    if (c < 0) return;
    char buf[4096];
    for (ssize_t n; (n = ::read(c, buf, sizeof buf)) > 0;) received.append(buf, static_cast<std::size_t>(n));
    ::close(c);
  });
  SdkHarnessOptions options;
  options.coordinator_socket = dir / "c.sock";
  options.launcher_pid = ::getppid() + 1;  // not this process's parent: "the launcher is gone"
  NeverRunExecutor executor;
  Status s = RunSdkHarness(options, *job, executor);
  coordinator.join();
  EXPECT_EQ(s.code(), StatusCode::kAborted) << s.ToString();
  EXPECT_NE(s.message().find("is gone"), std::string::npos) << s.ToString();
  EXPECT_NE(received.find(std::string(MessageTypeName(MessageType::kHello))), std::string::npos) << received;
  EXPECT_EQ(received.find(std::string(MessageTypeName(MessageType::kLeaseRequest))), std::string::npos)
      << "a lease was asked for: " << received;
}

}  // namespace
}  // namespace dfw
