#include "dfw/catalog/catalog.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "catalog/catalog_test_util.h"
#include "test_util.h"

namespace dfw {
namespace {

using testing::SourceCatalog;

TEST(Catalog, HasEveryGpuTypeOfTheReferenceTable) {
  for (const char* name : {"nvidia-tesla-t4", "nvidia-tesla-p4", "nvidia-tesla-v100", "nvidia-tesla-p100",
                           "nvidia-tesla-a100", "nvidia-a100-80gb", "nvidia-l4", "nvidia-h100-80gb",
                           "nvidia-h100-mega-80gb", "nvidia-h200-141gb"}) {
    const GpuType* gpu = SourceCatalog().FindGpu(name);
    ASSERT_NE(gpu, nullptr) << name;
    EXPECT_GT(gpu->memory_bytes, 0u);
    EXPECT_GT(gpu->context_overhead_bytes, 0u);
    EXPECT_FALSE(gpu->sources.at("memory").empty());
  }
  const GpuType* l4 = SourceCatalog().FindGpu("nvidia-l4");
  EXPECT_EQ(l4->memory_bytes, 24ull << 30);
  EXPECT_EQ(l4->compute_capability.ToString(), "8.9");
  EXPECT_EQ(l4->machine_families, std::vector<std::string>{"g2"});
}

TEST(Catalog, MpsClientLimitFollowsComputeCapability) {
  EXPECT_EQ(SourceCatalog().MpsClientLimit(*SourceCatalog().FindGpu("nvidia-l4")), 48);
  EXPECT_EQ(SourceCatalog().MpsClientLimit(*SourceCatalog().FindGpu("nvidia-tesla-v100")), 48);
  EXPECT_EQ(SourceCatalog().MpsClientLimit(*SourceCatalog().FindGpu("nvidia-tesla-p100")), 16);
}

TEST(Catalog, MachineTypesFixedGeneratedAndCustom) {
  const Catalog& c = SourceCatalog();
  auto g2 = c.FindMachine("g2-standard-24");
  ASSERT_TRUE(g2);
  EXPECT_EQ(g2->vcpus, 24);
  EXPECT_EQ(g2->fixed_gpu, "nvidia-l4");
  EXPECT_EQ(g2->fixed_gpu_count, 2);
  auto n1 = c.FindMachine("n1-standard-8");
  ASSERT_TRUE(n1);
  EXPECT_EQ(n1->vcpus, 8);
  EXPECT_EQ(n1->memory_bytes, 30ull << 30);  // 8 × 3.75 GB
  EXPECT_TRUE(n1->gpu_attachable);
  auto custom = c.FindMachine("custom-6-23040");
  ASSERT_TRUE(custom);
  EXPECT_EQ(custom->vcpus, 6);
  EXPECT_EQ(custom->family, "n1");
  EXPECT_TRUE(c.FindMachine("n1-custom-6-23040"));
  EXPECT_FALSE(c.FindMachine("custom-6-100000"));  // above 6.5 GB per vCPU
  EXPECT_FALSE(c.FindMachine("custom-5-20480"));   // odd vCPU count
  EXPECT_FALSE(c.FindMachine("custom-6-23000"));   // not a multiple of 256 MB
  EXPECT_FALSE(c.FindMachine("n1-standard-3"));
  EXPECT_FALSE(c.FindMachine("g2-standard-7"));
  auto n2 = c.FindMachine("n2-highmem-16");
  ASSERT_TRUE(n2);
  EXPECT_FALSE(n2->gpu_attachable);
}

TEST(Catalog, N1Limits) {
  const N1GpuLimit* v100 = SourceCatalog().FindN1Limit("nvidia-tesla-v100", 1);
  ASSERT_NE(v100, nullptr);
  EXPECT_EQ(v100->max_vcpus, 12);
  EXPECT_EQ(SourceCatalog().FindN1Limit("nvidia-l4", 1), nullptr);
}

TEST(Catalog, EmbeddedCopyMatchesTheSourceTree) {
  auto embedded = Catalog::LoadEmbedded();
  ASSERT_TRUE(embedded.ok()) << embedded.status().ToString();
  EXPECT_EQ(embedded->GpuNames(), SourceCatalog().GpuNames());
  EXPECT_EQ(embedded->MachineNames(), SourceCatalog().MachineNames());
  EXPECT_EQ(embedded->origin(), "embedded");
}

struct BadCatalog {
  std::string name;
  std::string text;
  std::string expected;  // substring of the error
};

void PrintTo(const BadCatalog& c, std::ostream* os) { *os << c.name; }

class MalformedCatalog : public ::testing::TestWithParam<BadCatalog> {};

TEST_P(MalformedCatalog, IsInvalidArgumentNamingFileAndLine) {
  const BadCatalog& c = GetParam();
  auto result = Catalog::Make({{"configs/x.yaml", c.text}});
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(result.status().message().find(c.expected), std::string::npos) << result.status().message();
}

const std::string kGpuHead =
    "gpus:\n  - name: g\n    display_name: G\n    machine_families: [n1]\n    counts: [1]\n"
    "    compute_capability: \"7.5\"\n    context_overhead_mib: 300\n";
const std::string kSources =
    "    sources: {memory: u, machine_families: u, counts: u, compute_capability: u, context_overhead: u}\n";

INSTANTIATE_TEST_SUITE_P(
    Catalog, MalformedCatalog,
    ::testing::Values(
        BadCatalog{"yaml_syntax", "gpus: [\n", "configs/x.yaml:2:1"},
        BadCatalog{"missing_memory", kGpuHead + kSources, "configs/x.yaml:2:5: gpu 'g': missing field 'memory_gb'"},
        BadCatalog{"bad_memory", kGpuHead + "    memory_gb: lots\n" + kSources, "configs/x.yaml:8:16"},
        BadCatalog{"missing_source", kGpuHead + "    memory_gb: 16\n    sources: {memory: u}\n", "no source for"},
        BadCatalog{"bad_cc", "gpus:\n  - {name: g, display_name: G, memory_gb: 1, machine_families: [n1], counts: [1], "
                             "compute_capability: \"seven\", context_overhead_mib: 1, sources: {}}\n",
                   "MAJOR.MINOR"},
        BadCatalog{"unknown_top_key", "gpu: []\n", "configs/x.yaml:1:1: unknown top-level key 'gpu'"},
        BadCatalog{"not_a_list", "gpus: {a: b}\n", "'gpus' must be a list"},
        BadCatalog{"no_gpus", "mps: {min_compute_capability: \"3.5\", volta_compute_capability: \"7.0\", "
                              "clients_per_device_pre_volta: 16, clients_per_device_volta: 48}\n",
                   "defines no GPU types"},
        BadCatalog{"machine_unknown_gpu",
                   kGpuHead + "    memory_gb: 16\n" + kSources +
                       "accelerator_optimized:\n  - {name: g2-x-1, vcpus: 1, memory_gb: 1, gpu: nope, gpus: 1}\n",
                   "names unknown GPU 'nope'"},
        BadCatalog{"negative_count", "gpus:\n  - {name: g, display_name: G, memory_gb: 1, machine_families: [n1], "
                                     "counts: [-1]}\n",
                   "'counts' must be a positive whole number, got '-1'"}),
    [](const ::testing::TestParamInfo<BadCatalog>& info) { return info.param.name; });

TEST(Catalog, LocatePrefersTheFlagThenTheEnvironment) {
  namespace fs = std::filesystem;
  const dfw::testing::TempDir tmp;
  const std::filesystem::path dir = tmp.path();
  {
    std::ofstream(dir / "gpus.yaml") << "gpus: [\n";
  }
  auto from_flag = Catalog::Locate(dir.string());
  ASSERT_FALSE(from_flag.ok());
  EXPECT_NE(from_flag.status().message().find("gpus.yaml:"), std::string::npos) << from_flag.status().message();

  ::setenv("DFW_CATALOG_DIR", dir.string().c_str(), 1);
  EXPECT_FALSE(Catalog::Locate().ok());
  ::setenv("DFW_CATALOG_DIR", (std::string(DFW_SOURCE_DIR) + "/configs").c_str(), 1);
  EXPECT_TRUE(Catalog::Locate().ok());
  ::unsetenv("DFW_CATALOG_DIR");
  EXPECT_EQ(Catalog::LoadDir((dir / "missing").string()).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace dfw
