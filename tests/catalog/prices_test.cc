// The price table: the shipped list prices (each figure with its source and date, unverified ones
// marked), and malformed --prices files refused with file:line:col and the field.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "catalog/catalog_test_util.h"
#include "dfw/catalog/prices.h"

namespace dfw {
namespace {

const std::string kGood =
    "prices:\n"
    "  - region: europe-west4\n"
    "    currency: EUR\n"
    "    source: negotiated 2026 contract\n"
    "    read: \"2026-11-30\"\n"
    "    batch: {vcpu_hour: 0.05, memory_gb_hour: \"0.003 (unverified)\"}\n"
    "    gpu_hour: {nvidia-l4: 0.5}\n";

TEST(Prices, ShippedTableHasUsCentral1WithSourcesAndDates) {
  Result<PriceTable> table = testing::SourceCatalog().Prices();
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  const RegionPrices* r = table->Find("us-central1");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->currency, "USD");
  EXPECT_NE(r->source.find("https://cloud.google.com/dataflow/pricing"), std::string::npos);
  EXPECT_EQ(r->read, "2026-12-02");
  EXPECT_DOUBLE_EQ(r->batch.vcpu_hour.per_hour, 0.056);
  EXPECT_DOUBLE_EQ(r->batch.memory_gb_hour.per_hour, 0.003557);
  ASSERT_TRUE(r->streaming.has_value());
  EXPECT_DOUBLE_EQ(r->streaming->vcpu_hour.per_hour, 0.069);
  EXPECT_DOUBLE_EQ(r->streaming->memory_gb_hour.per_hour, 0.0035557);
  EXPECT_DOUBLE_EQ(r->gpu_hour.at("nvidia-l4").per_hour, 0.672);
  EXPECT_DOUBLE_EQ(r->gpu_hour.at("nvidia-tesla-t4").per_hour, 0.42);
  // Apache Beam's transcription of the pricing page states these (configs/prices.yaml); the H100's
  // rate is Compute Engine's and stays marked.
  EXPECT_TRUE(r->batch.vcpu_hour.verified);
  EXPECT_TRUE(r->streaming->memory_gb_hour.verified);
  EXPECT_TRUE(r->gpu_hour.at("nvidia-l4").verified);
  EXPECT_FALSE(r->gpu_hour.at("nvidia-h100-80gb").verified);
  EXPECT_NE(r->batch.vcpu_hour.where.find("prices.yaml:"), std::string::npos) << r->batch.vcpu_hour.where;
  // Every priced GPU is a catalog GPU.
  for (const auto& [gpu, rate] : r->gpu_hour) EXPECT_NE(testing::SourceCatalog().FindGpu(gpu), nullptr) << gpu;
}

TEST(Prices, UserFileWithItsOwnCurrencyAndMarks) {
  Result<PriceTable> table = PriceTable::Parse("mine.yaml", kGood);
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  const RegionPrices* r = table->Find("europe-west4");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->currency, "EUR");
  EXPECT_TRUE(r->batch.vcpu_hour.verified);
  EXPECT_FALSE(r->batch.memory_gb_hour.verified);
  EXPECT_DOUBLE_EQ(r->batch.memory_gb_hour.per_hour, 0.003);
  EXPECT_EQ(r->batch.memory_gb_hour.where, "mine.yaml:6:46");
  EXPECT_FALSE(r->streaming.has_value());
  EXPECT_EQ(table->Find("us-central1"), nullptr);
}

TEST(Prices, LoadReadsAFileAndNamesAMissingOne) {
  const std::string path = ::testing::TempDir() + "/prices_test.yaml";
  std::ofstream(path) << kGood;
  Result<PriceTable> loaded = PriceTable::Load(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_NE(loaded->Find("europe-west4"), nullptr);
  std::remove(path.c_str());
  Result<PriceTable> missing = PriceTable::Load(path);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find(path), std::string::npos);
}

