// MIG profiles in the catalog: which parts have them, what they say, and malformed entries.
#include <gtest/gtest.h>

#include <string>

#include "catalog/catalog_test_util.h"
#include "dfw/catalog/catalog.h"

namespace dfw {
namespace {

using testing::SourceCatalog;

const MigProfile* Find(const GpuType& gpu, const std::string& name) {
  for (const MigProfile& p : gpu.mig_profiles) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

TEST(CatalogMig, ProfilesOfTheReferenceTable) {
  struct Row {
    const char* gpu;
    const char* profile;
    int memory_gb;
    int slices;
    int max_instances;
  };
  for (const Row& r : {Row{"nvidia-tesla-a100", "1g.5gb", 5, 1, 7}, Row{"nvidia-tesla-a100", "3g.20gb", 20, 3, 2},
                       Row{"nvidia-tesla-a100", "7g.40gb", 40, 7, 1}, Row{"nvidia-a100-80gb", "3g.40gb", 40, 3, 2},
                       Row{"nvidia-h100-80gb", "1g.20gb", 20, 1, 4}, Row{"nvidia-h100-80gb", "7g.80gb", 80, 7, 1},
                       Row{"nvidia-h200-141gb", "3g.71gb", 71, 3, 2}, Row{"nvidia-h200-141gb", "1g.18gb", 18, 1, 7},
                       Row{"nvidia-h200-141gb", "7g.141gb", 141, 7, 1}, Row{"nvidia-rtx-pro-6000", "1g.24gb", 24, 1, 4},
                       Row{"nvidia-rtx-pro-6000", "2g.48gb", 48, 2, 2}, Row{"nvidia-rtx-pro-6000", "4g.96gb", 96, 4, 1},
                       Row{"nvidia-b200", "1g.23gb", 23, 1, 7}, Row{"nvidia-b200", "3g.90gb", 90, 3, 2},
                       Row{"nvidia-b200", "7g.180gb", 180, 7, 1}}) {
    const GpuType* gpu = SourceCatalog().FindGpu(r.gpu);
    ASSERT_NE(gpu, nullptr) << r.gpu;
    const MigProfile* p = Find(*gpu, r.profile);
    ASSERT_NE(p, nullptr) << r.gpu << " " << r.profile;
    EXPECT_EQ(p->memory_bytes, static_cast<uint64_t>(r.memory_gb) << 30) << r.profile;
    EXPECT_EQ(p->compute_slices, r.slices) << r.profile;
    EXPECT_EQ(p->max_instances, r.max_instances) << r.profile;
    EXPECT_FALSE(p->media_extensions);
    EXPECT_NE(gpu->sources.at("mig").find("docs.nvidia.com"), std::string::npos);
  }
  const MigProfile* me = Find(*SourceCatalog().FindGpu("nvidia-h200-141gb"), "1g.18gb+me");
  ASSERT_NE(me, nullptr);
  EXPECT_TRUE(me->media_extensions);
  EXPECT_EQ(me->max_instances, 1);
}

TEST(CatalogMig, EachGpuHasItsOwnSliceCount) {
  struct Row {
    const char* gpu;
    int slices;  // NVIDIA MIG user guide, supported GPUs: max number of instances
  };
  for (const Row& r : {Row{"nvidia-tesla-a100", 7}, Row{"nvidia-a100-80gb", 7}, Row{"nvidia-h100-80gb", 7},
                       Row{"nvidia-h200-141gb", 7}, Row{"nvidia-b200", 7}, Row{"nvidia-rtx-pro-6000", 4},
                       Row{"nvidia-l4", 0}, Row{"nvidia-tesla-t4", 0}}) {
    const GpuType* gpu = SourceCatalog().FindGpu(r.gpu);
    ASSERT_NE(gpu, nullptr) << r.gpu;
    EXPECT_EQ(gpu->mig_compute_slices, r.slices) << r.gpu;
  }
}

TEST(CatalogMig, PartsWithoutMigHaveNoProfiles) {
  for (const char* name : {"nvidia-l4", "nvidia-tesla-t4", "nvidia-tesla-v100", "nvidia-tesla-p4"}) {
    EXPECT_TRUE(SourceCatalog().FindGpu(name)->mig_profiles.empty()) << name;
  }
}

TEST(CatalogMig, EveryProfileFitsItsGpu) {
  for (const std::string& name : SourceCatalog().GpuNames()) {
    const GpuType* gpu = SourceCatalog().FindGpu(name);
    for (const MigProfile& p : gpu->mig_profiles) {
      EXPECT_LE(p.compute_slices * p.max_instances, gpu->mig_compute_slices) << name << " " << p.name;
      EXPECT_LE(p.memory_bytes * static_cast<uint64_t>(p.max_instances), gpu->memory_bytes + (1ull << 30))
          << name << " " << p.name;
    }
  }
}

std::string GpuWithMig(const std::string& cc, const std::string& mig, bool mig_source = true, int slices = 7) {
  return "gpus:\n  - name: g\n    display_name: G\n    memory_gb: 80\n    machine_families: [a2]\n    counts: [1]\n"
         "    compute_capability: \"" + cc + "\"\n    context_overhead_mib: 300\n"
         "    sources: {memory: u, machine_families: u, counts: u, compute_capability: u, context_overhead: u" +
         std::string(mig_source ? ", mig: u" : "") + "}\n    mig_compute_slices: " + std::to_string(slices) +
         "\n    mig:\n" + mig;
}

TEST(CatalogMig, MalformedProfilesAreRefusedNamingTheProfile) {
  struct Bad {
    std::string text;
    std::string expected;
  };
  const std::string ok = "      - {name: 3g.40gb, memory_gb: 40, compute_slices: 3, max_instances: 2}\n";
  for (const Bad& b : {
           Bad{GpuWithMig("8.0", "      - {name: 3g.40gb, memory_gb: 40, compute_slices: 2, max_instances: 2}\n"),
               "'3g.40gb' says 3 slices and 40 GB but its fields say compute_slices 2"},
           Bad{GpuWithMig("8.0", "      - {name: 3g.40gb, memory_gb: 41, compute_slices: 3, max_instances: 2}\n"),
               "memory_gb 41"},
           Bad{GpuWithMig("8.0", "      - {name: big, memory_gb: 40, compute_slices: 3, max_instances: 2}\n"),
               "'big' is not written <slices>g.<memory>gb[+me]"},
           Bad{GpuWithMig("8.0", "      - {name: 3g.40gb, memory_gb: 40, compute_slices: 3, max_instances: 3}\n"),
               "3 instances of 3 slices exceed the 7 compute slices"},
           Bad{GpuWithMig("8.0", "      - {name: 7g.90gb, memory_gb: 90, compute_slices: 7, max_instances: 1}\n"),
               "more memory than the whole GPU"},
           Bad{GpuWithMig("7.5", ok), "MIG needs compute capability 8.0 or later, this GPU has 7.5"},
           Bad{GpuWithMig("8.0", ok, /*mig_source=*/false), "no source for 'mig'"},
           Bad{GpuWithMig("8.0", "      - {name: 3g.40gb, compute_slices: 3, max_instances: 2}\n"),
               "missing field 'memory_gb'"},
           // A 4-slice GPU: a 5-slice profile, and 2 slices x 3 instances, do not fit it.
           Bad{GpuWithMig("12.0", "      - {name: 5g.80gb, memory_gb: 80, compute_slices: 5, max_instances: 1}\n", true, 4),
               "1 instances of 5 slices exceed the 4 compute slices of this GPU"},
           Bad{GpuWithMig("12.0", "      - {name: 2g.20gb, memory_gb: 20, compute_slices: 2, max_instances: 3}\n", true, 4),
               "3 instances of 2 slices exceed the 4 compute slices of this GPU"},
           Bad{GpuWithMig("8.0", ok, true, 0), "'mig_compute_slices' must be a positive whole number"},
       }) {
    auto result = Catalog::Make({{"configs/x.yaml", b.text}});
    ASSERT_FALSE(result.ok()) << b.expected;
    EXPECT_EQ(result.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(result.status().message().find(b.expected), std::string::npos) << result.status().message();
    EXPECT_NE(result.status().message().find("configs/x.yaml:"), std::string::npos) << result.status().message();
  }
  // The slice count is required with profiles (it differs by part), and means nothing without them.
  std::string no_slices = GpuWithMig("8.0", ok);
  no_slices.erase(no_slices.find("    mig_compute_slices: 7\n"), std::string("    mig_compute_slices: 7\n").size());
  auto missing = Catalog::Make({{"configs/x.yaml", no_slices}});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("missing field 'mig_compute_slices'"), std::string::npos)
      << missing.status().message();
  auto good = Catalog::Make({{"configs/x.yaml", GpuWithMig("8.0", ok)}});
  ASSERT_TRUE(good.ok()) << good.status().ToString();
  EXPECT_EQ(good->FindGpu("g")->mig_profiles.size(), 1u);
}

}  // namespace
}  // namespace dfw
