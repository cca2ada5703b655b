// The model side of the decoder engine (dfw/backend/device_decoder.h): the KV cache's block ids,
// the spec a config gives, and DecoderModel handing every step to the backend's decoder — here a
// fake, implemented below, that keeps a token "KV pool" indexed by the block ids it is given and
// answers logits computed from what it reads back through the block tables, so a wrong table, a
// shared block or a lost write changes the generated tokens; and the CPU backend's decoder on a
// committed checkpoint against transformers' logits.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "dfw/backend/device_decoder.h"
#include "dfw/backend/registry.h"
#include "dfw/inference/decoder_config.h"
#include "dfw/inference/decoder_model.h"
#include "dfw/inference/generation.h"
#include "dfw/inference/hf_pipeline_handler.h"
#include "hf_test_util.h"

namespace dfw::device_decoder_test {
namespace {

using ::testing::HasSubstr;
using testing::HfDir;
using testing::HfReference;

DecoderConfig Config(const std::string& model) {
  auto c = DecoderConfig::Load(HfDir() + "/decoders/" + model + "/config.json");
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? *c : DecoderConfig{};
}

// ---------------------------------------------------------------- the cache's block ids

// Ids are handed out densely from 0, freed ones reused first; a reservation the pool cannot hold
// changes nothing.
TEST(PagedKvCache, HandsOutBlockIdsDenselyAndReusesFreedOnes) {
  const DecoderConfig c = Config("llama");
  const uint64_t budget = 6 * c.KvBytesPerToken(sizeof(float)) * PagedKvCache::kBlockTokens;  // 6 blocks
  PagedKvCache cache(c, budget);
  EXPECT_EQ(cache.max_blocks(), 6);
  EXPECT_EQ(cache.block_bytes(), c.KvBytesPerToken(sizeof(float)) * PagedKvCache::kBlockTokens);
  auto ids = [&](int seq) { return std::vector<int>(cache.blocks(seq).begin(), cache.blocks(seq).end()); };
  const int a = cache.AddSequence(), b = cache.AddSequence();
  ASSERT_TRUE(cache.Reserve(a, 20));  // 2 blocks
  ASSERT_TRUE(cache.Reserve(b, 33));  // 3 blocks
  EXPECT_EQ(ids(a), (std::vector<int>{0, 1}));
  EXPECT_EQ(ids(b), (std::vector<int>{2, 3, 4}));
  EXPECT_EQ(cache.capacity_tokens(b), 48);
  EXPECT_EQ(cache.free_blocks(), 1);
  EXPECT_FALSE(cache.Reserve(a, 64));  // 2 more: 1 left
  EXPECT_EQ(ids(a), (std::vector<int>{0, 1}));
  cache.Release(a);
  EXPECT_EQ(cache.free_blocks(), 3);
  const int c2 = cache.AddSequence();
  EXPECT_EQ(c2, a);  // the sequence id is reused too
  ASSERT_TRUE(cache.Reserve(c2, 48));  // a's blocks, then the one never handed out
  EXPECT_EQ(ids(c2), (std::vector<int>{1, 0, 5}));
  EXPECT_EQ(ids(b), (std::vector<int>{2, 3, 4}));
  EXPECT_EQ(cache.free_blocks(), 0);
}

// ---------------------------------------------------------------- the spec

TEST(DecoderSpec, FromConfigCarriesSizesRopeFrequenciesAndSwitches) {
  const DecoderConfig c = Config("llama-linear-tied");  // rope_theta 10000, linear scaling factor 2
  const DecoderSpec s = DecoderSpecFromConfig(c, LinearDType::kBFloat16);
  EXPECT_FALSE(s.gpt2);
  EXPECT_EQ(s.hidden_size, c.hidden_size);
  EXPECT_EQ(s.num_heads, c.num_heads);
  EXPECT_EQ(s.num_kv_heads, c.num_kv_heads);
  EXPECT_EQ(s.head_dim, 8);
  EXPECT_EQ(s.num_layers, 2);
  EXPECT_EQ(s.linear_dtype, LinearDType::kBFloat16);
  EXPECT_EQ(s.act, DecoderGateActivation::kSilu);
  EXPECT_FLOAT_EQ(s.query_scale, 1.0f / std::sqrt(8.0f));
  ASSERT_EQ(s.inv_freq.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    const double want = 1.0 / std::pow(10000.0, 2.0 * i / 8) / 2.0;
    EXPECT_NEAR(s.inv_freq[static_cast<std::size_t>(i)], want, 1e-6 * want) << "frequency " << i;
  }
  EXPECT_EQ(s.sliding_window, 0);

  const DecoderSpec g2 = DecoderSpecFromConfig(Config("gemma2"), LinearDType::kFloat32);
  EXPECT_EQ(g2.sliding_window, 8);
  EXPECT_EQ(g2.sliding, (std::vector<uint8_t>{1, 0}));  // layer_types: sliding, full
  EXPECT_FLOAT_EQ(g2.attn_logit_softcap, 4.0f);
  EXPECT_FLOAT_EQ(g2.final_logit_softcap, 6.0f);
  EXPECT_FLOAT_EQ(g2.query_scale, 1.0f / std::sqrt(24.0f));  // query_pre_attn_scalar
  EXPECT_TRUE(g2.sandwich_norms);
  EXPECT_TRUE(g2.norm_plus_one);
  EXPECT_TRUE(g2.scale_embeddings);
  EXPECT_EQ(g2.act, DecoderGateActivation::kGeluTanh);
  ASSERT_EQ(g2.inv_freq.size(), 8u);
  EXPECT_FLOAT_EQ(g2.inv_freq[0], 1.0f);

  const DecoderSpec m = DecoderSpecFromConfig(Config("mistral"), LinearDType::kFloat32);
  EXPECT_EQ(m.sliding_window, 8);
  EXPECT_EQ(m.sliding, (std::vector<uint8_t>{1, 1}));

  const DecoderSpec gpt2 = DecoderSpecFromConfig(Config("gpt2"), LinearDType::kFloat32);
  EXPECT_TRUE(gpt2.gpt2);
  EXPECT_TRUE(gpt2.inv_freq.empty());
  EXPECT_EQ(gpt2.max_positions, Config("gpt2").max_position_embeddings);
  EXPECT_EQ(gpt2.act, DecoderGateActivation::kGeluTanh);
}

TEST(DecoderSpec, ValidationNamesWhatIsMissing) {
  DecoderSpec s = DecoderSpecFromConfig(Config("llama"), LinearDType::kFloat32);
  Status st = ValidateDecoderSpec(s);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("0 layers of weights for num_layers 2"));
  s.inv_freq.pop_back();
  s.layers.resize(2);
  st = ValidateDecoderSpec(s);
  EXPECT_THAT(st.message(), HasSubstr("RoPE frequencies for head_dim 8"));
  // GPT-2 has learned positions: a spec that would also rotate is refused, not run.
  DecoderSpec g = DecoderSpecFromConfig(Config("gpt2"), LinearDType::kFloat32);
  g.inv_freq = {1.0f};
  g.layers.resize(static_cast<std::size_t>(g.num_layers));
  EXPECT_THAT(ValidateDecoderSpec(g).message(), HasSubstr("gpt2 has no RoPE"));
}

// ---------------------------------------------------------------- a fake device

// What the fake saw of the spec, copied while its pointers were valid.
struct SeenSpec {
  DecoderSpec spec;  // sizes and switches (pointers cleared)
  std::vector<float> embed_row1, lm_head_row0, qkv0_row0, final_norm;
  bool layers_complete = false;
};

// The fake's "KV pool": per block id, the token written at each of its 16 slots (-1: never).
// Logits rows answer one-hot at Next(tokens read back for positions 0..p), so the engine's greedy
// choice is that token exactly when every earlier position of the sequence was written to, and
// read back from, the blocks its table names.
class FakeDecoder final : public DeviceDecoder {
 public:
  static constexpr int kVocabUsed = 250;
  static int32_t Next(const std::vector<int32_t>& tokens) {
    uint64_t h = 1469598103934665603ull;
    for (int32_t t : tokens) h = (h ^ static_cast<uint64_t>(t)) * 1099511628211ull;
    return static_cast<int32_t>(3 + h % kVocabUsed);
  }

