// Text generation in the plan: sequences of the context per GPU within gpu_memory_utilization 0.9,
// on figures computed by hand here (not by the code under test), and the refusal's numbers.
#include <gtest/gtest.h>

#include "catalog/catalog_test_util.h"
#include "dfw/options/parse.h"
#include "dfw/plan/plan.h"
#include "test_util.h"

namespace dfw::sequences_test {
namespace {

using dfw::testing::kGiB;
using dfw::testing::kMiB;

// A Gemma-2B-shaped decoder as the handler reports it on a GPU in bfloat16 (docs/right-sizing.md).
ModelRequirement Gemma2b(int64_t context) {
  ModelRequirement m;
  m.name = "Generate";
  m.bytes = uint64_t{2506172416} * 2;
  m.device = "GPU";
  KvCacheRequirement kv;
  kv.bytes_per_token = 18 * 1 * 256 * 2 * 2;  // layers x KV heads x head_dim x K,V x bf16
  kv.context_tokens = context;
  kv.block_tokens = 16;
  kv.max_sequences = 16;
  kv.cache_bytes = 256 * kMiB;
  kv.activation_bytes = 67518464;
  m.kv_cache = kv;
  m.workspace = WorkspaceSize(kv.cache_bytes + kv.activation_bytes, "test");
  return m;
}

WorkerPlan Plan(const std::string& accelerator, const std::vector<ModelRequirement>& models) {
  auto plan = MakePlan(ParsePipelineOptions({"--dataflow_service_options=worker_accelerator=" + accelerator,
                                             "--sdk_worker_parallelism=4"}),
                       testing::SourceCatalog(), models, HostInfo{4, 0, std::nullopt, ""});
  EXPECT_TRUE(plan.ok()) << plan.status().ToString();
  return plan.ok() ? *plan : WorkerPlan{};
}

TEST(Sequences, CountsWholeSequencesPerProcessWithinNinetyPercentOfTheGpu) {
  struct Case {
    std::string accelerator;
    uint64_t capacity, context_mib;
    int contexts;
    int64_t per_process;
  };
  // budget = floor(0.9 x capacity); other = contexts + 4 weights + 4 activations;
  // per process = (budget - other) / 4 / (8192 tokens x 18432 B).
  for (const Case& c : {Case{"type:nvidia-l4;count:1", 24 * kGiB, 350, 4, 2}, Case{"type:nvidia-l4;count:1;use_nvidia_mps", 24 * kGiB, 350, 1, 4},
                        Case{"type:nvidia-tesla-a100;count:1", 40 * kGiB, 400, 4, 27},
                        Case{"type:nvidia-tesla-a100;count:1;use_nvidia_mps", 40 * kGiB, 400, 1, 29},
                        Case{"type:nvidia-h100-80gb;count:1", 80 * kGiB, 500, 4, 90},
                        Case{"type:nvidia-h100-80gb;count:1;use_nvidia_mps", 80 * kGiB, 500, 1, 93}}) {
    const WorkerPlan p = Plan(c.accelerator, {Gemma2b(8192)});
    ASSERT_EQ(p.models.size(), 1u);
    ASSERT_TRUE(p.models[0].sequences) << c.accelerator;
    const auto& s = *p.models[0].sequences;
    const uint64_t budget = static_cast<uint64_t>(0.9 * static_cast<double>(c.capacity));
    const uint64_t other = c.contexts * c.context_mib * kMiB + 4 * (uint64_t{5012344832} + 67518464);
    EXPECT_EQ(s.budget_bytes, budget) << c.accelerator;
    EXPECT_EQ(s.other_bytes, other) << c.accelerator;
    EXPECT_EQ(s.sequence_bytes, uint64_t{8192} * 18432) << c.accelerator;
    EXPECT_EQ(s.kv_bytes_per_cache, (budget - other) / 4) << c.accelerator;
    EXPECT_EQ(s.per_process, c.per_process) << c.accelerator;
    EXPECT_EQ(s.per_gpu, 4 * c.per_process) << c.accelerator;
    EXPECT_EQ(s.cache_sequences, 1) << c.accelerator;  // 256 MiB holds one 144 MiB sequence
    EXPECT_TRUE(SequenceShortfalls(p).empty()) << c.accelerator;
  }
}

TEST(Sequences, SharedCopiesLeaveMoreRoomAndContextsRoundUpToBlocks) {
  ModelRequirement shared = Gemma2b(8193);  // one token past 512 blocks: 513 blocks
  shared.policy = CopiesPolicy::kLargeModel;
  const WorkerPlan p = Plan("type:nvidia-l4;count:1;use_nvidia_mps", {shared});
  const auto& s = *p.models[0].sequences;
  EXPECT_EQ(s.sequence_bytes, uint64_t{513 * 16} * 18432);
  // One copy in a model host, one MPS context: (21.6 GiB - 350 MiB - 4.67 GiB - 4 x 64.4 MiB) / 4.
  const uint64_t other = 350 * kMiB + uint64_t{5012344832} + 4 * 67518464;
  EXPECT_EQ(s.other_bytes, other);
  EXPECT_EQ(s.per_process, static_cast<int64_t>((s.budget_bytes - other) / 4 / s.sequence_bytes));
  EXPECT_EQ(s.per_process, 28);
}

TEST(Sequences, NoSequenceFitsIsRefusedWithTheNumbers) {
  // 32768 tokens: 576 MiB per sequence, and the L4 leaves 335 MiB per process.
  const WorkerPlan p = Plan("type:nvidia-l4;count:1", {Gemma2b(32768)});
  EXPECT_EQ(p.models[0].sequences->per_process, 0);
  const std::vector<std::string> why = SequenceShortfalls(p);
  ASSERT_EQ(why.size(), 1u);
  for (const char* part : {"model 'Generate': not one sequence of 32768 tokens", "gpu_memory_utilization 0.9 x 24.0 GiB = 21.6 GiB",
                           "less 20.3 GiB (4 CUDA context(s) 1.4 GiB, weights 18.7 GiB", "leaves 1.3 GiB for 4 KV cache(s), 335.1 MiB each",
                           "one sequence needs 576.0 MiB (18432 B per token"}) {
    EXPECT_NE(why[0].find(part), std::string::npos) << part << "\n" << why[0];
  }
  // The same model without an accelerator: counted against its own cache only, never refused.
  auto cpu = MakePlan(ParsePipelineOptions({}), testing::SourceCatalog(), {Gemma2b(32768)}, HostInfo{4, 0, std::nullopt, ""});
  ASSERT_TRUE(cpu.ok());
  EXPECT_FALSE(cpu->models[0].sequences->on_gpu);
  EXPECT_EQ(cpu->models[0].sequences->cache_sequences, 0);
  EXPECT_TRUE(SequenceShortfalls(*cpu).empty());
}

TEST(Sequences, TheTextPlanNamesTheBudgetAndTheCount) {
  const std::string text = RenderPlanText(Plan("type:nvidia-l4;count:1", {Gemma2b(8192)}));
  EXPECT_NE(text.find("sequences:       8 sequence(s) of 8192 tokens per GPU (2 per process x 4 process(es))"), std::string::npos)
      << text;
  EXPECT_NE(text.find("budget gpu_memory_utilization 0.9 (vLLM's default) x 24.0 GiB = 21.6 GiB"), std::string::npos) << text;
}

}  // namespace
}  // namespace dfw::sequences_test
