// MLTransform (Beam YAML's SentenceTransformerEmbeddings): each listed column replaced by its
// embedding, the same vectors RunInference's SentenceEmbeddingHandler computes, and every construct
// dfworker does not have refused at load with its name.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "dfw/stages/stage.h"
#include "stages_test_util.h"

namespace dfw {
namespace {

const std::string kTinyBert = std::string(DFW_SOURCE_DIR) + "/testdata/tiny_bert";

StageConfig Config(const std::string& type, const std::string& yaml, MetricsRegistry* metrics) {
  StageConfig c = testing::MakeConfig(type, yaml, "errors");
  c.run.metrics = metrics;
  return c;
}

Result<std::unique_ptr<Stage>> Make(const StageConfig& c) {
  StageRegistry registry;
  RegisterBuiltinStages(registry);
  const StageTypeInfo* info = registry.Find(c.type);
  if (info == nullptr) return Internal(c.type + " not registered");
  if (info->check) RETURN_IF_ERROR(info->check(c));
  return info->factory(c);
}

Row Sentence(int64_t id, const std::string& text, const std::string& title) {
  Row r;
  r.Append("id", Value::Int(id));
  r.Append("text", Value::String(text));
  r.Append("title", Value::String(title));
  return r;
}

// Runs one bundle of `rows` through `stage`: main rows and error rows.
std::pair<RowBatch, RowBatch> RunBundle(Stage& stage, const StageConfig& c, RowBatch rows) {
  EXPECT_TRUE(stage.StartBundle(BundleContext{}).ok());
  StageOutput out(&c);
  Status s = stage.Process(rows, out);
  EXPECT_TRUE(s.ok()) << s.ToString();
  StageOutput tail(&c);
  s = stage.FinishBundle(tail);
  EXPECT_TRUE(s.ok()) << s.ToString();
  RowBatch main = std::move(out.main()), errors = std::move(out.errors());
  for (Row& r : tail.main()) main.push_back(std::move(r));
  for (Row& r : tail.errors()) errors.push_back(std::move(r));
  return {std::move(main), std::move(errors)};
}

TEST(MLTransform, ReplacesEachColumnByTheEmbeddingRunInferenceComputes) {
  MetricsRegistry metrics;
  StageConfig ml = Config("MLTransform",
                          "write_artifact_location: /tmp/unused\n"
                          "transforms:\n"
                          "  - type: SentenceTransformerEmbeddings\n"
                          "    config: {model_name: '" + kTinyBert + "', columns: [text, title], max_batch_size: 2}\n",
                          &metrics);
  auto stage = Make(ml);
  ASSERT_TRUE(stage.ok()) << stage.status().ToString();
  RowBatch in = {Sentence(1, "the cat sat", "cats"), Sentence(2, "a dog ran far away", "dogs"), Sentence(3, "hello", "hi")};
  auto [main, errors] = RunBundle(**stage, ml, in);
  ASSERT_EQ(main.size(), 3u);
  EXPECT_TRUE(errors.empty());

  // The reference: RunInference with the same model (no Normalize module in tiny_bert: not normalised).
  StageConfig ri = Config("RunInference",
                          "inference_tag: e\nmodel_handler:\n  type: SentenceEmbeddingHandler\n  config:\n"
                          "    model_path: '" + kTinyBert + "'\n    input_field: text\n    normalize: false\n"
                          "    dtype: float32\n",
                          &metrics);
  auto reference = Make(ri);
  ASSERT_TRUE(reference.ok()) << reference.status().ToString();
  auto [expected, none] = RunBundle(**reference, ri, in);
  ASSERT_EQ(expected.size(), 3u);
  std::map<int64_t, Value> by_id;
  for (const Row& r : expected) by_id[r.Find("id")->as_int()] = *r.Find("e")->as_row().Find("inference");
  for (const Row& r : main) {
    ASSERT_EQ(r.size(), 3u) << r.ToJson() << ": the same fields, no extra tag";
    const Value* text = r.Find("text");
    const Value* title = r.Find("title");
    ASSERT_TRUE(text != nullptr && text->is_list() && title != nullptr && title->is_list()) << r.ToJson();
    EXPECT_GT(text->as_list().size(), 1u);
    EXPECT_EQ(*text, by_id[r.Find("id")->as_int()]) << "id " << r.Find("id")->as_int();
    EXPECT_NE(*text, *title);
  }
}

// Beam computes float32, and so does its spelling here unless the transform sets `dtype`: the
// model's linear_dtype_bits figure says which precision ran.
TEST(MLTransform, RunsFloat32AsBeamDoesUnlessTheTransformSetsDtype) {
  for (const auto& [extra, bits] : std::vector<std::pair<std::string, int64_t>>{{"", 32}, {", dtype: int8", 8}}) {
    MetricsRegistry metrics;
    StageConfig ml = Config("MLTransform",
                            "write_artifact_location: /tmp/unused\ntransforms:\n  - type: SentenceTransformerEmbeddings\n"
                            "    config: {model_name: '" + kTinyBert + "', columns: [text]" + extra + "}\n",
                            &metrics);
    auto stage = Make(ml);
    ASSERT_TRUE(stage.ok()) << stage.status().ToString();
    auto [main, errors] = RunBundle(**stage, ml, {Sentence(1, "the cat sat", "t")});
    EXPECT_EQ(main.size(), 1u);
    int64_t seen = -1;
    for (const auto& [key, d] : metrics.Snapshot().distributions) {
      if (key.name == "linear_dtype_bits") seen = d.min;
    }
    EXPECT_EQ(seen, bits) << extra;
  }
}

TEST(MLTransform, AMissingColumnGoesToTheErrorOutput) {
  MetricsRegistry metrics;
  StageConfig ml = Config("MLTransform",
                          "write_artifact_location: /tmp/unused\ntransforms:\n  - type: SentenceTransformerEmbeddings\n"
                          "    config: {model_name: '" + kTinyBert + "', columns: [text]}\n",
                          &metrics);
  auto stage = Make(ml);
  ASSERT_TRUE(stage.ok()) << stage.status().ToString();
  Row no_text;
  no_text.Append("id", Value::Int(9));
  auto [main, errors] = RunBundle(**stage, ml, {Sentence(1, "ok", "t"), no_text});
  EXPECT_EQ(main.size(), 1u);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].ToJson().find("input field 'text' is missing"), std::string::npos) << errors[0].ToJson();
}

