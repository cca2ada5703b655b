#include "dfw/metrics/metrics.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace dfw {
namespace {

TEST(Metrics, CountersSumAcrossThreads) {
  MetricsRegistry reg;
  CounterCell* c = reg.Counter("RunInference", "num_inferences");
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([c] {
      for (int i = 0; i < 10000; ++i) c->Inc();
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(reg.Snapshot().CounterOr("RunInference", "num_inferences"), 40000);
  EXPECT_EQ(reg.Counter("RunInference", "num_inferences"), c) << "lookup must return the same cell";
}

TEST(Metrics, DistributionTracksCountSumMinMax) {
  MetricsRegistry reg;
  DistributionCell* d = reg.Distribution("RunInference", "inference_request_batch_size");
  for (int v : {4, 1, 9}) d->Update(v);
  DistributionData got = reg.Snapshot().distributions.begin()->second;
  EXPECT_EQ(got.count, 3);
  EXPECT_EQ(got.sum, 14);
  EXPECT_EQ(got.min, 1);
  EXPECT_EQ(got.max, 9);
  EXPECT_DOUBLE_EQ(got.mean(), 14.0 / 3);
}

TEST(Metrics, SnapshotsMergeAndRoundTripThroughJson) {
  MetricsRegistry a, b;
  a.Counter("x", "c")->Inc(2);
  b.Counter("x", "c")->Inc(5);
  b.Counter("y", "only_b")->Inc(1);
  a.Distribution("x", "d")->Update(10);
  b.Distribution("x", "d")->Update(-3);
  MetricsSnapshot m = a.Snapshot();
  m.Merge(b.Snapshot());
  EXPECT_EQ(m.CounterOr("x", "c"), 7);
  EXPECT_EQ(m.CounterOr("y", "only_b"), 1);
  DistributionData d = m.distributions.at(MetricKey{"x", "d"});
  EXPECT_EQ(d.min, -3);
  EXPECT_EQ(d.max, 10);
  Result<MetricsSnapshot> back = MetricsSnapshot::FromJson(m.ToJson());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->counters, m.counters);
  EXPECT_EQ(back->distributions, m.distributions);
}

TEST(Metrics, RejectsMalformedJson) {
  EXPECT_FALSE(MetricsSnapshot::FromJson("{\"counters\": 3}").ok());
  EXPECT_FALSE(MetricsSnapshot::FromJson("not json").ok());
}

}  // namespace
}  // namespace dfw