TEST(Prices, MalformedFilesAreRefusedWithFileLineAndField) {
  struct Bad {
    const char* name;
    std::string text;
    std::string expected;  // part of the message, after "p.yaml:LINE:COL: "
  };
  const std::string head = "prices:\n  - region: r\n    source: s\n    read: \"2026-01-31\"\n";
  const std::string batch = "    batch: {vcpu_hour: 0.05, memory_gb_hour: 0.003}\n";
  for (const Bad& b : {
           Bad{"not_yaml", "prices: [unclosed\n", "p.yaml:2:1: not valid YAML"},
           Bad{"no_prices", "regions: []\n", "p.yaml:1:1: no 'prices:' list"},
           Bad{"empty_list", "prices: []\n", "p.yaml:1:9: 'prices' must be a non-empty list"},
           Bad{"region_not_map", "prices: [r]\n", "p.yaml:1:10: prices[0]: each region must be a mapping"},
           Bad{"no_region", "prices:\n  - source: s\n    read: \"2026-01-31\"\n" + batch, "p.yaml:2:5: prices[0]: missing field 'region'"},
           Bad{"unknown_key", head + batch + "    spot: {vcpu_hour: 1}\n", "p.yaml:6:5: region 'r': unknown key 'spot'"},
           Bad{"no_source", "prices:\n  - region: r\n    read: \"2026-01-31\"\n" + batch, "p.yaml:2:5: region 'r': missing field 'source'"},
           Bad{"bad_date", "prices:\n  - region: r\n    source: s\n    read: yesterday\n" + batch,
               "p.yaml:4:11: region 'r': 'read' must be the date the source was read, YYYY-MM-DD"},
           Bad{"month_13", "prices:\n  - region: r\n    source: s\n    read: \"2026-13-01\"\n" + batch, "p.yaml:4:11: region 'r': 'read'"},
           Bad{"no_batch", head, "p.yaml:2:5: region 'r': missing field 'batch'"},
           Bad{"batch_scalar", head + "    batch: 0.05\n", "p.yaml:5:12: region 'r': 'batch' must map vcpu_hour and memory_gb_hour"},
           Bad{"batch_no_memory", head + "    batch: {vcpu_hour: 0.05}\n", "p.yaml:5:12: region 'r': 'batch' has no 'memory_gb_hour'"},
           Bad{"negative", head + "    batch: {vcpu_hour: -0.05, memory_gb_hour: 0.003}\n",
               "p.yaml:5:24: region 'r': 'batch.vcpu_hour' must be a positive rate per hour, got '-0.05'"},
           Bad{"zero", head + "    batch: {vcpu_hour: 0, memory_gb_hour: 0.003}\n", "'batch.vcpu_hour' must be a positive rate"},
           Bad{"not_a_number", head + "    batch: {vcpu_hour: cheap, memory_gb_hour: 0.003}\n", "got 'cheap'"},
           Bad{"nan", head + "    batch: {vcpu_hour: .nan, memory_gb_hour: 0.003}\n", "'batch.vcpu_hour' must be a positive rate"},
           Bad{"unverified_only", head + "    batch: {vcpu_hour: \"(unverified)\", memory_gb_hour: 0.003}\n", "got '(unverified)'"},
           Bad{"batch_typo", head + "    batch: {vcpu_hours: 0.05, memory_gb_hour: 0.003}\n", "p.yaml:5:13: region 'r': unknown key 'vcpu_hours' in 'batch'"},
           Bad{"gpu_list", head + batch + "    gpu_hour: [nvidia-l4]\n", "p.yaml:6:15: region 'r': 'gpu_hour' must map GPU types"},
           Bad{"gpu_twice", head + batch + "    gpu_hour: {nvidia-l4: 0.5, nvidia-l4: 0.6}\n", "GPU type 'nvidia-l4' given twice"},
           Bad{"gpu_rate_bad", head + batch + "    gpu_hour: {nvidia-l4: free}\n", "p.yaml:6:27: region 'r': 'gpu_hour.nvidia-l4' must be a positive rate"},
           Bad{"region_twice", head + batch + "  - region: r\n    source: s\n    read: \"2026-01-31\"\n" + batch,
               "p.yaml:6:13: region 'r': given twice"},
       }) {
    Result<PriceTable> t = PriceTable::Parse("p.yaml", b.text);
    ASSERT_FALSE(t.ok()) << b.name;
    EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument) << b.name;
    EXPECT_NE(t.status().message().find(b.expected), std::string::npos) << b.name << ": " << t.status().message();
    EXPECT_EQ(t.status().message().rfind("p.yaml", 0), 0u) << b.name << ": " << t.status().message();
  }
}

TEST(Prices, ABadPriceFileFailsTheCatalogLoad) {
  auto c = Catalog::Make({{"configs/gpus.yaml", "gpus:\n  - name: g\n    display_name: G\n    memory_gb: 16\n"
                                                "    machine_families: [n1]\n    counts: [1]\n"
                                                "    compute_capability: \"7.5\"\n    context_overhead_mib: 300\n"
                                                "    sources: {memory: u, machine_families: u, counts: u, "
                                                "compute_capability: u, context_overhead: u}\n"},
                          {"configs/prices.yaml", "prices: []\n"}});
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("configs/prices.yaml:1:9"), std::string::npos) << c.status().message();
}

}  // namespace
}  // namespace dfw
