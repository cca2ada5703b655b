// task: text-generation against transformers 5.24 on the committed tiny decoder models
// (testdata/hf/decoders, scripts/make_tiny_decoder_models.py; references by
// scripts/hf_generation_references.py): the forward pass's logits, and every greedy case's
// pipeline output and token ids exactly.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "dfw/backend/registry.h"
#include "dfw/inference/decoder_config.h"
#include "dfw/inference/decoder_model.h"
#include "dfw/inference/generation.h"
#include "dfw/inference/hf_pipeline_handler.h"
#include "hf_test_util.h"
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
std::vector<float> PromptLogits(const std::string& dir, const std::vector<int32_t>& prompt, int chunk,
                                LinearDType dtype = LinearDType::kFloat32) {
  auto cfg = DecoderConfig::Load(dir + "/config.json");
  EXPECT_TRUE(cfg.ok()) << cfg.status().ToString();
  auto file = SafetensorsFile::Open(dir + "/model.safetensors");
  EXPECT_TRUE(file.ok());
  auto backend = MakeCpuBackend();
  auto model = DecoderModel::Load(*cfg, **file, backend.get(), dtype);
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
        DecoderBadCase{"eps_zero_in_float32", (std::string("{\"model_type\": \"llama\", ") + kLlamaBase + R"(, "rms_norm_eps": 1e-112})"),
                  "\"rms_norm_eps\" is too small for float32"},
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

namespace dfw::text_generation_test {
namespace {

// The llama model loaded for the engine tests, with prompts from its reference.
struct Loaded {
  DecoderConfig config;
  std::unique_ptr<SafetensorsFile> file;
  std::unique_ptr<InferenceBackend> backend;
  std::unique_ptr<DecoderModel> model;
  std::vector<std::vector<int32_t>> prompts;
};

Loaded LoadLlama() {
  Loaded l;
  const std::string dir = HfDir() + "/decoders/llama";
  l.config = DecoderConfig::Load(dir + "/config.json").value();
  l.file = SafetensorsFile::Open(dir + "/model.safetensors").value();
  l.backend = MakeCpuBackend();
  l.model = DecoderModel::Load(l.config, *l.file, l.backend.get(), LinearDType::kFloat32).value();
  const nlohmann::json ref = HfReference("text_generation_llama");
  for (const auto& c : ref["cases"]) l.prompts.push_back(c["prompt_token_ids"].get<std::vector<int32_t>>());
  return l;
}

std::vector<std::vector<GeneratedSequence>> Generate(Loaded& l, const std::vector<std::size_t>& which, const GenerationParams& p,
                                                     EngineOptions eo, GenerationStats* stats_out = nullptr) {
  GenerationEngine engine(l.model.get(), eo);
  std::vector<GenerationRequest> requests;
  for (std::size_t i : which) {
    GenerationRequest q;
    q.prompt = l.prompts[i];
    q.params = &p;
    q.key = i;
    requests.push_back(std::move(q));
  }
  std::vector<std::vector<GeneratedSequence>> out;
  GenerationStats stats;
  const Status s = engine.Run(requests, out, stats);
  EXPECT_TRUE(s.ok()) << s.ToString();
  if (stats_out != nullptr) *stats_out = stats;
  return out;
}

GenerationParams Greedy(int new_tokens) {
  GenerationParams p;
  p.do_sample = false;
  p.max_new_tokens = new_tokens;
  return p;
}

// Continuous batching changes which rows share a step, never a sequence's tokens: every prompt
// alone, then all together with 3 slots and prefill cut into 4-row chunks.
TEST(GenerationEngine, BatchedSequencesGetTheTokensTheyGetAlone) {
  Loaded l = LoadLlama();
  ASSERT_GE(l.prompts.size(), 6u);
  const GenerationParams p = Greedy(10);
  std::vector<std::size_t> all;
  for (std::size_t i = 0; i < l.prompts.size(); ++i) all.push_back(i);
  EngineOptions together;
  together.max_sequences = 3;
  together.max_step_tokens = 4;
  GenerationStats stats;
  auto batched = Generate(l, all, p, together, &stats);
  EXPECT_EQ(stats.max_active, 3);
  EXPECT_EQ(stats.generated_tokens, static_cast<int64_t>(10 * all.size()));
  for (std::size_t i : all) {
    auto alone = Generate(l, {i}, p, EngineOptions{});
    ASSERT_EQ(batched[i].size(), 1u);
    EXPECT_EQ(batched[i][0].tokens, alone[0][0].tokens) << "prompt " << i;
    EXPECT_EQ(batched[i][0].finish_reason, "length");
  }
}

// A KV cache too small for every sequence at once: sequences are preempted and recomputed, and
// still get their tokens.
TEST(GenerationEngine, PreemptionUnderAFullCacheLosesNothing) {
  Loaded l = LoadLlama();
  const GenerationParams p = Greedy(24);
  std::vector<std::size_t> which = {0, 1, 2, 3};
  EngineOptions small;
  small.max_sequences = 4;
  // Blocks for about five 16-token blocks: fewer than four growing sequences need.
  small.kv_cache_bytes = 5 * l.config.KvBytesPerToken(sizeof(float)) * PagedKvCache::kBlockTokens;
  GenerationStats stats;
  auto tight = Generate(l, which, p, small, &stats);
  EXPECT_GT(stats.preemptions, 0);
  for (std::size_t k = 0; k < which.size(); ++k) {
    auto alone = Generate(l, {which[k]}, p, EngineOptions{});
    EXPECT_EQ(tight[k][0].tokens, alone[0][0].tokens) << "prompt " << which[k];
  }
}

TEST(GenerationEngine, ASequenceLargerThanTheWholeCacheIsRefusedWithTheSizes) {
  Loaded l = LoadLlama();
  EngineOptions tiny;
  tiny.kv_cache_bytes = l.config.KvBytesPerToken(sizeof(float)) * PagedKvCache::kBlockTokens;  // one block
  GenerationEngine engine(l.model.get(), tiny);
  const Status s = engine.CheckFits(40);
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(s.message(), HasSubstr("needs 3 KV-cache blocks"));
  EXPECT_THAT(s.message(), HasSubstr("the cache holds 1"));
}

// Seeded sampling: the same tokens on every run, whatever shares the steps; another seed differs.
TEST(GenerationEngine, SeededSamplingRepeatsAcrossRunsAndBatching) {
  Loaded l = LoadLlama();
  GenerationParams p;
  p.do_sample = true;
  p.temperature = 1.5;
  p.max_new_tokens = 16;
  p.num_return_sequences = 3;
  p.seed = 7;
  auto first = Generate(l, {0, 1, 2}, p, EngineOptions{});
  auto again = Generate(l, {0, 1, 2}, p, EngineOptions{});
  EngineOptions narrow;
  narrow.max_sequences = 2;
  narrow.max_step_tokens = 3;
  auto narrowed = Generate(l, {0, 1, 2}, p, narrow);
  for (std::size_t r = 0; r < 3; ++r) {
    ASSERT_EQ(first[r].size(), 3u);
    for (std::size_t k = 0; k < 3; ++k) {
      EXPECT_EQ(first[r][k].tokens, again[r][k].tokens);
      EXPECT_EQ(first[r][k].tokens, narrowed[r][k].tokens);
    }
    EXPECT_NE(first[r][0].tokens, first[r][1].tokens) << "return sequences draw from their own streams";
  }
  p.seed = 8;
  auto other = Generate(l, {0}, p, EngineOptions{});
  EXPECT_NE(other[0][0].tokens, first[0][0].tokens);
}

TEST(ChooseToken, RepetitionPenaltyDividesPositiveAndMultipliesNegativeLogits) {
  GenerationParams p;
  p.do_sample = false;
  p.repetition_penalty = 2.0;
  // Token 0 (3.0, seen) becomes 1.5 < token 1 (2.0); token 2 (-1, seen) becomes -2.
  std::vector<float> logits = {3.0f, 2.0f, -1.0f};
  std::vector<int32_t> context = {0, 2, 0};
  EXPECT_EQ(ChooseToken(logits, context, p, false, 0), 1);
  EXPECT_FLOAT_EQ(logits[0], 1.5f);
  EXPECT_FLOAT_EQ(logits[2], -2.0f);
}

TEST(ChooseToken, TopKTopPAndMinPLeaveOnlyTheTokensTransformersKeeps) {
  GenerationParams p;
  p.do_sample = true;
  p.temperature = 1.0;
  p.top_k = 2;
  // Softmax of {0, ln 2, ln 3, ln 4} = {.1, .2, .3, .4}: top-k 2 keeps ids 2 and 3 (3/7, 4/7).
  const std::vector<float> base = {0.0f, std::log(2.0f), std::log(3.0f), std::log(4.0f)};
  for (double u : {0.0, 0.42, 0.43, 0.99}) {
    std::vector<float> l = base;
    const int32_t t = ChooseToken(l, {}, p, false, u);
    EXPECT_EQ(t, u < 3.0 / 7.0 ? 2 : 3) << u;
  }
  // top-p 0.5 (no top-k): ascending cumulative .1 .3 .6 1.0; <= 0.5 removed: ids 2 and 3 stay.
  p.top_k = 0;
  p.top_p = 0.5;
  std::vector<float> l = base;
  EXPECT_EQ(ChooseToken(l, {}, p, false, 0.0), 2);
  EXPECT_TRUE(std::isinf(l[0]) && std::isinf(l[1]));
  // min-p 0.6: keeps probabilities >= 0.6 x 0.4 = 0.24: ids 2 and 3.
  p.top_p = 1.0;
  p.min_p = 0.6;
  l = base;
  EXPECT_EQ(ChooseToken(l, {}, p, false, 0.0), 2);
  EXPECT_TRUE(std::isinf(l[1]));
  // EOS masked before min_new_tokens.
  GenerationParams g;
  g.do_sample = false;
  g.eos_token_ids = {3};
  l = base;
  EXPECT_EQ(ChooseToken(l, {}, g, true, 0.0), 2);
}

TEST(CounterUniform, IsInTheUnitIntervalAndDependsOnEveryCounter) {
  const double a = CounterUniform(1, 2, 3, 4);
  EXPECT_GE(a, 0.0);
  EXPECT_LT(a, 1.0);
  EXPECT_EQ(a, CounterUniform(1, 2, 3, 4));
  EXPECT_NE(a, CounterUniform(0, 2, 3, 4));
  EXPECT_NE(a, CounterUniform(1, 0, 3, 4));
  EXPECT_NE(a, CounterUniform(1, 2, 0, 4));
  EXPECT_NE(a, CounterUniform(1, 2, 3, 0));
}

struct BadArgs {
  std::string name;
  std::string model;
  std::string args;
  std::string message;
};

class TextGenerationBadArgsTest : public ::testing::TestWithParam<BadArgs> {};

TEST_P(TextGenerationBadArgsTest, IsRefusedAtLoadNamingTheArgument) {
  auto h = Handler(HfDir() + "/decoders/" + GetParam().model, FromJson(nlohmann::json::parse(GetParam().args)));
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(h.status().message(), HasSubstr(GetParam().message));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, TextGenerationBadArgsTest,
    ::testing::Values(
        BadArgs{"unknown", "llama", R"({"num_beams": 4})", "unknown argument 'num_beams'; supported: max_new_tokens"},
        BadArgs{"greedy_many", "llama", R"({"do_sample": false, "num_return_sequences": 2})", "does not support num_return_sequences 2"},
        BadArgs{"stop_strings", "llama", R"({"stop_strings": ["x"]})", "use 'stop_sequence'"},
        BadArgs{"temperature", "llama", R"({"do_sample": true, "temperature": 0})", "must be strictly positive when sampling"},
        BadArgs{"top_p", "llama", R"({"top_p": 1.5})", "'top_p' must be in (0, 1]"},
        BadArgs{"eos", "llama", R"({"eos_token_id": 5000})", "must be a token id (0..299)"},
        BadArgs{"dtype", "llama", R"({"dtype": "float8"})", "supported: float32, auto (float32), bfloat16"},
        BadArgs{"max_new_tokens", "llama", R"({"max_new_tokens": -1})", "'max_new_tokens' must be an integer"}),
    [](const auto& info) { return info.param.name; });

Result<std::unique_ptr<Model>> LoadedModel(const std::string& model, const std::string& args) {
  ASSIGN_OR_RETURN(auto h, Handler(HfDir() + "/decoders/" + model, FromJson(nlohmann::json::parse(args))));
  return h->LoadModel({});
}

TEST(TextGeneration, BadExamplesAreRefusedOneByOneWithTheReason) {
  auto m = LoadedModel("gpt2", R"({"do_sample": false, "max_new_tokens": 8})");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  // A prompt longer than the context (GPT-2's n_positions is 64): an error, never truncated.
  std::string longer;
  for (int i = 0; i < 80; ++i) longer += "Hello world! ";
  Status s = (*m)->CheckExample(Value::String(longer));
  EXPECT_THAT(s.message(), HasSubstr("longer than the model's context"));
  EXPECT_THAT(s.message(), HasSubstr("not truncated"));
  // Growing prompts: the first refused one fits the context but not with its 8 new tokens (GPT-2's
  // learned positions end at 64).
  std::string near;
  Status first_refusal;
  for (int i = 0; i < 40 && first_refusal.ok(); ++i) {
    near += "Hello world! ";
    first_refusal = (*m)->CheckExample(Value::String(near));
  }
  EXPECT_THAT(first_refusal.message(), HasSubstr("with max_new_tokens 8 it passes GPT-2's n_positions 64"));
  EXPECT_THAT((*m)->CheckExample(Value::Int(3)).message(), HasSubstr("takes a string or a chat"));
  // A chat to a model with no chat template.
  const Value chat = FromJson(nlohmann::json::parse(R"([{"role": "user", "content": "hi"}])"));
  EXPECT_THAT((*m)->CheckExample(chat).message(), HasSubstr("has no chat template"));
  auto chatty = LoadedModel("llama", R"({"do_sample": false, "max_new_tokens": 4})");
  ASSERT_TRUE(chatty.ok());
  const Value bad_turns = FromJson(nlohmann::json::parse(R"([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}])"));
  EXPECT_THAT((*chatty)->CheckExample(bad_turns).message(), HasSubstr("Conversation roles must alternate"));
  EXPECT_THAT((*chatty)->CheckExample(FromJson(nlohmann::json::parse(R"([{"content": "a"}])"))).message(),
              HasSubstr("with a string 'role'"));
  EXPECT_TRUE((*chatty)->CheckExample(chat).ok());
}

// No task: a causal-LM config.json implies text-generation (as transformers infers it).
TEST(TextGeneration, ACausalLmWithoutTaskRunsTextGeneration) {
  auto h = Handler(HfDir() + "/decoders/gemma", FromJson(nlohmann::json::object()), /*with_task=*/false);
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  auto m = (*h)->LoadModel({});
  ASSERT_TRUE(m.ok());
  const Value prompt = Value::String("Hello");
  std::vector<const Value*> batch = {&prompt};
  std::vector<Value> out;
  ASSERT_TRUE((*m)->RunInference(batch, out).ok());
  const nlohmann::json got = nlohmann::json::parse(out[0].ToJson());
  ASSERT_TRUE(got.is_array());
  EXPECT_TRUE(got[0]["generated_text"].get<std::string>().starts_with("Hello"));
  bool tokens = false;
  for (const auto& [name, value] : (*m)->BatchFigures()) tokens = tokens || (name == "num_generated_tokens" && value > 0);
  EXPECT_TRUE(tokens);
}

}  // namespace
}  // namespace dfw::text_generation_test

namespace dfw::text_generation_test {
namespace {

// A long prompt in one step splits attention across threads; one row per step never does: the same
// logits either way.
TEST(DecoderModel, ThreadedAttentionOverALongPromptEqualsOneRowAtATime) {
  ASSERT_TRUE(SetBlasThreads(2).ok());
  std::vector<int32_t> prompt;
  for (int i = 0; i < 300; ++i) prompt.push_back(static_cast<int32_t>((i * 37 + 11) % 300));
  const std::string dir = HfDir() + "/decoders/llama";
  const std::vector<float> all = PromptLogits(dir, prompt, 1000);
  const std::vector<float> one = PromptLogits(dir, prompt, 1);
  ASSERT_EQ(all.size(), one.size());
  for (std::size_t i = 0; i < all.size(); ++i) ASSERT_NEAR(all[i], one[i], 1e-4) << i;
}

}  // namespace
}  // namespace dfw::text_generation_test

namespace dfw::text_generation_test {
namespace {

// bfloat16 Linear layers (load_pipeline_args dtype: bfloat16) where the CPU has them: the prompt's
// logits stay within bfloat16's precision of float32's, by prefill (oneDNN) and by decode steps
// (the streaming kernels' bfloat16 weights).
TEST(DecoderModel, BFloat16LogitsTrackFloat32) {
  if (!MakeCpuBackend()->CheckLinearDType(LinearDType::kBFloat16).ok()) GTEST_SKIP() << "no bfloat16 on this CPU";
  const nlohmann::json ref = HfReference("text_generation_llama");
  const std::vector<int32_t> prompt = ref["prompt_last_logits"]["prompt_token_ids"].get<std::vector<int32_t>>();
  const std::string dir = HfDir() + "/decoders/llama";
  const std::vector<float> f32 = PromptLogits(dir, prompt, 1000);
  for (int chunk : {1000, 1}) {
    const std::vector<float> bf = PromptLogits(dir, prompt, chunk, LinearDType::kBFloat16);
    ASSERT_EQ(bf.size(), f32.size());
    double dot = 0, na = 0, nb = 0, worst = 0;
    for (std::size_t i = 0; i < f32.size(); ++i) {
      dot += static_cast<double>(f32[i]) * bf[i];
      na += static_cast<double>(f32[i]) * f32[i];
      nb += static_cast<double>(bf[i]) * bf[i];
      worst = std::max(worst, std::abs(static_cast<double>(f32[i]) - bf[i]));
    }
    EXPECT_GT(dot / std::sqrt(na * nb), 0.999) << "chunk " << chunk;
    EXPECT_LT(worst, 0.2) << "chunk " << chunk;
    EXPECT_GT(worst, 0.0) << "bfloat16 weights must change something (chunk " << chunk << ")";
  }
}

}  // namespace
}  // namespace dfw::text_generation_test
