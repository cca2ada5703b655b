// Model-host processes for real (`dfworker model_host`, started by ModelHostGroup as `run` does):
// each publishes its copy and charges it to the ledger under its own name; SDK processes attach
// round robin; a host crash frees its charge and SDK processes move to a live copy; an SDK crash
// costs nothing; a copy that does not fit is refused with the ledger's out-of-memory message; a
// clean stop removes the copies; the launcher's death stops the hosts (PR_SET_PDEATHSIG).
#include "launcher/model_hosts.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <thread>

#include "cli/cli_test_util.h"
#include "dfw/backend/registry.h"
#include "dfw/device/memory_ledger.h"
#include "dfw/device/mps_controller.h"
#include "dfw/device/process_info.h"
#include "dfw/inference/device_memory.h"
#include "dfw/inference/shared_copy.h"

namespace dfw::cli {
namespace {

namespace fs = std::filesystem;

const std::string kModel = std::string(DFW_SOURCE_DIR) + "/pipelines/models/breast_cancer_mlp/model.safetensors";
constexpr uint64_t kGiB = 1ull << 30;

class ModelHostsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = tmp_.path();
    fs::create_directories(dir_ / "logs");
    ledger_path_ = device::LedgerPathForJob(dir_.string());
  }

  ModelHostGroupOptions Options(std::vector<std::string> extra_env = {}) {
    ModelHostGroupOptions o;
    o.self_exe = std::string(DFW_BINARY_DIR) + "/src/cli/dfworker";
    o.models_dir = dir_.string() + "/models";
    o.log_dir = dir_.string() + "/logs";
    o.extra_env = std::move(extra_env);
    o.extra_env.push_back(std::string(kGpuMemoryLedgerEnv) + "=" + ledger_path_);
    o.timeout_ms = 20000;
    return o;
  }
  std::map<std::string, uint64_t> LedgerByName() {
    auto l = device::MemoryLedger::Open(ledger_path_);
    auto snap = l.ok() ? l->Snapshot() : Result<device::LedgerSnapshot>(l.status());
    EXPECT_TRUE(snap.ok()) << snap.status().ToString();
    std::map<std::string, uint64_t> out;
    if (snap.ok()) {
      for (const auto& e : snap->entries) out[e.name] = e.allocated_bytes;
    }
    return out;
  }
  dfw::testing::TempDir tmp_;
  fs::path dir_;
  std::string ledger_path_;
};

TEST_F(ModelHostsTest, HostsPublishAndChargeTheirCopiesAndRemoveThemOnStop) {
  ASSERT_TRUE(device::MemoryLedger::Create(ledger_path_, "nvidia-tesla-t4 (emulated)", 15 * kGiB).ok());
  auto group = ModelHostGroup::Start(Options(), {{kModel, 0, "model-host-0"}, {kModel, 1, "model-host-1"}});
  ASSERT_TRUE(group.ok()) << group.status().ToString();
  auto header = SafetensorsFile::Open(kModel);
  ASSERT_TRUE(header.ok());
  const uint64_t copy_bytes = (*header)->header().data_bytes;  // F32 already: published size = plan's size
  EXPECT_EQ(LedgerByName(), (std::map<std::string, uint64_t>{{"model-host-0", copy_bytes}, {"model-host-1", copy_bytes}}))
      << "ledger = copies x model bytes, under each host's name";
  for (int index : {0, 1, 2, 3}) {
    auto a = AttachSharedCopy(dir_.string() + "/models", kModel, 2, index);
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    EXPECT_EQ(a->copy, index % 2);
    EXPECT_EQ(a->host.pid, (*group)->pids()[index % 2]);
  }
  ASSERT_TRUE((*group)->Stop().ok());
  EXPECT_TRUE(fs::is_empty(dir_ / "models")) << "copies and host records removed";
  EXPECT_TRUE(LedgerByName().empty());
  EXPECT_NE(fs::file_size(dir_ / "logs/model-host-1.log"), 0u);
}

