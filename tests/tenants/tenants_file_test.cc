// The tenants file is parsed strictly: every bad entry is reported, naming the tenant and the field.
#include <gtest/gtest.h>

#include "dfw/tenants/tenants_file.h"

namespace dfw {
namespace {

std::string Messages(const TenantsParse& p) {
  std::string all;
  for (const Diagnostic& d : p.diagnostics) all += "[" + d.code + "] " + d.message + "\n";
  return all;
}

TEST(TenantsFile, ParsesEveryKeyWithDefaults) {
  TenantsParse p = ParseTenantsFile(R"(tenants:
  - name: classify
    pipeline: pipelines/default.yaml
    gpu_memory: 30GiB
    active_thread_percentage: 50
    priority: below_normal
    sdk_processes: 4
    over_quota_weight: 2.5
  - name: embed
    pipeline: pipelines/embed_sentences.yaml
    gpu_memory: 0.25
)",
                                    "t.yaml");
  ASSERT_TRUE(p.diagnostics.empty()) << Messages(p);
  ASSERT_EQ(p.file.tenants.size(), 2u);
  const TenantSpec& a = p.file.tenants[0];
  EXPECT_EQ(a.name, "classify");
  EXPECT_EQ(a.pipeline, "pipelines/default.yaml");
  EXPECT_EQ(*a.gpu_memory.bytes, 30ull << 30);
  EXPECT_EQ(a.active_thread_percentage, 50);
  EXPECT_EQ(a.priority, TenantPriority::kBelowNormal);
  EXPECT_EQ(a.sdk_processes, 4);
  EXPECT_EQ(a.over_quota_weight, 2.5);
  EXPECT_EQ(a.origin.where, "t.yaml:2:5");
  const TenantSpec& b = p.file.tenants[1];
  EXPECT_FALSE(b.gpu_memory.bytes);
  EXPECT_EQ(b.gpu_memory.BytesOf(1000), 250u);
  EXPECT_EQ(b.active_thread_percentage, 100);
  EXPECT_EQ(b.priority, TenantPriority::kNormal);
  EXPECT_EQ(b.sdk_processes, 1);
  EXPECT_EQ(b.over_quota_weight, 1);
}

TEST(TenantsFile, GpuMemoryTakesUnitsFractionsAndPercentages) {
  struct Case { const char* text; uint64_t bytes_of_1000; bool ok; };
  for (const Case& c : std::vector<Case>{{"1000B", 1000, true}, {"1KB", 1000, true}, {"0.5", 500, true},
                                         {"40%", 400, true}, {"1", 1000, true}, {"2KiB", 2048, true},
                                         {"0", 0, false}, {"-1GiB", 0, false}, {"2", 0, false}, {"3 parsecs", 0, false},
                                         {"", 0, false}, {"150%", 0, false}, {"0%", 0, false}}) {
    Result<GpuMemoryShare> s = ParseGpuMemoryShare(c.text);
    EXPECT_EQ(s.ok(), c.ok) << c.text;
    if (s.ok() && c.ok) {
      EXPECT_EQ(s->BytesOf(1000), c.bytes_of_1000) << c.text;
    }
  }
}

TEST(TenantsFile, ReportsEveryBadFieldNamingTheTenant) {
  TenantsParse p = ParseTenantsFile(R"(tenants:
  - name: a
    pipeline: p.yaml
    gpu_memory: 0
    priority: high
    colour: blue
  - name: b
    pipeline: p.yaml
    gpu_memory: 1GiB
    active_thread_percentage: -5
    sdk_processes: 0
    over_quota_weight: 0
  - name: a
    pipeline: q.yaml
    gpu_memory: 1GiB
  - name: c
    pipeline: q.yaml
  - name: Bad Name
    pipeline: q.yaml
    gpu_memory: 1GiB
)",
                                    "t.yaml");
  const std::string all = Messages(p);
  for (const char* want : {"t.yaml:4:17: tenant 'a': field 'gpu_memory': '0'",
                           "t.yaml:5:15: tenant 'a': field 'priority': 'high' is not an MPS client priority",
                           "t.yaml:6:5: tenant 'a': unknown key 'colour'",
                           "tenant 'b': field 'active_thread_percentage': '-5'", "tenant 'b': field 'sdk_processes': '0'",
                           "tenant 'b': field 'over_quota_weight': '0'",
                           "tenant 'a': field 'name': duplicate (first defined at t.yaml:2:5)",
                           "tenant 'c': missing field 'gpu_memory'", "field 'name': 'Bad Name' is not a valid tenant name"}) {
    EXPECT_NE(all.find(want), std::string::npos) << want << "\n" << all;
  }
  for (const Diagnostic& d : p.diagnostics) EXPECT_EQ(d.code, "tenants-file-invalid") << d.message;
  EXPECT_EQ(p.diagnostics.size(), 9u) << all;
}

