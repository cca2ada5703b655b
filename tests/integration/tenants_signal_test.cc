// `dfworker run --tenants` under signals, with real processes: SIGTERM reaches every tenant's
// launcher (a second one kills them), nothing of the run is left behind, and --resume then finishes
// every tenant with each record exactly once.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>

#include "integration/process_util.h"

namespace dfw {
namespace {

namespace fs = std::filesystem;
using namespace dfw::testing;

constexpr int kRecords = 200;

class TenantsSignal : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = tmp_.path();
    fs::create_directories(base_ / "in");
    for (const char* t : {"a", "b"}) {
      for (int f = 0; f < 4; ++f) {
        std::ofstream in(base_ / "in" / (std::string(t) + "-" + std::to_string(f) + ".jsonl"));
        for (int i = 0; i < kRecords / 4; ++i) in << "{\"id\": " << f * (kRecords / 4) + i << "}\n";
      }
      std::ofstream(base_ / (std::string(t) + ".yaml"))
          << "pipeline:\n  type: chain\n  source: {type: ReadFromJson, config: {path: in/" << t << "-*.jsonl}}\n"
          << "  transforms:\n    - type: MapToFields\n      config: {language: python, fields: {id: id}}\n"
          << "  sink: {type: WriteToJson, config: {path: out/" << t << "/rows, file_name_suffix: .jsonl}}\n";
    }
    std::ofstream(base_ / "tenants.yaml")
        << "options:\n  machine_type: g2-standard-8\n  dataflow_service_options:\n"
        << "    - worker_accelerator=type:nvidia-l4;count:1;install-nvidia-driver;use_nvidia_mps\n"
        << "tenants:\n"
        << "  - {name: a, pipeline: a.yaml, gpu_memory: 1GiB, sdk_processes: 2}\n"
        << "  - {name: b, pipeline: b.yaml, gpu_memory: 1GiB, sdk_processes: 2}\n";
  }
  void TearDown() override {
    if (HasFailure()) tmp_.Keep();
  }
  Started Launch(const std::string& name, const std::vector<std::string>& extra, const std::vector<std::string>& env = {}) {
    std::vector<std::string> argv = {"/bin/sh", "-c", "cd '" + base_.string() + "' && exec \"$@\"", "sh", DFW_DFWORKER,
                                     "run", "--tenants", "tenants.yaml", "--accelerator_backend=emulated"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return StartProcess(argv, env, (base_ / (name + ".err")).string());
  }
  // Every id of tenant `t` exactly once.
  void ExpectExactlyOnce(const std::string& t) {
    static const std::regex kRow(R"re(^\{"id":(\d+)\}$)re");
    dfw::testing::ExpectExactlyOnce(LinesOfFilesIn(base_ / "out" / t), kRow, kRecords, "tenant " + t);
  }
  dfw::testing::TempDir tmp_;
  fs::path base_;
};

TEST_F(TenantsSignal, TermReachesEveryTenantAndResumeFinishesThemExactlyOnce) {
  DFW_SKIP_WITHOUT_TEST_HOOKS();
  const std::string job = (base_ / "job").string();
  // Bundles take 100 s: the run is still going when the signals come.
  Started run = Launch("first", {"--job_dir", job}, {"DFW_TEST_BUNDLE_DELAY_MS=100000"});
  // Both tenants' launchers have started their SDK processes.
  ASSERT_TRUE(Eventually([&] {
    return ProcessesMentioning(job + "/tenants/a").size() >= 3 && ProcessesMentioning(job + "/tenants/b").size() >= 3;
  })) << ReadFile((base_ / "first.err").string());
  ::kill(run.pid, SIGTERM);
  ::kill(run.pid, SIGTERM);  // the second one stops every tenant at once
  EXPECT_EQ(WaitExit(run.pid), 143) << ReadFile((base_ / "first.err").string());
  const std::string log = ReadFile((base_ / "first.err").string());
  EXPECT_NE(log.find("--resume " + job), std::string::npos) << log;
  EXPECT_TRUE(Eventually([&] { return ProcessesMentioning(job).empty(); })) << "no process of the run is left behind";
  EXPECT_FALSE(fs::exists(job + "/tenants/a/FINISHED"));

  Started resumed = Launch("resume", {"--resume", job});
  ASSERT_EQ(WaitExit(resumed.pid), 0) << ReadFile((base_ / "resume.err").string());
  EXPECT_TRUE(fs::exists(job + "/tenants/a/FINISHED"));
  EXPECT_TRUE(fs::exists(job + "/tenants/b/FINISHED"));
  ExpectExactlyOnce("a");
  ExpectExactlyOnce("b");
}

}  // namespace
}  // namespace dfw

namespace dfw {
namespace {

TEST_F(TenantsSignal, AnMpsFaultDrainsEveryTenantRestartsTheServerAndResumesOnce) {
  DFW_SKIP_WITHOUT_TEST_HOOKS();
  const std::string job = (base_ / "job").string();
  // Bundles take 1.5 s, so the fault lands while every tenant still has work in flight.
  Started run = Launch("run", {"--job_dir", job}, {"DFW_TEST_BUNDLE_DELAY_MS=1500"});
  ASSERT_TRUE(Eventually([&] {
    return ProcessesMentioning(job + "/tenants/a").size() >= 3 && ProcessesMentioning(job + "/tenants/b").size() >= 3;
  })) << ReadFile((base_ / "run.err").string());
  Started fault = StartProcess({DFW_DFWORKER, "mps", "fault", "--job_dir", job}, {}, (base_ / "fault.err").string());
  ASSERT_EQ(WaitExit(fault.pid), 0) << ReadFile((base_ / "fault.err").string());
  ASSERT_EQ(WaitExit(run.pid), 0) << ReadFile((base_ / "run.err").string());

  const std::string log = ReadFile((base_ / "run.err").string());
  auto count = [&](const std::string& needle) {
    int n = 0;
    for (std::size_t at = log.find(needle); at != std::string::npos; at = log.find(needle, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("MPS fault: the server had a fatal GPU error; every tenant was drained"), 1) << log;
  EXPECT_EQ(count("resuming every unfinished tenant from its manifest"), 1) << log;
  const std::string control = ReadFile(job + "/mps/log/control.log");
  EXPECT_NE(control.find("Server is handling a fatal GPU error"), std::string::npos) << control;
  ExpectExactlyOnce("a");
  ExpectExactlyOnce("b");
  const std::string report = ReadFile(job + "/tenants_report.json");
  EXPECT_NE(report.find("\"mps_faults_drained\": 1"), std::string::npos) << report;
  EXPECT_NE(report.find("\"gpu_memory_held_at_end_bytes\": 0"), std::string::npos) << report;
  EXPECT_TRUE(Eventually([&] { return ProcessesMentioning(job).empty(); })) << "no process of the run is left behind";
}

}  // namespace
}  // namespace dfw
