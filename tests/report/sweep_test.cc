#include "dfw/report/sweep.h"
#include "dfw/report/job_report.h"

#include <gtest/gtest.h>

#include "dfw/job/protocol.h"
#include "report/html_check.h"

namespace dfw::report {
namespace {

TEST(Sweep, ParsesEveryKeyAndNormalisesValues) {
  auto a = ParseSweep("sdk_processes=1,2, 4");
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->key, "sdk_processes");
  EXPECT_EQ(a->values, (std::vector<std::string>{"1", "2", "4"}));
  auto mps = ParseSweep("mps=on,false");
  ASSERT_TRUE(mps.ok());
  EXPECT_EQ(mps->values, (std::vector<std::string>{"on", "off"}));
  for (const char* ok : {"harness_threads=1", "model_copies=1,2", "batch_size=8,64"}) EXPECT_TRUE(ParseSweep(ok).ok()) << ok;
  auto dtype = ParseSweep("dtype=float32, bfloat16,int8,auto");
  ASSERT_TRUE(dtype.ok()) << dtype.status().ToString();
  EXPECT_EQ(dtype->values, (std::vector<std::string>{"float32", "bfloat16", "int8", "auto"}));
  EXPECT_EQ(FlagsFor({{"dtype", "int8"}}), "in every RunInference model_handler.config: dtype: int8");
}

TEST(Sweep, BadSweepsNameTheProblem) {
  struct Bad {
    const char* text;
    const char* expected;
  };
  for (const Bad& b : {Bad{"sdk_process=1,2", "unknown key 'sdk_process' (did you mean 'sdk_processes'?)"},
                       Bad{"batch_size", "expected KEY=V1,V2"}, Bad{"batch_size=", "the list of values is empty"},
                       Bad{"batch_size=8,,64", "an empty value"}, Bad{"batch_size=8,x", "value 'x' is not a whole number"},
                       Bad{"batch_size=0", "value '0' is not a whole number from 1 to 4096"},
                       Bad{"batch_size=-3", "value '-3'"}, Bad{"mps=maybe", "'maybe' is not on/off"},
                       Bad{"sdk_processes=2,2", "value '2' is given twice"},
                       Bad{"dtype=fp16", "'fp16' is not one of auto, float32, bfloat16, int8"},
                       Bad{"dtype=int8,int8", "value 'int8' is given twice"}}) {
    auto r = ParseSweep(b.text);
    ASSERT_FALSE(r.ok()) << b.text;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find(b.expected), std::string::npos) << r.status().message();
  }
}

TEST(Sweep, GridIsEveryCombinationAndHasALimit) {
  auto grid = MakeGrid({*ParseSweep("sdk_processes=1,2,4"), *ParseSweep("batch_size=8,64")});
  ASSERT_TRUE(grid.ok());
  ASSERT_EQ(grid->size(), 6u);
  EXPECT_EQ(PointName((*grid)[0]), "sdk_processes=1 batch_size=8");
  EXPECT_EQ(PointName((*grid)[5]), "sdk_processes=4 batch_size=64");

  auto big = MakeGrid({*ParseSweep("sdk_processes=1,2,3,4,5,6,7,8"), *ParseSweep("batch_size=1,2,3,4,5,6,7,8,9")});
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.status().message().find("the grid has 72 points (8 sdk_processes x 9 batch_size), more than 64"),
            std::string::npos)
      << big.status().message();
  EXPECT_FALSE(MakeGrid({}).ok());
  auto twice = MakeGrid({*ParseSweep("mps=on"), *ParseSweep("mps=off")});
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.status().message().find("--sweep mps is given twice"), std::string::npos);
}

RunMeasurement Measured(double elapsed, int64_t records, int64_t read_us, int64_t infer_us, int64_t write_us) {
  RunMeasurement m;
  m.wall_s = elapsed + 0.1;
  m.max_rss_kib = 50 * 1024;
  m.metrics.elapsed_s = elapsed;
  m.metrics.total.counters[{kRecordsNamespace, kRecordsCounter}] = records;
  m.metrics.total.counters[{"Read", "process_bundle_usecs"}] = read_us;
  m.metrics.total.counters[{"Classify", "process_bundle_usecs"}] = infer_us;
  m.metrics.total.counters[{"Write", "process_bundle_usecs"}] = write_us;
  m.metrics.total.distributions[{"Classify", "inference_request_batch_size"}] = DistributionData{10, 640, 64, 64, {}};
  JobMetrics::Process p;
  p.busy_s = elapsed / 2;
  p.idle_s = elapsed / 2;
  m.metrics.processes = {p};
  return m;
}

