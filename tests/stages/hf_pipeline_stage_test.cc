// RunInference with Beam's HuggingFacePipelineModelHandler, written as Beam YAML writes it, on the
// committed tiny models (testdata/hf): rows shaped as transformers returns them, the callables,
// inference_args, and the refusals at load.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <nlohmann/json.hpp>

#include "stages_test_util.h"

namespace dfw {
namespace hf_pipeline_stage_test {
namespace {

const std::string kHf = std::string(DFW_SOURCE_DIR) + "/testdata/hf";

// The RunInference transform under test, with an error output (stages_test_util.h makes the rest).
StageConfig Config(const std::string& yaml) { return testing::MakeConfig("RunInference", yaml, "errors"); }

Row TextRow(const Value& text) {
  Row r;
  r.Append("id", Value::Int(7));
  r.Append("text", text);
  return r;
}

std::string Yaml(const std::string& model, const std::string& extra, const std::string& transform_extra = "") {
  return "inference_tag: sentiment\n" + transform_extra +
         "model_handler:\n  type: HuggingFacePipelineModelHandler\n  config:\n    task: text-classification\n"
         "    model: " + kHf + "/" + model + "\n    preprocess: {callable: 'lambda row: row.text'}\n" + extra;
}

TEST(HfPipelineStage, RowGainsThePredictionResultAndBadRowsGoToTheErrorOutput) {
  StageConfig c = Config(Yaml("bert-sequence-classification", "", "inference_args: {top_k: 2}\n"));
  auto stage = testing::MakeStage(c);
  ASSERT_TRUE(stage.ok()) << stage.status().ToString();
  RowBatch rows = {TextRow(Value::String("I love this movie, it is wonderful.")), TextRow(Value::Int(42))};
  StageOutput out(&c);
  ASSERT_TRUE((*stage)->StartBundle(BundleContext{}).ok());
  ASSERT_TRUE((*stage)->Process(rows, out).ok());
  ASSERT_TRUE((*stage)->FinishBundle(out).ok());
  ASSERT_EQ(out.main().size(), 1u);
  const nlohmann::json pr = nlohmann::json::parse(out.main()[0].Find("sentiment")->ToJson());
  EXPECT_EQ(pr["example"], "I love this movie, it is wonderful.");
  EXPECT_EQ(pr["model_id"], kHf + "/bert-sequence-classification");
  // transformers: [{"label": "POSITIVE", "score": 0.6411535143852234}, {"label": "NEGATIVE", ...}]
  ASSERT_EQ(pr["inference"].size(), 2u);
  EXPECT_EQ(pr["inference"][0]["label"], "POSITIVE");
  EXPECT_NEAR(pr["inference"][0]["score"].get<double>(), 0.6411535143852234, 1e-4);
  EXPECT_EQ(pr["inference"][1]["label"], "NEGATIVE");
  ASSERT_EQ(out.errors().size(), 1u);
  const std::string msg = out.errors()[0].Find("msg")->as_string();
  EXPECT_NE(msg.find("preprocess 'lambda row: row.text'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("takes a string (the preprocess result), got int 42"), std::string::npos) << msg;
}

TEST(HfPipelineStage, PostprocessReplacesThePredictionResult) {
  StageConfig c = Config(Yaml("bert-sequence-classification", "    postprocess: {callable: 'lambda x: x.inference[0]'}\n"));
  auto stage = testing::MakeStage(c);
  ASSERT_TRUE(stage.ok()) << stage.status().ToString();
  RowBatch rows = {TextRow(Value::String("This film was terrible and boring."))};
  StageOutput out(&c);
  ASSERT_TRUE((*stage)->StartBundle(BundleContext{}).ok());
  ASSERT_TRUE((*stage)->Process(rows, out).ok());
  ASSERT_TRUE((*stage)->FinishBundle(out).ok());
  ASSERT_EQ(out.main().size(), 1u);
  const nlohmann::json v = nlohmann::json::parse(out.main()[0].Find("sentiment")->ToJson());
  EXPECT_EQ(v["label"], "POSITIVE");
  EXPECT_NEAR(v["score"].get<double>(), 0.6690232157707214, 1e-4);
}

TEST(HfPipelineStage, PreprocessAndPostprocessMayBeDefs) {
  std::string yaml = Yaml("bert-sequence-classification",
                          "    postprocess:\n      callable: |\n        def post(x):\n          best = x.inference[0]\n"
                          "          return {'label': best['label'].lower(), 'confident': best['score'] > 0.5}\n");
  const std::string lambda_pre = "    preprocess: {callable: 'lambda row: row.text'}\n";
  yaml.replace(yaml.find(lambda_pre), lambda_pre.size(),
               "    preprocess:\n      callable: |\n        import re\n        def pre(row):\n          return re.sub(r'\\s+', ' ', row.text).strip()\n");
  StageConfig c = Config(yaml);
  auto stage = testing::MakeStage(c);
  ASSERT_TRUE(stage.ok()) << stage.status().ToString();
  RowBatch rows = {TextRow(Value::String("  This film   was terrible\tand boring.  "))};
  StageOutput out(&c);
  ASSERT_TRUE((*stage)->StartBundle(BundleContext{}).ok());
  ASSERT_TRUE((*stage)->Process(rows, out).ok());
  ASSERT_TRUE((*stage)->FinishBundle(out).ok());
  ASSERT_EQ(out.main().size(), 1u) << (out.errors().empty() ? "" : out.errors()[0].ToJson());
  // The same prediction as PostprocessReplacesThePredictionResult's text (whitespace normalised).
  EXPECT_EQ(out.main()[0].Find("sentiment")->ToJson(), R"({"label":"positive","confident":true})");
}

TEST(HfPipelineStage, ConfigErrorsNameTheKeyAndWhatIsAllowed) {
  struct Case {
    std::string yaml, error;
  };
  const std::string head = "model_handler:\n  type: HuggingFacePipelineModelHandler\n  config:\n";
  const std::string pre = "    preprocess: {callable: 'lambda row: row.text'}\n";
  const std::vector<Case> cases = {
      {head + "    task: text-classification\n" + pre, "without 'model': Beam would download"},
      {head + "    model: " + kHf + "/bert-nli\n    inference_fn: {callable: 'lambda b, m, a: m(b)'}\n" + pre,
       "'inference_fn' is a Python function"},
      {head + "    model: " + kHf + "/bert-nli\n    tas: ner\n" + pre, "unknown config key 'tas' (did you mean 'task'?)"},
      {head + "    model: " + kHf + "/bert-nli\n    task: text-classification\n", "'preprocess' is required"},
      {head + "    model: " + kHf + "/bert-nli\n    task: text-classification\n    device: tpu\n" + pre, "'tpu' is not a device"},
      {head + "    model: " + kHf + "/bert-masked-lm\n    task: text-classification\n" + pre,
       "needs a *ForSequenceClassification model"},
      {"inference_args: {top_k: 1}\nmodel_handler: {type: MlpModelHandlerSafetensors, config: {model_path: m, input_field: f}}",
       "is read by HuggingFacePipelineModelHandler only"},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.yaml);
    auto stage = testing::MakeStage(Config(tc.yaml));
    ASSERT_FALSE(stage.ok());
    EXPECT_NE(stage.status().message().find(tc.error), std::string::npos) << stage.status().message();
  }
}

TEST(HfPipelineStage, TaskIsTheOneTheModelsHeadImpliesWhenNotGiven) {
  StageConfig c = Config("model_handler:\n  type: HuggingFacePipelineModelHandler\n  config:\n    model: " + kHf +
                         "/bert-token-classification\n    preprocess: {callable: 'lambda row: row.text'}\n");
  auto stage = testing::MakeStage(c);
  ASSERT_TRUE(stage.ok()) << stage.status().ToString();
  RowBatch rows = {TextRow(Value::String("Barack Obama was born in Hawaii."))};
  StageOutput out(&c);
  ASSERT_TRUE((*stage)->StartBundle(BundleContext{}).ok());
  ASSERT_TRUE((*stage)->Process(rows, out).ok());
  ASSERT_TRUE((*stage)->FinishBundle(out).ok());
  ASSERT_EQ(out.main().size(), 1u);
  const nlohmann::json pr = nlohmann::json::parse(out.main()[0].Find("inference")->ToJson());
  ASSERT_TRUE(pr["inference"].is_array());
  ASSERT_FALSE(pr["inference"].empty());
  EXPECT_TRUE(pr["inference"][0].contains("entity"));  // token-classification's rows
  EXPECT_TRUE(pr["inference"][0].contains("start"));
}

}  // namespace
}  // namespace hf_pipeline_stage_test
}  // namespace dfw