TEST(TenantsFile, FractionsOver100PercentAreRefusedAtTheTenantThatCrossesIt) {
  TenantsParse p = ParseTenantsFile(R"(tenants:
  - {name: a, pipeline: p.yaml, gpu_memory: 0.5}
  - {name: b, pipeline: p.yaml, gpu_memory: 40%}
  - {name: c, pipeline: p.yaml, gpu_memory: 0.2}
)",
                                    "t.yaml");
  ASSERT_EQ(p.diagnostics.size(), 1u) << Messages(p);
  EXPECT_EQ(p.diagnostics[0].code, "tenants-budget-over-100");
  EXPECT_NE(p.diagnostics[0].message.find("tenant 'c': field 'gpu_memory': the fractions of the GPU add up to 110%"),
            std::string::npos)
      << p.diagnostics[0].message;
}

TEST(TenantsFile, ARepeatedKeyIsRefusedWithBothPlaces) {
  TenantsParse p = ParseTenantsFile("tenants:\n  - name: a\n    pipeline: p.yaml\n    gpu_memory: 1GiB\n    gpu_memory: 8GiB\n",
                                    "t.yaml");
  ASSERT_EQ(p.diagnostics.size(), 1u) << Messages(p);
  EXPECT_EQ(p.diagnostics[0].code, "tenants-file-invalid");
  EXPECT_NE(p.diagnostics[0].message.find("t.yaml:5:5: duplicate key 'gpu_memory' (first at line 4, column 5)"),
            std::string::npos)
      << p.diagnostics[0].message;
  EXPECT_TRUE(p.file.tenants.empty()) << "no tenant is taken from a file with a repeated key";
}

TEST(TenantsFile, MoreTenantsThanAnyWorkerCouldAdmitAreRefusedBeforeTheyAreRead) {
  std::string text = "tenants:\n";
  for (int i = 0; i < 10000; ++i) text += "  - {name: t" + std::to_string(i) + ", pipeline: p.yaml, gpu_memory: 1GiB}\n";
  TenantsParse p = ParseTenantsFile(text, "t.yaml");
  ASSERT_EQ(p.diagnostics.size(), 1u) << Messages(p);
  EXPECT_NE(p.diagnostics[0].message.find("lists 10000 tenants, more than any worker could admit (384"), std::string::npos)
      << p.diagnostics[0].message;
  EXPECT_TRUE(p.file.tenants.empty());
}

TEST(TenantsFile, BadYamlAndWrongShapesAreDiagnosticsNotExceptions) {
  for (const char* text : {"tenants: [", "tenants: 3", "- a\n- b\n", "", "tenants: []", "tenant:\n  - name: a\n",
                           "tenants:\n  - [1, 2]\n", "tenants:\n  - name: {x: 1}\n    pipeline: p\n    gpu_memory: 1GiB\n"}) {
    TenantsParse p = ParseTenantsFile(text, "t.yaml");
    EXPECT_FALSE(p.diagnostics.empty()) << text;
    for (const Diagnostic& d : p.diagnostics) EXPECT_EQ(d.message.rfind("t.yaml:", 0), 0u) << d.message;
  }
}

}  // namespace
}  // namespace dfw

namespace dfw {
namespace {

TEST(TenantsFile, BorrowingIsOnByDefaultAndTakesOnlyABool) {
  const std::string tenants = "tenants:\n  - {name: a, pipeline: a.yaml, gpu_memory: 1GiB}\n";
  TenantsParse on = ParseTenantsFile(tenants, "t.yaml");
  ASSERT_TRUE(on.diagnostics.empty());
  EXPECT_TRUE(on.file.borrowing);
  TenantsParse off = ParseTenantsFile("borrowing: false\n" + tenants, "t.yaml");
  ASSERT_TRUE(off.diagnostics.empty());
  EXPECT_FALSE(off.file.borrowing);
  TenantsParse bad = ParseTenantsFile("borrowing: sometimes\n" + tenants, "t.yaml");
  ASSERT_EQ(bad.diagnostics.size(), 1u);
  EXPECT_NE(bad.diagnostics[0].message.find("field 'borrowing': expected true or false, got 'sometimes'"), std::string::npos)
      << bad.diagnostics[0].message;
  ASSERT_TRUE(bad.diagnostics[0].origin.has_value());
  EXPECT_NE(bad.diagnostics[0].origin->where.find("t.yaml:1:"), std::string::npos) << bad.diagnostics[0].origin->where;
}

}  // namespace
}  // namespace dfw
