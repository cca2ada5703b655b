// Real-process tests of the worker VM: the launcher (dfw_fake_job run) starts real SDK processes;
// tests kill them, signal the launcher, resume, and check that every record arrives exactly once.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "process_util.h"

namespace dfw {
namespace {

namespace fs = std::filesystem;
using namespace dfw::testing;

class WorkerVmTest : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = tmp_.path();
    WriteInput(400);
  }
  void TearDown() override {
    if (HasFailure()) tmp_.Keep();
  }
  void WriteInput(int lines) {
    std::ofstream in(Input());
    expected_.clear();
    for (int i = 0; i < lines; ++i) {
      in << "record-" << i << "\n";
      expected_ += "record-" + std::to_string(i) + "\n";
    }
  }
  std::string Input() const { return (base_ / "in.txt").string(); }
  std::string Output() const { return (base_ / "out.txt").string(); }
  std::string JobDir() const { return (base_ / "job").string(); }
  std::string Err(const std::string& name) const { return (base_ / (name + ".err")).string(); }

  Started Launch(std::vector<std::string> extra, const std::vector<std::string>& env, const std::string& name,
                 int processes = 4, int lines_per_bundle = 10) {
    std::vector<std::string> argv = {DFW_FAKE_JOB, "run", "--output", Output(), "--processes", std::to_string(processes)};
    if (std::find(extra.begin(), extra.end(), "--resume") == extra.end()) {
      argv.insert(argv.end(), {"--input", Input(), "--job_dir", JobDir(), "--lines_per_bundle",
                               std::to_string(lines_per_bundle)});
    }
    argv.insert(argv.end(), extra.begin(), extra.end());
    return StartProcess(argv, env, Err(name));
  }
  int Run(std::vector<std::string> extra, const std::vector<std::string>& env, const std::string& name,
          int processes = 4, int lines_per_bundle = 10) {
    return WaitExit(Launch(std::move(extra), env, name, processes, lines_per_bundle).pid);
  }
  int Commits() const { return CountLines(JobDir() + "/manifest.jsonl"); }
  void ExpectExactlyOnce(const std::string& err_name) {
    EXPECT_EQ(ReadFile(Output()), expected_) << ReadFile(Err(err_name));
    EXPECT_EQ(Commits(), 40) << "each bundle is in the manifest exactly once";
  }

  dfw::testing::TempDir tmp_;
  fs::path base_;
  std::string expected_;
};

class ProcessCounts : public WorkerVmTest, public ::testing::WithParamInterface<int> {};

TEST_P(ProcessCounts, GiveIdenticalOutputExactlyOnce) {
  ASSERT_EQ(Run({}, {}, "run", GetParam()), 0) << ReadFile(Err("run"));
  ExpectExactlyOnce("run");
  std::string metrics = ReadFile(JobDir() + "/metrics.json");
  EXPECT_NE(metrics.find("\"value\": 400"), std::string::npos) << "records counted once in total: " << metrics;
  EXPECT_TRUE(fs::exists(JobDir() + "/logs/sdk-0.log"));
}

// 1, 4 and 8 processes; 16 is oversubscription on a 2-core machine.
INSTANTIATE_TEST_SUITE_P(N, ProcessCounts, ::testing::Values(1, 4, 8, 16));

class SdkKill : public WorkerVmTest, public ::testing::WithParamInterface<int> {};

TEST_P(SdkKill, RandomSdkProcessKilledMidRunLosesAndDuplicatesNothing) {
  DFW_SKIP_WITHOUT_TEST_HOOKS();
  std::mt19937 rng(static_cast<unsigned>(GetParam()));
  Started launcher = Launch({}, {"DFW_TEST_RECORD_DELAY_US=3000"}, "run");
  int after = 1 + static_cast<int>(rng() % 8);
  ASSERT_TRUE(Eventually([&] { return Commits() >= after; })) << ReadFile(Err("run"));
  std::vector<pid_t> kids = ChildrenOf(launcher.pid);
  ASSERT_FALSE(kids.empty());
  pid_t victim = kids[rng() % kids.size()];
  ASSERT_EQ(::kill(victim, SIGKILL), 0);
  ASSERT_EQ(WaitExit(launcher.pid), 0) << ReadFile(Err("run"));
  EXPECT_NE(ReadFile(Err("run")).find("killed by signal 9"), std::string::npos) << ReadFile(Err("run"));
  ExpectExactlyOnce("run");
}

INSTANTIATE_TEST_SUITE_P(Seeds, SdkKill, ::testing::Values(1, 2, 3));

