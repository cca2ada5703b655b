// task: text-generation against transformers 5.24 on the committed tiny decoder models
// (testdata/hf/decoders, scripts/make_tiny_decoder_models.py; references by
// scripts/hf_generation_references.py): the forward pass's logits, and every greedy case's
// pipeline output and token ids exactly.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "dfw/backend/registry.h"
#include "dfw/inference/decoder_config.h"
#include "dfw/inference/decoder_model.h"
#include "dfw/inference/generation.h"
#include "dfw/inference/hf_pipeline_handler.h"
#include "inference/hf_test_util.h"
#include "record/expression_test_util.h"

namespace dfw::text_generation_test {
namespace {

using ::testing::HasSubstr;
using testing::HfDir;
using testing::HfReference;

Value FromJson(const nlohmann::json& j) { return testing::ValueFromJson(nlohmann::ordered_json::parse(j.dump())); }

std::vector<std::string> DecoderModels() {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(HfDir() + "/decoders")) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

Result<std::unique_ptr<ModelHandler>> Handler(const std::string& dir, const Value& args, bool with_task = true) {
  ModelHandlerOptions o;
  o.model_path = dir;
  o.input_field = "prompt";
  if (with_task) o.extra.Append("task", Value::String("text-generation"));
  o.extra.Append("pipeline_args", args);
  return MakeModelHandler(kHfPipelineHandlerType, std::move(o));
}

// Runs the model over `prompt` in one step and returns the last position's logits.
std::vector<float> PromptLogits(const std::string& dir, const std::vector<int32_t>& prompt, int chunk) {
  auto cfg = DecoderConfig::Load(dir + "/config.json");
  EXPECT_TRUE(cfg.ok()) << cfg.status().ToString();
  auto file = SafetensorsFile::Open(dir + "/model.safetensors");
  EXPECT_TRUE(file.ok());
  auto backend = MakeCpuBackend();
  auto model = DecoderModel::Load(*cfg, **file, backend.get(), LinearDType::kFloat32);
  EXPECT_TRUE(model.ok()) << model.status().ToString();
  PagedKvCache cache(*cfg, 1 << 20);
  const int seq = cache.AddSequence();
  EXPECT_TRUE(cache.Reserve(seq, static_cast<int>(prompt.size())));
  std::vector<float> logits;
  // In chunks of `chunk` rows: the cache carries the earlier ones (chunked prefill).
  for (std::size_t start = 0; start < prompt.size(); start += static_cast<std::size_t>(chunk)) {
    std::vector<DecoderRow> rows;
    for (std::size_t i = start; i < std::min(prompt.size(), start + static_cast<std::size_t>(chunk)); ++i) {
      rows.push_back({seq, static_cast<int>(i), prompt[i], i + 1 == prompt.size()});
    }
    logits.clear();
    EXPECT_TRUE((*model)->Step(rows, cache, logits).ok());
  }
  return logits;
}

TEST(DecoderConfig, ReadsEveryCommittedFamily) {
  for (const std::string& m : DecoderModels()) {
    auto c = DecoderConfig::Load(HfDir() + "/decoders/" + m + "/config.json");
    ASSERT_TRUE(c.ok()) << m << ": " << c.status().ToString();
    EXPECT_GT(c->ParameterCount(), 0u) << m;
    auto file = SafetensorsFile::Open(HfDir() + "/decoders/" + m + "/model.safetensors");
    ASSERT_TRUE(file.ok());
    uint64_t saved = 0;
    for (const TensorInfo& t : (*file)->header().tensors) saved += t.num_elements();
    // The parameter count from config.json alone is the checkpoint's (the plan sizes weights by it).
    EXPECT_EQ(c->ParameterCount(), saved) << m;
    EXPECT_TRUE(DecoderModel::CheckWeights(*c, (*file)->header()).ok()) << m;
  }
  auto llama = DecoderConfig::Load(HfDir() + "/decoders/llama/config.json");
  ASSERT_TRUE(llama.ok());
  EXPECT_EQ(llama->rope_scaling.kind, RopeScaling::Kind::kLlama3);
  EXPECT_EQ(llama->num_kv_heads, 2);
  EXPECT_EQ(llama->KvBytesPerToken(2), 2u * 2 * 8 * 2 * 2);
  auto tied = DecoderConfig::Load(HfDir() + "/decoders/llama-linear-tied/config.json");
  ASSERT_TRUE(tied.ok());  // transformers 4's rope_theta + rope_scaling {type: linear}
  EXPECT_EQ(tied->rope_scaling.kind, RopeScaling::Kind::kLinear);
  EXPECT_TRUE(tied->tie_word_embeddings);
  auto gemma2 = DecoderConfig::Load(HfDir() + "/decoders/gemma2/config.json");
  ASSERT_TRUE(gemma2.ok());
  EXPECT_EQ(gemma2->sliding, (std::vector<bool>{true, false}));
  EXPECT_GT(gemma2->attn_logit_softcap, 0);
}

struct DecoderBadCase {
  std::string name;
  std::string json;
  std::string message;
};

class DecoderBadConfigTest : public ::testing::TestWithParam<DecoderBadCase> {};

TEST_P(DecoderBadConfigTest, IsRefusedNamingWhatIsSupported) {
  auto c = DecoderConfig::Parse(GetParam().json, "config.json");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr(GetParam().message));
}

constexpr const char* kLlamaBase =
    R"("vocab_size": 300, "hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2, "num_attention_heads": 4,
       "max_position_embeddings": 64)";