// A GPU model's host exports a CUDA copy when it can; without a CUDA backend it says why in its log,
// publishes the file as for a CPU model, and its record carries no IPC handle (SDK processes map
// the file). The CUDA side of the export runs in CudaIpc.* (backend tests) where a GPU is present.
TEST_F(ModelHostsTest, GpuModelHostWithoutCudaPublishesTheFileAndNoIpcHandle) {
  ASSERT_TRUE(device::MemoryLedger::Create(ledger_path_, "nvidia-tesla-t4 (emulated)", 15 * kGiB).ok());
  auto group = ModelHostGroup::Start(Options({std::string(kCudaUnavailableEnv) + "=the test says there is no GPU"}),
                                     {{kModel, 0, "model-host-0", "GPU"}});
  ASSERT_TRUE(group.ok()) << group.status().ToString();
  auto files = SharedCopyFilesFor(dir_.string() + "/models", kModel, 0);
  ASSERT_TRUE(files.ok());
  auto record = ReadCopyHostRecord(files->host);
  ASSERT_TRUE(record.ok()) << record.status().ToString();
  EXPECT_EQ(record->pid, (*group)->pids()[0]);
  EXPECT_TRUE(record->cuda_ipc_handle.empty());
  EXPECT_EQ(record->cuda_ipc_bytes, 0u);
  auto a = AttachSharedCopy(dir_.string() + "/models", kModel, 1, 0);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  ASSERT_TRUE((*group)->Stop().ok());
  std::ifstream log(dir_ / "logs/model-host-0.log");
  const std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("GPU model, but no CUDA backend"), std::string::npos) << text;
  EXPECT_NE(text.find("the test says there is no GPU"), std::string::npos) << text;
}

TEST_F(ModelHostsTest, MpsStatusListsTheHostsWithTheirMemory) {
  ASSERT_TRUE(device::MemoryLedger::Create(ledger_path_, "nvidia-tesla-t4 (emulated)", 15 * kGiB).ok());
  device::MpsDaemonOptions d;
  d.dirs = device::MpsDirsForJob(dir_.string());
  d.daemon_command = {std::string(DFW_BINARY_DIR) + "/src/cli/dfworker", "mps", "daemon"};
  auto mps = device::MakeEmulatedMpsController(d);
  ASSERT_TRUE(mps.ok());
  ASSERT_TRUE((*mps)->Start().ok());
  std::vector<std::string> env;
  for (const auto& [k, v] : (*mps)->ClientEnv({})) env.push_back(k + "=" + v);
  auto group = ModelHostGroup::Start(Options(env), {{kModel, 0, "model-host-0"}, {kModel, 1, "model-host-1"}});
  ASSERT_TRUE(group.ok()) << group.status().ToString();
  auto status = dfw::testing::RunDfworker({"mps", "status", "--job_dir", dir_.string()});
  EXPECT_EQ(status.exit_code, 0) << status.out;
  for (int i = 0; i < 2; ++i) {
    const std::string row = "pid " + std::to_string((*group)->pids()[i]) + "  model-host-" + std::to_string(i) +
                            "  threads 100%  pinned unlimited  allocated 6.1 KiB";
    EXPECT_NE(status.out.find(row), std::string::npos) << row << " not in:\n" << status.out;
  }
  EXPECT_NE(status.out.find("2 clients"), std::string::npos) << status.out;
  EXPECT_NE(status.out.find("device memory: nvidia-tesla-t4 (emulated), 12.1 KiB used of 15.0 GiB"), std::string::npos)
      << status.out;
  EXPECT_TRUE((*group)->Stop().ok());
  EXPECT_TRUE((*mps)->Quit().ok());
}

TEST_F(ModelHostsTest, AHostCrashFreesItsChargeAndSdkProcessesMoveToALiveCopy) {
  ASSERT_TRUE(device::MemoryLedger::Create(ledger_path_, "gpu", 15 * kGiB).ok());
  ModelHostGroupOptions no_restarts = Options();
  no_restarts.max_restarts = 0;  // the state between a death and a restart, held still
  auto group = ModelHostGroup::Start(no_restarts, {{kModel, 0, "model-host-0"}, {kModel, 1, "model-host-1"}});
  ASSERT_TRUE(group.ok()) << group.status().ToString();
  const pid_t victim = (*group)->pids()[0];
  ASSERT_EQ(::kill(victim, SIGKILL), 0);
  // Wait for the kill to land (the group reaps the host at Stop; until then it is a zombie).
  for (int i = 0; i < 6000 && device::ProcessAlive(victim, 0); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(LedgerByName().count("model-host-0"), 0u) << "the dead host's charge is reclaimed";
  EXPECT_EQ(LedgerByName().count("model-host-1"), 1u);
  auto a = AttachSharedCopy(dir_.string() + "/models", kModel, 2, 0);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->copy, 1) << "SDK process 0 fails over to copy 1";
  EXPECT_FALSE(a->first_choice);
  Status stop = (*group)->Stop();
  ASSERT_FALSE(stop.ok());
  EXPECT_NE(stop.message().find("model host 'model-host-0' (pid " + std::to_string(victim) + ") killed by signal 9"),
            std::string::npos)
      << stop.message();
}