  FakeDecoder(int vocab, std::vector<std::string>* problems) : vocab_(vocab), problems_(problems) {}

  Status Step(std::span<const DeviceStepRow> rows, const DeviceBlockTables& tables, std::vector<float>& logits) override {
    ++steps_;
    rows_seen_.assign(rows.begin(), rows.end());
    offsets_seen_.assign(tables.offsets.begin(), tables.offsets.end());
    ids_seen_.assign(tables.block_ids.begin(), tables.block_ids.end());
    pool_blocks_seen_ = tables.pool_blocks;
    // Tables of different sequences never share a block, and every id is in the pool.
    std::set<int32_t> ids;
    for (int32_t id : tables.block_ids) {
      if (!ids.insert(id).second) problems_->push_back("block " + std::to_string(id) + " in two tables of one step");
      if (id < 0 || id >= tables.pool_blocks) problems_->push_back("block " + std::to_string(id) + " outside the pool");
    }
    auto table = [&](const DeviceStepRow& r) {
      return std::span<const int32_t>(tables.block_ids.data() + tables.offsets[static_cast<std::size_t>(r.table)],
                                      tables.block_ids.data() + tables.offsets[static_cast<std::size_t>(r.table) + 1]);
    };
    // Every row's K/V first (a row reads earlier rows of its sequence in this step), then logits.
    for (const DeviceStepRow& r : rows) {
      const auto t = table(r);
      if (r.position / kDeviceKvBlockTokens >= static_cast<int>(t.size())) {
        problems_->push_back("position " + std::to_string(r.position) + " past its table");
        return Internal("fake decoder: position past its table");
      }
      pool_[t[static_cast<std::size_t>(r.position / kDeviceKvBlockTokens)]][static_cast<std::size_t>(r.position % kDeviceKvBlockTokens)] = r.token;
    }
    for (const DeviceStepRow& r : rows) {
      if (!r.logits) continue;
      const auto t = table(r);
      std::vector<int32_t> history;
      for (int j = 0; j <= r.position; ++j) {
        const auto it = pool_.find(t[static_cast<std::size_t>(j / kDeviceKvBlockTokens)]);
        const int32_t tok = it == pool_.end() ? -1 : it->second[static_cast<std::size_t>(j % kDeviceKvBlockTokens)];
        if (tok < 0) problems_->push_back("position " + std::to_string(j) + " read before it was written");
        history.push_back(tok);
      }
      const std::size_t at = logits.size();
      logits.resize(at + static_cast<std::size_t>(vocab_), 0.0f);
      logits[at + static_cast<std::size_t>(Next(history))] = 1.0f;
    }
    return Status::OK();
  }
  int64_t weight_bytes() const override { return 0; }
  int64_t kv_pool_bytes() const override { return 0; }
  std::string description() const override { return "fake device decoder"; }

