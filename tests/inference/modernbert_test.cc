// ModernBERT's config.json reading, the weights' checks and the precision switch on the committed
// tiny models (testdata/hf/modernbert-*; their pipeline results against transformers are in
// hf_pipeline_handler_test.cc's references).
#include "dfw/inference/modernbert_encoder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "dfw/backend/cpu_isa.h"
#include "dfw/backend/registry.h"
#include "dfw/inference/safetensors.h"
#include "hf_test_util.h"

namespace dfw {
namespace {

using ::testing::HasSubstr;
using testing::HfDir;

constexpr const char* kBase = R"({"model_type": "modernbert", "architectures": ["ModernBertForMaskedLM"],
  "vocab_size": 50, "hidden_size": 16, "num_hidden_layers": 4, "num_attention_heads": 2, "intermediate_size": 24,
  "max_position_embeddings": 64)";

Result<BertConfig> ParseWith(const std::string& extra) { return BertConfig::Parse(std::string(kBase) + extra + "}", "c.json"); }

TEST(ModernBertConfig, ReadsTransformers5AndTransformers4Spellings) {
  auto v5 = ParseWith(R"(, "layer_types": ["full_attention", "sliding_attention", "sliding_attention", "full_attention"],
      "rope_parameters": {"full_attention": {"rope_type": "default", "rope_theta": 160000.0},
                          "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}},
      "local_attention": 8, "classifier_pooling": "mean", "norm_bias": true, "classifier_activation": "gelu_new")");
  ASSERT_TRUE(v5.ok()) << v5.status().ToString();
  EXPECT_EQ(v5->family, EncoderFamily::kModernBert);
  EXPECT_EQ(v5->modern.sliding, (std::vector<uint8_t>{0, 1, 1, 0}));
  EXPECT_EQ(v5->modern.local_attention, 8);
  EXPECT_FLOAT_EQ(v5->modern.global_rope_theta, 160000.f);
  EXPECT_FLOAT_EQ(v5->modern.local_rope_theta, 10000.f);
  EXPECT_TRUE(v5->modern.mean_pooling);
  EXPECT_TRUE(v5->modern.norm_bias);
  EXPECT_FALSE(v5->modern.attention_bias);
  EXPECT_EQ(v5->modern.classifier_act, Activation::kGeluTanh);
  EXPECT_FLOAT_EQ(v5->layer_norm_eps, 1e-5f);
  // transformers 4: global_attn_every_n_layers and the two theta keys.
  auto v4 = ParseWith(R"(, "global_attn_every_n_layers": 2, "global_rope_theta": 5000.0, "local_rope_theta": 300.0)");
  ASSERT_TRUE(v4.ok()) << v4.status().ToString();
  EXPECT_EQ(v4->modern.sliding, (std::vector<uint8_t>{0, 1, 0, 1}));
  EXPECT_FLOAT_EQ(v4->modern.global_rope_theta, 5000.f);
  EXPECT_FLOAT_EQ(v4->modern.local_rope_theta, 300.f);
  // The defaults: every third layer global, ModernBertConfig's thetas, [CLS] pooling.
  auto plain = ParseWith("");
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_EQ(plain->modern.sliding, (std::vector<uint8_t>{0, 1, 1, 0}));
  EXPECT_FLOAT_EQ(plain->modern.global_rope_theta, 160000.f);
  EXPECT_FALSE(plain->modern.mean_pooling);
}

TEST(ModernBertConfig, WhatItCannotRunIsRefusedNamingIt) {
  struct Case {
    std::string extra, want;
  };
  for (const Case& c : std::vector<Case>{
           {R"(, "classifier_pooling": "max")", "\"classifier_pooling\" \"max\"; supported: cls, mean"},
           {R"(, "layer_types": ["full_attention"])", "one type per layer"},
           {R"(, "layer_types": ["full_attention", "chunked", "full_attention", "full_attention"])", "layer_types[1]"},
           {R"(, "rope_parameters": {"full_attention": {"rope_type": "yarn", "rope_theta": 1.0}})", "rope_type \"yarn\""},
           {R"(, "rope_scaling": {"type": "linear", "factor": 2.0})", "\"rope_scaling\" is not supported"},
           {R"(, "hidden_activation": "swish")", "\"hidden_activation\" 'swish'"},
           {R"(, "norm_bias": "yes")", "\"norm_bias\" must be true or false"},
           {R"(, "norm_eps": 1e-112)", "\"norm_eps\" must be a number in [1e-30, 1]"},
       }) {
    auto r = ParseWith(c.extra);
    ASSERT_FALSE(r.ok()) << c.extra;
    EXPECT_THAT(r.status().message(), HasSubstr(c.want)) << c.extra;
  }
  auto odd = BertConfig::Parse(R"({"model_type": "modernbert", "vocab_size": 50, "hidden_size": 18, "num_hidden_layers": 1,
      "num_attention_heads": 2, "intermediate_size": 24, "max_position_embeddings": 64})", "c.json");
  ASSERT_FALSE(odd.ok());
  EXPECT_THAT(odd.status().message(), HasSubstr("even head size"));
}

// Found by the config fuzzer: an epsilon below float32's range became 0 (a LayerNorm of a constant
// row then divides by zero); every family refuses it.
TEST(EncoderConfig, AnEpsilonThatIsZeroInFloat32IsRefused) {
  auto bert = BertConfig::Parse(R"({"model_type": "bert", "vocab_size": 50, "hidden_size": 16, "num_hidden_layers": 1,
      "num_attention_heads": 2, "intermediate_size": 24, "max_position_embeddings": 64, "type_vocab_size": 2,
      "layer_norm_eps": 1e-112})", "c.json");
  ASSERT_FALSE(bert.ok());
  EXPECT_THAT(bert.status().message(), HasSubstr("\"layer_norm_eps\" must be a number in [1e-30, 1], got 1e-112"));
}

