// SIGTERM during a text generation that would outlast the launcher's grace period: the launcher's
// stop request reaches the decode loop, which ends between two steps, so the job stops at once
// (exit 143, resumable) instead of when the grace period runs out; --resume then completes it.
// Before, the decode loop never looked, and the launcher waited out its 10 s grace and killed it.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "process_util.h"

namespace dfw {
namespace {

namespace fs = std::filesystem;
using namespace dfw::testing;

TEST(GenerationStop, SigtermStopsALongGenerationBetweenDecodeStepsAndResumeFinishesIt) {
  DFW_SKIP_WITHOUT_TEST_HOOKS();
  // The source tree, from this file's path (the integration tests have no DFW_SOURCE_DIR).
  const std::string kLlama = (fs::path(__FILE__).parent_path().parent_path().parent_path() / "testdata/hf/decoders/llama").string();
  dfw::testing::TempDir base_tmp;
  const std::filesystem::path base = base_tmp.path();
  std::ofstream(base / "prompts.jsonl") << "{\"prompt\": \"hello there\"}\n";
  std::ofstream(base / "p.yaml")
      << "options:\n  yaml_experimental_features: [ML]\n"
         "pipeline:\n  type: chain\n  source: {type: ReadFromJson, config: {path: prompts.jsonl}}\n"
         "  transforms:\n    - type: RunInference\n      name: Generate\n      config:\n"
         "        inference_args: {max_new_tokens: 100, min_new_tokens: 100, do_sample: false}\n"
         "        model_handler:\n          type: HuggingFacePipelineModelHandler\n          config:\n"
         "            task: text-generation\n            model: " << kLlama << "\n"
         "            device: CPU\n            preprocess: {callable: 'lambda row: row.prompt'}\n"
         "  sink: {type: WriteToJson, config: {path: out/rows, file_name_suffix: .jsonl}}\n";
  const std::string job = (base / "job").string();
  const std::string started = (base / "started").string();
  auto launch = [&](const std::string& name, std::vector<std::string> extra, std::vector<std::string> env) {
    std::vector<std::string> argv = {"/bin/sh", "-c", "cd '" + base.string() + "' && exec \"$@\"", "sh", DFW_DFWORKER, "run",
                                     "p.yaml", "--experiments=no_use_multiple_sdk_containers"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return StartProcess(argv, env, (base / (name + ".err")).string());
  };
  // 100 steps of 300 ms: 30 s of generation, three times the grace period.
  Started run = launch("first", {"--job_dir", job}, {"DFW_TEST_DECODE_STEP_SLEEP=300:" + started});
  ASSERT_TRUE(Eventually([&] { return fs::exists(started); }, 60)) << ReadFile((base / "first.err").string());
  ASSERT_EQ(::kill(run.pid, SIGTERM), 0);
  EXPECT_EQ(WaitExit(run.pid), 143) << ReadFile((base / "first.err").string());
  std::string sdk_log;
  for (const auto& e : fs::directory_iterator(job + "/logs")) sdk_log += ReadFile(e.path().string());
  EXPECT_NE(sdk_log.find("text generation stopped between decode steps: the job is stopping (SIGUSR2)"), std::string::npos)
      << sdk_log;
  EXPECT_TRUE(ProcessesMentioning(job).empty());
  EXPECT_FALSE(fs::exists(job + "/FINISHED"));
  ASSERT_EQ(WaitExit(launch("resume", {"--resume", job}, {}).pid), 0) << ReadFile((base / "resume.err").string());
  EXPECT_TRUE(fs::exists(job + "/FINISHED"));
  if (::testing::Test::HasFailure()) base_tmp.Keep();
}

}  // namespace
}  // namespace dfw
