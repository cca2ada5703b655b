// `options: {yaml_experimental_features: ML}` as Beam's examples write it (a string) runs exactly as
// the list form `[ML]` does: the real binary on Beam's MLTransform spelling, dry run and run.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "cli/cli_test_util.h"
#include "test_util.h"

namespace {

namespace fs = std::filesystem;
using dfw::testing::RunDfworker;
using dfw::testing::TempDir;

std::string MlPipeline(const std::string& features, const std::string& out) {
  return "options:\n  yaml_experimental_features: " + features +
         "\npipeline:\n  type: chain\n  transforms:\n"
         "    - {type: ReadFromJson, config: {path: pipelines/data/sentences.jsonl}}\n"
         "    - type: MLTransform\n      name: Embed\n      config:\n"
         "        write_artifact_location: " + out + "/artifacts\n"
         "        transforms:\n          - {type: SentenceTransformerEmbeddings, config: {model_name: testdata/tiny_bert, columns: [text]}}\n"
         "    - {type: WriteToJson, config: {path: " + out + "/embeddings}}\n";
}

std::string Shards(const std::string& dir) {
  std::string all;
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().filename().string().rfind("embeddings-", 0) == 0) files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  for (const std::string& f : files) all += dfw::testing::ReadFile(f);
  return all;
}

TEST(YamlExperimentalFeatures, AStringIsAcceptedLikeTheList) {
  TempDir dir;
  std::string outputs[2];
  int k = 0;
  for (const std::string features : {"ML", "[ML]"}) {
    const std::string out = dir / ("out" + std::to_string(k));
    dfw::testing::WriteFile(dir / "p.yaml", MlPipeline(features, out));
    auto dry = RunDfworker({"run", dir / "p.yaml", "--dry_run"});
    EXPECT_EQ(dry.exit_code, 0) << features << "\n" << dry.out;
    EXPECT_EQ(dry.out.find("yaml_experimental_features"), std::string::npos) << "no diagnostic about it\n" << dry.out;
    auto run = RunDfworker({"run", dir / "p.yaml", "--job_dir", dir / ("job" + std::to_string(k))});
    ASSERT_EQ(run.exit_code, 0) << features << "\n" << run.out;
    outputs[k++] = Shards(out);
  }
  // The same rows, each with an embedding of the same length. The values themselves may differ a
  // little between two runs: the encoder picks its precision and GEMM plan by measuring this CPU.
  auto rows = [](const std::string& text) {
    std::map<int64_t, std::vector<double>> by_id;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
      auto j = nlohmann::json::parse(line);
      by_id[j.at("id").get<int64_t>()] = j.at("text").get<std::vector<double>>();
    }
    return by_id;
  };
  auto a = rows(outputs[0]), b = rows(outputs[1]);
  EXPECT_FALSE(a.empty());
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [id, v] : a) {
    ASSERT_TRUE(b.count(id)) << id;
    ASSERT_EQ(v.size(), b[id].size()) << id;
    for (std::size_t k = 0; k < v.size(); ++k) EXPECT_NEAR(v[k], b[id][k], 0.05) << id << "[" << k << "]";
  }
}

}  // namespace
