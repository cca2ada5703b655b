// Every file dfworker reads, replaced by what is not a regular file: /dev/zero (a character device
// that never ends), a FIFO nobody writes to, a directory. Each reader must refuse it by name with
// exit 2 at once: before, /dev/zero as config.json or tokenizer.json was read until the process
// was killed for memory, a FIFO blocked forever (--dry_run and `plan --prices` included), and
// tokenizer_config.json or generation_config.json of either kind was taken as absent.
// The real binary runs under `timeout`, so a hang fails the test instead of stalling the suite.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/cli_test_util.h"
#include "test_util.h"

namespace {

namespace fs = std::filesystem;
using dfw::testing::RunDfworker;
using dfw::testing::TempDir;
using dfw::testing::WriteFile;

const char* kHang = "timeout -s KILL 60";  // a reader that blocks is killed (exit -1), never waited on

struct Kind {
  const char* name;   // for messages
  const char* said;   // what the error must say the file is
  std::function<bool(const std::string&)> make;  // puts one at the path
};

const std::vector<Kind>& Kinds() {
  static const std::vector<Kind> kinds = {
      {"/dev/zero", "is not a regular file: it is a character device", [](const std::string& p) { return ::symlink("/dev/zero", p.c_str()) == 0; }},
      {"FIFO", "is not a regular file: it is a FIFO", [](const std::string& p) { return ::mkfifo(p.c_str(), 0600) == 0; }},
      {"directory", "is not a regular file: it is a directory", [](const std::string& p) { return ::mkdir(p.c_str(), 0700) == 0; }},
  };
  return kinds;
}

// A text-generation pipeline on a copy of the tiny llama whose `file` is replaced.
std::string GeneratePipeline(const std::string& model) {
  return "options:\n  yaml_experimental_features: [ML]\n"
         "pipeline:\n  type: chain\n  source:\n    type: ReadFromJson\n    config: {path: testdata/hf/prompts.jsonl}\n"
         "  transforms:\n    - type: RunInference\n      name: Generate\n      config:\n"
         "        inference_args: {max_new_tokens: 2}\n        model_handler:\n"
         "          type: HuggingFacePipelineModelHandler\n          config:\n"
         "            task: text-generation\n            model: " + model + "\n            device: CPU\n"
         "            preprocess: {callable: 'lambda row: row.prompt'}\n"
         "  sink:\n    type: WriteToJson\n    config: {path: out/never}\n";
}

// A text-classification pipeline on a BERT encoder.
std::string ClassifyPipeline(const std::string& model) {
  return "options:\n  yaml_experimental_features: [ML]\n"
         "pipeline:\n  type: chain\n  source:\n    type: ReadFromJson\n    config: {path: testdata/hf/reviews.jsonl}\n"
         "  transforms:\n    - type: RunInference\n      name: Classify\n      config:\n        model_handler:\n"
         "          type: HuggingFacePipelineModelHandler\n          config:\n"
         "            task: text-classification\n            model: " + model + "\n            device: CPU\n"
         "            preprocess: {callable: 'lambda row: row.text'}\n"
         "  sink:\n    type: WriteToJson\n    config: {path: out/never}\n";
}

// The MLP handler's safetensors model.
std::string MlpPipeline(const std::string& model) {
  return "pipeline:\n  type: chain\n  source:\n    type: ReadFromJson\n    config: {path: pipelines/models/breast_cancer_mlp/sample.jsonl}\n"
         "  transforms:\n    - type: RunInference\n      config:\n        model_handler:\n"
         "          type: MlpModelHandlerSafetensors\n          config: {model_path: " + model + ", input_field: features}\n"
         "  sink:\n    type: WriteToJson\n    config: {path: out/never}\n";
}

TEST(BadFileKinds, ModelFilesThatAreNotRegularFilesAreRefusedByName) {
  struct Model {
    const char* source;  // a model directory of the tree
    std::vector<const char*> files;
    std::function<std::string(const std::string&)> pipeline;
  };
  const std::vector<Model> models = {
      {"testdata/hf/decoders/llama", {"config.json", "tokenizer.json", "tokenizer_config.json", "generation_config.json"}, GeneratePipeline},
      {"testdata/hf/bert-sequence-classification", {"config.json", "tokenizer.json", "tokenizer_config.json"}, ClassifyPipeline},
      {"pipelines/models/breast_cancer_mlp", {"config.json"}, MlpPipeline},
  };
  for (const Model& m : models) for (const char* file : m.files) {
    for (const Kind& k : Kinds()) {
      TempDir dir;
      const std::string model = dir / "model";
      fs::copy(fs::path(DFW_SOURCE_DIR) / m.source, model);
      fs::remove(model + "/" + file);
      ASSERT_TRUE(k.make(model + "/" + file)) << file << " as " << k.name;
      WriteFile(dir / "p.yaml", m.pipeline(model));
      auto o = RunDfworker({"run", dir / "p.yaml", "--dry_run"}, DFW_SOURCE_DIR, kHang);
      EXPECT_EQ(o.exit_code, 2) << file << " as " << k.name << ":\n" << o.out;
      EXPECT_NE(o.out.find("'" + model + "/" + file + "' " + k.said), std::string::npos) << file << " as " << k.name << ":\n" << o.out;
    }
  }
}

// The tiny llama's tokenizer.json with `edit` applied, run with --dry_run: exit 2 and `expected`.
void ExpectTokenizerRefused(const std::function<std::string(nlohmann::json&)>& edit, const std::string& expected) {
  TempDir dir;
  const std::string model = dir / "model";
  fs::copy(fs::path(DFW_SOURCE_DIR) / "testdata/hf/decoders/llama", model);
  nlohmann::json tok = nlohmann::json::parse(dfw::testing::ReadFile(model + "/tokenizer.json"));
  WriteFile(model + "/tokenizer.json", edit(tok));
  WriteFile(dir / "p.yaml", GeneratePipeline(model));
  auto o = RunDfworker({"run", dir / "p.yaml", "--dry_run"}, DFW_SOURCE_DIR, kHang);
  EXPECT_EQ(o.exit_code, 2) << o.out;  // before: SIGSEGV (-1) for the deep file, exit 0 for the id
  EXPECT_NE(o.out.find("'" + model + "/tokenizer.json" + expected), std::string::npos) << o.out;
}

TEST(BadModelFiles, APreTokenizerSequenceNested50000DeepIsExitTwo) {
  ExpectTokenizerRefused(
      [](nlohmann::json& tok) {
        tok["pre_tokenizer"] = "DEEP";
        std::string deep;
        for (int i = 0; i < 50000; ++i) deep += R"({"type": "Sequence", "pretokenizers": [)";
        deep += R"({"type": "Whitespace"})";
        for (int i = 0; i < 50000; ++i) deep += "]}";
        std::string text = tok.dump();
        text.replace(text.find("\"DEEP\""), 6, deep);
        return text;
      },
      "' nests arrays/objects more than 100 levels deep");
}

TEST(BadModelFiles, AnAddedTokenIdPast32BitsIsExitTwoNotTruncated) {
  for (uint64_t id : {uint64_t{1} << 40, (uint64_t{1} << 32) + 150}) {
    ExpectTokenizerRefused(
        [id](nlohmann::json& tok) {
          tok["added_tokens"].push_back({{"id", id}, {"content", "<zz>"}, {"special", true}});
          return tok.dump();
        },
        "': the id of added token '<zz>' must be an integer in [0, 16777216], got " + std::to_string(id));
  }
}

TEST(BadFileKinds, PlanAndTestInputsThatAreNotRegularFilesAreRefusedByName) {
  struct Reader {
    const char* what;
    std::function<std::vector<std::string>(const std::string&)> args;  // the command line, given the bad path
    bool directory_too;  // a directory there is an error of this reader (not another valid input)
  };
  const std::vector<Reader> readers = {
      {"--prices", [](const std::string& p) { return std::vector<std::string>{"plan", "pipelines/embed_sentences.yaml", "--gpu", "nvidia-l4", "--prices", p}; }, true},
      {"--cpu_rate_from", [](const std::string& p) { return std::vector<std::string>{"plan", "pipelines/embed_sentences.yaml", "--gpu", "nvidia-l4", "--cpu_rate_from", p}; }, false},
      {"--gpu_efficiency_from", [](const std::string& p) { return std::vector<std::string>{"plan", "pipelines/embed_sentences.yaml", "--gpu", "nvidia-l4", "--gpu_efficiency_from", p}; }, true},
      {"--test_suite", [](const std::string& p) { return std::vector<std::string>{"test", "pipelines/json_clean.yaml", "--test_suite", p}; }, true},
  };
  for (const Reader& r : readers) {
    for (const Kind& k : Kinds()) {
      if (!r.directory_too && std::string(k.name) == "directory") continue;  // a job dir there is read as one
      TempDir dir;
      const std::string bad = dir / "bad";
      ASSERT_TRUE(k.make(bad));
      auto o = RunDfworker(r.args(bad), DFW_SOURCE_DIR, kHang);
      EXPECT_EQ(o.exit_code, 2) << r.what << " " << k.name << ":\n" << o.out;
      EXPECT_NE(o.out.find("'" + bad + "' " + k.said), std::string::npos) << r.what << " " << k.name << ":\n" << o.out;
    }
  }
  // A catalog directory whose *.yaml is one of them.
  for (const Kind& k : Kinds()) {
    TempDir dir;
    const std::string bad = dir / "gpus.yaml";
    ASSERT_TRUE(k.make(bad));
    auto o = RunDfworker({"plan", "pipelines/embed_sentences.yaml", "--catalog_dir", dir.path()}, DFW_SOURCE_DIR, kHang);
    EXPECT_EQ(o.exit_code, 2) << "catalog " << k.name << ":\n" << o.out;
    EXPECT_NE(o.out.find("'" + bad + "' " + k.said), std::string::npos) << "catalog " << k.name << ":\n" << o.out;
  }
}

}  // namespace