  int steps_ = 0;
  std::vector<DeviceStepRow> rows_seen_;
  std::vector<int32_t> offsets_seen_, ids_seen_;
  int pool_blocks_seen_ = 0;

 private:
  struct Slots : std::array<int32_t, kDeviceKvBlockTokens> {
    Slots() { fill(-1); }
  };
  int vocab_;
  std::vector<std::string>* problems_;
  std::map<int32_t, Slots> pool_;
};

// A backend with a decoder engine and nothing else: any other call (weights, products) fails, so a
// model that computed or uploaded anything outside its decoder shows.
class FakeDeviceBackend final : public InferenceBackend {
 public:
  std::string_view name() const override { return "fake"; }
  std::string description() const override { return "fake device"; }
  Result<std::unique_ptr<DeviceBuffer>> Allocate(std::size_t) override { return No("Allocate"); }
  Result<std::unique_ptr<DeviceBuffer>> UploadWeights(const void*, std::size_t) override { return No("UploadWeights"); }
  Status CopyToDevice(void*, const void*, std::size_t) override { return No("CopyToDevice"); }
  Status CopyToHost(void*, const void*, std::size_t) override { return No("CopyToHost"); }
  Status Synchronize() override { return No("Synchronize"); }
  Status Gemm(bool, bool, int, int, int, float, const float*, int, const float*, int, float, float*, int) override {
    return No("Gemm");
  }
  Status GemmStridedBatched(bool, bool, int, int, int, float, const float*, int, int64_t, const float*, int, int64_t, float,
                            float*, int, int64_t, int) override {
    return No("GemmStridedBatched");
  }
  Status BiasActivation(float*, int, int, const float*, Activation) override { return No("BiasActivation"); }
  Status Softmax(float*, int, int) override { return No("Softmax"); }
  Status ScaledMaskedSoftmax(float*, int, int, int, int, float, const float*) override { return No("ScaledMaskedSoftmax"); }
  Status LayerNorm(const float*, const float*, const float*, const float*, float*, int, int, float) override {
    return No("LayerNorm");
  }

