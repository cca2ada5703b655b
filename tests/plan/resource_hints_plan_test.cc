// The plan's view of the resource hints: which transform asked for what, and who declared the GPU.
#include <gtest/gtest.h>

#include "catalog/catalog_test_util.h"
#include "dfw/options/parse.h"
#include "dfw/plan/plan.h"
#include "test_util.h"

namespace dfw {
namespace {

using dfw::testing::kL4Accelerator;

WorkerPlan PlanOf(const std::vector<std::string>& args, const std::string& yaml) {
  auto plan = MakePlan(ParsePipelineOptions(args, yaml, "p.yaml"), testing::SourceCatalog(), {}, HostInfo{4, 0, std::nullopt, ""});
  EXPECT_TRUE(plan.ok()) << plan.status().ToString();
  return plan.ok() ? *plan : WorkerPlan{};
}

const std::string kYaml =
    "pipeline:\n  resource_hints: {min_ram: 2GB}\n  transforms:\n    - type: Create\n      name: Read\n"
    "      resource_hints: {cpu_count: 2}\n    - type: RunInference\n      name: Classify\n      input: Read\n"
    "      resource_hints: {accelerator: '" + kL4Accelerator + "', min_ram: 1GB}\n";

TEST(ResourceHintsPlan, ATransformsAcceleratorHintIsTheWorkersGpuAndEveryScopeIsListed) {
  WorkerPlan p = PlanOf({"--machine_type=g2-standard-8"}, kYaml);
  ASSERT_TRUE(p.accelerator.present);
  EXPECT_EQ(p.accelerator.type, "nvidia-l4");
  EXPECT_EQ(p.accelerator.declared_by, "resource hint of transform 'Classify' (p.yaml:7:7)");
  ASSERT_EQ(p.resource_hints.size(), 3u);
  EXPECT_EQ(p.resource_hints[0].transform, "");
  EXPECT_EQ(p.resource_hints[0].min_ram_bytes, 2'000'000'000u);
  EXPECT_EQ(p.resource_hints[1].transform, "Read");
  EXPECT_EQ(p.resource_hints[1].cpu_count, 2);
  EXPECT_EQ(p.resource_hints[1].min_ram_bytes, 2'000'000'000u);  // inherited from the pipeline level
  EXPECT_TRUE(p.resource_hints[1].accelerator.empty());
  EXPECT_EQ(p.resource_hints[2].transform, "Classify");
  EXPECT_EQ(p.resource_hints[2].accelerator, kL4Accelerator);
  EXPECT_FALSE(p.resource_hints[2].accelerator_inherited);
  EXPECT_EQ(p.resource_hints[2].min_ram_bytes, 2'000'000'000u);  // the larger of 1GB and the pipeline's 2GB

  const std::string text = RenderPlanText(p);
  EXPECT_NE(text.find("declared by the resource hint of transform 'Classify' (p.yaml:7:7); right fitting"),
            std::string::npos) << text;
  EXPECT_NE(text.find("resource hints:  pipeline level: min_ram 2 GB\n"), std::string::npos) << text;
  EXPECT_NE(text.find("'Read' (p.yaml:4:7): min_ram 2 GB, cpu_count 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("'Classify' (p.yaml:7:7): accelerator " + kL4Accelerator + ", min_ram 2 GB\n"), std::string::npos) << text;
}

TEST(ResourceHintsPlan, WorkerAcceleratorIsNotDeclaredByAHintAndNoHintsListNothing) {
  WorkerPlan p = PlanOf({"--dataflow_service_options=worker_accelerator=" + kL4Accelerator, "--machine_type=g2-standard-8"},
                        "pipeline:\n  transforms: []\n");
  EXPECT_TRUE(p.accelerator.present);
  EXPECT_TRUE(p.accelerator.declared_by.empty());
  EXPECT_TRUE(p.resource_hints.empty());
  EXPECT_EQ(RenderPlanText(p).find("resource hints:"), std::string::npos);

  WorkerPlan cli = PlanOf({"--resource_hints=accelerator=" + kL4Accelerator, "--machine_type=g2-standard-8"}, "");
  EXPECT_EQ(cli.accelerator.declared_by, "pipeline-level resource hint (command line)");
  ASSERT_EQ(cli.resource_hints.size(), 1u);
  EXPECT_EQ(cli.resource_hints[0].accelerator, kL4Accelerator);
}

}  // namespace
}  // namespace dfw
