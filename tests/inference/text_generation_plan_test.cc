// task: text-generation as the plan sees it: a config.json alone is enough with config_only, the
// full check stays when the weights are there, and the estimates carry the config's arithmetic.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <string>

#include "dfw/inference/hf_pipeline_handler.h"
#include "dfw/inference/model_handler.h"
#include "hf_test_util.h"
#include "test_util.h"

namespace dfw::text_generation_plan_test {
namespace {

const std::string kGemma2b = std::string(DFW_SOURCE_DIR) + "/testdata/right_sizing/gemma-2b";

Result<std::unique_ptr<ModelHandler>> Handler(const std::string& dir, bool config_only, const std::string& device = "GPU",
                                              Row args = Row()) {
  ModelHandlerOptions o;
  o.model_path = dir;
  o.device = device;
  o.config_only = config_only;
  o.input_field = "prompt";
  o.extra.Append("task", Value::String("text-generation"));
  if (args.size() == 0) args.Append("max_new_tokens", Value::Int(256));
  o.extra.Append("pipeline_args", Value::FromRow(std::move(args)));
  return MakeModelHandler(kHfPipelineHandlerType, std::move(o));
}

TEST(TextGenerationPlan, AConfigAloneIsEnoughForThePlanButNotForTheRun) {
  auto full = Handler(kGemma2b, /*config_only=*/false);
  ASSERT_FALSE(full.ok());
  EXPECT_NE(full.status().message().find("no model.safetensors"), std::string::npos) << full.status().message();

  auto h = Handler(kGemma2b, /*config_only=*/true);
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  auto ws = (*h)->EstimateWorkspace();
  ASSERT_TRUE(ws && ws->weight_bytes && ws->kv_cache);
  EXPECT_TRUE(ws->weights_absent);
  // Gemma 2B: 18 x (2048 x (2048 + 2 x 256) + 2048 x 2048 + 3 x 2048 x 16384 + 2 x 2048) + 256000 x 2048 + 2048.
  EXPECT_EQ(*ws->weight_bytes, uint64_t{2506172416} * 2);  // bfloat16 on a GPU
  EXPECT_EQ(ws->kv_cache->bytes_per_token, 18u * 1 * 256 * 2 * 2);
  EXPECT_EQ(ws->kv_cache->context_tokens, 8192);
  EXPECT_NE(ws->kv_cache->context_how.find("max_position_embeddings 8192"), std::string::npos) << ws->kv_cache->context_how;
  // 512 rows x (2 x 2048 + 2560 + 2048 + 32768 + 16384) + 16 x (2048 + 256000) + 8192 scores, x 2 B.
  EXPECT_EQ(ws->kv_cache->activation_bytes, (512u * 57856 + 16u * 258048 + 8192) * 2);
  EXPECT_EQ(ws->bytes, ws->kv_cache->cache_bytes + ws->kv_cache->activation_bytes);
  EXPECT_FALSE((*h)->LoadModel(ModelProcessContext{}).ok());  // no weights to load
}

TEST(TextGenerationPlan, TheCpuBackendHoldsFloat32AndMaxLengthIsTheContext) {
  Row args;
  args.Append("max_length", Value::Int(4096));
  auto h = Handler(kGemma2b, true, "CPU", args);
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  auto ws = (*h)->EstimateWorkspace();
  EXPECT_EQ(*ws->weight_bytes, uint64_t{2506172416} * 4);
  EXPECT_EQ(ws->kv_cache->bytes_per_token, 18u * 256 * 2 * 4);
  EXPECT_EQ(ws->kv_cache->context_tokens, 4096);
  EXPECT_NE(ws->kv_cache->context_how.find("max_length 4096"), std::string::npos);
  // A bad argument is still refused without weights.
  Row bad;
  bad.Append("max_new_tokens", Value::String("many"));
  EXPECT_FALSE(Handler(kGemma2b, true, "GPU", bad).ok());
}

TEST(TextGenerationPlan, WithTheWeightsPresentConfigOnlyKeepsTheFullCheck) {
  const std::string llama = testing::HfDir() + "/decoders/llama";
  auto h = Handler(llama, true);
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_FALSE((*h)->EstimateWorkspace()->weights_absent);
  // Weights that disagree with the config (gemma's beside llama's config) fail with config_only too.
  namespace fs = std::filesystem;
  const dfw::testing::TempDir tmp;
  const std::filesystem::path dir = tmp.path();
  for (const char* f : {"config.json", "tokenizer.json", "tokenizer_config.json"}) fs::copy_file(llama + "/" + f, dir / f);
  fs::copy_file(testing::HfDir() + "/decoders/gemma/model.safetensors", dir / "model.safetensors");
  EXPECT_FALSE(Handler(dir.string(), true).ok());
  EXPECT_FALSE(Handler(dir.string(), false).ok());
}

TEST(TextGenerationPlan, WorkPerRecordIsTwoFlopsPerParameterPerTokenPlusAttention) {
  auto h = Handler(kGemma2b, true);
  ASSERT_TRUE(h.ok());
  auto w = (*h)->EstimateWork();
  ASSERT_TRUE(w);
  const double params = 2506172416.0, C = 8192, gen = 256, prompt = C - gen;
  EXPECT_DOUBLE_EQ(w->flops_per_record, 2 * params * C + 2.0 * 18 * 8 * 256 * C * (C + 1));
  // The default 256 MiB cache holds one 144 MiB sequence: every decode step reads the weights for it alone.
  EXPECT_EQ(w->batch_size, 1);
  EXPECT_DOUBLE_EQ(w->weight_reads_per_record, gen / 1 + prompt / 512);
  EXPECT_DOUBLE_EQ(w->activation_bytes_per_record, 18432.0 * (C * (C + 1) / 2 + prompt + gen));
  EXPECT_EQ(w->dtype, "bfloat16");
}

}  // namespace
}  // namespace dfw::text_generation_plan_test
