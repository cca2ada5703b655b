// `dfworker plan` and `dfworker run --dry_run` on the Gemma-2B-shaped pipeline (config.json only):
// the sequences per GPU that docs/right-sizing.md derives, and the refusal when none fits.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "cli/cli_test_util.h"
#include "test_util.h"

namespace dfw {
namespace {

namespace fs = std::filesystem;
using testing::RunDfworker;

const std::string kPipeline = "testdata/right_sizing/gemma-2b-generate.yaml";

// Sequences per GPU of the one-GPU machine types, from `dfworker plan --format=json`.
std::map<std::string, int64_t> SequencesPerGpu(bool mps) {
  auto o = RunDfworker({"plan", kPipeline, "--sdk_worker_parallelism=4", "--gpu", "nvidia-l4,nvidia-tesla-a100,nvidia-h100-80gb",
                        "--format=json", "--objective", "fit",
                        std::string("--dataflow_service_options=worker_accelerator=type:nvidia-l4;count:1") +
                            (mps ? ";use_nvidia_mps" : "")});
  EXPECT_EQ(o.exit_code, 0) << o.out;
  std::map<std::string, int64_t> out;
  auto j = nlohmann::json::parse(o.out, nullptr, false);
  if (j.is_discarded()) return out;
  for (const auto& r : j["rows"]) {
    const std::string m = r["machine_type"].get<std::string>();
    if (m == "g2-standard-4" || m == "a2-highgpu-1g" || m == "a3-highgpu-1g") {
      out[m] = r["sequences_per_gpu"].get<int64_t>();
      EXPECT_EQ(r["verdict"], "fits") << m;
      EXPECT_EQ(r["models"][0]["sequences"]["gpu_memory_utilization"], 0.9);
    }
  }
  return out;
}

TEST(RightSizingGeneration, PlanAnswersSequencesPerGpuAsTheDocsDeriveThem) {
  // docs/right-sizing.md, "Text generation: sequences per GPU" (4 SDK processes, one copy each).
  EXPECT_EQ(SequencesPerGpu(false),
            (std::map<std::string, int64_t>{{"g2-standard-4", 8}, {"a2-highgpu-1g", 108}, {"a3-highgpu-1g", 360}}));
  EXPECT_EQ(SequencesPerGpu(true),
            (std::map<std::string, int64_t>{{"g2-standard-4", 16}, {"a2-highgpu-1g", 116}, {"a3-highgpu-1g", 372}}));
  auto text = RunDfworker({"plan", kPipeline, "--sdk_worker_parallelism=4", "--machine_type=g2-standard-4", "--objective", "fit"});
  ASSERT_EQ(text.exit_code, 0) << text.out;
  EXPECT_NE(text.out.find("   seqs  verdict"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("gpu_memory_utilization 0.9 (vLLM's default)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("planned from config.json alone"), std::string::npos) << text.out;
}

TEST(RightSizingGeneration, DryRunSaysHowManySequencesFitAndRunNeedsTheWeights) {
  const std::string l4 = "--dataflow_service_options=worker_accelerator=type:nvidia-l4;count:1;install-nvidia-driver";
  auto dry = RunDfworker({"run", kPipeline, "--dry_run", "--machine_type=g2-standard-8", "--sdk_worker_parallelism=4", l4});
  ASSERT_EQ(dry.exit_code, 0) << dry.out;
  EXPECT_NE(dry.out.find("sequences:       8 sequence(s) of 8192 tokens per GPU (2 per process x 4 process(es))"),
            std::string::npos)
      << dry.out;
  EXPECT_NE(dry.out.find("max_position_embeddings 8192 (no prompt limit is set"), std::string::npos) << dry.out;
  EXPECT_NE(dry.out.find("warning[model-weights-absent]"), std::string::npos) << dry.out;
  const testing::RepoRootView root;  // the run makes its output folder (out/...) there, not in the source tree
  auto run = RunDfworker({"run", kPipeline, "--machine_type=g2-standard-8", "--sdk_worker_parallelism=4", l4,
                          "--job_dir", root / "job"},
                         root.path());
  EXPECT_EQ(run.exit_code, 2) << run.out;
  EXPECT_NE(run.out.find("no model.safetensors"), std::string::npos) << run.out;
}

TEST(RightSizingGeneration, NotOneSequenceOfTheContextIsRefusedExitTwoWithTheNumbers) {
  // The same pipeline with a 32768-token context: 576 MiB per sequence, 335 MiB per process on an L4.
  std::ifstream in(std::string(DFW_SOURCE_DIR) + "/" + kPipeline);
  std::string yaml((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string from = "{max_new_tokens: 256, do_sample: false}";
  ASSERT_NE(yaml.find(from), std::string::npos);
  yaml.replace(yaml.find(from), from.size(), "{max_length: 32768, do_sample: false}");
  const testing::RepoRootView root;  // the edited copy goes there, not into the source tree
  const fs::path file = root / "gemma_32k.yaml";
  std::ofstream(file) << yaml;
  auto dry = RunDfworker({"run", file.string(), "--dry_run", "--machine_type=g2-standard-8", "--sdk_worker_parallelism=4",
                          "--dataflow_service_options=worker_accelerator=type:nvidia-l4;count:1;install-nvidia-driver"},
                         root.path());
  EXPECT_EQ(dry.exit_code, 2) << dry.out;
  EXPECT_NE(dry.out.find("error[kv-cache-no-sequence]"), std::string::npos) << dry.out;
  EXPECT_NE(dry.out.find("not one sequence of 32768 tokens (max_length 32768"), std::string::npos) << dry.out;
  EXPECT_NE(dry.out.find("one sequence needs 576.0 MiB"), std::string::npos) << dry.out;
  // With MPS and a shared copy the same context fits: the refusal is about this configuration.
  auto mps = RunDfworker({"run", file.string(), "--dry_run", "--machine_type=g2-standard-8", "--sdk_worker_parallelism=4",
                          "--dataflow_service_options=worker_accelerator=type:nvidia-l4;count:1;install-nvidia-driver;use_nvidia_mps"},
                         root.path());
  EXPECT_EQ(mps.exit_code, 0) << mps.out;
  // `dfworker plan` on the only L4 machine type it may use: no row holds one, exit 2 with the closest.
  auto plan = RunDfworker({"plan", file.string(), "--sdk_worker_parallelism=4", "--machine_type=g2-standard-4", "--gpu", "nvidia-l4"},
                          root.path());
  EXPECT_EQ(plan.exit_code, 2) << plan.out;
  EXPECT_NE(plan.out.find("no configuration holds one sequence; the closest, nvidia-l4 g2-standard-4"), std::string::npos)
      << plan.out;
}

}  // namespace
}  // namespace dfw
