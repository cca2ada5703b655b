// Admission table: tenants × worker → the codes refused, with the tenant that does not fit named.
#include <gtest/gtest.h>

#include <algorithm>
#include <deque>

#include "catalog/catalog_test_util.h"
#include "dfw/options/parse.h"
#include "dfw/tenants/admission.h"
#include "dfw/validate/validate.h"
#include "test_util.h"

namespace dfw {
namespace {

using dfw::testing::kGiB;

struct TenantCase {
  std::string name;
  std::string gpu_memory;   // as in the file
  int sdk_processes = 4;
  uint64_t model_bytes = kGiB;  // one model; per process unless shared_copies > 0
  int shared_copies = 0;
  std::string gpu = "nvidia-h200-141gb";
  bool mps = true;
  std::string sink = "";    // "" = out/<name>
};

struct World {
  std::deque<TenantSpec> specs;
  std::deque<WorkerPlan> plans;
  std::vector<TenantInput> inputs;
  TenantsFile file;
};

World Build(const std::vector<TenantCase>& cases, int host_cores) {
  World w;
  w.file.path = "tenants.yaml";
  for (const TenantCase& c : cases) {
    TenantSpec s;
    s.name = c.name;
    s.pipeline = c.name + ".yaml";
    s.gpu_memory = *ParseGpuMemoryShare(c.gpu_memory);
    s.sdk_processes = c.sdk_processes;
    s.origin = {"tenants.yaml:" + std::to_string(w.specs.size() + 2) + ":5", "  - name: " + c.name, 4};
    w.specs.push_back(s);
    std::string acc = "--dataflow_service_options=worker_accelerator=type:" + c.gpu + ";count:1;install-nvidia-driver" +
                      (c.mps ? ";use_nvidia_mps" : "");
    PipelineOptions options = ParsePipelineOptions({acc, "--sdk_worker_parallelism=" + std::to_string(c.sdk_processes)});
    ModelRequirement m;
    m.name = "model";
    m.bytes = c.model_bytes;
    if (c.shared_copies > 0) {
      m.policy = CopiesPolicy::kModelCopies;
      m.model_copies = c.shared_copies;
    }
    HostInfo host;
    host.cpu_cores = host_cores;
    Result<WorkerPlan> plan = MakePlan(options, testing::SourceCatalog(), {m}, host);
    EXPECT_TRUE(plan.ok()) << plan.status().ToString();
    w.plans.push_back(*plan);
    w.inputs.push_back({&w.specs.back(), &w.plans.back(), {c.sink.empty() ? "out/" + c.name : c.sink}});
  }
  return w;
}

struct Case {
  std::string title;
  std::vector<TenantCase> tenants;
  int host_cores = 16;
  std::vector<std::string> codes;  // expected error codes, in order
  std::string names;               // substring of the first error's message ("" = none)
};

std::vector<Case> Cases() {
  return {
      {"TwoSixtyGiBTenantsFitAnH200", {{"a", "60GiB"}, {"b", "60GiB"}}, 16, {}, ""},
      {"ThreeSixtyGiBTenantsDoNotAndTheThirdIsNamed", {{"a", "60GiB"}, {"b", "60GiB"}, {"c", "60GiB"}}, 16,
       {"tenants-gpu-overcommitted"}, "tenant 'c' does not fit on one nvidia-h200-141gb"},
      {"TheSameTwoDoNotFitAnEightyGbPart",
       {{"a", "60GiB", 4, kGiB, 0, "nvidia-a100-80gb"}, {"b", "60GiB", 4, kGiB, 0, "nvidia-a100-80gb"}}, 16,
       {"tenants-gpu-overcommitted"}, "tenant 'b' does not fit on one nvidia-a100-80gb"},
      {"FractionsFitWhenTheyLeaveRoomForTheServerContext", {{"a", "0.5"}, {"b", "0.49"}}, 16, {}, ""},
      {"AWholeGpuLeavesNoRoomForTheServerContext", {{"a", "1"}}, 16, {"tenants-gpu-overcommitted"}, "tenant 'a'"},
      {"MoreMpsClientsThanOneServerTakes", {{"a", "60GiB", 30, 1 << 20}, {"b", "60GiB", 30, 1 << 20}}, 64,
       {"tenants-mps-client-limit"}, "60 MPS clients ('a' 30 + 'b' 30"},
      {"GuaranteedProcessesOverTheVcpus", {{"a", "60GiB", 6}, {"b", "60GiB", 6}}, 8, {"tenants-vcpus"},
       "'a' 6 + 'b' 6 = 12 exceed the 8 vCPUs"},
      {"APlanOverItsBudget", {{"a", "2GiB", 4, kGiB}, {"b", "60GiB"}}, 16, {"tenant-over-budget"},
       "tenant 'a''s plan needs 4.0 GiB"},
      {"ABudgetTooThinForItsModelHost", {{"a", "4GiB", 3, 3 * kGiB, 1}}, 16, {"tenant-client-share"},
       "divided among its 4 MPS clients is 1.0 GiB each"},
      {"NoMps", {{"a", "10GiB", 2, kGiB, 0, "nvidia-l4", false}}, 16, {"tenants-mps-required"}, "without MPS"},
      {"DifferentWorkers", {{"a", "10GiB", 2, kGiB, 0, "nvidia-l4"}, {"b", "1GiB", 2, 1 << 20, 0, "nvidia-tesla-t4"}}, 16,
       {"tenants-worker-mismatch"}, "tenant 'b''s options give a different worker"},
      {"TheSameOutputPath", {{"a", "10GiB", 2, kGiB, 0, "nvidia-l4", true, "out/x"}, {"b", "1GiB", 2, 1 << 20, 0, "nvidia-l4", true, "out/x"}},
       16, {"tenants-same-output"}, "tenant 'b' writes 'out/x', which tenant 'a' writes too"},
      {"EveryViolationAtOnce", {{"a", "100GiB", 40, kGiB}, {"b", "100GiB", 40, kGiB}}, 16,
       {"tenants-gpu-overcommitted", "tenants-mps-client-limit", "tenants-vcpus"}, "tenant 'b' does not fit"},
  };
}

class AdmissionTable : public ::testing::TestWithParam<Case> {};

TEST_P(AdmissionTable, RefusesExactlyTheViolations) {
  const Case& c = GetParam();
  World w = Build(c.tenants, c.host_cores);
  Admission a = AdmitTenants(w.file, w.inputs, testing::SourceCatalog());
  std::vector<std::string> codes;
  std::string all;
  for (const Diagnostic& d : a.diagnostics) {
    codes.push_back(d.code);
    all += d.code + ": " + d.message + " [help: " + d.help + "]\n";
    EXPECT_FALSE(d.help.empty()) << d.code;
    EXPECT_FALSE(DocUrl(d.code).empty()) << d.code << " is not in AllRules()";
  }
  EXPECT_EQ(codes, c.codes) << all;
  if (!c.names.empty()) {
    ASSERT_FALSE(a.diagnostics.empty());
    EXPECT_NE(a.diagnostics.front().message.find(c.names), std::string::npos) << all;
  }
  EXPECT_EQ(a.tenants.size(), c.tenants.size());
}

INSTANTIATE_TEST_SUITE_P(Tenants, AdmissionTable, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.title; });

TEST(Admission, DividesEachBudgetAmongItsClientsAndKeepsItsMpsSettings) {
  World w = Build({{"a", "60GiB", 4}, {"b", "30GiB", 2, 2 * kGiB, 1}}, 16);
  w.specs[0].active_thread_percentage = 50;
  w.specs[0].priority = TenantPriority::kBelowNormal;
  Admission a = AdmitTenants(w.file, w.inputs, testing::SourceCatalog());
  ASSERT_TRUE(a.diagnostics.empty()) << a.diagnostics.front().message;
  ASSERT_EQ(a.tenants.size(), 2u);
  EXPECT_EQ(a.strategy, "mps");
  EXPECT_EQ(a.tenants[0].budget_bytes, 60 * kGiB);
  EXPECT_EQ(a.tenants[0].clients, 4);
  EXPECT_EQ(a.tenants[0].pinned_limit_bytes, 15 * kGiB);
  EXPECT_EQ(a.tenants[0].need_bytes, 4 * kGiB);
  EXPECT_EQ(a.tenants[0].active_thread_percentage, 50);
  EXPECT_EQ(a.tenants[0].priority, TenantPriority::kBelowNormal);
  EXPECT_EQ(a.tenants[1].clients, 3);  // 2 SDK processes + 1 model host
  EXPECT_EQ(a.tenants[1].model_hosts, 1);
  EXPECT_EQ(a.tenants[1].pinned_limit_bytes, 10 * kGiB);
  EXPECT_EQ(a.clients, 7);
  EXPECT_EQ(a.processes, 6);
  EXPECT_EQ(a.budgets_bytes, 90 * kGiB);
  EXPECT_EQ(a.overhead_bytes, testing::SourceCatalog().FindGpu("nvidia-h200-141gb")->context_overhead_bytes);
  ASSERT_EQ(a.isolation.size(), 3u);
  EXPECT_EQ(a.isolation[0].rfind("MPS split (used)", 0), 0u);
  EXPECT_NE(a.isolation[1].find("MIG: hardware isolation"), std::string::npos);
  EXPECT_NE(RenderAdmissionText(a).find("a: budget 60.0 GiB"), std::string::npos) << RenderAdmissionText(a);
  EXPECT_NE(RenderAdmissionJson(a).find("\"pinned_limit_bytes\":16106127360"), std::string::npos);
}

TEST(Admission, EveryTenantCodeIsProducedByATest) {
  std::vector<std::string> covered = {"tenants-file-invalid", "tenants-budget-over-100",  // tenants_file_test.cc
                                      "tenants-pipeline-invalid"};                          // tests/cli tenants test
  for (const Case& c : Cases()) covered.insert(covered.end(), c.codes.begin(), c.codes.end());
  for (const RuleInfo& rule : AllRules()) {
    if (std::string_view(rule.code).rfind("tenant", 0) != 0) continue;
    EXPECT_NE(std::find(covered.begin(), covered.end(), rule.code), covered.end()) << rule.code;
  }
}

}  // namespace
}  // namespace dfw