  Result<std::unique_ptr<DeviceDecoder>> CreateDecoder(const DecoderSpec& spec) override {
    if (!fail_with.ok()) return fail_with;
    RETURN_IF_ERROR(ValidateDecoderSpec(spec));
    const std::size_t h = static_cast<std::size_t>(spec.hidden_size);
    seen.spec = spec;
    seen.spec.layers.clear();
    seen.spec.host_weights_owner.reset();  // a decoder that copies the weights lets them go
    seen.embed_row1.assign(spec.embed + h, spec.embed + 2 * h);
    seen.lm_head_row0.assign(spec.lm_head, spec.lm_head + h);
    seen.qkv0_row0.assign(spec.layers[0].qkv, spec.layers[0].qkv + h);
    seen.final_norm.assign(spec.final_norm_w, spec.final_norm_w + h);
    seen.layers_complete = static_cast<int>(spec.layers.size()) == spec.num_layers;
    auto d = std::make_unique<FakeDecoder>(spec.vocab_size, &problems);
    decoder = d.get();
    return std::unique_ptr<DeviceDecoder>(std::move(d));
  }

  Status fail_with;
  SeenSpec seen;
  FakeDecoder* decoder = nullptr;
  std::vector<std::string> problems;

 private:
  static Status No(const char* what) { return Internal(std::string("fake device backend: ") + what + " is not for a model on a decoder engine"); }
};

// A tensor of the checkpoint as float32 (the tiny models are saved in F32).
std::vector<float> Tensor(const SafetensorsFile& f, const std::string& name, std::size_t from, std::size_t count) {
  const TensorInfo* t = f.header().Find(name);
  EXPECT_NE(t, nullptr) << name;
  if (t == nullptr) return {};
  EXPECT_EQ(t->dtype, TensorDType::kF32);
  std::vector<float> out(count);
  std::memcpy(out.data(), f.Data(*t) + from * sizeof(float), count * sizeof(float));
  return out;
}

struct DeviceLoaded {
  DecoderConfig config;
  std::unique_ptr<SafetensorsFile> file;
  std::unique_ptr<FakeDeviceBackend> backend;
  std::unique_ptr<DecoderModel> model;
};

DeviceLoaded LoadOnFake(const std::string& name = "llama") {
  DeviceLoaded l;
  const std::string dir = HfDir() + "/decoders/" + name;
  l.config = Config(name);
  l.file = SafetensorsFile::Open(dir + "/model.safetensors").value();
  l.backend = std::make_unique<FakeDeviceBackend>();
  auto m = DecoderModel::Load(l.config, *l.file, l.backend.get(), LinearDType::kFloat32);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  if (m.ok()) l.model = std::move(m).value();
  return l;
}

TEST(DecoderModelOnDevice, HandsTheDecoderTheCheckpointsWeightsAndTheConfigsSwitches) {
  DeviceLoaded l = LoadOnFake();
  ASSERT_NE(l.model, nullptr);
  EXPECT_EQ(l.model->engine_description(), "fake device decoder");
  const SeenSpec& s = l.backend->seen;
  const std::size_t h = static_cast<std::size_t>(l.config.hidden_size);
  EXPECT_TRUE(s.layers_complete);
  EXPECT_EQ(s.spec.vocab_size, l.config.vocab_size);
  EXPECT_EQ(s.spec.intermediate_size, l.config.intermediate_size);
  EXPECT_FLOAT_EQ(s.spec.norm_eps, 1e-5f);
  EXPECT_EQ(s.spec.inv_freq, DecoderSpecFromConfig(l.config, LinearDType::kFloat32).inv_freq);
  EXPECT_EQ(s.embed_row1, Tensor(*l.file, "model.embed_tokens.weight", h, h));
  EXPECT_EQ(s.lm_head_row0, Tensor(*l.file, "lm_head.weight", 0, h));  // not tied in this model
  EXPECT_EQ(s.qkv0_row0, Tensor(*l.file, "model.layers.0.self_attn.q_proj.weight", 0, h));
  EXPECT_EQ(s.final_norm, Tensor(*l.file, "model.norm.weight", 0, h));
  // Bytes a step reads: every product in float32.
  const int64_t q = l.config.num_heads * l.config.head_dim, kv = l.config.num_kv_heads * l.config.head_dim;
  const int64_t hh = l.config.hidden_size, inter = l.config.intermediate_size;
  const int64_t per_layer = (q + 2 * kv) * hh + hh * q + 2 * inter * hh + hh * inter;
  EXPECT_EQ(l.model->streamed_weight_bytes(), 4 * (l.config.num_layers * per_layer + l.config.vocab_size * hh));
}

// One step of two sequences: one block table per sequence, in the order they first appear, each
// the cache's blocks; rows keep their order, tokens and positions.
TEST(DecoderModelOnDevice, StepPassesEachSequencesBlockTable) {
  DeviceLoaded l = LoadOnFake();
  ASSERT_NE(l.model, nullptr);
  PagedKvCache cache(l.config, 8 * l.config.KvBytesPerToken(4) * PagedKvCache::kBlockTokens);
  const int a = cache.AddSequence(), b = cache.AddSequence();
  ASSERT_TRUE(cache.Reserve(b, 5));   // 1 block: id 0
  ASSERT_TRUE(cache.Reserve(a, 40));  // 3 blocks: ids 1..3
  std::vector<DecoderRow> rows = {{b, 0, 7, false}, {b, 1, 8, false}, {a, 0, 9, false}, {a, 1, 10, true}, {b, 2, 11, true}};
  std::vector<float> logits;
  ASSERT_TRUE(l.model->Step(rows, cache, logits).ok());
  const FakeDecoder& d = *l.backend->decoder;
  ASSERT_EQ(d.rows_seen_.size(), rows.size());
  const std::vector<int32_t> want_tables = {0, 0, 1, 1, 0};
  for (std::size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(d.rows_seen_[i].token, rows[i].token);
    EXPECT_EQ(d.rows_seen_[i].position, rows[i].position);
    EXPECT_EQ(d.rows_seen_[i].logits, rows[i].logits);
    EXPECT_EQ(d.rows_seen_[i].table, want_tables[i]) << "row " << i;
  }
  EXPECT_EQ(d.offsets_seen_, (std::vector<int32_t>{0, 1, 4}));
  std::vector<int32_t> want_ids(cache.blocks(b).begin(), cache.blocks(b).end());
  want_ids.insert(want_ids.end(), cache.blocks(a).begin(), cache.blocks(a).end());
  EXPECT_EQ(d.ids_seen_, want_ids);
  EXPECT_EQ(d.pool_blocks_seen_, 8);
  EXPECT_EQ(logits.size(), 2u * static_cast<std::size_t>(l.config.vocab_size));
  EXPECT_TRUE(l.backend->problems.empty()) << l.backend->problems.front();
  // The model's own checks still come first: a row past its blocks never reaches the device.
  rows = {{a, 48, 1, true}};
  EXPECT_EQ(l.model->Step(rows, cache, logits).code(), StatusCode::kInternal);
  EXPECT_EQ(l.backend->decoder->steps_, 1);
}

// The engine on a device decoder with a cache too small for its sequences and prefill cut into
// chunks: blocks are reused after preemption and every sequence still reads back exactly its own
// tokens (the fake's logits depend on them), so each gets the tokens computed directly.
TEST(DecoderModelOnDevice, EngineDrivesTheDevicePoolThroughPreemption) {
  DeviceLoaded l = LoadOnFake();
  ASSERT_NE(l.model, nullptr);
  std::vector<std::vector<int32_t>> prompts;
  for (int p = 0; p < 4; ++p) {
    std::vector<int32_t> ids;
    for (int i = 0; i < 10 + 7 * p; ++i) ids.push_back(static_cast<int32_t>(5 + (i * 31 + p * 17) % 200));
    prompts.push_back(ids);
  }
  GenerationParams params;
  params.do_sample = false;
  params.max_new_tokens = 24;
  EngineOptions eo;
  eo.max_sequences = 4;
  eo.max_step_tokens = 12;
  eo.kv_cache_bytes = 6 * l.config.KvBytesPerToken(sizeof(float)) * PagedKvCache::kBlockTokens;  // 6 blocks
  GenerationEngine engine(l.model.get(), eo);
  std::vector<GenerationRequest> requests;
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    GenerationRequest q;
    q.prompt = prompts[i];
    q.params = &params;
    q.key = i;
    requests.push_back(q);
  }
  std::vector<std::vector<GeneratedSequence>> out;
  GenerationStats stats;
  const Status s = engine.Run(requests, out, stats);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_GT(stats.preemptions, 0);
  EXPECT_EQ(l.backend->decoder->pool_blocks_seen_, 6);
  EXPECT_TRUE(l.backend->problems.empty()) << l.backend->problems.size() << " problems, first: " << l.backend->problems.front();
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    std::vector<int32_t> tokens = prompts[i], want;
    for (int t = 0; t < params.max_new_tokens; ++t) {
      want.push_back(FakeDecoder::Next(tokens));
      tokens.push_back(want.back());
    }
    ASSERT_EQ(out[i].size(), 1u);
    EXPECT_EQ(out[i][0].tokens, want) << "prompt " << i;
  }
}

