// The speed and cost estimate, pinned on hand-computed configurations (docs/right-sizing.md derives
// the first one line by line), and the rows of `dfworker plan` that carry it.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "catalog/catalog_test_util.h"
#include "dfw/options/parse.h"
#include "dfw/plan/catalog_plan.h"
#include "dfw/plan/estimate.h"

namespace dfw {
namespace {

// 1 GFLOP and 1 MB of activations per record, 100 MB of weights read once per batch of 100.
ModelRequirement Model(int64_t batch = 100) {
  ModelRequirement m;
  m.name = "m";
  m.bytes = 100'000'000;
  m.work = ModelWork{1e9, 1e6, batch, "fp32", 0.3, "test"};
  return m;
}

const RegionPrices& Prices() {
  static const PriceTable* table = [] {
    auto t = PriceTable::Parse("p.yaml",
                               "prices:\n  - region: r\n    source: test\n    read: \"2026-12-01\"\n"
                               "    batch: {vcpu_hour: 0.05, memory_gb_hour: 0.004}\n"
                               "    gpu_hour: {nvidia-l4: 0.5}\n");
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    return new PriceTable(std::move(*t));
  }();
  return *table->Find("r");
}

// g2-standard-8: 8 vCPUs, 32 GB, 1 x L4 (catalog: 30.3 TFLOP/s FP32, 300 GB/s).
EstimateShape L4Shape() {
  EstimateShape s;
  s.gpu = testing::SourceCatalog().FindGpu("nvidia-l4");
  s.gpus = 1;
  s.vcpus = 8;
  s.memory_gb = 32;
  return s;
}

TEST(Estimate, HandComputedL4ConfigurationIsGpuComputeBound) {
  EstimateInputs in;
  in.gpu_efficiency = 0.5;
  in.prices = &Prices();
  in.records = 1'000'000'000;
  in.workers = 2;
  Estimate e = EstimateConfiguration(L4Shape(), {Model()}, in);
  ASSERT_TRUE(e.speed_known) << e.speed_unknown;
  // Compute: 30.3e12 x 0.5 / 1e9 = 15,150 records/s.
  EXPECT_NEAR(e.gpu_compute_rps, 15150, 1e-6);
  // Bandwidth: 300e9 x 0.7 / (1e8 / 100 + 1e6) = 105,000 records/s.
  EXPECT_NEAR(e.gpu_bandwidth_rps, 105000, 1e-6);
  // CPU: 8 x 2,000 = 16,000 records/s: the GPU's compute is the limit.
  EXPECT_NEAR(e.cpu_rps, 16000, 1e-9);
  EXPECT_NEAR(e.records_per_second, 15150, 1e-6);
  EXPECT_EQ(e.bottleneck, Bottleneck::kGpuCompute);
  // Price: 8 x 0.05 + 32 x 0.004 + 1 x 0.5 = 1.028 per hour.
  ASSERT_TRUE(e.priced) << e.price_unknown;
  EXPECT_NEAR(e.price_per_hour, 1.028, 1e-12);
  EXPECT_TRUE(e.price_verified);
  // Per million: 1.028 / (15,150 x 3,600) x 1e6 = 0.0188485...
  EXPECT_NEAR(e.cost_per_million, 1.028 / (15150.0 * 3600.0) * 1e6, 1e-12);
  EXPECT_NEAR(e.cost_per_million, 0.018849, 1e-6);
  EXPECT_NEAR(e.cost_per_thousand, e.cost_per_million / 1000, 1e-15);
  // Job: 1e9 / (15,150 x 2 x 3,600) + 5 min start-up = 9.2509 h; 2 x 1.028 x 9.2509 = 19.02.
  ASSERT_TRUE(e.job_hours && e.job_cost);
  EXPECT_NEAR(*e.job_hours, 1e9 / (15150.0 * 2 * 3600) + 5.0 / 60, 1e-9);
  EXPECT_NEAR(*e.job_hours, 9.2509, 1e-4);
  EXPECT_NEAR(*e.job_cost, 19.020, 1e-3);
  // Every input is said.
  std::string inputs;
  for (const std::string& s : e.inputs) inputs += s + "\n";
  EXPECT_NE(inputs.find("30.3 TFLOP/s"), std::string::npos) << inputs;
  EXPECT_NE(inputs.find("efficiency 0.5 (--gpu_efficiency)"), std::string::npos) << inputs;
  EXPECT_NE(inputs.find("8 vCPUs x 2000 records/s per vCPU (assumed default"), std::string::npos) << inputs;
  EXPECT_NE(e.price_how.find("8 vCPU x 0.05 + 32 GB x 0.004 + 1 x nvidia-l4 x 0.5 USD/h"), std::string::npos) << e.price_how;
}

TEST(Estimate, BottleneckFollowsTheSlowestRate) {
  struct Row {
    const char* name;
    int64_t batch;
    std::optional<double> cpu_rate;
    Bottleneck want;
    double want_rps;
  };
  for (const Row& r : {
           Row{"gpu_compute", 100, std::nullopt, Bottleneck::kGpuCompute, 15150},
           // 1,000/s x 8 vCPUs = 8,000 < 15,150: the GPU waits 1 - 8,000/15,150 of the time.
           Row{"cpu", 100, 1000.0, Bottleneck::kCpu, 8000},
           // Batch 1: every record reads all 100 MB of weights: 210e9 / 1.01e8 = 2,079 records/s.
           Row{"bandwidth", 1, std::nullopt, Bottleneck::kGpuMemoryBandwidth, 210e9 / 1.01e8},
       }) {
    EstimateInputs in;
    in.gpu_efficiency = 0.5;
    if (r.cpu_rate) {
      in.cpu_records_per_vcpu_second = *r.cpu_rate;
      in.cpu_rate_given = true;
    }
    Estimate e = EstimateConfiguration(L4Shape(), {Model(r.batch)}, in);
    EXPECT_EQ(e.bottleneck, r.want) << r.name;
    EXPECT_NEAR(e.records_per_second, r.want_rps, 1e-6) << r.name;
    if (r.want == Bottleneck::kCpu) {
      EXPECT_NEAR(e.gpu_wait, 1 - 8000.0 / 15150.0, 1e-12);
    }
    EXPECT_FALSE(e.priced) << r.name;
    EXPECT_EQ(e.price_unknown, "no price table") << r.name;
  }
}

TEST(Estimate, SaysWhyThereIsNoSpeedOrNoPrice) {
  EstimateInputs in;
  in.prices = &Prices();
  EXPECT_EQ(EstimateConfiguration(L4Shape(), {}, in).speed_unknown, "the pipeline runs no model");
  ModelRequirement no_work = Model();
  no_work.work.reset();
  EXPECT_EQ(EstimateConfiguration(L4Shape(), {no_work}, in).speed_unknown, "no model gives its work per record");

  EstimateShape t4 = L4Shape();
  t4.gpu = testing::SourceCatalog().FindGpu("nvidia-tesla-t4");
  EXPECT_EQ(EstimateConfiguration(t4, {Model()}, in).price_unknown, "no price for nvidia-tesla-t4 in r");
  EstimateShape mig = L4Shape();
  mig.billable = false;
  EXPECT_EQ(EstimateConfiguration(mig, {Model()}, in).price_unknown, "MIG slices are not a Dataflow configuration");
  EstimateShape host = L4Shape();
  host.memory_gb.reset();
  EXPECT_EQ(EstimateConfiguration(host, {Model()}, in).price_unknown, "no machine type");
  in.streaming = true;
  EXPECT_EQ(EstimateConfiguration(L4Shape(), {Model()}, in).price_unknown, "no streaming rates for r");
}

TEST(Estimate, StreamingBillsTheShippedStreamingRates) {
  Result<PriceTable> table = testing::SourceCatalog().Prices();
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  EstimateInputs in;
  in.prices = table->Find("us-central1");
  ASSERT_NE(in.prices, nullptr);
  Estimate batch = EstimateConfiguration(L4Shape(), {Model()}, in);
  in.streaming = true;
  Estimate streaming = EstimateConfiguration(L4Shape(), {Model()}, in);
  // Batch: 8 x 0.056 + 32 x 0.003557 + 0.672; streaming: 8 x 0.069 + 32 x 0.0035557 + the same GPU.
  EXPECT_NEAR(batch.price_per_hour, 8 * 0.056 + 32 * 0.003557 + 0.672, 1e-12);
  EXPECT_NEAR(batch.price_per_hour, 1.233824, 1e-9);
  EXPECT_NEAR(streaming.price_per_hour, 8 * 0.069 + 32 * 0.0035557 + 0.672, 1e-12);
  EXPECT_TRUE(streaming.price_verified);  // every rate used has its source (configs/prices.yaml)
  EXPECT_NE(streaming.price_how.find("us-central1 streaming"), std::string::npos) << streaming.price_how;
}

TEST(Estimate, MigSliceGetsItsShareOfThePeaks) {
  EstimateInputs in;
  in.gpu_efficiency = 0.5;
  EstimateShape s = L4Shape();
  s.gpu = testing::SourceCatalog().FindGpu("nvidia-h200-141gb");  // 67 TFLOP/s
  s.gpu_share = 3.0 / 7.0;
  s.vcpus = 1000;  // keep the CPU out of the way
  Estimate e = EstimateConfiguration(s, {Model()}, in);
  EXPECT_NEAR(e.gpu_compute_rps, 67e12 * 3 / 7 * 0.5 / 1e9, 1e-6);
}

TEST(Estimate, CatalogPlanRowsCarryEstimatesAndNameTheCheapestAndFastest) {
  PipelineOptions options = ParsePipelineOptions({}, "", "p.yaml");
  EstimateInputs in;
  in.prices = &Prices();
  in.gpu_efficiency = 0.5;
  CatalogPlanRequest request{{"nvidia-l4"}, 1, in};
  HostInfo host{4, 0, std::nullopt, ""};
  auto plan = MakeCatalogPlan(options, testing::SourceCatalog(), {Model()}, host, request);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_GE(plan->cheapest, 0);
  ASSERT_GE(plan->fastest, 0);
  const CatalogPlanRow& cheapest = plan->rows[plan->cheapest];
  const CatalogPlanRow& fastest = plan->rows[plan->fastest];
  // One L4 computes 15,150 records/s; g2-standard-4's 4 vCPUs x 2,000 = 8,000 cap it, and 8 vCPUs
  // (16,000) do not: g2-standard-8 is the cheapest per record of the one-GPU shapes. 8 x L4
  // (g2-standard-96) is the fastest worker.
  EXPECT_EQ(cheapest.machine_type, "g2-standard-8");
  EXPECT_EQ(fastest.machine_type, "g2-standard-96");
  for (const CatalogPlanRow& r : plan->rows) {
    ASSERT_TRUE(r.estimate.has_value()) << r.machine_type;
    if (r.verdict != FitVerdict::kDoesNotFit && r.estimate->priced) {
      EXPECT_LE(cheapest.estimate->cost_per_million, r.estimate->cost_per_million) << r.machine_type;
    }
  }
  const std::string text = RenderCatalogPlanText(*plan);
  EXPECT_NE(text.find("cheapest: g2-standard-8 + 1 x l4 (fits)"), std::string::npos) << text;
  EXPECT_NE(text.find("fastest: g2-standard-96 + 8 x l4 (fits)"), std::string::npos) << text;
  // L4 alone has 8 fitting rows: all shown; across every GPU the table is cut to 10 (+ the marked ones).
  EXPECT_EQ(text.find("more fitting rows"), std::string::npos) << text;
  CatalogPlanRequest every{{}, 1, in};
  auto wide = MakeCatalogPlan(options, testing::SourceCatalog(), {Model()}, host, every);
  ASSERT_TRUE(wide.ok()) << wide.status().ToString();
  const std::string cut = RenderCatalogPlanText(*wide);
  EXPECT_NE(cut.find("more fitting rows (--all lists every one)"), std::string::npos) << cut;
  EXPECT_EQ(RenderCatalogPlanText(*wide, /*all_rows=*/true).find("more fitting rows"), std::string::npos);
  const std::string json = RenderCatalogPlanJson(*plan);
  EXPECT_NE(json.find("\"cost_per_million_records\""), std::string::npos);
  EXPECT_NE(json.find("\"bottleneck\": \"GPU compute\""), std::string::npos);
}

TEST(Estimate, ConstraintsNarrowTheRecommendationOrNameTheClosestMiss) {
  PipelineOptions options = ParsePipelineOptions({}, "", "p.yaml");
  HostInfo host{4, 0, std::nullopt, ""};
  auto plan_with = [&](std::optional<double> max_cost, std::optional<double> deadline) {
    EstimateInputs in;
    in.prices = &Prices();
    in.gpu_efficiency = 0.5;
    in.records = 1'000'000'000;
    in.max_cost_per_million = max_cost;
    in.deadline_hours = deadline;
    CatalogPlanRequest request{{"nvidia-l4"}, 1, in};
    auto plan = MakeCatalogPlan(options, testing::SourceCatalog(), {Model()}, host, request);
    EXPECT_TRUE(plan.ok()) << plan.status().ToString();
    return std::move(*plan);
  };
  // Only g2-standard-8 costs at most 0.02 per million (0.01885; the others 0.0237 and 0.0265): it is
  // then also the fastest allowed.
  CatalogPlan cheap = plan_with(0.02, std::nullopt);
  ASSERT_GE(cheap.fastest, 0);
  EXPECT_EQ(cheap.rows[cheap.fastest].machine_type, "g2-standard-8");
  EXPECT_TRUE(cheap.constraint_miss.empty());
  // 10^9 records in 3 h on one worker: only 8 x L4 (121,200/s: 2.29 h + start-up) makes it.
  CatalogPlan quick = plan_with(std::nullopt, 3.0);
  ASSERT_GE(quick.cheapest, 0);
  EXPECT_EQ(quick.rows[quick.cheapest].machine_type, "g2-standard-96");
  // Both at once: nothing is left, and the closest miss of each is named.
  CatalogPlan none = plan_with(0.02, 3.0);
  EXPECT_EQ(none.cheapest, -1);
  EXPECT_EQ(none.fastest, -1);
  EXPECT_NE(none.constraint_miss.find("the cheapest that fits, g2-standard-8 + 1 x nvidia-l4, costs USD 0.01885"),
            std::string::npos)
      << none.constraint_miss;
  EXPECT_NE(none.constraint_miss.find("the quickest that fits, g2-standard-96 + 8 x nvidia-l4, takes 2.38 h"),
            std::string::npos)
      << none.constraint_miss;
}

}  // namespace
}  // namespace dfw