TEST_F(WorkerVmTest, LauncherKillLeavesNoProcessAndResumeCompletesExactlyOnce) {
  DFW_SKIP_WITHOUT_TEST_HOOKS();
  Started launcher = Launch({}, {"DFW_TEST_RECORD_DELAY_US=3000"}, "first");
  ASSERT_TRUE(Eventually([&] { return Commits() >= 3; })) << ReadFile(Err("first"));
  ASSERT_EQ(::kill(launcher.pid, SIGKILL), 0);
  EXPECT_EQ(WaitExit(launcher.pid), 128 + SIGKILL);
  EXPECT_TRUE(Eventually([&] { return ProcessesMentioning(JobDir()).empty(); }, 30))
      << "SDK processes outlived the launcher: " << ProcessesMentioning(JobDir()).size();
  int before = Commits();
  EXPECT_LT(before, 40) << "the kill should land mid-run";
  ASSERT_EQ(Run({"--resume", JobDir()}, {}, "resume"), 0) << ReadFile(Err("resume"));
  EXPECT_NE(ReadFile(Err("resume")).find(std::to_string(before) + " already committed"), std::string::npos)
      << ReadFile(Err("resume"));
  ExpectExactlyOnce("resume");
  EXPECT_NE(ReadFile(JobDir() + "/metrics.json").find("\"value\": 400"), std::string::npos)
      << "total metrics count every record once across the kill and the resume";
  ASSERT_EQ(Run({"--resume", JobDir()}, {}, "again"), 0);
  EXPECT_NE(ReadFile(Err("again")).find("already finished"), std::string::npos);
}

TEST_F(WorkerVmTest, HungProcessIsKilledAndItsBundleRetried) {
  DFW_SKIP_WITHOUT_TEST_HOOKS();
  std::vector<std::string> env = {"DFW_TEST_HANG_ON_RECORD=record-15",
                                  "DFW_TEST_HANG_ONCE_FILE=" + (base_ / "hung-once").string()};
  ASSERT_EQ(Run({"--lease_timeout_ms", "800", "--heartbeat_ms", "50"}, env, "run"), 0) << ReadFile(Err("run"));
  EXPECT_TRUE(fs::exists(base_ / "hung-once")) << "the hang hook fired";
  EXPECT_NE(ReadFile(Err("run")).find("sent no heartbeat"), std::string::npos) << ReadFile(Err("run"));
  ExpectExactlyOnce("run");
}

TEST_F(WorkerVmTest, PoisonRecordFailsTheJobAfterFourAttemptsNamingTheBundle) {
  DFW_SKIP_WITHOUT_TEST_HOOKS();
  ASSERT_EQ(Run({}, {"DFW_TEST_CRASH_ON_RECORD=record-25"}, "run"), 1) << ReadFile(Err("run"));
  std::string err = ReadFile(Err("run"));
  EXPECT_NE(err.find("run stopped: bundle '20-30' failed 4 attempts"), std::string::npos) << err;
  EXPECT_NE(err.find("SIGABRT"), std::string::npos) << err;
  EXPECT_TRUE(ProcessesMentioning(JobDir()).empty());
  EXPECT_FALSE(fs::exists(Output())) << "a failed job is not finalized";
}

class StopSignal : public WorkerVmTest, public ::testing::WithParamInterface<int> {};

TEST_P(StopSignal, FirstSignalStopsCleanlyWithItsExitCodeAndLeavesTheJobResumable) {
  DFW_SKIP_WITHOUT_TEST_HOOKS();
  const int sig = GetParam();
  Started launcher = Launch({}, {"DFW_TEST_RECORD_DELAY_US=3000"}, "first");
  ASSERT_TRUE(Eventually([&] { return Commits() >= 2; })) << ReadFile(Err("first"));
  ASSERT_EQ(::kill(launcher.pid, sig), 0);
  EXPECT_EQ(WaitExit(launcher.pid), 128 + sig) << ReadFile(Err("first"));
  EXPECT_NE(ReadFile(Err("first")).find("--resume"), std::string::npos) << ReadFile(Err("first"));
  EXPECT_TRUE(ProcessesMentioning(JobDir()).empty());
  ASSERT_EQ(Run({"--resume", JobDir()}, {}, "resume"), 0) << ReadFile(Err("resume"));
  ExpectExactlyOnce("resume");
}

INSTANTIATE_TEST_SUITE_P(Signals, StopSignal, ::testing::Values(SIGINT, SIGTERM));