const std::map<std::string, StageKind> kKinds = {
    {"Read", StageKind::kRead}, {"Classify", StageKind::kInference}, {"Write", StageKind::kWrite}};

TEST(Sweep, SummaryIsTheMedianWithItsSpread) {
  PointSummary s = Summarize({{"sdk_processes", "2"}},
                             {Measured(1.0, 1000, 1, 8, 1), Measured(2.0, 1000, 1, 8, 1), Measured(0.5, 1000, 1, 8, 1)}, kKinds);
  EXPECT_DOUBLE_EQ(s.records_per_s, 1000);
  EXPECT_DOUBLE_EQ(s.records_per_s_min, 500);
  EXPECT_DOUBLE_EQ(s.records_per_s_max, 2000);
  EXPECT_DOUBLE_EQ(s.idle_fraction, 0.5);
  EXPECT_DOUBLE_EQ(s.batch_size, 64);
  EXPECT_EQ(s.max_rss_kib, 50 * 1024);
  EXPECT_EQ(s.failed, 0);
}

// The models' figures: precision, ISA, padding share and achieved FLOP/s from the handlers'
// distributions, per namespace, in the summary and the table.
TEST(Sweep, SummaryCarriesWhatTheModelRanAs) {
  RunMeasurement m = Measured(1.0, 1000, 1, 8, 1);
  auto& d = m.metrics.total.distributions;
  d[{"RunInference", "linear_dtype_bits"}] = DistributionData{2, 32, 16, 16, {}};
  d[{"RunInference", "cpu_isa_level"}] = DistributionData{2, 8, 4, 4, {}};
  d[{"RunInference", "batch_tokens"}] = DistributionData{10, 900, 50, 120, {}};
  d[{"RunInference", "batch_computed_tokens"}] = DistributionData{10, 1000, 64, 128, {}};
  d[{"RunInference", "batch_kflop"}] = DistributionData{10, 500000000, 1, 100000000, {}};  // 0.5 TFLOP
  d[{"RunInference", "inference_batch_latency_micro_secs"}] = DistributionData{10, 2000000, 1, 400000, {}};  // 2 s
  PointSummary s = Summarize({{"dtype", "auto"}}, {m}, kKinds);
  ASSERT_EQ(s.models.size(), 1u);
  const ModelFigures& f = s.models[0];
  EXPECT_EQ(f.ns, "RunInference");
  EXPECT_EQ(f.DType(), "bfloat16");
  EXPECT_EQ(f.isa_level, 4);
  EXPECT_NEAR(f.padding, 0.1, 1e-12);
  EXPECT_NEAR(f.gflops, 250.0, 1e-9);
  EXPECT_EQ(f.Describe(), "bfloat16, AMX, padding 10.0%, 250 GFLOP/s");
  const std::string table = RenderSweepTable({s}, 1);
  EXPECT_NE(table.find(" bfloat16  10.0     250  "), std::string::npos) << table;
  // Processes that ran different precisions are named as such; no figures, no model.
  d[{"RunInference", "linear_dtype_bits"}] = DistributionData{2, 40, 8, 32, {}};
  EXPECT_EQ(SummarizeModels(m.metrics.total)[0].DType(), "mixed (int8 to float32)");
  EXPECT_TRUE(SummarizeModels(MetricsSnapshot{}).empty());
}

// The run-time float32 check (precision_monitor.h): one cosine per checked row, in ppm, and switches.
TEST(Sweep, SummaryCarriesTheFloat32Check) {
  RunMeasurement m = Measured(1.0, 1000, 1, 8, 1);
  auto& d = m.metrics.total.distributions;
  d[{"Embed", "linear_dtype_bits"}] = DistributionData{2, 24, 8, 16, {}};
  d[{"Embed", "precision_check_cosine_ppm"}] = DistributionData{4, 3996000, 994000, 1000000, {}};
  d[{"Embed", "precision_switches"}] = DistributionData{1, 1, 1, 1, {}};
  const std::vector<ModelFigures> models = SummarizeModels(m.metrics.total);
  ASSERT_EQ(models.size(), 1u);
  EXPECT_EQ(models[0].checked_rows, 4);
  EXPECT_NEAR(models[0].check_min_cosine, 0.994, 1e-12);
  EXPECT_NEAR(models[0].check_mean_cosine, 0.999, 1e-12);
  EXPECT_EQ(models[0].DescribeCheck(),
            "checked 4 rows against float32: min cosine 0.99400, mean 0.99900; 1 switch to a safer dtype");
  EXPECT_NE(models[0].Describe().find("mixed (int8 to bfloat16), checked 4 rows"), std::string::npos)
      << models[0].Describe();
  d.erase({"Embed", "precision_check_cosine_ppm"});
  d.erase({"Embed", "precision_switches"});
  EXPECT_EQ(SummarizeModels(m.metrics.total)[0].DescribeCheck(), "");
}