TEST(ModernBertEncoder, ChecksTheCommittedWeightsAndRefusesTheBertEncoder) {
  const std::string dir = HfDir() + "/modernbert-masked-lm";
  auto config = BertConfig::Load(dir + "/config.json");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  auto file = SafetensorsFile::Open(dir + "/model.safetensors");
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_TRUE(ModernBertEncoder::CheckWeights(*config, **file).ok());
  // The sentence-embedding handler's encoder says where ModernBERT runs.
  Status bert = BertEncoder::CheckWeights(*config, **file);
  EXPECT_THAT(bert.message(), HasSubstr("runs in HuggingFacePipelineModelHandler"));
  // A config that disagrees with the weights names the tensor.
  BertConfig wide = *config;
  wide.intermediate_size = 32;
  Status shape = ModernBertEncoder::CheckWeights(wide, **file);
  EXPECT_THAT(shape.message(), HasSubstr("layers.0.mlp.Wi.weight"));
  EXPECT_THAT(shape.message(), HasSubstr("expected [64, 16]"));
}

TEST(ModernBertEncoder, BFloat16LinearLayersStayCloseToFloat32) {
  const auto isa = DetectCpuIsa();
  if (!CheckLinearDTypeOn(isa, LinearDType::kBFloat16).ok()) GTEST_SKIP() << "this CPU has no avx512_bf16 or amx_bf16";
  const std::string dir = HfDir() + "/modernbert-masked-lm";
  auto config = BertConfig::Load(dir + "/config.json");
  auto file = SafetensorsFile::Open(dir + "/model.safetensors");
  ASSERT_TRUE(config.ok() && file.ok());
  auto backend = MakeCpuBackend();
  auto f32 = ModernBertEncoder::Make(*config, **file, backend.get(), 32);
  auto b16 = ModernBertEncoder::Make(*config, **file, backend.get(), 32, LinearDType::kBFloat16);
  ASSERT_TRUE(f32.ok() && b16.ok()) << f32.status().ToString() << b16.status().ToString();
  const std::vector<int32_t> a = {2, 10, 11, 12, 13, 14, 15, 3}, b = {2, 20, 3};
  std::vector<std::span<const int32_t>> seqs = {a, b};
  std::vector<float> x, y;
  int sx = 0, sy = 0;
  ASSERT_TRUE((*f32)->EncodeTokens(seqs, {}, x, sx).ok());
  ASSERT_TRUE((*b16)->EncodeTokens(seqs, {}, y, sy).ok());
  ASSERT_EQ(sx, 8);
  ASSERT_EQ(x.size(), y.size());
  double dot = 0, nx = 0, ny = 0;
  for (std::size_t i = 0; i < x.size() / 2; ++i) {  // the first sequence's rows (no padding)
    dot += x[i] * y[i];
    nx += x[i] * x[i];
    ny += y[i] * y[i];
  }
  EXPECT_GT(dot / std::sqrt(nx * ny), 0.999);
  EXPECT_EQ((*b16)->linear_dtype(), LinearDType::kBFloat16);
  EXPECT_EQ((*f32)->token_counts().real, 11);
  EXPECT_EQ((*f32)->token_counts().computed, 16);
  // Bad input is refused before any compute.
  const std::vector<int32_t> bad = {2, 9999, 3};
  std::vector<std::span<const int32_t>> bads = {bad};
  EXPECT_THAT((*f32)->EncodeTokens(bads, {}, x, sx).message(), HasSubstr("outside the vocabulary"));
}

}  // namespace
}  // namespace dfw
