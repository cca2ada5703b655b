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

namespace dfw {
namespace {

TEST(Histogram, PercentilesOfKnownValuesAreWithinABucket) {
  DistributionData d;
  for (int v = 1; v <= 1000; ++v) d.Update(v);
  auto p50 = d.Quantile(0.5), p99 = d.Quantile(0.99), p100 = d.Quantile(1.0);
  ASSERT_TRUE(p50 && p99 && p100);
  // A bucket is at most 2^(1/4) wide: the upper edge is within 19% above the true value.
  EXPECT_GE(*p50, 500);
  EXPECT_LE(*p50, 500 * 1.19);
  EXPECT_GE(*p99, 990);
  EXPECT_LE(*p99, 1000);  // clamped to max
  EXPECT_EQ(*p100, 1000);
  EXPECT_FALSE(DistributionData{}.Quantile(0.5).has_value());
  EXPECT_FALSE(d.Quantile(0).has_value());
  DistributionData zeros;
  zeros.Update(0);
  zeros.Update(-5);
  EXPECT_EQ(zeros.Quantile(0.5), 0.0);
}

TEST(Histogram, MergeAndSubtractAreExactAndTheCellAgreesWithTheData) {
  DistributionData a, b, both;
  for (int v : {3, 70, 900}) {
    a.Update(v);
    both.Update(v);
  }
  for (int v : {5, 5, 12000}) {
    b.Update(v);
    both.Update(v);
  }
  DistributionData merged = a;
  merged.Merge(b);
  EXPECT_EQ(merged, both);
  DistributionData delta = both;
  delta.Subtract(a);
  EXPECT_EQ(delta.count, b.count);
  EXPECT_EQ(delta.sum, b.sum);
  EXPECT_EQ(delta.buckets, b.buckets);
  MetricsRegistry r;
  DistributionCell* cell = r.Distribution("ns", "lat");
  for (int v : {3, 70, 900, 5, 5, 12000}) cell->Update(v);
  EXPECT_EQ(cell->value(), both);
}

TEST(Histogram, RoundTripsThroughJsonAndRefusesImpossibleBuckets) {
  MetricsSnapshot s;
  for (int v : {1, 10, 100, 1000}) s.distributions[{"ns", "lat"}].Update(v);
  auto back = MetricsSnapshot::FromJson(s.ToJson());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->distributions, s.distributions);
  EXPECT_NE(s.ToJson().find("\"p99\""), std::string::npos);
  // Files written before histograms existed still read, without percentiles.
  auto old = MetricsSnapshot::FromJson(
      R"({"counters":[],"distributions":[{"namespace":"n","name":"d","count":2,"sum":3,"min":1,"max":2}]})");
  ASSERT_TRUE(old.ok());
  EXPECT_FALSE(old->distributions.begin()->second.Quantile(0.5).has_value());
  for (const char* buckets : {"[[300,1]]", "[[-1,1]]", "[[5,0]]", "[[5,1],[5,1]]", "[[5,3]]", "[[5]]"}) {
    std::string text = std::string(R"({"counters":[],"distributions":[{"namespace":"n","name":"d","count":2,"sum":3,"min":1,"max":2,"buckets":)") +
                       buckets + "}]}";
    EXPECT_FALSE(MetricsSnapshot::FromJson(text).ok()) << buckets;
  }
}

}  // namespace
}  // namespace dfw