TEST(Sweep, BottleneckIsTheKindWithTheMostStageTime) {
  EXPECT_EQ(NameBottleneck({{"Read", 1}, {"Classify", 8}, {"Write", 1}}, kKinds), "inference-bound (Classify: 80% of stage time)");
  EXPECT_EQ(NameBottleneck({{"Read", 6}, {"Classify", 3}, {"Write", 1}}, kKinds), "I/O-bound (read/parse) (Read: 60% of stage time)");
  EXPECT_EQ(NameBottleneck({{"Read", 1}, {"Tokenize", 5}, {"Classify", 3}}, kKinds),
            "CPU preprocessing-bound: the accelerator would wait (Tokenize: 56% of stage time)");
  EXPECT_EQ(NameBottleneck({}, kKinds), "");
}

TEST(Sweep, TableIsSortedByThroughputAndRecommendsTheFastestThatRan) {
  RunMeasurement failed;
  failed.exit_code = 1;
  failed.error = "dfworker run exited with code 1: out of memory";
  std::vector<PointSummary> points = {
      Summarize({{"sdk_processes", "1"}, {"batch_size", "8"}}, {Measured(2.0, 1000, 1, 8, 1)}, kKinds),
      Summarize({{"sdk_processes", "4"}, {"batch_size", "64"}}, {failed}, kKinds),
      Summarize({{"sdk_processes", "2"}, {"batch_size", "64"}}, {Measured(1.0, 1000, 6, 3, 1)}, kKinds)};
  auto sorted = SortByThroughput(points);
  EXPECT_EQ(PointName(sorted[0].point), "sdk_processes=2 batch_size=64");
  EXPECT_EQ(PointName(sorted[2].point), "sdk_processes=4 batch_size=64");
  const std::string table = RenderSweepTable(sorted, 1);
  EXPECT_NE(table.find("recommended: sdk_processes=2 batch_size=64 (1000 records/s, I/O-bound (read/parse)"), std::string::npos)
      << table;
  EXPECT_NE(table.find("flags: --sdk_worker_parallelism=2 and in every RunInference model_handler.config: min_batch_size: 64, "
                       "max_batch_size: 64"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("failed: dfworker run exited with code 1: out of memory"), std::string::npos) << table;
  const std::string html = RenderSweepHtml(sorted, "p.yaml", 1);
  EXPECT_EQ(testing::CheckWellFormed(html), "");
  for (const char* id : {"chart-sweep-throughput", "chart-sweep-stages", "chart-sweep-idle"}) {
    EXPECT_NE(html.find(std::string("<svg id=\"") + id + "\""), std::string::npos) << id;
  }
}

}  // namespace
}  // namespace dfw::report

