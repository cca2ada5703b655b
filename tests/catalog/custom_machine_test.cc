// Custom machine types (shape from the name, the family's custom rules), GPU names written like
// product names, and retired GPUs.
#include <gtest/gtest.h>

#include "catalog/catalog_test_util.h"

namespace dfw {
namespace {

using testing::SourceCatalog;

struct Custom {
  const char* name;
  int vcpus;            // 0 = refused
  uint64_t memory_mb;
  const char* family;
  bool gpu_attachable;
  const char* why;      // a part of the refusal
};

void PrintTo(const Custom& c, std::ostream* os) { *os << c.name; }

class CustomMachines : public ::testing::TestWithParam<Custom> {};

TEST_P(CustomMachines, ShapeFromTheNameOrTheBrokenRule) {
  const Custom& c = GetParam();
  auto custom = SourceCatalog().CustomMachine(c.name);
  ASSERT_TRUE(custom) << c.name << " is written as a custom type";
  if (c.vcpus == 0) {
    ASSERT_FALSE(custom->ok()) << c.name;
    EXPECT_NE(custom->status().message().find(c.why), std::string::npos) << custom->status().message();
    EXPECT_FALSE(SourceCatalog().FindMachine(c.name));
    return;
  }
  ASSERT_TRUE(custom->ok()) << custom->status().ToString();
  EXPECT_EQ((*custom)->vcpus, c.vcpus);
  EXPECT_EQ((*custom)->memory_bytes, c.memory_mb << 20);
  EXPECT_EQ((*custom)->family, c.family);
  EXPECT_EQ((*custom)->gpu_attachable, c.gpu_attachable);
  auto found = SourceCatalog().FindMachine(c.name);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->vcpus, c.vcpus);
}

const Custom kCustom[] = {
    {"custom-1-13312-ext", 1, 13312, "n1", true, ""},  // Google's GPU sample shape: 13 GB on 1 vCPU
    {"n1-custom-8-30720", 8, 30720, "n1", true, ""},
    {"custom-8-30720", 8, 30720, "n1", true, ""},
    {"n2-custom-8-32768", 8, 32768, "n2", false, ""},
    {"n2-custom-2-32768-ext", 2, 32768, "n2", false, ""},
    {"custom-1-1024", 1, 1024, "n1", true, ""},
    {"custom-1-13312", 0, 0, "", false, "written with -ext"},       // above 6.5 GB per vCPU without -ext
    {"custom-96-1048576-ext", 0, 0, "", false, "extended-memory maximum"},
    {"custom-3-12288", 0, 0, "", false, "1 or a multiple of 2"},
    {"custom-98-98304", 0, 0, "", false, "to 96"},
    {"n2-custom-1-4096", 0, 0, "", false, "a multiple of 2 from 2 to 128"},
    {"custom-8-30000", 0, 0, "", false, "multiple of 256 MB"},
    {"custom-8-4096", 0, 0, "", false, "below the n1 minimum"},
    {"custom-8", 0, 0, "", false, "<family>-custom-<vCPUs>-<memory MB>[-ext]"},
    {"custom-8-30720-extra", 0, 0, "", false, "<family>-custom"},
    {"custom-x-30720", 0, 0, "", false, "positive whole numbers"},
    {"g2-custom-8-32768", 0, 0, "", false, "no custom rules for the g2 family"},
};

INSTANTIATE_TEST_SUITE_P(Table, CustomMachines, ::testing::ValuesIn(kCustom));

TEST(CustomMachines, OtherNamesAreNotCustom) {
  EXPECT_FALSE(SourceCatalog().CustomMachine("n1-standard-8"));
  EXPECT_FALSE(SourceCatalog().CustomMachine("g2-standard-8"));
  EXPECT_FALSE(SourceCatalog().CustomMachine(""));
}

std::vector<std::string> Like(std::string_view written) {
  std::vector<std::string> out;
  for (const GpuType* g : SourceCatalog().GpuTypesLike(written)) out.push_back(g->name);
  return out;
}

TEST(GpuTypesLike, ProductNamesFindTheComputeEngineName) {
  EXPECT_EQ(Like("L4"), std::vector<std::string>{"nvidia-l4"});
  EXPECT_EQ(Like("nvidia-l4-gpu"), std::vector<std::string>{"nvidia-l4"});
  EXPECT_EQ(Like("NVIDIA T4"), std::vector<std::string>{"nvidia-tesla-t4"});
  EXPECT_EQ(Like("a100"), (std::vector<std::string>{"nvidia-tesla-a100", "nvidia-a100-80gb"}));
  EXPECT_EQ(Like("nvidia-h100-80gb-mega"), std::vector<std::string>{"nvidia-h100-mega-80gb"});
  EXPECT_EQ(Like("h100"), (std::vector<std::string>{"nvidia-h100-80gb", "nvidia-h100-mega-80gb"}));
  EXPECT_EQ(Like("RTX PRO 6000"), std::vector<std::string>{"nvidia-rtx-pro-6000"});
  EXPECT_TRUE(Like("k80").empty());
  EXPECT_TRUE(Like("nvidia").empty());
  EXPECT_TRUE(Like("").empty());
}

TEST(RetiredGpus, K80IsRetiredNotOffered) {
  EXPECT_EQ(SourceCatalog().FindGpu("nvidia-tesla-k80"), nullptr);
  const RetiredGpu* k80 = SourceCatalog().FindRetiredGpu("nvidia-tesla-k80");
  ASSERT_NE(k80, nullptr);
  EXPECT_NE(k80->reason.find("end of support"), std::string::npos);
  EXPECT_EQ(SourceCatalog().FindRetiredGpu("nvidia-l4"), nullptr);
}

TEST(RetiredGpus, AGpuBothOfferedAndRetiredIsACatalogError) {
  auto c = Catalog::Make({{"g.yaml",
                           "gpus:\n  - {name: x, display_name: X, memory_gb: 1, machine_families: [n1], counts: [1],\n"
                           "     compute_capability: \"7.0\", context_overhead_mib: 1,\n"
                           "     sources: {memory: s, machine_families: s, counts: s, compute_capability: s, context_overhead: s}}\n"
                           "retired_gpus:\n  - {name: x, display_name: X, reason: r, source: s}\n"}});
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("both offered and retired"), std::string::npos) << c.status().ToString();
}

}  // namespace
}  // namespace dfw
