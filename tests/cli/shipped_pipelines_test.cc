// Every pipeline in pipelines/ runs as committed, from the repository root, with the data it ships
// (pipelines/data/): what a newcomer tries first must work. The root is a RepoRootView, so the
// outputs (out/...) go to a temporary directory, not into the source tree.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "cli_test_util.h"

namespace dfw {
namespace {

namespace fs = std::filesystem;
using testing::RepoRootView;
using testing::RunDfworker;

class ShippedPipeline : public ::testing::TestWithParam<std::string> {};

// Rows in every shard of an output prefix such as out/default/predictions.
int64_t ShardRows(const fs::path& prefix) {
  int64_t rows = 0;
  if (!fs::is_directory(prefix.parent_path())) return -1;
  for (const auto& e : fs::directory_iterator(prefix.parent_path())) {
    if (e.path().filename().string().rfind(prefix.filename().string() + "-", 0) != 0) continue;
    std::ifstream in(e.path());
    for (std::string line; std::getline(in, line);) rows += !line.empty();
  }
  return rows;
}

TEST_P(ShippedPipeline, RunsAsCommittedFromTheRepositoryRoot) {
  const std::string file = GetParam();
  RepoRootView root;
  const fs::path job = root / "job";
  testing::CliOutcome o = RunDfworker({"run", "pipelines/" + file, "--job_dir", job.string()}, root.path());
  ASSERT_EQ(o.exit_code, 0) << o.out;
  EXPECT_TRUE(fs::exists(job / "FINISHED")) << o.out;
  EXPECT_NE(o.out.find("output of"), std::string::npos) << "the report says where the output went\n" << o.out;
  EXPECT_TRUE(fs::is_directory(root / "out")) << "the outputs are in the run's working directory\n" << o.out;
}

INSTANTIATE_TEST_SUITE_P(Pipelines, ShippedPipeline,
                         // default.yaml: TheDefaultDemo... below
                         ::testing::Values("embed_sentences.yaml", "json_clean.yaml", "csv_explode.yaml", "beam_ml_embeddings.yaml",
                                           "orders_by_size.yaml"),
                         [](const ::testing::TestParamInfo<std::string>& p) { return fs::path(p.param).stem().string(); });

TEST(ShippedPipelines, EveryFileInPipelinesIsCovered) {
  std::set<std::string> tested = {"default.yaml", "embed_sentences.yaml", "json_clean.yaml", "csv_explode.yaml", "orders_by_size.yaml",
                                  "beam_ml_embeddings.yaml", "predictions_per_label.yaml", "hf_sentiment.yaml", "hf_generate.yaml",
                                  "tenants.yaml"};  // a tenants file: tenants_test.cc runs it
  for (const auto& e : fs::directory_iterator(fs::path(DFW_SOURCE_DIR) / "pipelines")) {
    if (e.path().extension() == ".yaml") {
      EXPECT_EQ(tested.count(e.path().filename().string()), 1u) << e.path() << " has no run test";
    }
  }
}

TEST(ShippedPipelines, TheDefaultDemoClassifiesEveryGoodRowAndDeadLettersTheFourBadOnes) {
  RepoRootView root;
  // The README's command, on a 4-vCPU G2 (an emulated L4 with MPS here).
  testing::CliOutcome o = RunDfworker({"run", "pipelines/default.yaml", "--job_dir", root / "job", "--machine_type=g2-standard-4",
                                       "--dataflow_service_options=worker_accelerator=type:nvidia-l4;count:1;install-nvidia-driver;use_nvidia_mps",
                                       "--accelerator_backend=emulated"},
                                      root.path());
  ASSERT_EQ(o.exit_code, 0) << o.out;
  EXPECT_EQ(ShardRows(root / "out/default/predictions"), 5720) << o.out;
  EXPECT_EQ(ShardRows(root / "out/default/errors"), 4) << o.out;
  EXPECT_NE(o.out.find("SDK processes: 4 (records per process: min "), std::string::npos) << o.out;
  EXPECT_EQ(o.out.find("min 0,"), std::string::npos) << "every SDK process gets work\n" << o.out;
}

// Beam's HuggingFacePipelineModelHandler as committed: the four text rows labelled, the number row
// (its preprocess result is not a string) on the error output.
TEST(ShippedPipelines, HfSentimentLabelsEveryTextRowAndDeadLettersTheNumber) {
  RepoRootView root;
  testing::CliOutcome o = RunDfworker({"run", "pipelines/hf_sentiment.yaml", "--job_dir", root / "job"}, root.path());
  ASSERT_EQ(o.exit_code, 0) << o.out;
  EXPECT_EQ(ShardRows(root / "out/hf_sentiment/reviews"), 4) << o.out;
  EXPECT_EQ(ShardRows(root / "out/hf_sentiment/errors"), 1) << o.out;
}

// Text generation as committed: five prompts (one a chat) completed, the number row dead-lettered.
TEST(ShippedPipelines, HfGenerateCompletesEveryPromptAndDeadLettersTheNumber) {
  RepoRootView root;
  testing::CliOutcome o = RunDfworker({"run", "pipelines/hf_generate.yaml", "--job_dir", root / "job"}, root.path());
  ASSERT_EQ(o.exit_code, 0) << o.out;
  EXPECT_EQ(ShardRows(root / "out/hf_generate/completions"), 5) << o.out;
  EXPECT_EQ(ShardRows(root / "out/hf_generate/errors"), 1) << o.out;
  const std::string m = testing::ReadFile(root / "job/metrics.json");
  EXPECT_NE(m.find("\"num_generated_tokens\""), std::string::npos);
  EXPECT_NE(m.find("\"time_to_first_token_ms\""), std::string::npos);
}

// Seeded sampling gives every row the same text with 1 SDK process and with 4 (the rows land in
// different bundles and share their steps with different neighbours).
TEST(ShippedPipelines, SeededSamplingIsTheSameForEveryProcessCount) {
  const testing::TempDir tmp;  // (qualified: right_sizing_test.cc has a TempDir() of its own)
  const fs::path dir = tmp.path();
  std::string yaml = testing::ReadFile(std::string(DFW_SOURCE_DIR) + "/pipelines/hf_generate.yaml");
  auto replace = [&](const std::string& from, const std::string& to) {
    const std::size_t at = yaml.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    yaml.replace(at, from.size(), to);
  };
  replace("{max_new_tokens: 12, do_sample: false, repetition_penalty: 1.2}", "{max_new_tokens: 16, do_sample: true, temperature: 1.3, seed: 11}");
  std::map<int, std::map<std::string, std::string>> by_processes;
  for (const char* machine : {"n1-standard-1", "n1-standard-4"}) {
    const fs::path pipeline = dir / (std::string(machine) + ".yaml");
    const std::string tag = std::string("out-") + machine;
    std::string text = yaml;
    for (const char* what : {"completions", "errors"}) {
      const std::string from = std::string("out/hf_generate/") + what;
      const std::size_t at = text.find(from);
      ASSERT_NE(at, std::string::npos) << from;
      text.replace(at, from.size(), (dir / tag / what).string());
    }
    std::ofstream(pipeline) << text;
    testing::CliOutcome o = RunDfworker({"run", pipeline.string(), "--job_dir", (dir / (std::string("job-") + machine)).string(),
                                         "--machine_type=" + std::string(machine)});
    ASSERT_EQ(o.exit_code, 0) << o.out;
    EXPECT_NE(o.out.find(std::string("SDK processes: ") + (std::string(machine) == "n1-standard-1" ? "1" : "4")), std::string::npos) << o.out;
    std::map<std::string, std::string> rows;
    for (const auto& e : fs::directory_iterator(dir / tag)) {
      if (e.path().filename().string().rfind("completions-", 0) != 0) continue;
      std::ifstream shard(e.path());
      for (std::string line; std::getline(shard, line);) {
        if (!line.empty()) rows[line.substr(0, line.find(','))] = line;
      }
    }
    EXPECT_EQ(rows.size(), 5u) << o.out;
    by_processes[std::string(machine) == "n1-standard-1" ? 1 : 4] = rows;
  }
  EXPECT_EQ(by_processes[1], by_processes[4]);
}

// RunInference, then a Combine through the shuffle: the confusion matrix covers every good row once.
TEST(ShippedPipelines, PredictionsPerLabelCountsEveryGoodRowOnceThroughTheShuffle) {
  RepoRootView root;
  const fs::path job = root / "job";
  const fs::path out = root / "out/predictions_per_label";
  testing::CliOutcome o = RunDfworker({"run", "pipelines/predictions_per_label.yaml", "--job_dir", job.string()}, root.path());
  ASSERT_EQ(o.exit_code, 0) << o.out;
  EXPECT_TRUE(fs::exists(job / "stage-1" / "FINISHED")) << o.out;
  EXPECT_EQ(ShardRows(out / "errors"), 4) << o.out;
  int64_t rows = 0, cells = 0;
  for (const auto& e : fs::directory_iterator(out)) {
    if (e.path().filename().string().rfind("matrix-", 0) != 0) continue;
    std::ifstream in(e.path());
    for (std::string line; std::getline(in, line);) {
      const std::size_t at = line.find("\"rows\":");
      ASSERT_NE(at, std::string::npos) << line;
      rows += std::stoll(line.substr(at + 7));
      ++cells;
    }
  }
  EXPECT_EQ(rows, 5720) << o.out;
  EXPECT_GE(cells, 2);
  EXPECT_LE(cells, 4);
}

}  // namespace
}  // namespace dfw