namespace dfw {
namespace {

TEST(AdmissionMig, TwoSixtyGiBTenantsOnAnH200WouldTakeTwo3g71gbSlices) {
  World w = Build({{"a", "60GiB"}, {"b", "60GiB"}}, 16);
  Admission a = AdmitTenants(w.file, w.inputs, testing::SourceCatalog());
  ASSERT_TRUE(a.mig.has_value());
  ASSERT_EQ(a.mig->slots.size(), 2u);
  EXPECT_EQ(a.mig->slots[0].profile, "3g.71gb");
  EXPECT_EQ(a.mig->slots[1].profile, "3g.71gb");
  EXPECT_EQ(a.mig->compute_slices, 6);
  EXPECT_TRUE(a.mig->fits) << a.mig->why_not;
  const std::string text = RenderAdmissionText(a);
  EXPECT_NE(text.find("a -> 3g.71gb, b -> 3g.71gb (6 of 7 compute slices): fits one GPU"), std::string::npos) << text;
  EXPECT_NE(text.find("MPS split (used)"), std::string::npos) << text;
  EXPECT_NE(RenderAdmissionJson(a).find("\"mig\":{\"compute_slices\":6,\"fits\":true"), std::string::npos)
      << RenderAdmissionJson(a);
}

TEST(AdmissionMig, SaysWhyALayoutDoesNotFit) {
  // Three 60 GiB tenants: three 3g.71gb, 9 slices, and one GPU holds two of that profile.
  World three = Build({{"a", "60GiB"}, {"b", "60GiB"}, {"c", "60GiB"}}, 16);
  Admission a = AdmitTenants(three.file, three.inputs, testing::SourceCatalog());
  ASSERT_TRUE(a.mig.has_value());
  EXPECT_FALSE(a.mig->fits);
  EXPECT_NE(a.mig->why_not.find("9 compute slices are more than one nvidia-h200-141gb's 7"), std::string::npos) << a.mig->why_not;
  EXPECT_NE(a.mig->why_not.find("3 x 3g.71gb but one GPU holds 2"), std::string::npos) << a.mig->why_not;
  // Small tenants take the smallest profile that holds them: 4 x 1g.18gb fit (4 of 7 slices).
  World small = Build({{"a", "10GiB", 1}, {"b", "10GiB", 1}, {"c", "17GiB", 1}, {"d", "5GiB", 1}}, 16);
  Admission s = AdmitTenants(small.file, small.inputs, testing::SourceCatalog());
  ASSERT_TRUE(s.mig.has_value());
  for (const MigLayout::Slot& slot : s.mig->slots) EXPECT_EQ(slot.profile, "1g.18gb") << slot.tenant;
  EXPECT_TRUE(s.mig->fits) << s.mig->why_not;
}

TEST(AdmissionMig, NoLayoutWithoutMigProfiles) {
  World w = Build({{"a", "4GiB", 1, kGiB, 0, "nvidia-l4"}, {"b", "4GiB", 1, kGiB, 0, "nvidia-l4"}}, 16);
  Admission a = AdmitTenants(w.file, w.inputs, testing::SourceCatalog());
  EXPECT_FALSE(a.mig.has_value());
  EXPECT_NE(RenderAdmissionText(a).find("MIG: not available on nvidia-l4"), std::string::npos) << RenderAdmissionText(a);
}


// A 4-slice GPU (RTX PRO 6000): its own slice count decides, not the 7 of A100/H100/H200.
TEST(AdmissionMig, FourSliceGpuRefusesALayoutOfFiveSlices) {
  const GpuType* rtx = testing::SourceCatalog().FindGpu("nvidia-rtx-pro-6000");
  ASSERT_NE(rtx, nullptr);
  auto tenant = [](const char* name, uint64_t gib) {
    TenantLimits t;
    t.name = name;
    t.budget_bytes = gib << 30;
    return t;
  };
  // 40 GiB -> 2g.48gb (2 slices) twice = 4 of 4: fits.
  std::optional<MigLayout> two = ProposeMigLayout(*rtx, {tenant("a", 40), tenant("b", 40)});
  ASSERT_TRUE(two.has_value());
  EXPECT_EQ(two->gpu_compute_slices, 4);
  EXPECT_EQ(two->compute_slices, 4);
  EXPECT_TRUE(two->fits) << two->why_not;
  // 2g.48gb + 2g.48gb + 1g.24gb = 5 slices on a 4-slice GPU: refused, naming the GPU's 4.
  std::optional<MigLayout> five = ProposeMigLayout(*rtx, {tenant("a", 40), tenant("b", 40), tenant("c", 20)});
  ASSERT_TRUE(five.has_value());
  EXPECT_EQ(five->compute_slices, 5);
  EXPECT_FALSE(five->fits);
  EXPECT_NE(five->why_not.find("5 compute slices are more than one nvidia-rtx-pro-6000's 4"), std::string::npos)
      << five->why_not;
  // On a 7-slice H200 the same three tenants (smaller profiles there) fit.
  const GpuType* h200 = testing::SourceCatalog().FindGpu("nvidia-h200-141gb");
  std::optional<MigLayout> on_h200 = ProposeMigLayout(*h200, {tenant("a", 30), tenant("b", 30), tenant("c", 15)});
  ASSERT_TRUE(on_h200.has_value());
  EXPECT_EQ(on_h200->gpu_compute_slices, 7);
  EXPECT_TRUE(on_h200->fits) << on_h200->why_not;
}

}  // namespace
}  // namespace dfw
