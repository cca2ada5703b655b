// `dfworker bench --format=json` and the CPU rate `dfworker plan --cpu_rate_from BENCH.json` reads
// from it: the arithmetic on a hand-made document, the point taken, and every refusal.
#include "dfw/report/bench_json.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "dfw/job/protocol.h"

namespace dfw::report {
namespace {

const char* kPipeline = "pipeline:\n  type: chain\n";  // the bytes the hand-made documents were made for

// One successful run: `records` committed, the transforms' process_bundle_usecs as given.
RunMeasurement BenchRun(int64_t records, int64_t read_us, int64_t infer_us, int64_t map_us, int64_t write_us, int processes) {
  RunMeasurement m;
  m.wall_s = 1.1;
  m.metrics.elapsed_s = 1.0;
  m.metrics.total.counters[{kRecordsNamespace, kRecordsCounter}] = records;
  m.metrics.total.counters[{"Read", "process_bundle_usecs"}] = read_us;
  m.metrics.total.counters[{"Classify", "process_bundle_usecs"}] = infer_us;
  m.metrics.total.counters[{"Clean", "process_bundle_usecs"}] = map_us;
  m.metrics.total.counters[{"Write", "process_bundle_usecs"}] = write_us;
  m.metrics.total.counters[{"dfworker", "process_bundle_usecs"}] = 999999;  // not a transform of the pipeline
  m.metrics.processes.resize(static_cast<std::size_t>(processes));
  return m;
}

const std::map<std::string, StageKind> kBenchKinds = {{"Read", StageKind::kRead},
                                                      {"Classify", StageKind::kInference},
                                                      {"Clean", StageKind::kTransform},
                                                      {"Write", StageKind::kWrite}};

// A bench document as a user could write it: two points, the first recommended.
nlohmann::json HandMade() {
  return {{"format", "dfworker-bench"},
          {"format_version", 1},
          {"pipeline", {{"path", "p.yaml"}, {"content_hash", PipelineContentHash(kPipeline)}}},
          {"machine", {{"machine_type", "g2-standard-8"}, {"host_cpu_cores", 8}, {"host_cpu_model", "Test CPU"}}},
          {"recommended_point", 0},
          {"points",
           {{{"name", "batch_size=64"}, {"failed", 0}, {"records", 12000}, {"cpu_seconds", 0.25},
             {"cpu_records_per_vcpu_second", 48000.0}, {"sdk_processes", 4}, {"cpu_stages", {"Read", "Write"}}},
            {{"name", "batch_size=8"}, {"failed", 0}, {"records", 12000}, {"cpu_seconds", 0.5},
             {"cpu_records_per_vcpu_second", 24000.0}, {"sdk_processes", 4}, {"cpu_stages", {"Read", "Write"}}}}}};
}

TEST(BenchJson, SummaryCountsTheTimeOutsideRunInference) {
  // Medians of 3 runs: Read 0.2 s, Clean 0.1 s, Write 0.3 s (Classify and dfworker's own not counted).
  PointSummary s = Summarize({{"batch_size", "64"}},
                             {BenchRun(6000, 200000, 900000, 100000, 300000, 2), BenchRun(6000, 100000, 800000, 200000, 200000, 2),
                              BenchRun(6000, 300000, 700000, 100000, 400000, 2)},
                             kBenchKinds);
  EXPECT_EQ(s.sdk_processes, 2);
  EXPECT_NEAR(s.cpu_seconds, 0.6, 1e-12);
  EXPECT_EQ(s.cpu_stages, (std::vector<std::string>{"Clean", "Read", "Write"}));
  EXPECT_NEAR(s.cpu_records_per_second, 10000.0, 1e-6);  // 6,000 records / 0.6 CPU-s
  // No time outside RunInference: no rate.
  PointSummary none = Summarize({{"batch_size", "8"}}, {BenchRun(6000, 0, 900000, 0, 0, 1)}, kBenchKinds);
  EXPECT_EQ(none.cpu_records_per_second, 0);
}

TEST(BenchJson, RenderedDocumentReadsBackAsTheRecommendedPointsRate) {
  PointSummary fast = Summarize({{"batch_size", "64"}}, {BenchRun(6000, 100000, 500000, 100000, 100000, 2)}, kBenchKinds);
  PointSummary slow = Summarize({{"batch_size", "8"}}, {BenchRun(6000, 300000, 500000, 300000, 300000, 2)}, kBenchKinds);
  fast.records_per_s = 2000;
  slow.records_per_s = 1000;
  BenchContext context;
  context.pipeline_path = "p.yaml";
  context.pipeline_hash = PipelineContentHash(kPipeline);
  context.host_cpu_cores = 2;
  context.host_cpu_model = "Test CPU";
  const std::string doc = RenderSweepJson({fast, slow}, context, {});
  auto j = nlohmann::json::parse(doc);
  EXPECT_EQ(j["format"], "dfworker-bench");
  EXPECT_EQ(j["recommended_point"], 0);
  EXPECT_EQ(j["points"][0]["name"], "batch_size=64");
  EXPECT_TRUE(j["machine"]["machine_type"].is_null());
  auto rate = ReadBenchCpuRate("b.json", doc, "p.yaml", kPipeline);
  ASSERT_TRUE(rate.ok()) << rate.status().ToString();
  EXPECT_NEAR(rate->records_per_vcpu_second, 20000.0, 1e-6);  // 6,000 / 0.3 CPU-s
  EXPECT_TRUE(rate->recommended);
  EXPECT_EQ(rate->point, "batch_size=64");
  EXPECT_NE(rate->how.find("its recommended point 'batch_size=64': 6000 records / 0.3 CPU-s in Clean, Read, Write, "
                           "on 2 SDK process(es), no --machine_type, a host of 2 core(s) (Test CPU)"),
            std::string::npos)
      << rate->how;
}

TEST(BenchJson, HandMadeDocumentPinsTheArithmetic) {
  auto rate = ReadBenchCpuRate("b.json", HandMade().dump(), "p.yaml", kPipeline);
  ASSERT_TRUE(rate.ok()) << rate.status().ToString();
  EXPECT_DOUBLE_EQ(rate->records_per_vcpu_second, 48000.0);  // 12,000 / 0.25
  EXPECT_EQ(rate->sdk_processes, 4);
  EXPECT_EQ(rate->machine_type, "g2-standard-8");
  EXPECT_NE(rate->how.find("--machine_type=g2-standard-8, a host of 8 core(s) (Test CPU)"), std::string::npos) << rate->how;
  // A copy of the file elsewhere is the same pipeline (the hash decides, not the path).
  EXPECT_TRUE(ReadBenchCpuRate("b.json", HandMade().dump(), "copy/of/p.yaml", kPipeline).ok());
  // No recommendation: the first point that ran with a rate, said so.
  nlohmann::json none = HandMade();
  none["recommended_point"] = -1;
  none["points"][0]["failed"] = 1;
  auto best = ReadBenchCpuRate("b.json", none.dump(), "p.yaml", kPipeline);
  ASSERT_TRUE(best.ok()) << best.status().ToString();
  EXPECT_DOUBLE_EQ(best->records_per_vcpu_second, 24000.0);
  EXPECT_FALSE(best->recommended);
  EXPECT_NE(best->how.find("its best point 'batch_size=8'"), std::string::npos) << best->how;
}

TEST(BenchJson, RefusesWhatIsNotABenchResultOfThisPipeline) {
  auto expect_refused = [](const std::string& text, const std::string& expected, const std::string& pipeline = kPipeline) {
    auto r = ReadBenchCpuRate("b.json", text, "p.yaml", pipeline);
    ASSERT_FALSE(r.ok()) << expected;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find(expected), std::string::npos) << r.status().message();
  };
  expect_refused("{\n  \"format\": \"dfworker-bench\",\n  \"points\": [1,,2]\n}", "b.json:3:16: not JSON: syntax error");
  expect_refused("", "b.json:1:1: not JSON");
  expect_refused("{\"rows\": []}", "b.json: not a dfworker bench result: no \"format\": \"dfworker-bench\"");
  expect_refused("[1, 2]", "not a dfworker bench result");
  nlohmann::json v2 = HandMade();
  v2["format_version"] = 2;
  expect_refused(v2.dump(), "format_version 2: this dfworker reads version 1");
  expect_refused(HandMade().dump(), "a bench result of another pipeline: it ran 'p.yaml' (content hash " +
                                        PipelineContentHash(kPipeline) + "), the plan is of 'p.yaml' (content hash " +
                                        PipelineContentHash("edited") + "); the file changed since the bench",
                 "edited");
  nlohmann::json zero = HandMade();
  zero["points"][0]["cpu_records_per_vcpu_second"] = 0;
  zero["points"][0]["cpu_seconds"] = 0;
  expect_refused(zero.dump(), "point 'batch_size=64' (recommended) has a CPU rate of 0");
  // A stated rate with no time behind it (cpu_seconds 0 or -1) is refused, not taken.
  for (double seconds : {0.0, -1.0}) {
    nlohmann::json no_time = HandMade();
    no_time["points"][0]["cpu_seconds"] = seconds;
    expect_refused(no_time.dump(), "point 'batch_size=64' (recommended) has cpu_seconds " + std::string(seconds == 0 ? "0" : "-1") +
                                       " and records 12000: a CPU rate needs a positive time");
  }
  nlohmann::json inconsistent = HandMade();
  inconsistent["points"][0]["cpu_records_per_vcpu_second"] = 50000.0;
  expect_refused(inconsistent.dump(), "cpu_records_per_vcpu_second 50000 is not records / cpu_seconds (48000)");
  nlohmann::json out_of_range = HandMade();
  out_of_range["recommended_point"] = 2;
  expect_refused(out_of_range.dump(), "recommended_point 2 is not -1 or an index into its 2 point(s)");
  nlohmann::json wrong_type = HandMade();
  wrong_type["points"][0]["records"] = "many";
  expect_refused(wrong_type.dump(), "not a dfworker bench result of this version: type must be number");
  nlohmann::json missing = HandMade();
  missing.erase("machine");
  expect_refused(missing.dump(), "key 'machine' not found");
  nlohmann::json none_ran = HandMade();
  none_ran["recommended_point"] = -1;
  none_ran["points"][0]["failed"] = 1;
  none_ran["points"][1]["failed"] = 3;
  expect_refused(none_ran.dump(), "no point of the bench ran without failures");
}

TEST(BenchJson, ContentHashIsFnv1a64) {
  EXPECT_EQ(PipelineContentHash(""), "cbf29ce484222325");  // FNV-1a 64's offset basis
  EXPECT_EQ(PipelineContentHash("a"), "af63dc4c8601ec8c");  // the published FNV-1a 64 test vector
  EXPECT_NE(PipelineContentHash("pipeline: a"), PipelineContentHash("pipeline: b"));
}

}  // namespace
}  // namespace dfw::report
