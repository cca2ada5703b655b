// The plan across the catalog on catalog cases: fits / tight / does not fit, the MPS client limit,
// N1 GPU counts, the marks, and the MIG profile choice.
#include "dfw/plan/catalog_plan.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "catalog/catalog_test_util.h"
#include "dfw/options/parse.h"
#include "test_util.h"

namespace dfw {
namespace {

using dfw::testing::kGiB;
using dfw::testing::kL4Flag;

ModelRequirement Shared(uint64_t bytes) {
  ModelRequirement m;
  m.name = "Model";
  m.bytes = bytes;
  m.policy = CopiesPolicy::kLargeModel;
  return m;
}

CatalogPlan Plan(const std::vector<std::string>& args, const std::vector<ModelRequirement>& models,
                 CatalogPlanRequest request = {}) {
  auto plan = MakeCatalogPlan(ParsePipelineOptions(args), testing::SourceCatalog(), models, HostInfo{4, 0, std::nullopt, ""},
                              request);
  EXPECT_TRUE(plan.ok()) << plan.status().ToString();
  return plan.ok() ? *plan : CatalogPlan{};
}

const CatalogPlanRow* Row(const CatalogPlan& plan, const std::string& gpu, const std::string& machine_or_mig) {
  for (const CatalogPlanRow& r : plan.rows) {
    if (r.gpu == gpu && (r.machine_type == machine_or_mig || r.mig_profile == machine_or_mig)) return &r;
  }
  return nullptr;
}

TEST(CatalogPlan, VerdictsFitsTightAndDoesNotFitOnOneMachine) {
  const std::vector<std::string> args = {kL4Flag + ";use_nvidia_mps", "--machine_type=g2-standard-8"};
  struct Case {
    uint64_t model_bytes;
    FitVerdict verdict;
    const char* rule;
  };
  // One shared copy + one MPS server context (350 MiB) on a 24 GiB L4.
  for (const Case& c : {Case{2 * kGiB, FitVerdict::kFits, "(<= 90%)"}, Case{22 * kGiB, FitVerdict::kTight, "(> 90%)"},
                        Case{24 * kGiB, FitVerdict::kDoesNotFit, "> 24.0 GiB per GPU"}}) {
    CatalogPlan plan = Plan(args, {Shared(c.model_bytes)}, {{"nvidia-l4"}, 1});
    ASSERT_EQ(plan.rows.size(), 1u);  // --machine_type restricts the rows to that machine
    const CatalogPlanRow& r = plan.rows[0];
    EXPECT_EQ(r.machine_type, "g2-standard-8");
    EXPECT_TRUE(r.selected);
    EXPECT_EQ(r.verdict, c.verdict) << r.rule;
    EXPECT_NE(r.rule.find(c.rule), std::string::npos) << r.rule;
    EXPECT_EQ(r.smallest, c.verdict == FitVerdict::kFits);
    EXPECT_EQ(r.plan.gpu_memory.planned_peak_bytes, c.model_bytes + (350ull << 20));
  }
}

TEST(CatalogPlan, MpsClientLimitDecidesWhenMemoryFits) {
  CatalogPlan plan = Plan({kL4Flag + ";use_nvidia_mps", "--machine_type=g2-standard-8", "--sdk_worker_parallelism=64"},
                          {Shared(kGiB)}, {{"nvidia-l4"}, 1});
  ASSERT_EQ(plan.rows.size(), 1u);
  const CatalogPlanRow& r = plan.rows[0];
  EXPECT_EQ(r.mps_clients, 65);  // 64 SDK processes + the model host of the shared copy
  EXPECT_EQ(r.mps_client_limit, 48);
  EXPECT_EQ(r.verdict, FitVerdict::kDoesNotFit);
  EXPECT_NE(r.rule.find("65 MPS clients > the server's limit of 48 per GPU"), std::string::npos) << r.rule;
  EXPECT_FALSE(r.smallest);
}

TEST(CatalogPlan, EveryMachineOfAGpuTypeAndTheSmallestThatFits) {
  // Per-process copies of 3 GiB without MPS: contexts and copies grow with the vCPUs.
  ModelRequirement m = Shared(3 * kGiB);
  m.policy = CopiesPolicy::kPerProcess;
  CatalogPlan plan = Plan({}, {m}, {{"nvidia-l4"}, 1});
  const CatalogPlanRow* g2_4 = Row(plan, "nvidia-l4", "g2-standard-4");
  const CatalogPlanRow* g2_8 = Row(plan, "nvidia-l4", "g2-standard-8");
  const CatalogPlanRow* g2_96 = Row(plan, "nvidia-l4", "g2-standard-96");
  ASSERT_TRUE(g2_4 && g2_8 && g2_96);
  EXPECT_EQ(g2_4->verdict, FitVerdict::kFits);  // 4 × (3 GiB + 350 MiB) = 13.4 GiB of 24
  EXPECT_TRUE(g2_4->smallest);
  EXPECT_EQ(g2_8->verdict, FitVerdict::kDoesNotFit);  // 8 × 3.34 GiB = 26.7 GiB
  EXPECT_EQ(g2_96->gpu_count, 8);
  EXPECT_EQ(g2_96->plan.gpu_memory.processes_per_gpu, 12);
  EXPECT_EQ(g2_4->model_copies_that_fit, 7);  // (24 GiB - 4 × 350 MiB) / 3 GiB
  int smallest = 0, selected = 0;
  for (const CatalogPlanRow& r : plan.rows) {
    smallest += r.smallest;
    selected += r.selected;
  }
  EXPECT_EQ(smallest, 1);
  EXPECT_EQ(selected, 0);  // no accelerator in the flags
}

TEST(CatalogPlan, N1GpusGetTheGpuCountTheMachineNeeds) {
  CatalogPlan plan = Plan({}, {Shared(kGiB)}, {{"nvidia-tesla-t4"}, 1});
  const CatalogPlanRow* small = Row(plan, "nvidia-tesla-t4", "n1-standard-4");
  const CatalogPlanRow* big = Row(plan, "nvidia-tesla-t4", "n1-standard-64");
  ASSERT_TRUE(small && big);
  EXPECT_EQ(small->gpu_count, 1);
  EXPECT_EQ(big->gpu_count, 4);  // T4: 48 vCPUs at most with 1 or 2 GPUs
  EXPECT_EQ(Row(plan, "nvidia-tesla-t4", "n1-highmem-8"), nullptr);  // standard variant only unless named
}

TEST(CatalogPlan, UserConfigurationOutsideTheCatalogIsItsOwnSelectedRow) {
  CatalogPlan plan = Plan({kL4Flag}, {Shared(kGiB)}, {{"nvidia-l4"}, 1});
  ASSERT_FALSE(plan.rows.empty());
  EXPECT_TRUE(plan.rows[0].selected);
  EXPECT_EQ(plan.rows[0].machine_type, "");
  EXPECT_EQ(plan.rows[0].plan.sdk_processes, 4);  // the host's cores
}

TEST(CatalogPlan, SixtyGigabyteJobTakesA3gSliceOfAnH200AndNothingOn80GbPartsForTwo) {
  // One shared copy, one SDK process: 2 contexts (process + model host) of 500 MiB, 60 GiB in all.
  const std::vector<std::string> args = {"--sdk_worker_parallelism=1"};
  const ModelRequirement job = Shared(60 * kGiB - 1000 * (1ull << 20));
  CatalogPlan two = Plan(args, {job}, {{"nvidia-h200-141gb", "nvidia-h100-80gb", "nvidia-a100-80gb"}, 2});
  const CatalogPlanRow* slice = Row(two, "nvidia-h200-141gb", "3g.71gb");
  ASSERT_NE(slice, nullptr);
  EXPECT_EQ(slice->plan.gpu_memory.planned_peak_bytes, 60 * kGiB);
  EXPECT_EQ(slice->verdict, FitVerdict::kFits);
  EXPECT_TRUE(slice->smallest);
  EXPECT_EQ(slice->headroom_bytes, 11 * kGiB);
  EXPECT_EQ(slice->mig_max_instances, 2);
  EXPECT_EQ(Row(two, "nvidia-h200-141gb", "2g.35gb"), nullptr);   // too small to hold it
  EXPECT_EQ(Row(two, "nvidia-h200-141gb", "4g.71gb"), nullptr);   // one instance per GPU only
  EXPECT_EQ(Row(two, "nvidia-h200-141gb", "7g.141gb"), nullptr);
  for (const char* gpu : {"nvidia-h100-80gb", "nvidia-a100-80gb"}) {
    for (const CatalogPlanRow& r : two.rows) EXPECT_TRUE(r.gpu != gpu || r.mig_profile.empty()) << r.mig_profile;
  }
  int notes = 0;
  for (const std::string& n : two.notes) {
    // 60.0 GiB with the H100's 500 MiB contexts, 59.8 GiB with the A100's 400 MiB ones.
    notes += n.find("no profile with 2 instance(s) holds the planned") != std::string::npos &&
             n.find("(the largest is 3g.40gb)") != std::string::npos;
  }
  EXPECT_EQ(notes, 2);

  // One such job: the whole-GPU profile of an 80 GB part holds it.
  CatalogPlan one = Plan(args, {job}, {{"nvidia-a100-80gb"}, 1});
  const CatalogPlanRow* full = Row(one, "nvidia-a100-80gb", "7g.80gb");
  ASSERT_NE(full, nullptr);
  EXPECT_TRUE(full->smallest);
  EXPECT_EQ(Row(one, "nvidia-a100-80gb", "3g.40gb"), nullptr);
}

TEST(CatalogPlan, MigClientLimitIsLoweredWithTheSlice) {
  CatalogPlan plan =
      Plan({"--dataflow_service_options=worker_accelerator=type:nvidia-h200-141gb;count:8;use_nvidia_mps",
            "--sdk_worker_parallelism=14"},
           {Shared(kGiB)}, {{"nvidia-h200-141gb"}, 1});
  const CatalogPlanRow* small = Row(plan, "nvidia-h200-141gb", "1g.18gb");
  const CatalogPlanRow* three = Row(plan, "nvidia-h200-141gb", "3g.71gb");
  ASSERT_TRUE(small && three);
  EXPECT_EQ(small->mps_client_limit, 6);    // 48 × 1/7
  EXPECT_EQ(three->mps_client_limit, 20);   // 48 × 3/7
  EXPECT_EQ(small->verdict, FitVerdict::kDoesNotFit);  // 15 clients > 6
  const CatalogPlanRow* two = Row(plan, "nvidia-h200-141gb", "2g.35gb");
  ASSERT_NE(two, nullptr);
  EXPECT_EQ(two->verdict, FitVerdict::kDoesNotFit);  // 15 > 48 × 2/7 = 13
  EXPECT_EQ(three->verdict, FitVerdict::kFits);
  EXPECT_TRUE(three->smallest);
}

// The RTX PRO 6000 splits in 4: its slices lower the client limit by quarters, not sevenths.
TEST(CatalogPlan, FourSliceGpuLowersTheClientLimitByItsOwnSlices) {
  CatalogPlan plan =
      Plan({"--dataflow_service_options=worker_accelerator=type:nvidia-rtx-pro-6000;count:1;use_nvidia_mps",
            "--machine_type=g4-standard-48"},
           {Shared(kGiB)}, {{"nvidia-rtx-pro-6000"}, 1});
  const CatalogPlanRow* one = Row(plan, "nvidia-rtx-pro-6000", "1g.24gb");
  const CatalogPlanRow* two = Row(plan, "nvidia-rtx-pro-6000", "2g.48gb");
  const CatalogPlanRow* four = Row(plan, "nvidia-rtx-pro-6000", "4g.96gb");
  ASSERT_TRUE(one && two && four);
  EXPECT_EQ(one->mps_client_limit, 12);   // 48 × 1/4
  EXPECT_EQ(two->mps_client_limit, 24);   // 48 × 2/4
  EXPECT_EQ(four->mps_client_limit, 48);  // the whole GPU
  EXPECT_EQ(one->mig_gpu_slices, 4);
  EXPECT_EQ(one->verdict, FitVerdict::kDoesNotFit);  // 48 SDK processes + 1 model host > 12 clients
  EXPECT_NE(RenderCatalogPlanText(plan).find("MIG 2g.48gb (2/4 SMs, up to 2 per GPU)"), std::string::npos)
      << RenderCatalogPlanText(plan);
}

TEST(CatalogPlan, BadRequestsAreInvalidArgument) {
  auto opts = ParsePipelineOptions({});
  const Catalog& c = testing::SourceCatalog();
  auto unknown = MakeCatalogPlan(opts, c, {}, {}, {{"nvidia-l5"}, 1});
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("--gpu 'nvidia-l5': unknown GPU type (did you mean"), std::string::npos)
      << unknown.status().message();
  EXPECT_FALSE(MakeCatalogPlan(opts, c, {}, {}, {{}, 0}).ok());
  auto machine = MakeCatalogPlan(ParsePipelineOptions({"--machine_type=n2-standard-4"}), c, {}, {}, {});
  ASSERT_FALSE(machine.ok());
  EXPECT_NE(machine.status().message().find("takes none of the GPU types"), std::string::npos);
}

TEST(CatalogPlan, JsonHasEveryRowWithItsVerdict) {
  CatalogPlan plan = Plan({kL4Flag + ";use_nvidia_mps", "--machine_type=g2-standard-8"}, {Shared(kGiB)}, {{"nvidia-l4"}, 1});
  auto j = nlohmann::json::parse(RenderCatalogPlanJson(plan));
  ASSERT_EQ(j["rows"].size(), plan.rows.size());
  EXPECT_EQ(j["rows"][0]["verdict"], "fits");
  EXPECT_EQ(j["rows"][0]["selected"], true);
  EXPECT_EQ(j["rows"][0]["mps_clients"], 9);
  std::string text = RenderCatalogPlanText(plan);
  EXPECT_NE(text.find(">*nvidia-l4"), std::string::npos) << text;
  EXPECT_NE(text.find("smallest that fits: nvidia-l4 g2-standard-8"), std::string::npos) << text;
}

}  // namespace
}  // namespace dfw