INSTANTIATE_TEST_SUITE_P(
    Cases, DecoderBadConfigTest,
    ::testing::Values(
        DecoderBadCase{"unknown_architecture", R"({"architectures": ["FalconForCausalLM"], "model_type": "falcon"})",
                  "supported: LlamaForCausalLM (llama)"},
        DecoderBadCase{"encoder_head", R"({"architectures": ["LlamaForSequenceClassification"], "model_type": "llama"})",
                  "is not a text-generation head"},
        DecoderBadCase{"rope_yarn", (std::string("{\"model_type\": \"llama\", ") + kLlamaBase +
                                R"(, "rope_scaling": {"rope_type": "yarn", "factor": 4.0}})"),
                  "supported: default, linear, llama3"},
        DecoderBadCase{"gqa_mismatch", (std::string("{\"model_type\": \"llama\", ") + kLlamaBase + R"(, "num_key_value_heads": 3})"),
                  "not a multiple of num_key_value_heads"},
        DecoderBadCase{"activation", (std::string("{\"model_type\": \"llama\", ") + kLlamaBase + R"(, "hidden_act": "relu2"})"),
                  "unsupported \"hidden_act\" 'relu2'"},
        DecoderBadCase{"eos_out_of_vocab", (std::string("{\"model_type\": \"llama\", ") + kLlamaBase + R"(, "eos_token_id": 300})"),
                  "outside the vocabulary"},
        DecoderBadCase{"not_json", "{", "is not a JSON object"}),
    [](const auto& info) { return info.param.name; });

TEST(DecoderModel, LastPromptLogitsEqualTransformers) {
  const nlohmann::json ref = HfReference("text_generation_llama");
  ASSERT_TRUE(ref.is_object());
  std::vector<int32_t> prompt = ref["prompt_last_logits"]["prompt_token_ids"].get<std::vector<int32_t>>();
  const std::vector<float> want = ref["prompt_last_logits"]["logits"].get<std::vector<float>>();
  for (int chunk : {1000, 5, 1}) {  // all at once, chunked prefill, one token per step
    const std::vector<float> got = PromptLogits(HfDir() + "/decoders/llama", prompt, chunk);
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-4) << "chunk " << chunk << " logit " << i;
  }
}

struct CaseRef {
  std::string model;  // directory under testdata/hf/decoders
  nlohmann::json c;
};

