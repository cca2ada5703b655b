// Metrics with Beam's kinds: counters and distributions (count/sum/min/max, mean derived),
// keyed by (namespace, name) like Beam's MetricName, e.g. ("RunInference", "num_inferences").
//
// Threading: MetricsRegistry is safe to use concurrently from TBB tasks. Hot paths should look a
// metric up once (Counter()/Distribution() return stable pointers for the registry's lifetime) and
// then call Inc()/Update(), which are lock-free atomics.
//
// A snapshot (MetricsSnapshot) is a plain value: it can be merged (counters summed, distributions
// merged), serialised to JSON and parsed back (how SDK processes ship deltas to the launcher).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <optional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

#include "dfw/common/status.h"

namespace dfw {

struct MetricKey {
  std::string ns;    // namespace, e.g. "RunInference" or a stage name
  std::string name;  // e.g. "num_inferences"
  bool operator<(const MetricKey& o) const { return std::tie(ns, name) < std::tie(o.ns, o.name); }
  bool operator==(const MetricKey& o) const { return ns == o.ns && name == o.name; }
};

// Beam's distribution (count, sum, min, max) plus a histogram for percentiles: values counted in
// log-spaced buckets (bucket 0: v <= 0; bucket b >= 1: 2^((b-1)/4) <= v < 2^(b/4), so a bucket is at
// most 19% wide). Histograms add up exactly under Merge and subtract under Subtract, so percentiles
// of a job are those of every value across processes, to within a bucket.
struct DistributionData {
  static constexpr int kBuckets = 256;
  int64_t count = 0;
  int64_t sum = 0;
  int64_t min = 0;  // meaningful only when count > 0
  int64_t max = 0;
  std::map<int, int64_t> buckets;  // bucket index -> values counted (empty: no histogram, e.g. older files)
  double mean() const { return count ? static_cast<double>(sum) / static_cast<double>(count) : 0.0; }
  void Update(int64_t v);
  void Merge(const DistributionData& o);
  // Count, sum and buckets minus `before`'s (a delta between two snapshots; min/max stay).
  void Subtract(const DistributionData& before);
  // The q-quantile (0 < q <= 1) from the histogram: the upper edge of the bucket holding it,
  // clamped to [min, max]; nullopt without a histogram.
  std::optional<double> Quantile(double q) const;
  static int BucketOf(int64_t v);
  bool operator==(const DistributionData& o) const = default;
};

class CounterCell {
 public:
  void Inc(int64_t n = 1) { v_.fetch_add(n, std::memory_order_relaxed); }
  int64_t value() const { return v_.load(std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> v_{0};
};

class DistributionCell {
 public:
  void Update(int64_t v);
  DistributionData value() const;

 private:
  std::atomic<int64_t> count_{0}, sum_{0};
  std::atomic<int64_t> min_{INT64_MAX}, max_{INT64_MIN};
  std::array<std::atomic<int64_t>, DistributionData::kBuckets> buckets_{};
};

struct MetricsSnapshot {
  std::map<MetricKey, int64_t> counters;
  std::map<MetricKey, DistributionData> distributions;

  void Merge(const MetricsSnapshot& o);
  int64_t CounterOr(std::string_view ns, std::string_view name, int64_t fallback = 0) const;
  // {"counters":[{"namespace":..,"name":..,"value":..}],"distributions":[{..,"count","sum","min","max","mean"}]}
  std::string ToJson() const;
  static Result<MetricsSnapshot> FromJson(std::string_view json);
  // A fixed-width table for stderr: namespace, name, value (or count/mean/min/max).
  std::string ToTable() const;
};

class MetricsRegistry {
 public:
  CounterCell* Counter(std::string_view ns, std::string_view name);
  DistributionCell* Distribution(std::string_view ns, std::string_view name);
  MetricsSnapshot Snapshot() const;

 private:
  mutable std::mutex mu_;
  std::map<MetricKey, std::unique_ptr<CounterCell>> counters_;
  std::map<MetricKey, std::unique_ptr<DistributionCell>> distributions_;
};

}  // namespace dfw