// The watchdog restarts a dead host (up to max_restarts times): the new host charges the ledger
// again under the same name and republishes the copy, so SDK processes whose copy it was get their
// first choice back; past the limit the host stays dead and Stop() reports every death.
TEST_F(ModelHostsTest, ADeadHostIsRestartedUpToTheLimit) {
  ASSERT_TRUE(device::MemoryLedger::Create(ledger_path_, "gpu", 15 * kGiB).ok());
  ModelHostGroupOptions o = Options();
  o.max_restarts = 2;
  o.watch_interval_ms = 20;
  auto group = ModelHostGroup::Start(o, {{kModel, 0, "model-host-0"}, {kModel, 1, "model-host-1"}});
  ASSERT_TRUE(group.ok()) << group.status().ToString();
  const uint64_t copy_bytes = LedgerByName().at("model-host-0");
  const pid_t other = (*group)->pids()[1];
  std::vector<pid_t> killed;
  auto wait_for_pid0 = [&](auto done) {
    for (int i = 0; i < 2000 && !done((*group)->pids()[0]); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return (*group)->pids()[0];
  };
  for (int restart = 1; restart <= 2; ++restart) {
    const pid_t victim = (*group)->pids()[0];
    ASSERT_NE(victim, 0);
    ASSERT_EQ(::kill(victim, SIGKILL), 0);
    killed.push_back(victim);
    const pid_t fresh = wait_for_pid0([&](pid_t p) { return p != 0 && p != victim; });
    ASSERT_NE(fresh, 0) << "restart " << restart << " did not happen within 20 s";
    ASSERT_NE(fresh, victim);
    EXPECT_EQ((*group)->restarts(), restart);
    EXPECT_EQ(LedgerByName(), (std::map<std::string, uint64_t>{{"model-host-0", copy_bytes}, {"model-host-1", copy_bytes}}))
        << "the restarted host holds its copy again, under its name";
    auto a = AttachSharedCopy(dir_.string() + "/models", kModel, 2, 0);
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    EXPECT_EQ(a->copy, 0);
    EXPECT_TRUE(a->first_choice) << "SDK process 0 gets copy 0 back";
    EXPECT_EQ(a->host.pid, fresh);
  }
  // Past the limit: the host stays dead, its copy is gone, the other copy serves.
  const pid_t last = (*group)->pids()[0];
  ASSERT_EQ(::kill(last, SIGKILL), 0);
  killed.push_back(last);
  EXPECT_EQ(wait_for_pid0([](pid_t p) { return p == 0; }), 0) << "the watchdog noticed the third death";
  EXPECT_EQ((*group)->pids()[1], other) << "the other host was never touched";
  auto a = AttachSharedCopy(dir_.string() + "/models", kModel, 2, 0);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->copy, 1);
  // Stop() joins the watchdog, so the count it leaves is final: a third restart, even one still
  // under way, would be in it (it grows before the host is spawned).
  Status stop = (*group)->Stop();
  EXPECT_EQ((*group)->restarts(), 2) << "not restarted a third time";
  ASSERT_FALSE(stop.ok());
  for (pid_t k : killed) {
    EXPECT_NE(stop.message().find("model host 'model-host-0' (pid " + std::to_string(k) + ") killed by signal 9 (SIGKILL) during the run"),
              std::string::npos)
        << stop.message();
  }
  EXPECT_NE(stop.message().find("not restarted: 2 restarts already"), std::string::npos) << stop.message();
  EXPECT_EQ(stop.message().find("model-host-1"), std::string::npos) << stop.message();
}

