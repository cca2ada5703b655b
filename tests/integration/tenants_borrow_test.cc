// Borrowing in `dfworker run --tenants`, with real processes: a tenant with far less input finishes
// first; its SDK process slots go to the other tenant, whose launcher starts more SDK processes
// mid-run (processes.want + SIGUSR1). They lease and commit bundles like the first ones, and every
// record of both tenants is in the outputs exactly once.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>

#include <nlohmann/json.hpp>

#include "integration/process_util.h"

namespace dfw {
namespace {

namespace fs = std::filesystem;
using namespace dfw::testing;
using json = nlohmann::json;

class TenantsBorrow : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = tmp_.path();
    fs::create_directories(base_ / "in");
    Write("small", 1);   // 1 file, 20 records: one bundle
    Write("large", 12);  // 12 files, 240 records: twelve bundles
    std::ofstream(base_ / "tenants.yaml")
        << "options:\n  machine_type: g2-standard-8\n  dataflow_service_options:\n"
        << "    - worker_accelerator=type:nvidia-l4;count:1;install-nvidia-driver;use_nvidia_mps\n"
        << "tenants:\n"
        << "  - {name: small, pipeline: small.yaml, gpu_memory: 1GiB, sdk_processes: 2}\n"
        << "  - {name: large, pipeline: large.yaml, gpu_memory: 1GiB, sdk_processes: 1, over_quota_weight: 2}\n";
  }
  void TearDown() override {
    if (HasFailure()) tmp_.Keep();
  }
  void Write(const std::string& t, int files) {
    for (int f = 0; f < files; ++f) {
      std::ofstream in(base_ / "in" / (t + "-" + std::to_string(f) + ".jsonl"));
      for (int i = 0; i < kPerFile; ++i) in << "{\"id\": " << f * kPerFile + i << "}\n";
    }
    records_[t] = files * kPerFile;
    std::ofstream(base_ / (t + ".yaml"))
        << "pipeline:\n  type: chain\n  source: {type: ReadFromJson, config: {path: in/" << t << "-*.jsonl}}\n"
        << "  transforms:\n    - type: MapToFields\n      config: {language: python, fields: {id: id}}\n"
        << "  sink: {type: WriteToJson, config: {path: out/" << t << "/rows, file_name_suffix: .jsonl}}\n";
  }
  void ExpectExactlyOnce(const std::string& t) {
    static const std::regex kRow(R"re(^\{"id":(\d+)\}$)re");
    dfw::testing::ExpectExactlyOnce(LinesOfFilesIn(base_ / "out" / t), kRow, static_cast<std::size_t>(records_[t]),
                                    "tenant " + t);
  }
  static constexpr int kPerFile = 20;
  dfw::testing::TempDir tmp_;
  fs::path base_;
  std::map<std::string, int> records_;
};

TEST_F(TenantsBorrow, AFinishedTenantsSlotsRunTheOtherTenantsBundles) {
  DFW_SKIP_WITHOUT_TEST_HOOKS();
  const std::string job = (base_ / "job").string();
  // Every bundle takes 300 ms: 'small' (one bundle) ends while 'large' (twelve, one process) has
  // most of its bundles still to run.
  Started run = StartProcess({"/bin/sh", "-c", "cd '" + base_.string() + "' && exec \"$@\"", "sh", DFW_DFWORKER, "run",
                              "--tenants", "tenants.yaml", "--accelerator_backend=emulated", "--job_dir", job},
                             {"DFW_TEST_BUNDLE_DELAY_MS=300"}, (base_ / "run.err").string());
  ASSERT_EQ(WaitExit(run.pid), 0) << ReadFile((base_ / "run.err").string());
  const std::string log = ReadFile((base_ / "run.err").string());

  // The parent lent small's 2 slots to large, the only tenant still running, as far as the CPUs go
  // (the worker's 8 vCPUs, or this host's cores where fewer: on 2 cores, 1 slot).
  json report = json::parse(ReadFile(job + "/tenants_report.json"));
  const int cpus = report["borrowing_cpus"].get<int>();
  if (cpus < 2) GTEST_SKIP() << "one CPU: nothing can be lent";
  const int grown = 1 + std::min(2, cpus - 1);
  ASSERT_EQ(report["borrowing"].size(), 1u) << report.dump(2);
  EXPECT_EQ(report["borrowing"][0]["tenant"], "large");
  EXPECT_EQ(report["borrowing"][0]["after"], "small");
  EXPECT_EQ(report["borrowing"][0]["processes_before"], 1);
  EXPECT_EQ(report["borrowing"][0]["processes_after"], grown);
  EXPECT_EQ(report["tenants"]["large"]["processes_guaranteed"], 1);
  EXPECT_EQ(report["tenants"]["large"]["processes_started"], grown) << "large's launcher started the lent processes";
  EXPECT_EQ(report["tenants"]["small"]["processes_borrowed"], 0);
  EXPECT_NE(log.find(", " + std::to_string(grown) + " SDK processes (1 guaranteed + " + std::to_string(grown - 1) + " borrowed)"),
            std::string::npos) << log;
  EXPECT_NE(log.find("borrowing at "), std::string::npos) << log;

  // The added processes (indices from 1, beyond the guaranteed one) leased and committed bundles.
  json metrics = json::parse(ReadFile(job + "/tenants/large/metrics.json"));
  ASSERT_EQ(metrics["processes"].size(), static_cast<std::size_t>(grown)) << metrics["processes"].dump();
  int64_t added_bundles = 0;
  for (const json& p : metrics["processes"]) {
    if (p["index"].get<int>() == 0) continue;
    EXPECT_GT(p["started_s"].get<double>(), 0.0) << p.dump();
    added_bundles += p["bundles"].get<int64_t>();
  }
  EXPECT_GT(added_bundles, 0) << metrics["processes"].dump();
  for (int i = 1; i < grown; ++i) {
    EXPECT_TRUE(fs::exists(job + "/tenants/large/logs/sdk-" + std::to_string(i) + ".log")) << i;
  }
  // The lent processes size their BLAS threads and lanes for the machine as it is shared now; the
  // guaranteed one started before the borrowing, for job.json's count.
  const std::string sdk0 = ReadFile(job + "/tenants/large/logs/sdk-0.log");
  EXPECT_NE(sdk0.find("pipeline for 1 SDK process on this machine\n"), std::string::npos) << sdk0;
  const std::string last = ReadFile(job + "/tenants/large/logs/sdk-" + std::to_string(grown - 1) + ".log");
  EXPECT_NE(last.find("pipeline for " + std::to_string(grown) + " SDK processes on this machine (grown from 1)"),
            std::string::npos)
      << last;
  EXPECT_NE(log.find("added at"), std::string::npos) << "the per-process report marks the added slots\n" << log;
  ExpectExactlyOnce("small");
  ExpectExactlyOnce("large");
  EXPECT_TRUE(Eventually([&] { return ProcessesMentioning(job).empty(); })) << "no process of the run is left behind";
}

}  // namespace
}  // namespace dfw