// Whatever CreateDecoder answers other than a decoder fails the load, naming the backend: there is
// no other engine to fall back on.
TEST(DecoderModelOnDevice, EveryCreateDecoderFailureFailsTheLoad) {
  const DecoderConfig c = Config("llama");
  auto file = SafetensorsFile::Open(HfDir() + "/decoders/llama/model.safetensors").value();
  FakeDeviceBackend backend;
  backend.fail_with = ResourceExhausted("out of device memory");
  auto m = DecoderModel::Load(c, *file, &backend, LinearDType::kFloat32);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(m.status().message(), HasSubstr("out of device memory"));
  EXPECT_THAT(m.status().message(), HasSubstr("fake backend"));
  backend.fail_with = Unimplemented("no decoder here");
  m = DecoderModel::Load(c, *file, &backend, LinearDType::kFloat32);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kUnimplemented);
  EXPECT_THAT(m.status().message(), HasSubstr("fake backend"));
}

// ---------------------------------------------------------------- the CPU backend's decoder

// The CPU backend makes the decoder engine: it holds the float32 weights read (every tensor of the
// checkpoint, once), and a step reads every product once in the products' precision.
TEST(CpuDecoderEngine, HoldsTheCheckpointsFloat32WeightsAndStreamsEveryProduct) {
  auto backend = MakeCpuBackend();
  for (const char* name : {"llama", "llama-linear-tied", "gpt2", "gemma2"}) {
    const DecoderConfig c = Config(name);
    auto file = SafetensorsFile::Open(HfDir() + "/decoders/" + name + "/model.safetensors").value();
    auto m = DecoderModel::Load(c, *file, backend.get(), LinearDType::kFloat32);
    ASSERT_TRUE(m.ok()) << name << ": " << m.status().ToString();
    EXPECT_THAT((*m)->engine_description(), HasSubstr("cpu decoder engine (float32 products"));
    int64_t saved = 0;
    for (const TensorInfo& t : file->header().tensors) saved += t.num_elements();
    EXPECT_EQ((*m)->weight_bytes(), 4 * saved) << name;
    const int64_t q = int64_t{c.num_heads} * c.head_dim, kv = int64_t{c.num_kv_heads} * c.head_dim;
    const int64_t h = c.hidden_size, inter = c.intermediate_size;
    const int64_t up = c.family == DecoderFamily::kGpt2 ? inter : 2 * inter;
    const int64_t per_layer = (q + 2 * kv) * h + h * q + up * h + h * inter;
    EXPECT_EQ((*m)->streamed_weight_bytes(), 4 * (c.num_layers * per_layer + int64_t{c.vocab_size} * h)) << name;
  }
}