TEST_F(ModelHostsTest, AnSdkProcessCrashCostsTheHostNothing) {
  ASSERT_TRUE(device::MemoryLedger::Create(ledger_path_, "gpu", 15 * kGiB).ok());
  auto group = ModelHostGroup::Start(Options(), {{kModel, 0, "model-host-0"}});
  ASSERT_TRUE(group.ok()) << group.status().ToString();
  const auto before = LedgerByName();
  pid_t sdk = ::fork();
  if (sdk == 0) {  // an SDK process: attach, then die by SIGKILL
    auto a = AttachSharedCopy(dir_.string() + "/models", kModel, 1, 5);
    if (!a.ok()) ::_exit(3);
    ::raise(SIGKILL);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(sdk, &status, 0), sdk);
  EXPECT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(LedgerByName(), before);
  EXPECT_TRUE(device::ProcessAlive((*group)->pids()[0], 0));
  auto again = AttachSharedCopy(dir_.string() + "/models", kModel, 1, 5);
  EXPECT_TRUE(again.ok()) << "a restarted SDK process attaches to the same copy";
  EXPECT_TRUE((*group)->Stop().ok());
}

struct OomCase {
  const char* name;
  uint64_t capacity;
  std::vector<std::string> env;
  const char* expected;
};

TEST_F(ModelHostsTest, ACopyThatDoesNotFitIsRefusedWithTheLedgersMessage) {
  const std::vector<OomCase> cases = {
      {"past capacity", 1000, {}, "out of GPU memory on tiny-gpu (emulated): process 'model-host-0' (pid "},
      {"past the pinned limit", 15 * kGiB, {"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=1K"},
       "past its pinned limit CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=1.0 KiB"},
  };
  for (const OomCase& c : cases) {
    SCOPED_TRACE(c.name);
    ASSERT_TRUE(device::MemoryLedger::Create(ledger_path_, "tiny-gpu (emulated)", c.capacity).ok());
    auto group = ModelHostGroup::Start(Options(c.env), {{kModel, 0, "model-host-0"}});
    ASSERT_EQ(group.status().code(), StatusCode::kResourceExhausted) << group.status().ToString();
    const std::string& msg = group.status().message();
    EXPECT_NE(msg.find("model host 'model-host-0' did not start: "), std::string::npos) << msg;
    EXPECT_NE(msg.find(c.expected), std::string::npos) << msg;
    EXPECT_NE(msg.find("requested"), std::string::npos) << msg;
    EXPECT_NE(msg.find("model-host-0.log"), std::string::npos) << msg;
    EXPECT_TRUE(LedgerByName().empty());
    EXPECT_TRUE(!fs::exists(dir_ / "models") || fs::is_empty(dir_ / "models")) << "nothing left published";
  }
}

TEST_F(ModelHostsTest, HostsStopWhenTheLauncherIsKilled) {
  ASSERT_TRUE(device::MemoryLedger::Create(ledger_path_, "gpu", 15 * kGiB).ok());
  // The orphaned host is re-parented to this test process, which can then see how it ended.
  ASSERT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  int report[2];
  ASSERT_EQ(::pipe(report), 0);
  pid_t launcher = ::fork();
  if (launcher == 0) {  // a launcher that starts a host and is then SIGKILLed (no destructor runs)
    auto group = ModelHostGroup::Start(Options(), {{kModel, 0, "model-host-0"}});
    pid_t host = group.ok() ? (*group)->pids()[0] : 0;
    if (::write(report[1], &host, sizeof host) != sizeof host) ::_exit(2);
    ::raise(SIGKILL);
  }
  ::close(report[1]);
  pid_t host = 0;
  ASSERT_EQ(::read(report[0], &host, sizeof host), static_cast<ssize_t>(sizeof host));
  ::close(report[0]);
  ASSERT_GT(host, 0);
  ::waitpid(launcher, nullptr, 0);
  // PR_SET_PDEATHSIG sends the host SIGTERM; it removes its copy and exits 0 (bounded wait).
  int status = -1;
  pid_t reaped = 0;
  for (int i = 0; i < 6000 && reaped == 0; ++i) {
    reaped = ::waitpid(host, &status, WNOHANG);
    if (reaped == 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ::prctl(PR_SET_CHILD_SUBREAPER, 0);
  std::ifstream log(dir_ / "logs/model-host-0.log");
  std::string log_text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  ASSERT_EQ(reaped, host) << "the host outlived its launcher";
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status << "; host log:\n" << log_text;
  EXPECT_TRUE(fs::is_empty(dir_ / "models"));
  EXPECT_TRUE(LedgerByName().empty());
  EXPECT_NE(log_text.find("stopping (signal 15)"), std::string::npos) << log_text;
}

}  // namespace
}  // namespace dfw::cli
