#include "dfw/inference/hf_pipeline_handler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "hf_test_util.h"
#include "record/expression_test_util.h"

namespace dfw {
namespace {

using ::testing::HasSubstr;
using testing::HfDir;
using testing::HfReference;

// JSON → Value (the reference's arguments become the handler's pipeline_args), keys in the
// reference file's order.
Value FromJson(const nlohmann::json& j) { return testing::ValueFromJson(nlohmann::ordered_json::parse(j.dump())); }

// Exact on structure, keys (in order), strings and integers; numbers within 1e-4.
void ExpectMatches(const nlohmann::json& got, const nlohmann::json& want, const std::string& where) {
  if (want.is_number_float() || (want.is_number() && got.is_number_float())) {
    ASSERT_TRUE(got.is_number()) << where << ": got " << got.dump() << ", want " << want.dump();
    EXPECT_NEAR(got.get<double>(), want.get<double>(), 1e-4) << where;
    return;
  }
  ASSERT_EQ(got.type(), want.type()) << where << ": got " << got.dump().substr(0, 300) << ", want " << want.dump().substr(0, 300);
  if (want.is_array()) {
    ASSERT_EQ(got.size(), want.size()) << where << ": got " << got.dump().substr(0, 400) << "\nwant " << want.dump().substr(0, 400);
    for (std::size_t i = 0; i < want.size(); ++i) ExpectMatches(got[i], want[i], where + "[" + std::to_string(i) + "]");
  } else if (want.is_object()) {
    std::vector<std::string> gk, wk;
    for (const auto& [k, v] : got.items()) gk.push_back(k);
    for (const auto& [k, v] : want.items()) wk.push_back(k);
    ASSERT_EQ(gk, wk) << where;
    for (const auto& [k, v] : want.items()) ExpectMatches(got[k], v, where + "." + k);
  } else {
    EXPECT_EQ(got, want) << where;
  }
}

Result<std::unique_ptr<ModelHandler>> Handler(const std::string& model, const std::string& task, const Value& args) {
  ModelHandlerOptions o;
  o.model_path = HfDir() + "/" + model;
  o.input_field = "text";
  o.extra.Append("task", Value::String(task));
  o.extra.Append("pipeline_args", args);
  return MakeModelHandler(kHfPipelineHandlerType, std::move(o));
}

std::vector<std::string> ReferenceNames() {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(HfDir() + "/references")) {
    const std::string n = e.path().stem().string();
    if (n.find("-tokenizer") == std::string::npos && !n.starts_with("text_generation_")) names.push_back(n);
  }
  std::sort(names.begin(), names.end());
  return names;
}

class HfPipelineReferenceTest : public ::testing::TestWithParam<std::string> {};

// Each committed reference: the handler's prediction for every input equals what
// transformers.pipeline(task, model)(input, **args) returned.
TEST_P(HfPipelineReferenceTest, PredictionsEqualTransformersPipeline) {
  const nlohmann::json ref = HfReference(GetParam());
  ASSERT_TRUE(ref.is_object());
  auto handler = Handler(ref["model"], ref["task"], FromJson(ref["args"]));
  ASSERT_TRUE(handler.ok()) << handler.status().ToString();
  auto model = (*handler)->LoadModel({});
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  std::vector<Value> inputs;
  for (const auto& in : ref["inputs"]) inputs.push_back(Value::String(in.get<std::string>()));
  std::vector<const Value*> batch;
  for (const Value& v : inputs) {
    ASSERT_TRUE((*model)->CheckExample(v).ok()) << (*model)->CheckExample(v).ToString();
    batch.push_back(&v);
  }
  std::vector<Value> predictions;
  ASSERT_TRUE((*model)->RunInference(batch, predictions).ok());
  ASSERT_EQ(predictions.size(), inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    ExpectMatches(nlohmann::json::parse(predictions[i].ToJson()), ref["outputs"][i],
                  GetParam() + " input " + std::to_string(i));
  }
}

INSTANTIATE_TEST_SUITE_P(References, HfPipelineReferenceTest, ::testing::ValuesIn(ReferenceNames()),
                         [](const auto& info) {
                           std::string n = info.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

TEST(HfPipelineHandler, CoversEveryTaskAndFamilyInItsReferences) {
  const std::vector<std::string> names = ReferenceNames();
  for (const char* want : {"bert-text-classification", "distilbert-ner-first", "roberta-fill-mask", "bert-zero-shot",
                           "roberta-feature-extraction", "roberta-ner-max", "xlmr-ner-first", "xlmr-zero-shot",
                           "modernbert-text-classification", "modernbert-ner-average", "modernbert-fill-mask",
                           "modernbert-feature-extraction", "modernbert-zero-shot"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
  }
}

struct BadConfig {
  const char* name;
  std::string model, task;
  std::string args_json;
  std::string error;
};
void PrintTo(const BadConfig& c, std::ostream* os) { *os << c.name; }

class HfPipelineBadConfigTest : public ::testing::TestWithParam<BadConfig> {};

TEST_P(HfPipelineBadConfigTest, IsRefusedAtLoadNamingWhatIsSupported) {
  const BadConfig& c = GetParam();
  auto h = Handler(c.model, c.task, FromJson(nlohmann::json::parse(c.args_json)));
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(h.status().message(), HasSubstr(c.error));
}

INSTANTIATE_TEST_SUITE_P(
    Table, HfPipelineBadConfigTest,
    ::testing::Values(
        BadConfig{"UnknownTask", "bert-masked-lm", "summarization", "{}", "task 'summarization' is not supported; supported: text-classification"},
        BadConfig{"HeadMismatch", "bert-masked-lm", "text-classification", "{}", "needs a *ForSequenceClassification model"},
        BadConfig{"UnknownArgument", "bert-sequence-classification", "text-classification", R"({"topk": 2})",
                  "argument 'topk' is not supported; supported: top_k, function_to_apply"},
        BadConfig{"BadAggregation", "bert-token-classification", "ner", R"({"aggregation_strategy": "mean"})",
                  "allowed: none, simple, first, average, max"},
        BadConfig{"ZeroShotWithoutLabels", "bert-nli", "zero-shot-classification", "{}", "needs 'candidate_labels'"},
        BadConfig{"MissingModel", "no-such-model", "fill-mask", "{}", "not found; looked at"},
        BadConfig{"UnknownDType", "bert-sequence-classification", "text-classification", R"({"torch_dtype": "int4"})",
                  "'torch_dtype': int4 is not a dtype dfworker runs; allowed: float32, bfloat16, auto"},
        BadConfig{"BothDTypeNames", "bert-sequence-classification", "text-classification",
                  R"({"torch_dtype": "float32", "dtype": "float32"})", "give one of 'torch_dtype' and 'dtype'"}));

TEST(HfPipelineHandler, NonStringExampleIsRefusedWithTheReason) {
  auto h = Handler("bert-sequence-classification", "text-classification", Value::FromRow(Row()));
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  auto m = (*h)->LoadModel({});
  ASSERT_TRUE(m.ok());
  const Status s = (*m)->CheckExample(Value::Int(3));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("takes a string (the preprocess result), got int"));
}

// transformers' pipeline(torch_dtype=...) as load_pipeline_args: float32 and auto (this checkpoint
// is float32) run float32; bfloat16 runs the Linear layers in bfloat16 where the CPU can, with the
// same labels and scores within 1e-2; float16 is refused with what runs instead.
TEST(HfPipelineHandler, TorchDtypeSetsThePrecisionOfTheLinearLayers) {
  auto run = [](const char* dtype, std::vector<Value>& out, int64_t& bits) -> Status {
    Row args;
    if (dtype != nullptr) args.Append("torch_dtype", Value::String(dtype));
    args.Append("top_k", Value());  // all labels, a list per input
    auto h = Handler("bert-sequence-classification", "text-classification", Value::FromRow(std::move(args)));
    if (!h.ok()) return h.status();
    ASSIGN_OR_RETURN(auto m, (*h)->LoadModel({}));
    bits = m->LoadFigures().at(0).second;
    const Value a = Value::String("a fine day for a walk"), b = Value::String("terrible, awful, no good");
    const Value* batch[] = {&a, &b};
    return m->RunInference(batch, out);
  };
  std::vector<Value> f32, automatic, bf16;
  int64_t bits = 0;
  ASSERT_TRUE(run(nullptr, f32, bits).ok());
  EXPECT_EQ(bits, 32);
  ASSERT_TRUE(run("auto", automatic, bits).ok());
  EXPECT_EQ(bits, 32);
  EXPECT_EQ(automatic[0].ToJson(), f32[0].ToJson());
  Status half = run("float16", bf16, bits);
  EXPECT_EQ(half.code(), StatusCode::kUnimplemented);
  EXPECT_THAT(half.message(), HasSubstr("no float16 path"));
  Status st = run("torch.bfloat16", bf16, bits);
  if (!st.ok()) {
    EXPECT_THAT(st.message(), HasSubstr("cannot run here"));
    GTEST_SKIP() << st.ToString();
  }
  EXPECT_EQ(bits, 16);
  ASSERT_EQ(bf16.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    const List& want = f32[i].as_list();
    const List& got = bf16[i].as_list();
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t j = 0; j < want.size(); ++j) {
      EXPECT_EQ(got[j].as_row().Find("label")->as_string(), want[j].as_row().Find("label")->as_string());
      EXPECT_NEAR(*got[j].as_row().Find("score")->AsNumber(), *want[j].as_row().Find("score")->AsNumber(), 1e-2);
    }
  }
}

TEST(HfPipelineHandler, FillMaskWithoutMaskIsRefusedPerExample) {
  auto h = Handler("bert-masked-lm", "fill-mask", Value::FromRow(Row()));
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  auto m = (*h)->LoadModel({});
  ASSERT_TRUE(m.ok());
  EXPECT_THAT((*m)->CheckExample(Value::String("no mask here")).message(), HasSubstr("no mask token ([MASK])"));
}

}  // namespace
}  // namespace dfw