// The CPU decoder's Step straight from a spec of the committed llama checkpoint, with its blocks at
// scattered pool ids: the prompt's last logits are transformers'.
TEST(CpuDecoderEngine, StepOnScatteredBlocksGivesTransformersLogits) {
  const nlohmann::json ref = HfReference("text_generation_llama");
  ASSERT_TRUE(ref.is_object());
  const std::vector<int32_t> prompt = ref["prompt_last_logits"]["prompt_token_ids"].get<std::vector<int32_t>>();
  const std::vector<float> want = ref["prompt_last_logits"]["logits"].get<std::vector<float>>();
  const DecoderConfig c = Config("llama");
  auto file = SafetensorsFile::Open(HfDir() + "/decoders/llama/model.safetensors").value();
  auto owned = std::make_shared<std::vector<std::vector<float>>>();
  auto all = [&](const std::vector<std::string>& names) {
    std::vector<float>& out = owned->emplace_back();
    for (const std::string& n : names) {
      const TensorInfo* t = file->header().Find("model." + n);
      if (t == nullptr) t = file->header().Find(n);
      EXPECT_NE(t, nullptr) << n;
      if (t == nullptr) continue;
      const std::vector<float> v = Tensor(*file, t->name, 0, static_cast<std::size_t>(t->num_elements()));
      out.insert(out.end(), v.begin(), v.end());
    }
    return static_cast<const float*>(out.data());
  };
  DecoderSpec spec = DecoderSpecFromConfig(c, LinearDType::kFloat32);
  spec.embed = all({"embed_tokens.weight"});
  for (int l = 0; l < c.num_layers; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    DecoderLayerWeights& w = spec.layers.emplace_back();
    w.norm1_w = all({p + "input_layernorm.weight"});
    w.norm2_w = all({p + "post_attention_layernorm.weight"});
    w.qkv = all({p + "self_attn.q_proj.weight", p + "self_attn.k_proj.weight", p + "self_attn.v_proj.weight"});
    w.o = all({p + "self_attn.o_proj.weight"});
    w.up = all({p + "mlp.gate_proj.weight", p + "mlp.up_proj.weight"});
    w.down = all({p + "mlp.down_proj.weight"});
  }
  spec.final_norm_w = all({"norm.weight"});
  spec.lm_head = all({"lm_head.weight"});
  spec.host_weights_owner = owned;
  auto backend = MakeCpuBackend();
  auto decoder = backend->CreateDecoder(spec);
  ASSERT_TRUE(decoder.ok()) << decoder.status().ToString();
  const int blocks = PagedKvCache::BlocksFor(static_cast<int>(prompt.size()));
  std::vector<int32_t> ids;
  for (int b = 0; b < blocks; ++b) ids.push_back(2 * (blocks - b) + 1);  // descending, odd: 2 blocks apart
  const std::vector<int32_t> offsets = {0, static_cast<int32_t>(ids.size())};
  for (int chunk : {1000, 3}) {  // the whole prompt (the backend's Linear), then small steps (the streaming kernels)
    std::vector<float> got;
    for (std::size_t start = 0; start < prompt.size(); start += static_cast<std::size_t>(chunk)) {
      std::vector<DeviceStepRow> rows;
      for (std::size_t i = start; i < std::min(prompt.size(), start + static_cast<std::size_t>(chunk)); ++i) {
        rows.push_back({prompt[i], static_cast<int32_t>(i), 0, i + 1 == prompt.size()});
      }
      got.clear();
      const Status s = (*decoder)->Step(rows, DeviceBlockTables{offsets, ids, 2 * blocks + 2}, got);
      ASSERT_TRUE(s.ok()) << s.ToString();
    }
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-4) << "chunk " << chunk << " logit " << i;
  }
}