namespace dfw {
namespace {

// --gpu_efficiency_from: the file scripts/gpu-check.sh writes, and the committed example of it.
TEST(GpuEfficiencyFile, CommittedExampleParses) {
  std::ifstream in(DFW_SOURCE_DIR "/testdata/right_sizing/gpu-efficiency.example.json");
  std::stringstream text;
  text << in.rdbuf();
  auto file = ParseGpuEfficiencyFile("example.json", text.str());
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_EQ(file->gpu, "nvidia-l4");
  ASSERT_EQ(file->entries.size(), 1u);
  EXPECT_EQ(file->entries[0].handler, "SentenceEmbeddingHandler");
  EXPECT_DOUBLE_EQ(file->entries[0].efficiency, 0.15);  // 4,545 GFLOP/s / 30,300
  EXPECT_NE(file->note.find("not a measurement"), std::string::npos);
}

TEST(GpuEfficiencyFile, RefusesBadFilesNamingTheField) {
  const std::string head = "{\"format\": \"dfworker-gpu-efficiency\", \"format_version\": 1, \"gpu\": \"nvidia-l4\", ";
  auto entry = [](const std::string& fields) { return "\"handlers\": [{\"handler\": \"H\", \"dtype\": \"float32\", " + fields + "}]}"; };
  const std::string good = "\"achieved_gflops\": 3030, \"peak_tflops\": 30.3, \"efficiency\": 0.1";
  ASSERT_TRUE(ParseGpuEfficiencyFile("e.json", head + entry(good)).ok());
  struct Bad {
    std::string text, expected;
  };
  for (const Bad& b : std::vector<Bad>{
           {"{\n  \"format\": 1,\n  x\n}", "e.json:3:3: not JSON: syntax error"},
           {"{\"format\": \"dfworker-bench\"}", "e.json: not a GPU efficiency file"},
           {"{\"format\": \"dfworker-gpu-efficiency\", \"format_version\": 3}", "format_version 3: this dfworker reads version 1"},
           {"{\"format\": \"dfworker-gpu-efficiency\", \"format_version\": 1, \"handlers\": []}", "\"gpu\" is missing"},
           {head + "\"handlers\": []}", "\"handlers\" must be a non-empty list"},
           {head + entry("\"achieved_gflops\": 3030, \"peak_tflops\": 30.3, \"efficiency\": 0.5"),
            "handlers[0]: efficiency 0.5 is not achieved_gflops / (peak_tflops x 1000) = 3030 / 30300 = 0.1"},
           {head + entry("\"achieved_gflops\": 0, \"peak_tflops\": 30.3, \"efficiency\": 0.1"),
            "handlers[0]: \"achieved_gflops\" must be a number above 0 (it is 0)"},
           {head + entry("\"achieved_gflops\": 60600, \"peak_tflops\": 30.3, \"efficiency\": 2"), "efficiency 2 is above 1"},
           {head + entry("\"peak_tflops\": 30.3, \"efficiency\": 0.1"), "\"achieved_gflops\" must be a number above 0 (it is missing)"},
           {head + "\"handlers\": [{\"handler\": \"H\", \"dtype\": \"bfloat16\", " + good + "}]}",
            "handlers[0]: dtype 'bfloat16': the estimate divides the FP32 peak"},
           {head + "\"handlers\": [{\"handler\": \"H\", \"dtype\": \"float32\", " + good + "}, {\"handler\": \"H\", \"dtype\": "
                   "\"float32\", " + good + "}]}",
            "handlers[1]: handler 'H' is given twice"},
           {head + "\"handlers\": [{\"dtype\": \"float32\", " + good + "}]}", "handlers[0]: \"handler\" is missing"},
       }) {
    auto r = ParseGpuEfficiencyFile("e.json", b.text);
    ASSERT_FALSE(r.ok()) << b.expected;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find(b.expected), std::string::npos) << r.status().message();
  }
}

// A measured efficiency applies to its model only; --gpu_efficiency overrides it.
TEST(Estimate, MeasuredEfficiencyReplacesTheHandlerDefaultForItsModel) {
  ModelRequirement other = Model();
  other.name = "other";
  EstimateInputs in;
  in.cpu_records_per_vcpu_second = 1e9;  // GPU-bound
  in.gpu_efficiency_by_model["m"] = MeasuredEfficiency{0.25, "measured: test"};
  Estimate e = EstimateConfiguration(L4Shape(), {Model()}, in);
  ASSERT_TRUE(e.speed_known);
  EXPECT_NEAR(e.gpu_compute_rps, 30.3e12 * 0.25 / 1e9, 1e-6);  // 7,575 records/s
  EXPECT_NEAR(e.records_per_second, 7575, 1e-6);
  std::string inputs;
  for (const std::string& s : e.inputs) inputs += s + "\n";
  EXPECT_NE(inputs.find("efficiency 0.25 (measured: test)"), std::string::npos) << inputs;
  // The model without an entry keeps its handler's default (0.3): 1 / (1/7,575 + 1/9,090).
  Estimate both = EstimateConfiguration(L4Shape(), {Model(), other}, in);
  EXPECT_NEAR(both.gpu_compute_rps, 1.0 / (1e9 / (30.3e12 * 0.25) + 1e9 / (30.3e12 * 0.3)), 1e-6);
  in.gpu_efficiency = 0.5;
  EXPECT_NEAR(EstimateConfiguration(L4Shape(), {Model()}, in).gpu_compute_rps, 15150, 1e-6);
}

}  // namespace
}  // namespace dfw
