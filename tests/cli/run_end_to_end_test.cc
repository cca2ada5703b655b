// `dfworker run` end to end with real SDK processes: the default model over its sample input,
// one PredictionResult per good row, the planted bad rows on the error output, the MPS daemon's
// log, metrics.json, and --resume of a finished job.
#include <gtest/gtest.h>

#include "cli/cli_test_util.h"
#include "test_util.h"
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

using Outcome = dfw::testing::CliOutcome;
using dfw::testing::RunDfworker;

std::vector<nlohmann::json> ReadJsonLines(const fs::path& p) {
  std::vector<nlohmann::json> rows;
  std::ifstream in(p);
  std::string line;
  while (std::getline(in, line)) rows.push_back(nlohmann::json::parse(line));
  return rows;
}

// Every line of every shard <prefix>-SSSSS-of-NNNNN.jsonl in `dir` (the shard count follows the
// job's bundles, and work rebalancing may split a running bundle in two).
std::vector<nlohmann::json> ReadShards(const fs::path& dir, const std::string& prefix) {
  std::vector<nlohmann::json> rows;
  if (!fs::exists(dir)) return rows;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(prefix + "-", 0) != 0 || name.find("-of-") == std::string::npos) continue;
    auto shard = ReadJsonLines(e.path());
    rows.insert(rows.end(), shard.begin(), shard.end());
  }
  return rows;
}

// The SDK processes of a finished job that committed a bundle (from its metrics.json). A process the
// launcher started after a short job's last lease is stopped before it does anything, so tests
// check "every process that worked", which does not depend on the machine's load.
std::vector<int> ProcessesThatWorked(const fs::path& job) {
  std::vector<int> worked;
  nlohmann::json metrics = nlohmann::json::parse(dfw::testing::ReadFile((job / "metrics.json").string()), nullptr, false);
  if (!metrics.is_object() || !metrics["processes"].is_array()) return worked;
  for (const auto& process : metrics["processes"]) {
    if (process["bundles"].get<int>() > 0) worked.push_back(process["index"].get<int>());
  }
  return worked;
}

class RunEndToEnd : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = tmp_.path();
    const std::string model = std::string(DFW_SOURCE_DIR) + "/pipelines/models/breast_cancer_mlp";
    std::ofstream(dir_ / "p.yaml") << "pipeline:\n"
                                      "  type: chain\n"
                                      "  source:\n"
                                      "    type: ReadFromJson\n"
                                      "    config: {path: " << model << "/sample.jsonl}\n"
                                      "  transforms:\n"
                                      "    - type: RunInference\n"
                                      "      name: Classify\n"
                                      "      config:\n"
                                      "        inference_tag: inference\n"
                                      "        model_handler:\n"
                                      "          type: MlpModelHandlerSafetensors\n"
                                      "          config: {model_path: " << model
                                   << ", input_field: features, min_batch_size: 1, max_batch_size: 32}\n"
                                      "        error_handling: {output: failed}\n"
                                      "  sink:\n"
                                      "    type: WriteToJson\n"
                                      "    config: {path: out/pred, file_name_suffix: .jsonl}\n"
                                      "  extra_transforms:\n"
                                      "    - type: WriteToJson\n"
                                      "      name: WriteErrors\n"
                                      "      input: Classify.failed\n"
                                      "      config: {path: out/err, file_name_suffix: .jsonl}\n";
  }
  dfw::testing::TempDir tmp_;
  fs::path dir_;
};