// device: GPU runs the CUDA engine where a GPU is usable and falls back to the CPU engine (Beam's
// "Switching to CPU") where not; either way the rows are the CPU's.
TEST(TextGenerationDevice, GpuDeviceUsesTheCudaEngineWhenUsableElseTheCpu) {
  auto run = [](const std::string& device, std::string& engine) {
    ModelHandlerOptions o;
    o.model_path = HfDir() + "/decoders/llama";
    o.input_field = "prompt";
    o.device = device;
    o.extra.Append("task", Value::String("text-generation"));
    Row args;
    args.Append("max_new_tokens", Value::Int(8));
    args.Append("do_sample", Value::Bool(false));
    o.extra.Append("pipeline_args", Value::FromRow(std::move(args)));
    auto handler = MakeModelHandler(kHfPipelineHandlerType, std::move(o));
    EXPECT_TRUE(handler.ok()) << handler.status().ToString();
    if (!handler.ok()) return std::string();
    auto model = (*handler)->LoadModel({});
    EXPECT_TRUE(model.ok()) << model.status().ToString();
    if (!model.ok()) return std::string();
    engine = std::string((*model)->device());
    const Value example = Value::String("The weather today");
    std::vector<const Value*> batch = {&example};
    std::vector<Value> predictions;
    const Status s = (*model)->RunInference(batch, predictions);
    EXPECT_TRUE(s.ok()) << s.ToString();
    return predictions.empty() ? std::string() : predictions[0].ToJson();
  };
  std::string cpu_engine, gpu_engine;
  const std::string cpu = run("CPU", cpu_engine);
  const std::string gpu = run("GPU", gpu_engine);
  EXPECT_EQ(cpu_engine, "cpu");
  EXPECT_EQ(gpu_engine, CreateBackend("cuda").ok() ? "cuda" : "cpu");
  EXPECT_FALSE(cpu.empty());
  EXPECT_EQ(gpu, cpu);
}

}  // namespace
}  // namespace dfw::device_decoder_test
