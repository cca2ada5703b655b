// The tiny random BERT in testdata/tiny_bert against the reference tokens and embeddings that
// scripts/make_tiny_bert.py computed with transformers, on every backend (CUDA rows skip
// without a GPU).
#include "dfw/inference/bert_encoder.h"

#include <gmock/gmock.h>
#include <functional>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dfw/backend/registry.h"
#include "dfw/inference/safetensors.h"
#include "dfw/tokenizers/wordpiece_tokenizer.h"

namespace dfw {
namespace bert_encoder_test {

using ::testing::HasSubstr;

const std::string kDir = std::string(DFW_SOURCE_DIR) + "/testdata/tiny_bert";

struct Case {
  std::string text;
  std::vector<std::string> tokens;
  std::vector<int32_t> ids;
  std::vector<float> mean, mean_normalized, cls;
};

struct Expected {
  int max_seq_length = 0;
  std::vector<Case> cases;
};

const Expected& LoadExpected() {
  static const Expected e = [] {
    std::ifstream in(kDir + "/expected.json");
    std::stringstream ss;
    ss << in.rdbuf();
    auto j = nlohmann::json::parse(ss.str());
    Expected out;
    out.max_seq_length = j["max_seq_length"].get<int>();
    for (const auto& c : j["cases"]) {
      out.cases.push_back(Case{c["text"], c["tokens"], c["ids"], c["mean"], c["mean_normalized"], c["cls"]});
    }
    return out;
  }();
  return e;
}

TEST(BertTokenizer, MatchesTransformersTokensExactly) {
  auto tok = WordPieceTokenizer::Load(kDir);
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  const Expected& e = LoadExpected();
  ASSERT_GE(e.cases.size(), 30u);
  std::vector<int32_t> ids;
  for (const Case& c : e.cases) {
    ASSERT_TRUE(tok->Encode(c.text, e.max_seq_length, ids).ok()) << c.text;
    EXPECT_EQ(ids, c.ids) << "text: " << c.text;
    std::vector<std::string> tokens;
    for (int32_t id : ids) tokens.push_back(tok->token(id));
    EXPECT_EQ(tokens, c.tokens) << "text: " << c.text;
  }
}

struct Model {
  std::unique_ptr<SafetensorsFile> weights;
  BertConfig config;
};

Model LoadModel() {
  Model m;
  auto config = BertConfig::Load(kDir + "/config.json");
  EXPECT_TRUE(config.ok()) << config.status().ToString();
  m.config = *config;
  auto w = SafetensorsFile::Open(kDir + "/model.safetensors");
  EXPECT_TRUE(w.ok()) << w.status().ToString();
  m.weights = std::move(*w);
  return m;
}

struct BackendCase {
  const char* backend;
  Pooling pooling;
  bool normalize;
  bool group_by_length;
  int max_batch;
};

void PrintTo(const BackendCase& c, std::ostream* os) {
  *os << c.backend << (c.pooling == Pooling::kCls ? " cls" : " mean") << (c.normalize ? " normalized" : "")
      << (c.group_by_length ? " grouped" : " in-order") << " max_batch=" << c.max_batch;
}

class BertParityTest : public ::testing::TestWithParam<BackendCase> {};

// "cpu_openblas" / "cpu_onednn": the CPU backend with its GEMM path forced; others by registry name.
Result<std::unique_ptr<InferenceBackend>> MakeBackendFor(const std::string& name) {
  if (name == "cpu_openblas") return MakeCpuBackend(CpuGemmPath::kOpenBlas);
  if (name == "cpu_onednn") return MakeCpuBackend(CpuGemmPath::kOneDnn);
  return CreateBackend(name);
}

TEST_P(BertParityTest, EmbeddingsMatchTransformersWithin1e4) {
  const BackendCase& p = GetParam();
  auto backend = MakeBackendFor(p.backend);
  if (!backend.ok()) GTEST_SKIP() << p.backend << " backend unavailable: " << backend.status().ToString();
  Model m = LoadModel();
  const Expected& e = LoadExpected();
  BertEncoderOptions o;
  o.max_batch = p.max_batch;
  o.max_seq_length = e.max_seq_length;
  o.pooling = p.pooling;
  o.normalize = p.normalize;
  auto enc = BertEncoder::Make(m.config, *m.weights, backend->get(), o);
  ASSERT_TRUE(enc.ok()) << enc.status().ToString();
  std::vector<std::span<const int32_t>> seqs;
  for (const Case& c : e.cases) seqs.emplace_back(c.ids);
  const int h = m.config.hidden_size;
  std::vector<float> out(seqs.size() * static_cast<std::size_t>(h), NAN);
  ASSERT_TRUE((*enc)->EncodeMany(seqs, out, p.group_by_length).ok());
  for (std::size_t i = 0; i < e.cases.size(); ++i) {
    const Case& c = e.cases[i];
    const std::vector<float>& want =
        p.pooling == Pooling::kCls ? c.cls : (p.normalize ? c.mean_normalized : c.mean);
    ASSERT_EQ(want.size(), static_cast<std::size_t>(h));
    for (int k = 0; k < h; ++k) {
      ASSERT_NEAR(out[i * h + k], want[static_cast<std::size_t>(k)], 1e-4) << "sentence " << i << " '" << c.text
                                                                           << "' dim " << k;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Backends, BertParityTest,
    ::testing::Values(BackendCase{"cpu", Pooling::kMean, true, true, 8}, BackendCase{"cpu", Pooling::kMean, false, false, 8},
                      BackendCase{"cpu", Pooling::kMean, true, false, 1}, BackendCase{"cpu", Pooling::kCls, false, true, 32},
                      BackendCase{"cpu_openblas", Pooling::kMean, true, true, 8},
                      BackendCase{"cpu_onednn", Pooling::kMean, true, true, 8},
                      BackendCase{"cpu_onednn", Pooling::kMean, false, false, 8},
                      BackendCase{"cpu_onednn", Pooling::kMean, true, false, 1},
                      BackendCase{"cpu_onednn", Pooling::kCls, false, true, 32},
                      BackendCase{"cuda", Pooling::kMean, true, true, 8}, BackendCase{"cuda", Pooling::kCls, false, false, 32}),
    [](const auto& info) {
      const BackendCase& c = info.param;
      return std::string(c.backend) + (c.pooling == Pooling::kCls ? "_cls" : "_mean") + (c.normalize ? "_norm" : "") +
             (c.group_by_length ? "_grouped" : "_inorder") + "_batch" + std::to_string(c.max_batch);
    });

TEST(BertEncoder, ShapeMismatchNamesTheTensor) {
  Model m = LoadModel();
  auto backend = MakeCpuBackend();
  BertConfig wrong = m.config;
  wrong.intermediate_size = 128;
  auto enc = BertEncoder::Make(wrong, *m.weights, backend.get(), BertEncoderOptions{});
  ASSERT_FALSE(enc.ok());
  EXPECT_EQ(enc.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(enc.status().message(), HasSubstr("encoder.layer.0.intermediate.dense.weight"));
  EXPECT_THAT(enc.status().message(), HasSubstr("[64, 32], expected [128, 32]"));

  wrong = m.config;
  wrong.num_hidden_layers = 3;
  enc = BertEncoder::Make(wrong, *m.weights, backend.get(), BertEncoderOptions{});
  ASSERT_FALSE(enc.ok());
  EXPECT_THAT(enc.status().message(), HasSubstr("no tensor 'encoder.layer.2.attention.self.query.weight'"));
}

// What handlers run when they are made (in the launcher): the header alone, the same verdicts and
// messages as Make, and no backend.
TEST(BertEncoder, CheckWeightsGivesMakesVerdictsFromTheHeaderAlone) {
  Model m = LoadModel();
  EXPECT_TRUE(BertEncoder::CheckWeights(m.config, *m.weights).ok());
  auto backend = MakeCpuBackend();
  for (auto change : std::vector<std::function<void(BertConfig&)>>{
           [](BertConfig& c) { c.intermediate_size = 128; }, [](BertConfig& c) { c.num_hidden_layers = 3; },
           [](BertConfig& c) { c.hidden_size = 48; }, [](BertConfig& c) { c.vocab_size += 1; }}) {
    BertConfig wrong = m.config;
    change(wrong);
    Status checked = BertEncoder::CheckWeights(wrong, *m.weights);
    auto made = BertEncoder::Make(wrong, *m.weights, backend.get(), BertEncoderOptions{});
    ASSERT_FALSE(made.ok());
    EXPECT_EQ(checked.code(), made.status().code());
    EXPECT_EQ(checked.message(), made.status().message());
  }
}

TEST(BertEncoder, RejectsBadOptionsAndInputs) {
  Model m = LoadModel();
  auto backend = MakeCpuBackend();
  BertEncoderOptions o;
  o.max_seq_length = 129;  // > max_position_embeddings
  EXPECT_THAT(BertEncoder::Make(m.config, *m.weights, backend.get(), o).status().message(),
              HasSubstr("max_position_embeddings"));
  o.max_seq_length = 8;
  o.max_batch = 2;
  auto enc = BertEncoder::Make(m.config, *m.weights, backend.get(), o);
  ASSERT_TRUE(enc.ok()) << enc.status().ToString();
  std::vector<int32_t> ok{2, 10, 3}, bad_id{2, 1000, 3}, too_long(9, 5), empty;
  std::vector<float> out(64);
  auto run = [&](std::vector<std::span<const int32_t>> seqs) {
    out.assign(seqs.size() * 32, 0.f);
    return (*enc)->Encode(seqs, out);
  };
  EXPECT_TRUE(run({ok, ok}).ok());
  EXPECT_THAT(run({ok, bad_id}).message(), HasSubstr("token id 1000 outside the vocabulary [0, 1000)"));
  EXPECT_THAT(run({too_long}).message(), HasSubstr("9 tokens; allowed 1..8"));
  EXPECT_THAT(run({empty}).message(), HasSubstr("0 tokens"));
  EXPECT_THAT(run({ok, ok, ok}).message(), HasSubstr("exceeds the encoder's max 2"));
  // EncodeMany splits what Encode refuses.
  std::vector<std::span<const int32_t>> three{ok, ok, ok};
  out.assign(3 * 32, 0.f);
  EXPECT_TRUE((*enc)->EncodeMany(three, out).ok());
}

// EncodeMany cuts its length-sorted sequences by tokens as well as by count: each cap gives the
// same embeddings as one uncapped call, and a cap of one token runs every sequence alone (nothing
// padded), which the uncapped sub-batch of mixed lengths does not.
TEST(BertEncoder, ATokenCapCutsSubBatchesAndKeepsEveryEmbedding) {
  Model m = LoadModel();
  const Expected& e = LoadExpected();
  auto backend = MakeCpuBackend();
  std::vector<std::span<const int32_t>> seqs;
  std::size_t shortest = std::numeric_limits<std::size_t>::max(), longest = 0;
  for (const Case& c : e.cases) {
    seqs.emplace_back(c.ids);
    shortest = std::min(shortest, c.ids.size());
    longest = std::max(longest, c.ids.size());
  }
  ASSERT_LT(shortest, longest) << "the cases need different lengths";
  const std::size_t h = static_cast<std::size_t>(m.config.hidden_size);
  auto encode = [&](int max_tokens, std::vector<float>& out, EncoderTokenCounts& counts) {
    BertEncoderOptions o;
    o.max_seq_length = e.max_seq_length;
    o.max_tokens = max_tokens;
    auto enc = BertEncoder::Make(m.config, *m.weights, backend.get(), o);
    ASSERT_TRUE(enc.ok()) << enc.status().ToString();
    EXPECT_EQ((*enc)->tokens_per_call(), max_tokens);
    out.assign(seqs.size() * h, NAN);
    ASSERT_TRUE((*enc)->EncodeMany(seqs, out, /*group_by_length=*/true).ok());
    counts = (*enc)->token_counts();
  };
  std::vector<float> whole, capped;
  EncoderTokenCounts whole_counts, capped_counts;
  encode(1 << 20, whole, whole_counts);
  EXPECT_GT(whole_counts.computed, whole_counts.real);  // one sub-batch padded to its longest
  for (int cap : {1, static_cast<int>(2 * longest), static_cast<int>(3 * shortest)}) {
    encode(cap, capped, capped_counts);
    EXPECT_EQ(capped_counts.real, whole_counts.real);
    EXPECT_LE(capped_counts.computed, whole_counts.computed) << "cap " << cap;
    if (cap == 1) {
      EXPECT_EQ(capped_counts.computed, capped_counts.real);
    }
    for (std::size_t i = 0; i < whole.size(); ++i) {
      ASSERT_NEAR(capped[i], whole[i], 1e-5) << "cap " << cap << ", sentence " << i / h;
    }
  }
  BertEncoderOptions bad;
  bad.max_tokens = -1;
  EXPECT_THAT(BertEncoder::Make(m.config, *m.weights, backend.get(), bad).status().message(),
              HasSubstr("max tokens per sub-batch must be >= 0"));
}

TEST(SubBatchSize, CutsByCountAndByTokensAndTakesAtLeastOne) {
  const std::vector<std::size_t> sorted{3, 5, 5, 9, 20};
  auto len = [&](std::size_t i) { return sorted[i]; };
  EXPECT_EQ(SubBatchSize(0, sorted.size(), 32, 16, len), 3u);  // 3 x 5 = 15; 4 x 9 = 36 > 16
  EXPECT_EQ(SubBatchSize(3, sorted.size(), 32, 16, len), 1u);  // 2 x 20 > 16
  EXPECT_EQ(SubBatchSize(4, sorted.size(), 32, 16, len), 1u);  // 20 > 16 alone: still one
  EXPECT_EQ(SubBatchSize(0, sorted.size(), 2, 1000, len), 2u);  // the count cap
  EXPECT_EQ(SubBatchSize(0, sorted.size(), 32, 1000, len), 5u);  // all that are left
  EXPECT_EQ(SubBatchSize(1, 3, 32, 1000, len), 2u);             // up to `count`
  // Not sorted: the longest so far decides, not the last.
  const std::vector<std::size_t> mixed{9, 3, 3};
  EXPECT_EQ(SubBatchSize(0, mixed.size(), 32, 17, [&](std::size_t i) { return mixed[i]; }), 1u);
  EXPECT_EQ(SubBatchSize(0, mixed.size(), 32, 27, [&](std::size_t i) { return mixed[i]; }), 3u);
}

struct ConfigCase {
  const char* name;
  std::string patch;  // JSON merged over the tiny model's config
  std::string error;  // substring of the message
};

void PrintTo(const ConfigCase& c, std::ostream* os) { *os << c.name; }

class BertConfigTest : public ::testing::TestWithParam<ConfigCase> {};

TEST_P(BertConfigTest, UnsupportedConfigsAreClearErrors) {
  std::ifstream in(kDir + "/config.json");
  std::stringstream ss;
  ss << in.rdbuf();
  auto j = nlohmann::json::parse(ss.str());
  j.merge_patch(nlohmann::json::parse(GetParam().patch));
  auto c = BertConfig::Parse(j.dump(), "config.json");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(c.status().message(), HasSubstr(GetParam().error));
}

INSTANTIATE_TEST_SUITE_P(
    Table, BertConfigTest,
    ::testing::Values(
        ConfigCase{"Gpt2", R"({"model_type": "gpt2"})", "unsupported \"model_type\" \"gpt2\"; supported: bert, distilbert, roberta"},
        ConfigCase{"ArchitectureOfAnotherFamily", R"({"architectures": ["RobertaModel"]})", "does not match model_type \"bert\""},
        ConfigCase{"Architecture", R"({"architectures": ["GPT2Model"]})", "unsupported architecture \"GPT2Model\""},
        ConfigCase{"Activation", R"({"hidden_act": "swish"})", "unsupported \"hidden_act\" 'swish'; supported: gelu"},
        ConfigCase{"RelativePositions", R"({"position_embedding_type": "relative_key"})", "supported: absolute"},
        ConfigCase{"MissingSize", R"({"hidden_size": null})", "missing \"hidden_size\""},
        ConfigCase{"NegativeSize", R"({"num_hidden_layers": -1})", "\"num_hidden_layers\" must be a positive integer"},
        ConfigCase{"HeadsDoNotDivide", R"({"num_attention_heads": 5})", "not a multiple of num_attention_heads 5"},
        ConfigCase{"NotBert", R"({"model_type": null, "architectures": null})", "says which model this is"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(BertConfig, ParsesTheTinyModel) {
  auto c = BertConfig::Load(kDir + "/config.json");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->hidden_size, 32);
  EXPECT_EQ(c->num_hidden_layers, 2);
  EXPECT_EQ(c->num_attention_heads, 4);
  EXPECT_EQ(c->intermediate_size, 64);
  EXPECT_EQ(c->vocab_size, 1000);
  EXPECT_EQ(c->hidden_act, Activation::kGelu);
  EXPECT_FLOAT_EQ(c->layer_norm_eps, 1e-12f);
  EXPECT_EQ(BertConfig::Load(kDir + "/nope.json").status().code(), StatusCode::kNotFound);
}

TEST(BertConfig, ReadsDistilBertAndRobertaConfigs) {
  auto d = BertConfig::Parse(R"({"model_type": "distilbert", "vocab_size": 10, "dim": 8, "n_layers": 1, "n_heads": 2,
                                 "hidden_dim": 12, "max_position_embeddings": 20, "activation": "relu"})",
                             "config.json");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->family, EncoderFamily::kDistilBert);
  EXPECT_EQ(d->hidden_size, 8);
  EXPECT_EQ(d->intermediate_size, 12);
  EXPECT_EQ(d->type_vocab_size, 0);
  EXPECT_EQ(d->hidden_act, Activation::kRelu);
  auto r = BertConfig::Parse(R"({"model_type": "xlm-roberta", "architectures": ["XLMRobertaForMaskedLM"], "vocab_size": 10,
                                 "hidden_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 12,
                                 "max_position_embeddings": 20, "type_vocab_size": 1, "pad_token_id": 1})",
                             "config.json");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->family, EncoderFamily::kRoberta);
  EXPECT_EQ(r->position_offset, 2);
  EXPECT_EQ(r->architecture, "XLMRobertaForMaskedLM");
}

}  // namespace bert_encoder_test
}  // namespace dfw