TEST_F(WorkerVmTest, SecondSignalStopsAtOnceDespiteALongGracePeriod) {
  DFW_SKIP_WITHOUT_TEST_HOOKS();
  // Each bundle takes seconds and the grace period is ten minutes: only the second signal ends it.
  Started launcher = Launch({"--grace_ms", "600000"}, {"DFW_TEST_RECORD_DELAY_US=300000"}, "run", 2);
  ASSERT_TRUE(Eventually([&] { return ChildrenOf(launcher.pid).size() == 2; })) << ReadFile(Err("run"));
  ASSERT_TRUE(Eventually([&] { return ReadFile(Err("run")).find("progress:") != std::string::npos; }));
  ASSERT_EQ(::kill(launcher.pid, SIGTERM), 0);
  ASSERT_TRUE(Eventually([&] { return ReadFile(Err("run")).find("SIGTERM: no new bundles") != std::string::npos; }));
  ASSERT_EQ(::kill(launcher.pid, SIGTERM), 0);
  EXPECT_EQ(WaitExit(launcher.pid, 60), 143) << ReadFile(Err("run"));
  EXPECT_TRUE(ProcessesMentioning(JobDir()).empty());
}

TEST_F(WorkerVmTest, UnwritableJobDirIsAClearErrorWithExitOne) {
  std::vector<std::string> argv = {DFW_FAKE_JOB, "run", "--input", Input(), "--output", Output(),
                                   "--job_dir", "/proc/dfw-not-writable/job"};
  int rc = WaitExit(StartProcess(argv, {}, Err("run")).pid);
  EXPECT_EQ(rc, 1);
  std::string err = ReadFile(Err("run"));
  EXPECT_NE(err.find("run stopped:"), std::string::npos) << err;
  EXPECT_NE(err.find("/proc/dfw-not-writable"), std::string::npos) << err;
}

TEST_F(WorkerVmTest, ExistingJobDirIsRefusedPointingAtResume) {
  fs::create_directories(JobDir());
  std::ofstream(JobDir() + "/something") << "x";
  EXPECT_EQ(Run({}, {}, "run"), 1);
  EXPECT_NE(ReadFile(Err("run")).find("--resume"), std::string::npos) << ReadFile(Err("run"));
}

}  // namespace
}  // namespace dfw

namespace dfw {
namespace {

class PipelineJob : public ::testing::TestWithParam<int> {};

// The production path: SDK processes run the pipeline module's runner on each bundle (one bundle
// per input file here) and the launcher finalizes Beam-sharded outputs.
TEST_P(PipelineJob, ProcessCountsGiveIdenticalShardedOutputs) {
  dfw::testing::TempDir base_tmp;
  const std::filesystem::path base = base_tmp.path();
  fs::create_directories(base / "in");
  for (int f = 0; f < 6; ++f) {
    std::ofstream in(base / "in" / ("part-" + std::to_string(f) + ".txt"));
    for (int i = 0; i < 50; ++i) in << "f" << f << "-line-" << i << "\n";
  }
  std::ofstream(base / "p.yaml") << "pipeline:\n  type: chain\n  source: {type: ReadFromText, config: {path: '"
                                 << (base / "in" / "*.txt").string() << "'}}\n"
                                 << "  sink: {type: WriteToText, config: {path: '" << (base / "out" / "lines").string()
                                 << "', file_name_suffix: .txt}}\n";
  std::string err = (base / "run.err").string();
  int rc = WaitExit(StartProcess({DFW_FAKE_JOB, "run", "--pipeline", (base / "p.yaml").string(), "--processes",
                                  std::to_string(GetParam()), "--job_dir", (base / "job").string()},
                                 {}, err)
                        .pid);
  ASSERT_EQ(rc, 0) << ReadFile(err);
  for (int f = 0; f < 6; ++f) {
    std::string shard = (base / "out" / ("lines-0000" + std::to_string(f) + "-of-00006.txt")).string();
    std::string expected;
    for (int i = 0; i < 50; ++i) expected += "f" + std::to_string(f) + "-line-" + std::to_string(i) + "\n";
    EXPECT_EQ(ReadFile(shard), expected) << shard << "\n" << ReadFile(err);
  }
  EXPECT_NE(ReadFile((base / "job" / "metrics.json").string()).find("\"value\": 300"), std::string::npos)
      << ReadFile((base / "job" / "metrics.json").string());
  if (HasFailure()) base_tmp.Keep();
}

INSTANTIATE_TEST_SUITE_P(N, PipelineJob, ::testing::Values(1, 4));

}  // namespace
}  // namespace dfw