namespace dfw::report {
namespace {

TEST(Sweep, OnlyAPointThatFitsWithHeadroomIsRecommended) {
  // On an emulated 1 GiB GPU: the fastest point plans 980 MiB (no 10% left), the next 600 MiB.
  auto with_gpu = [](double elapsed, double planned_mib) {
    RunMeasurement m = Measured(elapsed, 1000, 1, 8, 1);
    GpuMemoryRecord g;
    g.gpu = "emulated";
    g.capacity = 1024.0 * 1024 * 1024;
    g.planned_peak = planned_mib * 1024 * 1024;
    g.measured_model_hosts = 300.0 * 1024 * 1024;
    m.gpu_memory = g;
    return m;
  };
  auto sorted = SortByThroughput({Summarize({{"model_copies", "3"}}, {with_gpu(0.5, 980)}, kKinds),
                                  Summarize({{"model_copies", "2"}}, {with_gpu(1.0, 600)}, kKinds)});
  ASSERT_FALSE(sorted[0].fits_with_headroom);
  EXPECT_TRUE(sorted[1].fits_with_headroom);
  const std::string table = RenderSweepTable(sorted, 1);
  EXPECT_NE(table.find("980/300!"), std::string::npos) << table;
  EXPECT_NE(table.find("600/300 "), std::string::npos) << table;
  EXPECT_NE(table.find("recommended: model_copies=2"), std::string::npos) << table;
  EXPECT_NE(table.find("not recommended (marked !)"), std::string::npos) << table;
  auto none = SortByThroughput({Summarize({{"model_copies", "3"}}, {with_gpu(0.5, 1000)}, kKinds)});
  EXPECT_NE(RenderSweepTable(none, 1).find("recommended: none"), std::string::npos);
}

// --constraint / --objective: a recommended point meets every constraint; the objective orders the
// points; misses are marked with the metric and the bound.
TEST(Sweep, ConstraintsAndTheObjectiveChooseTheRecommendation) {
  auto run = [](double elapsed, int64_t p99_us, int64_t rss_mib) {
    RunMeasurement m = Measured(elapsed, 1000, 1, 8, 1);
    m.max_rss_kib = rss_mib * 1024;
    DistributionData lat{10, 10 * p99_us, p99_us, p99_us, {}};
    m.metrics.total.distributions[{"Classify", "inference_batch_latency_micro_secs"}] = lat;
    return m;
  };
  // Fastest: 1000 records/s at 80 ms a batch (mean) and 3 GiB; next: 500 records/s at 20 ms and 1 GiB.
  std::vector<PointSummary> points = {Summarize({{"batch_size", "256"}}, {run(1.0, 80000, 3072)}, kKinds),
                                      Summarize({{"batch_size", "32"}}, {run(2.0, 20000, 1024)}, kKinds)};
  auto c = ParseConstraint("batch_latency_ms<=50");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->op, "<=");
  EXPECT_DOUBLE_EQ(c->value, 50);
  SweepSelection sel;
  sel.constraints = {*c};
  const std::string table = RenderSweepTable(SortByObjective(points, sel.objective), 1, sel);
  EXPECT_NE(table.find("recommended: batch_size=32"), std::string::npos) << table;
  EXPECT_NE(table.find("[misses batch_latency_ms 80 (needs <= 50)]"), std::string::npos) << table;
  EXPECT_NE(table.find("objective: throughput; constraints: batch_latency_ms<=50"), std::string::npos) << table;
  // Memory first: the 1 GiB point leads without any constraint.
  const auto by_memory = SortByObjective(points, SweepObjective::kMemory);
  EXPECT_EQ(by_memory.front().point.at("batch_size"), "32");
  // Nothing meets peak_rss_gib<0.5.
  sel.constraints = {*ParseConstraint("peak_rss_gib<0.5")};
  EXPECT_NE(RenderSweepTable(SortByThroughput(points), 1, sel).find("recommended: none: no point that ran meets the constraints"),
            std::string::npos);
  // Bad constraints and objectives name the problem.
  EXPECT_NE(ParseConstraint("peak_rss_gb<=5").status().message().find("did you mean 'peak_rss_gib'"), std::string::npos);
  EXPECT_NE(ParseConstraint("peak_rss_gib=4").status().message().find("expected METRIC<=N"), std::string::npos);
  EXPECT_NE(ParseConstraint("peak_rss_gib<=four").status().message().find("'four' is not a number"), std::string::npos);
  EXPECT_EQ(ParseObjective("cost").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(*ParseObjective("latency"), SweepObjective::kLatency);
}

TEST(Sweep, OverlappingRunsAreCalledOutInTheRecommendation) {
  auto run = [](double elapsed) {
    RunMeasurement m;
    m.metrics.elapsed_s = elapsed;
    m.metrics.total.counters[{kRecordsNamespace, kRecordsCounter}] = 1000;
    return m;
  };
  // Medians 1000 vs 800 records/s, but the faster point's slowest run (500) is below the other's best (1250).
  auto sorted = SortByThroughput({Summarize({{"sdk_processes", "1"}}, {run(1.0), run(1.0), run(2.0)}, {}),
                                  Summarize({{"sdk_processes", "2"}}, {run(1.25), run(1.25), run(0.8)}, {})});
  const std::string table = RenderSweepTable(sorted, 3);
  EXPECT_NE(table.find("note: its runs overlap the next point's (500-1000 vs 800-1250 records/s, sdk_processes=2)"),
            std::string::npos)
      << table;
  auto apart = SortByThroughput({Summarize({{"sdk_processes", "1"}}, {run(1.0)}, {}),
                                 Summarize({{"sdk_processes", "2"}}, {run(2.0)}, {})});
  EXPECT_EQ(RenderSweepTable(apart, 1).find("overlap"), std::string::npos);
}

}  // namespace
}  // namespace dfw::report