std::vector<CaseRef> Float32Cases() {
  std::vector<CaseRef> out;
  for (const std::string& m : DecoderModels()) {
    const nlohmann::json ref = HfReference("text_generation_" + m);
    if (!ref.is_object()) continue;
    for (const auto& c : ref["cases"]) {
      if (c["compute_dtype"] == "float32") out.push_back({m, c});
    }
  }
  return out;
}

class TextGenerationReferenceTest : public ::testing::TestWithParam<CaseRef> {};

// Every float32 greedy case: the prompt's first logits, the generated ids and the pipeline's output
// equal transformers'.
TEST_P(TextGenerationReferenceTest, EqualsTransformersPipeline) {
  const CaseRef& r = GetParam();
  const std::string dir = HfDir() + "/decoders/" + r.model;
  const std::vector<int32_t> prompt = r.c["prompt_token_ids"].get<std::vector<int32_t>>();
  const std::vector<float> head = r.c["prompt_last_logits_head"].get<std::vector<float>>();
  const std::vector<float> logits = PromptLogits(dir, prompt, 1000);
  ASSERT_GE(logits.size(), head.size());
  for (std::size_t i = 0; i < head.size(); ++i) EXPECT_NEAR(logits[i], head[i], 1e-4) << "logit " << i;

  nlohmann::json args = r.c["init_args"].is_object() ? r.c["init_args"] : nlohmann::json::object();
  for (const auto& [k, v] : r.c["call_args"].items()) args[k] = v;
  auto handler = Handler(dir, FromJson(args));
  ASSERT_TRUE(handler.ok()) << handler.status().ToString();
  auto model = (*handler)->LoadModel({});
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  const Value example = FromJson(r.c["prompt"]);
  ASSERT_TRUE((*model)->CheckExample(example).ok()) << (*model)->CheckExample(example).ToString();
  std::vector<const Value*> batch = {&example};
  std::vector<Value> predictions;
  ASSERT_TRUE((*model)->RunInference(batch, predictions).ok());
  ASSERT_EQ(predictions.size(), 1u);
  EXPECT_EQ(nlohmann::json::parse(predictions[0].ToJson()), r.c["output"]) << r.model << " " << r.c["name"];

  // The ids too (return_tensors gives prompt + generated).
  args["return_tensors"] = true;
  args.erase("return_full_text");
  auto ids_handler = Handler(dir, FromJson(args));
  ASSERT_TRUE(ids_handler.ok()) << ids_handler.status().ToString();
  auto ids_model = (*ids_handler)->LoadModel({});
  ASSERT_TRUE(ids_model.ok());
  predictions.clear();
  ASSERT_TRUE((*ids_model)->RunInference(batch, predictions).ok());
  std::vector<int32_t> want = prompt;
  for (const auto& id : r.c["generated_token_ids"]) want.push_back(id.get<int32_t>());
  const nlohmann::json got = nlohmann::json::parse(predictions[0].ToJson());
  EXPECT_EQ(got[0]["generated_token_ids"].get<std::vector<int32_t>>(), want);
}

INSTANTIATE_TEST_SUITE_P(References, TextGenerationReferenceTest, ::testing::ValuesIn(Float32Cases()),
                         [](const auto& info) {
                           std::string n = info.param.model + "_" + info.param.c["name"].template get<std::string>();
                           std::replace_if(n.begin(), n.end(), [](char ch) { return !std::isalnum(static_cast<unsigned char>(ch)); }, '_');
                           return n;
                         });

TEST(TextGeneration, CoversEveryCommittedModel) {
  std::vector<std::string> covered;
  for (const CaseRef& r : Float32Cases()) covered.push_back(r.model);
  for (const std::string& m : DecoderModels()) EXPECT_NE(std::find(covered.begin(), covered.end(), m), covered.end()) << m;
  EXPECT_GE(Float32Cases().size(), 60u);
}

}  // namespace
}  // namespace dfw::text_generation_test
