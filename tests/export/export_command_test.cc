// `dfworker export` and the Beam-spelling refusals through the real binary: exit codes and the
// messages a user sees.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>

#include "cli/cli_test_util.h"

namespace dfw {
namespace {

using testing::RunDfworker;

std::string TempDir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "/export_command_test_" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

TEST(ExportCommand, WritesTheBeamFilesForTheDefaultPipeline) {
  const std::string out = TempDir("default") + "/beam";
  auto r = RunDfworker({"export", "pipelines/default.yaml", "--machine_type=g2-standard-8",
                        "--dataflow_service_options=worker_accelerator=type:nvidia-l4;count:1;install-nvidia-driver;use_nvidia_mps",
                        "--to", "beam", "--out", out});
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("note: transform 'ReadSamples' (ReadFromJson)"), std::string::npos) << r.out;
  const YAML::Node y = YAML::LoadFile(out + "/pipeline.yaml");
  EXPECT_EQ(y["pipeline"]["transforms"][0]["type"].Scalar(), "DfworkerMlpInference");
  std::ifstream sh(out + "/launch.sh");
  std::string text((std::istreambuf_iterator<char>(sh)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("--machine_type='g2-standard-8'"), std::string::npos);
  EXPECT_NE(text.find(std::string(DFW_SOURCE_DIR) + "/python"), std::string::npos) << "the companion package's source";
}

// text-generation keeps Beam's handler and its generation arguments; dfworker's engine settings
// (seed, KV cache, batching) stay behind, each with a note.
TEST(ExportCommand, TextGenerationKeepsTheHandlerAndDropsTheEngineSettings) {
  const std::string dir = TempDir("generate");
  std::ifstream in(std::string(DFW_SOURCE_DIR) + "/pipelines/hf_generate.yaml");
  std::string yaml((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string from = "{max_new_tokens: 12, do_sample: false, repetition_penalty: 1.2}";
  ASSERT_NE(yaml.find(from), std::string::npos);
  yaml.replace(yaml.find(from), from.size(), "{max_new_tokens: 12, do_sample: true, seed: 5, max_num_seqs: 4}");
  std::ofstream(dir + "/p.yaml") << yaml;
  auto r = RunDfworker({"export", dir + "/p.yaml", "--to", "beam", "--out", dir + "/beam"});
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("inference_args 'seed' is not carried over"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("inference_args 'max_num_seqs' is not carried over"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("without continuous batching"), std::string::npos) << r.out;
  const YAML::Node y = YAML::LoadFile(dir + "/beam/pipeline.yaml");
  YAML::Node run;
  const YAML::Node transforms = y["pipeline"]["transforms"];
  for (std::size_t i = 0; i < transforms.size(); ++i) {
    if (transforms[i]["type"].Scalar() == "RunInference") run = transforms[i];
  }
  ASSERT_TRUE(run) << YAML::Dump(y);
  EXPECT_EQ(run["config"]["model_handler"]["type"].Scalar(), "HuggingFacePipelineModelHandler");
  EXPECT_EQ(run["config"]["model_handler"]["config"]["task"].Scalar(), "text-generation");
  EXPECT_EQ(run["config"]["inference_args"]["max_new_tokens"].as<int>(), 12);
  EXPECT_FALSE(run["config"]["inference_args"]["seed"]);
  EXPECT_FALSE(run["config"]["inference_args"]["max_num_seqs"]);
}

TEST(ExportCommand, FlagsThatFailValidationStopTheExportWithExit2) {
  const std::string out = TempDir("invalid") + "/beam";
  auto r = RunDfworker({"export", "pipelines/default.yaml", "--machine_type=g2-standard-8",
                        "--dataflow_service_options=worker_accelerator=type:nvidia-l4;count:2;install-nvidia-driver;use_nvidia_mps",
                        "--to", "beam", "--out", out});
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("export stopped"), std::string::npos) << r.out;
  EXPECT_FALSE(std::filesystem::exists(out + "/pipeline.yaml"));
}

TEST(ExportCommand, UnknownTargetIsAnInvocationError) {
  auto r = RunDfworker({"export", "pipelines/default.yaml", "--to", "flink", "--out", TempDir("flink")});
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("flink"), std::string::npos) << r.out;
}

// A Beam YAML file with an ML construct dfworker does not implement: exit 2 at load, naming it
// and what is supported (run and export alike).
TEST(BeamSpellings, UnsupportedMlConstructsExit2NamingThem) {
  const std::string dir = TempDir("spellings");
  struct Case {
    std::string transform;
    std::string fragment;
  };
  const std::vector<Case> cases = {
      {"    - type: RunInference\n      config:\n        model_handler:\n          type: HuggingFacePipelineModelHandler\n"
       "          config: {task: text-classification, model: distilbert-base-uncased-finetuned-sst-2-english,\n"
       "                   preprocess: {callable: 'lambda x: x.text'}}\n",
       // A hub id that is not in the local Hugging Face cache: dfworker downloads nothing.
       "model 'distilbert-base-uncased-finetuned-sst-2-english' not found; looked at"},
      {"    - type: RunInference\n      config:\n        model_handler:\n          type: VertexAIModelHandlerJSON\n"
       "          config: {endpoint_id: '1', project: p, location: us-central1, preprocess: {callable: 'lambda x: x.text'}}\n",
       "'VertexAIModelHandlerJSON' is valid Beam YAML but not supported by dfworker: it calls a remote Vertex AI endpoint"},
      {"    - type: MLTransform\n      config:\n        write_artifact_location: /tmp/a\n        transforms:\n"
       "          - {type: VertexAITextEmbeddings, config: {model_name: textembedding-gecko, columns: [text]}}\n",
       "'VertexAITextEmbeddings' is valid in Beam's MLTransform but not supported by dfworker; supported: "
       "SentenceTransformerEmbeddings"},
      {"    - type: MLTransform\n      config:\n        read_artifact_location: /tmp/a\n        transforms:\n"
       "          - {type: SentenceTransformerEmbeddings, config: {model_name: testdata/tiny_bert, columns: [text]}}\n",
       "'read_artifact_location' (reusing artifacts of an earlier MLTransform) is not supported"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.transform);
    const std::string path = dir + "/p.yaml";
    std::ofstream(path) << "options: {yaml_experimental_features: [ML]}\npipeline:\n  type: chain\n  transforms:\n"
                           "    - {type: ReadFromJson, config: {path: testdata/tiny_bert/sentences.jsonl}}\n"
                        << c.transform << "    - {type: WriteToJson, config: {path: " << dir << "/out}}\n";
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{"run", path, "--dry_run"},
          std::vector<std::string>{"export", path, "--to", "beam", "--out", dir + "/beam"}}) {
      auto r = RunDfworker(args);
      EXPECT_EQ(r.exit_code, 2) << args[0] << ": " << r.out;
      EXPECT_NE(r.out.find(c.fragment), std::string::npos) << args[0] << ": " << r.out;
    }
  }
}

}  // namespace
}  // namespace dfw