TEST_F(RunEndToEnd, EveryRowEndsInOutputOrErrorsUnderEmulatedMps) {
  Outcome o = RunDfworker({"run", "p.yaml", "--job_dir", "job", "--machine_type=n1-standard-4",
                           "--dataflow_service_options=worker_accelerator=type:nvidia-tesla-t4;count:1;"
                           "install-nvidia-driver;use_nvidia_mps",
                           "--accelerator_backend=emulated"},
                          dir_.string());
  ASSERT_EQ(o.exit_code, 0) << o.out;
  EXPECT_NE(o.out.find("4 SDK processes"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("output of WriteToJson: out/pred-00000-of-0000"), std::string::npos) << o.out;

  auto preds = ReadShards(dir_ / "out", "pred");
  auto errors = ReadShards(dir_ / "out", "err");
  // sample.jsonl: 143 held-out rows + 4 planted bad rows (PROVENANCE.md).
  ASSERT_EQ(preds.size(), 143u);
  ASSERT_EQ(errors.size(), 4u);
  for (const auto& p : preds) {
    const auto& r = p.at("inference");
    ASSERT_EQ(r.at("example").size(), 30u) << p.dump();
    ASSERT_EQ(r.at("inference").size(), 2u) << p.dump();  // softmax over the two classes
    double sum = r.at("inference")[0].get<double>() + r.at("inference")[1].get<double>();
    EXPECT_NEAR(sum, 1.0, 1e-5);
    EXPECT_FALSE(r.at("model_id").get<std::string>().empty());
  }
  for (const auto& e : errors) {
    EXPECT_TRUE(e.contains("element")) << e.dump();
    EXPECT_FALSE(e.at("msg").get<std::string>().empty()) << e.dump();
  }

  // The job dir: metrics merged across processes, the MPS daemon's control log.
  std::ifstream metrics(dir_ / "job/metrics.json");
  ASSERT_TRUE(metrics.good());
  auto m = nlohmann::json::parse(metrics);
  EXPECT_NE(m.dump().find("num_inferences"), std::string::npos);
  EXPECT_NE(m.dump().find("model_byte_size"), std::string::npos) << "model-load metrics reach the job's metrics";
  EXPECT_TRUE(fs::exists(dir_ / "job/mps/log/control.log"));

  // Resuming a finished job does nothing and succeeds.
  Outcome again = RunDfworker({"run", "p.yaml", "--resume", "job"}, dir_.string());
  EXPECT_EQ(again.exit_code, 0) << again.out;
  EXPECT_NE(again.out.find("already finished"), std::string::npos) << again.out;
  EXPECT_EQ(ReadShards(dir_ / "out", "pred").size(), 143u);
}

// A `device: GPU` model on a worker whose plan has no usable GPU: the launcher loads no model and
// makes no backend (it plans bundles from the sources alone), and the plan's reason reaches every
// SDK process, so none of them probes for the CUDA library; a value the user exported is what the
// SDK processes get.
TEST_F(RunEndToEnd, APlanWithoutAGpuRulesOutCudaInTheLauncherAndEverySdkProcess) {
  std::string yaml = dfw::testing::ReadFile((dir_ / "p.yaml").string());
  yaml.replace(yaml.find("input_field: features"), 21, "input_field: features, device: GPU");
  std::ofstream(dir_ / "p.yaml") << yaml;
  Outcome o = RunDfworker({"run", "p.yaml", "--job_dir", "job", "--machine_type=n1-standard-2",
                           "--dataflow_service_options=worker_accelerator=type:nvidia-tesla-t4;count:1;install-nvidia-driver"},
                          dir_.string());
  ASSERT_EQ(o.exit_code, 0) << o.out;
  // The launcher's own output: no model was loaded there, so no backend line and no device warning.
  EXPECT_EQ(o.out.find("Model handler specified a 'GPU' device"), std::string::npos) << o.out;
  EXPECT_EQ(o.out.find("inference backend:"), std::string::npos) << o.out;
  EXPECT_EQ(o.out.find("cannot load the CUDA backend library"), std::string::npos) << o.out;
  const std::vector<int> worked = ProcessesThatWorked(dir_ / "job");
  EXPECT_FALSE(worked.empty());
  for (int i : worked) {
    const std::string log = dfw::testing::ReadFile((dir_ / "job" / "logs" / ("sdk-" + std::to_string(i) + ".log")).string());
    EXPECT_NE(log.find("(CUDA backend not used: the worker's accelerator is emulated"), std::string::npos) << i << ": " << log;
  }
  fs::remove_all(dir_ / "job");
  fs::remove_all(dir_ / "out");
  Outcome mine = RunDfworker({"run", "p.yaml", "--job_dir", "job", "--machine_type=n1-standard-2",
                              "--dataflow_service_options=worker_accelerator=type:nvidia-tesla-t4;count:1;install-nvidia-driver"},
                             dir_.string(), "DFW_CUDA_UNAVAILABLE='the user says so'");
  ASSERT_EQ(mine.exit_code, 0) << mine.out;
  const std::vector<int> worked_mine = ProcessesThatWorked(dir_ / "job");
  ASSERT_FALSE(worked_mine.empty());
  const std::string log =
      dfw::testing::ReadFile((dir_ / "job" / "logs" / ("sdk-" + std::to_string(worked_mine.front()) + ".log")).string());
  EXPECT_NE(log.find("(CUDA backend not used: the user says so)"), std::string::npos) << log;
}

TEST_F(RunEndToEnd, ExistingJobDirIsRefusedWithAPointerToResume) {
  fs::create_directories(dir_ / "job");
  std::ofstream(dir_ / "job" / "something") << "x";
  Outcome o = RunDfworker({"run", "p.yaml", "--job_dir", "job", "--machine_type=n1-standard-2"}, dir_.string());
  EXPECT_NE(o.exit_code, 0) << o.out;
  EXPECT_NE(o.out.find("resume"), std::string::npos) << o.out;
  EXPECT_TRUE(ReadShards(dir_ / "out", "pred").empty());
}

TEST_F(RunEndToEnd, AUserExportedMpsPipeDirectoryDoesNotSplitTheJobBetweenDaemons) {
  // Every child gets the job's private MPS pipe dir (dfw/common/child_env.h): once SDK processes
  // kept the user's value while model hosts got the job's.
  Outcome o = RunDfworker({"run", "p.yaml", "--job_dir", "job", "--machine_type=n1-standard-2",
                           "--dataflow_service_options=worker_accelerator=type:nvidia-tesla-t4;count:1;"
                           "install-nvidia-driver;use_nvidia_mps",
                           "--accelerator_backend=emulated"},
                          dir_.string(), "CUDA_MPS_PIPE_DIRECTORY=/tmp/dfw-not-this-jobs-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/dfw-not-this-jobs-log");
  ASSERT_EQ(o.exit_code, 0) << o.out;
  // Every SDK process that did work registered with the job's daemon.
  const std::string log = dfw::testing::ReadFile((dir_ / "job/mps/log/control.log").string());
  const std::vector<int> worked = ProcessesThatWorked(dir_ / "job");
  EXPECT_FALSE(worked.empty());
  for (int i : worked) {
    const std::string who = "(sdk-" + std::to_string(i) + ")";
    EXPECT_NE(log.find(who), std::string::npos) << who << "\n" << log;
  }
  EXPECT_FALSE(fs::exists("/tmp/dfw-not-this-jobs-pipe"));
}

}  // namespace
