// Graph tests: N records through {1, 4 threads} x {fast, deliberately slow sink}; every record
// arrives exactly once and the in-flight counter never exceeds the limit.
#include <gmock/gmock.h>

#include <set>

#include <fmt/format.h>

#include "pipeline_test_util.h"

namespace dfw {
namespace {

using testing::Collected;
using testing::TempDir;

struct GraphCase {
  int threads;
  int64_t sink_delay_us;
};

void PrintTo(const GraphCase& c, std::ostream* os) {
  *os << "threads=" << c.threads << " sink_delay_us=" << c.sink_delay_us;
}

class GraphTest : public ::testing::TestWithParam<GraphCase> {};

TEST_P(GraphTest, EveryRecordArrivesOnceWithBoundedInFlightBatches) {
  const GraphCase& gc = GetParam();
  constexpr int kRecords = 5000;
  TempDir dir;
  std::string data;
  for (int i = 0; i < kRecords; ++i) data += fmt::format("{{\"id\": {}, \"text\": \"row {}\"}}\n", i, i);
  testing::WriteFile(dir / "in.jsonl", data);
  std::string sink = fmt::format("Sink_t{}_d{}", gc.threads, gc.sink_delay_us);
  std::string yaml = fmt::format(R"(
pipeline:
  type: chain
  source:
    type: ReadFromJson
    config: {{path: "{}"}}
  transforms:
    - type: MapToFields
      config: {{append: true, fields: {{copy: id}}}}
  sink:
    type: TestCollect
    name: {}
    config: {{delay_us: {}}}
)", dir / "in.jsonl", sink, gc.sink_delay_us);
  StageRegistry registry = testing::TestRegistry();
  auto spec = testing::LoadYaml(yaml, registry);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  RunnerOptions options;
  options.threads = gc.threads;
  options.batch_size = 16;           // many batches per bundle
  options.max_in_flight_batches = 3;
  options.bundle_bytes = 40000;      // several bundles
  MetricsRegistry metrics;
  auto runner = PipelineRunner::Make(*spec, registry, options, &metrics);
  ASSERT_TRUE(runner.ok()) << runner.status().ToString();
  auto bundles = (*runner)->PlanBundles();
  ASSERT_TRUE(bundles.ok()) << bundles.status().ToString();
  ASSERT_GT(bundles->size(), 2u);
  for (const Bundle& b : *bundles) {
    auto stats = (*runner)->RunBundle(b, dir / "staging");
    ASSERT_TRUE(stats.ok()) << stats.status().ToString();
    EXPECT_EQ(stats->in_flight_limit, 3);
    EXPECT_GE(stats->max_in_flight_batches, 1);
    EXPECT_LE(stats->max_in_flight_batches, 3);
  }
  std::vector<Row> rows;
  {
    std::lock_guard<std::mutex> lock(Collected::Get().mu);
    rows = std::move(Collected::Get().rows[sink]);
  }
  ASSERT_EQ(rows.size(), static_cast<std::size_t>(kRecords));
  std::set<int64_t> ids;
  for (const Row& r : rows) {
    ASSERT_NE(r.Find("id"), nullptr);
    EXPECT_EQ(*r.Find("copy"), *r.Find("id"));
    ids.insert(r.Find("id")->as_int());
  }
  EXPECT_EQ(ids.size(), static_cast<std::size_t>(kRecords));  // no duplicates
  EXPECT_EQ(*ids.begin(), 0);
  EXPECT_EQ(*ids.rbegin(), kRecords - 1);
  EXPECT_EQ(metrics.Snapshot().CounterOr(sink, "elements_in"), kRecords);
}

INSTANTIATE_TEST_SUITE_P(ThreadsBySinkSpeed, GraphTest,
                         ::testing::Values(GraphCase{1, 0}, GraphCase{1, 200}, GraphCase{4, 0}, GraphCase{4, 200}),
                         [](const ::testing::TestParamInfo<GraphCase>& info) {
                           return fmt::format("threads{}_{}", info.param.threads,
                                              info.param.sink_delay_us ? "slow_sink" : "fast_sink");
                         });

TEST(Graph, FanOutGivesEachConsumerItsOwnCopy) {
  StageRegistry registry = testing::TestRegistry();
  auto spec = testing::LoadYaml(R"(
pipeline:
  transforms:
    - type: Create
      config: {elements: [{a: 1}, {a: 2}, {a: 3}]}
    - type: MapToFields
      name: Left
      input: Create
      config: {fields: {x: a}}
    - type: TestCollect
      name: FanLeft
      input: Left
    - type: TestCollect
      name: FanRight
      input: Create
)", registry);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  TempDir dir;
  MetricsRegistry metrics;
  RunnerOptions options;
  options.threads = 4;
  auto summary = RunAllBundles(*spec, registry, options, dir / "staging", &metrics);
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  std::lock_guard<std::mutex> lock(Collected::Get().mu);
  auto left = std::move(Collected::Get().rows["FanLeft"]);
  auto right = std::move(Collected::Get().rows["FanRight"]);
  ASSERT_EQ(left.size(), 3u);
  ASSERT_EQ(right.size(), 3u);
  for (const Row& r : left) EXPECT_TRUE(r.Has("x") && !r.Has("a"));
  for (const Row& r : right) EXPECT_TRUE(r.Has("a") && !r.Has("x"));
}

}  // namespace
}  // namespace dfw
