// The CPU backend's decoder engine (CpuBackend::CreateDecoder, src/backend/cpu/cpu_decoder.cc) on
// a small random Llama-shaped model: bad tables and rows are errors, never a crash; its KV pool is
// the block ids it is given (a prompt in one step, one token per step, or split over scattered
// ids gives the same logits); the pool grows in slabs cut to the cache's size and keeps its blocks
// when it grows.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "dfw/backend/device_decoder.h"
#include "dfw/backend/registry.h"

namespace dfw::cpu_decoder_test {
namespace {

using ::testing::HasSubstr;

constexpr int kVocab = 40, kHidden = 16, kInter = 24, kLayers = 2, kHeads = 4, kKvHeads = 2, kHeadDim = 4;
// Floats of one pool block: [layer][K|V][kv_head][16 tokens][head_dim].
constexpr int64_t kBlockBytes = int64_t{kLayers} * 2 * kKvHeads * kDeviceKvBlockTokens * kHeadDim * 4;

// Weights from a fixed wave (not random: the same model every run), held by the spec's owner.
DecoderSpec RandomSpec(bool tied = false, bool with_owner = true) {
  auto owned = std::make_shared<std::vector<std::vector<float>>>();
  int salt = 0;
  auto tensor = [&](std::size_t n, float scale, float offset = 0) {
    std::vector<float>& v = owned->emplace_back(n);
    ++salt;
    for (std::size_t i = 0; i < n; ++i) v[i] = offset + scale * static_cast<float>(std::sin(0.37 * static_cast<double>(i) + 1.3 * salt));
    return static_cast<const float*>(v.data());
  };
  DecoderSpec s;
  s.vocab_size = kVocab;
  s.hidden_size = kHidden;
  s.intermediate_size = kInter;
  s.num_layers = kLayers;
  s.num_heads = kHeads;
  s.num_kv_heads = kKvHeads;
  s.head_dim = kHeadDim;
  s.max_positions = 128;
  s.norm_eps = 1e-5f;
  s.query_scale = 0.5f;
  s.inv_freq = {1.0f, 0.01f};
  const std::size_t h = kHidden;
  s.embed = tensor(kVocab * h, 0.5f);
  for (int l = 0; l < kLayers; ++l) {
    DecoderLayerWeights& w = s.layers.emplace_back();
    w.norm1_w = tensor(h, 0.1f, 1.0f);
    w.norm2_w = tensor(h, 0.1f, 1.0f);
    w.qkv = tensor((kHeads + 2 * kKvHeads) * kHeadDim * h, 0.3f);
    w.o = tensor(h * kHeads * kHeadDim, 0.3f);
    w.up = tensor(2 * kInter * h, 0.3f);
    w.down = tensor(h * kInter, 0.3f);
  }
  s.final_norm_w = tensor(h, 0.1f, 1.0f);
  s.lm_head = tied ? s.embed : tensor(kVocab * h, 0.5f);
  if (with_owner) s.host_weights_owner = owned;
  return s;
}

std::unique_ptr<DeviceDecoder> Make(const DecoderSpec& spec) {
  static const std::unique_ptr<InferenceBackend> backend = MakeCpuBackend();
  auto d = backend->CreateDecoder(spec);
  EXPECT_TRUE(d.ok()) << d.status().ToString();
  return d.ok() ? std::move(d).value() : nullptr;
}

int32_t TokenAt(int i) { return static_cast<int32_t>((i * 7 + 3) % kVocab); }

// Runs tokens [from, to) of one sequence whose block table is `ids`, as one step, returning the
// last row's logits.
std::vector<float> RunSteps(DeviceDecoder& d, const std::vector<int32_t>& ids, int pool_blocks, int from, int to) {
  std::vector<DeviceStepRow> rows;
  for (int p = from; p < to; ++p) rows.push_back({TokenAt(p), p, 0, p + 1 == to});
  const std::vector<int32_t> offsets = {0, static_cast<int32_t>(ids.size())};
  DeviceBlockTables t{offsets, ids, pool_blocks};
  std::vector<float> logits;
  const Status s = d.Step(rows, t, logits);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return logits;
}

void ExpectNear(const std::vector<float>& a, const std::vector<float>& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  ASSERT_EQ(a.size(), static_cast<std::size_t>(kVocab)) << what;
  for (std::size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], 1e-4) << what << ", logit " << i;
}

TEST(CpuDecoder, DescribesItselfAndCountsEachWeightOnce) {
  const auto d = Make(RandomSpec(/*tied=*/true));
  ASSERT_NE(d, nullptr);
  EXPECT_THAT(d->description(), HasSubstr("cpu decoder engine (float32 products"));
  const int64_t per_layer = 2 * kHidden + (kHeads + 2 * kKvHeads) * kHeadDim * kHidden + kHidden * kHeads * kHeadDim +
                            2 * kInter * kHidden + kHidden * kInter;
  // Tied: the LM head is the embedding, held once.
  EXPECT_EQ(d->weight_bytes(), 4 * (kVocab * kHidden + kLayers * per_layer + kHidden));
  EXPECT_EQ(Make(RandomSpec(false))->weight_bytes(), d->weight_bytes() + 4 * kVocab * kHidden);
  EXPECT_EQ(d->kv_pool_bytes(), 0);
}

TEST(CpuDecoder, ASpecThatKeepsNoOwnerOfItsWeightsIsRefused) {
  auto backend = MakeCpuBackend();
  auto d = backend->CreateDecoder(RandomSpec(false, /*with_owner=*/false));
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(d.status().message(), HasSubstr("host_weights_owner"));
  DecoderSpec bad = RandomSpec();
  bad.layers.pop_back();
  EXPECT_THAT(backend->CreateDecoder(bad).status().message(), HasSubstr("1 layers of weights for num_layers 2"));
}

// One sequence, 37 tokens (3 blocks): all at once (the backend's Linear), one token per step (the
// streaming kernels) and in chunks over scattered ids give the same logits.
TEST(CpuDecoder, APromptGivesTheSameLogitsWhateverItsStepsAndBlockIds) {
  const int n = 37;
  auto whole = Make(RandomSpec());
  ASSERT_NE(whole, nullptr);
  const std::vector<float> want = RunSteps(*whole, {0, 1, 2}, 3, 0, n);
  auto single = Make(RandomSpec());
  std::vector<float> got;
  for (int p = 0; p < n; ++p) got = RunSteps(*single, {0, 1, 2}, 3, p, p + 1);
  ExpectNear(got, want, "one token per step");
  auto scattered = Make(RandomSpec());
  const std::vector<int32_t> ids = {9, 4, 6};
  RunSteps(*scattered, ids, 10, 0, 20);
  RunSteps(*scattered, ids, 10, 20, 30);
  ExpectNear(RunSteps(*scattered, ids, 10, 30, n), want, "chunks over blocks 9, 4, 6");
  // The logits depend on the history: a different earlier token changes them.
  auto other = Make(RandomSpec());
  RunSteps(*other, {0, 1, 2}, 3, 0, 1);
  std::vector<DeviceStepRow> rows = {{static_cast<int32_t>((TokenAt(1) + 1) % kVocab), 1, 0, false}};
  const std::vector<int32_t> offsets = {0, 3}, table = {0, 1, 2};
  std::vector<float> logits;
  ASSERT_TRUE(other->Step(rows, DeviceBlockTables{offsets, table, 3}, logits).ok());
  const std::vector<float> diverged = RunSteps(*other, table, 3, 2, n);
  float diff = 0;
  for (std::size_t i = 0; i < want.size(); ++i) diff = std::max(diff, std::abs(diverged[i] - want[i]));
  EXPECT_GT(diff, 1e-3);
}

// Two sequences in one step, each with its own table: the logits each gets alone.
TEST(CpuDecoder, SequencesInOneStepReadOnlyTheirOwnBlocks) {
  auto alone = Make(RandomSpec());
  const std::vector<float> want_a = RunSteps(*alone, {0, 1}, 4, 0, 20);
  auto alone_b = Make(RandomSpec());
  std::vector<DeviceStepRow> rows_b;
  for (int p = 0; p < 5; ++p) rows_b.push_back({TokenAt(p + 11), p, 0, p == 4});
  const std::vector<int32_t> off_b = {0, 1}, ids_b = {3};
  std::vector<float> want_b;
  ASSERT_TRUE(alone_b->Step(rows_b, DeviceBlockTables{off_b, ids_b, 4}, want_b).ok());

  auto both = Make(RandomSpec());
  std::vector<DeviceStepRow> rows;
  for (int p = 0; p < 20; ++p) rows.push_back({TokenAt(p), p, 1, p == 19});
  for (DeviceStepRow r : rows_b) rows.push_back({r.token, r.position, 0, r.logits});
  const std::vector<int32_t> offsets = {0, 1, 3}, ids = {3, 0, 1};
  std::vector<float> logits;
  ASSERT_TRUE(both->Step(rows, DeviceBlockTables{offsets, ids, 4}, logits).ok());
  ASSERT_EQ(logits.size(), 2u * kVocab);
  ExpectNear(std::vector<float>(logits.begin(), logits.begin() + kVocab), want_a, "sequence a");
  ExpectNear(std::vector<float>(logits.begin() + kVocab, logits.end()), want_b, "sequence b");
}

// The pool: slabs of 64 blocks allocated when an id in them is first named, the last cut to
// pool_blocks; a later, larger cache grows the cut slab and the blocks written before survive.
TEST(CpuDecoder, ThePoolGrowsInSlabsCutToTheCacheAndKeepsItsBlocks) {
  auto d = Make(RandomSpec());
  ASSERT_NE(d, nullptr);
  RunSteps(*d, {2}, 3, 0, 10);
  EXPECT_EQ(d->kv_pool_bytes(), 3 * kBlockBytes);
  RunSteps(*d, {70}, 100, 0, 4);  // a second slab, cut to 36 blocks; the first grows to 64
  EXPECT_EQ(d->kv_pool_bytes(), 100 * kBlockBytes);
  const std::vector<float> got = RunSteps(*d, {2}, 100, 10, 12);

  auto fresh = Make(RandomSpec());
  RunSteps(*fresh, {2}, 100, 0, 10);
  EXPECT_EQ(fresh->kv_pool_bytes(), 64 * kBlockBytes);
  ExpectNear(got, RunSteps(*fresh, {2}, 100, 10, 12), "after the slab grew");
}

TEST(CpuDecoder, BadTablesAndRowsAreErrorsNotCrashes) {
  auto d = Make(RandomSpec());
  ASSERT_NE(d, nullptr);
  struct Case {
    std::string name;
    std::vector<DeviceStepRow> rows;
    std::vector<int32_t> offsets, ids;
    int pool_blocks;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"table out of range", {{1, 0, 1, true}}, {0, 1}, {0}, 4, "row 0 names block table 1 of 1"},
      {"negative table", {{1, 0, -1, true}}, {0, 1}, {0}, 4, "names block table -1"},
      {"position past its table", {{1, 16, 0, true}}, {0, 1}, {0}, 4, "position 16 is not covered by its table's 1 blocks"},
      {"negative position", {{1, -1, 0, true}}, {0, 1}, {0}, 4, "position -1"},
      {"id past the pool", {{1, 0, 0, true}}, {0, 1}, {4}, 4, "block id 4 is outside the pool of 4 blocks"},
      {"negative id", {{1, 0, 0, true}}, {0, 1}, {-2}, 4, "block id -2"},
      {"token past the vocabulary", {{kVocab, 0, 0, true}}, {0, 1}, {0}, 4, "token 40 is outside the vocabulary of 40"},
      {"no tables", {{1, 0, 0, true}}, {0}, {}, 4, "a step needs block tables"},
      {"offsets short of the ids", {{1, 0, 0, true}}, {0, 1}, {0, 1}, 4, "do not span the 2 block ids"},
      {"offsets decreasing", {{1, 0, 0, true}}, {0, 2, 1, 2}, {0, 1}, 4, "decrease at table 1"},
  };
  for (const Case& c : cases) {
    std::vector<float> logits;
    const Status s = d->Step(c.rows, DeviceBlockTables{c.offsets, c.ids, c.pool_blocks}, logits);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << c.name << ": " << s.ToString();
    EXPECT_THAT(s.message(), HasSubstr(c.message)) << c.name;
    EXPECT_TRUE(logits.empty()) << c.name;
  }
  EXPECT_EQ(d->kv_pool_bytes(), 0);  // nothing was run
  EXPECT_EQ(RunSteps(*d, {0}, 4, 0, 3).size(), static_cast<std::size_t>(kVocab));  // and it still runs
}

}  // namespace
}  // namespace dfw::cpu_decoder_test