TEST(MLTransform, WhatDfworkerDoesNotHaveIsRefusedAtLoadNamingIt) {
  struct Case {
    std::string yaml;
    std::string fragment;
  };
  const std::string st = "  - type: SentenceTransformerEmbeddings\n    config: {model_name: '" + kTinyBert + "', columns: [text]";
  const std::vector<Case> cases = {
      {"read_artifact_location: /a\ntransforms:\n" + st + "}\n", "'read_artifact_location'"},
      {"transforms:\n" + st + "}\n", "write_artifact_location"},
      {"write_artifact_location: /a\ntransforms:\n  - type: VertexAITextEmbeddings\n    config: {}\n",
       "'VertexAITextEmbeddings' is valid in Beam's MLTransform but not supported"},
      {"write_artifact_location: /a\ntransforms:\n  - type: SentenceTransformerEmbeddings\n"
       "    config: {model_name: sentence-transformers/all-MiniLM-L6-v2, columns: [text]}\n",
       "is not a local directory"},
      {"write_artifact_location: /a\ntransforms:\n" + st + ", image_model: true}\n", "'image_model' is not supported"},
      {"write_artifact_location: /a\ntransforms:\n" + st + ", colour: red}\n", "unknown config key 'colour'"},
      {"write_artifact_location: /a\ntransforms: []\n", "non-empty list"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.yaml);
    MetricsRegistry metrics;
    auto stage = Make(Config("MLTransform", c.yaml, &metrics));
    ASSERT_FALSE(stage.ok());
    EXPECT_NE(stage.status().message().find(c.fragment), std::string::npos) << stage.status().ToString();
  }
}

}  // namespace
}  // namespace dfw
