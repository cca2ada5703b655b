#include "dfw/metrics/metrics.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace dfw {

int DistributionData::BucketOf(int64_t v) {
  if (v <= 0) return 0;
  const int b = 1 + static_cast<int>(std::floor(4.0 * std::log2(static_cast<double>(v))));
  return std::clamp(b, 1, kBuckets - 1);
}

void DistributionData::Update(int64_t v) {
  if (count == 0) {
    min = max = v;
  } else {
    min = std::min(min, v);
    max = std::max(max, v);
  }
  ++count;
  sum += v;
  ++buckets[BucketOf(v)];
}

void DistributionData::Merge(const DistributionData& o) {
  if (o.count == 0) return;
  if (count == 0) {
    *this = o;
    return;
  }
  count += o.count;
  sum += o.sum;
  min = std::min(min, o.min);
  max = std::max(max, o.max);
  for (const auto& [b, n] : o.buckets) buckets[b] += n;
}

void DistributionData::Subtract(const DistributionData& before) {
  count -= before.count;
  sum -= before.sum;
  for (const auto& [b, n] : before.buckets) {
    auto it = buckets.find(b);
    if (it == buckets.end()) continue;
    it->second -= n;
    if (it->second <= 0) buckets.erase(it);
  }
}

std::optional<double> DistributionData::Quantile(double q) const {
  int64_t in_buckets = 0;
  for (const auto& [b, n] : buckets) in_buckets += n;
  if (count <= 0 || in_buckets <= 0 || !(q > 0 && q <= 1)) return std::nullopt;
  const auto rank = static_cast<int64_t>(std::ceil(q * static_cast<double>(in_buckets)));
  int64_t seen = 0;
  for (const auto& [b, n] : buckets) {
    seen += n;
    if (seen >= rank) {
      const double upper = b == 0 ? 0.0 : std::exp2(static_cast<double>(b) / 4.0);
      return std::clamp(upper, static_cast<double>(min), static_cast<double>(max));
    }
  }
  return static_cast<double>(max);
}

void DistributionCell::Update(int64_t v) {
  count_.fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(v, std::memory_order_relaxed);
  int64_t cur = min_.load(std::memory_order_relaxed);
  while (v < cur && !min_.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
  }
  cur = max_.load(std::memory_order_relaxed);
  while (v > cur && !max_.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
  }
  buckets_[static_cast<std::size_t>(DistributionData::BucketOf(v))].fetch_add(1, std::memory_order_relaxed);
}

DistributionData DistributionCell::value() const {
  DistributionData d;
  d.count = count_.load(std::memory_order_relaxed);
  d.sum = sum_.load(std::memory_order_relaxed);
  if (d.count > 0) {
    d.min = min_.load(std::memory_order_relaxed);
    d.max = max_.load(std::memory_order_relaxed);
  }
  for (std::size_t b = 0; b < buckets_.size(); ++b) {
    if (int64_t n = buckets_[b].load(std::memory_order_relaxed)) d.buckets[static_cast<int>(b)] = n;
  }
  return d;
}

CounterCell* MetricsRegistry::Counter(std::string_view ns, std::string_view name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& slot = counters_[MetricKey{std::string(ns), std::string(name)}];
  if (!slot) slot = std::make_unique<CounterCell>();
  return slot.get();
}

DistributionCell* MetricsRegistry::Distribution(std::string_view ns, std::string_view name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& slot = distributions_[MetricKey{std::string(ns), std::string(name)}];
  if (!slot) slot = std::make_unique<DistributionCell>();
  return slot.get();
}

MetricsSnapshot MetricsRegistry::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  MetricsSnapshot s;
  for (const auto& [k, c] : counters_) s.counters[k] = c->value();
  for (const auto& [k, d] : distributions_) s.distributions[k] = d->value();
  return s;
}

void MetricsSnapshot::Merge(const MetricsSnapshot& o) {
  for (const auto& [k, v] : o.counters) counters[k] += v;
  for (const auto& [k, d] : o.distributions) distributions[k].Merge(d);
}

int64_t MetricsSnapshot::CounterOr(std::string_view ns, std::string_view name, int64_t fallback) const {
  auto it = counters.find(MetricKey{std::string(ns), std::string(name)});
  return it == counters.end() ? fallback : it->second;
}

std::string MetricsSnapshot::ToJson() const {
  nlohmann::json j;
  j["counters"] = nlohmann::json::array();
  j["distributions"] = nlohmann::json::array();
  for (const auto& [k, v] : counters) j["counters"].push_back({{"namespace", k.ns}, {"name", k.name}, {"value", v}});
  for (const auto& [k, d] : distributions) {
    nlohmann::json entry = {{"namespace", k.ns}, {"name", k.name}, {"count", d.count}, {"sum", d.sum},
                            {"min", d.min},   {"max", d.max},   {"mean", d.mean()}};
    if (!d.buckets.empty()) {
      nlohmann::json buckets = nlohmann::json::array();
      for (const auto& [b, n] : d.buckets) buckets.push_back({b, n});
      entry["buckets"] = std::move(buckets);
      if (auto p50 = d.Quantile(0.5)) entry["p50"] = *p50;
      if (auto p99 = d.Quantile(0.99)) entry["p99"] = *p99;
    }
    j["distributions"].push_back(std::move(entry));
  }
  return j.dump();
}

Result<MetricsSnapshot> MetricsSnapshot::FromJson(std::string_view json) {
  MetricsSnapshot s;
  try {
    auto j = nlohmann::json::parse(json);
    for (const auto& c : j.at("counters")) {
      s.counters[MetricKey{c.at("namespace").get<std::string>(), c.at("name").get<std::string>()}] =
          c.at("value").get<int64_t>();
    }
    for (const auto& d : j.at("distributions")) {
      DistributionData dd;
      dd.count = d.at("count").get<int64_t>();
      dd.sum = d.at("sum").get<int64_t>();
      dd.min = d.at("min").get<int64_t>();
      dd.max = d.at("max").get<int64_t>();
      if (dd.count < 0) return DataLoss("metrics JSON: negative distribution count");
      if (d.contains("buckets")) {
        int64_t in_buckets = 0;
        for (const auto& pair : d.at("buckets")) {
          const int b = pair.at(0).get<int>();
          const int64_t n = pair.at(1).get<int64_t>();
          if (b < 0 || b >= DistributionData::kBuckets || n <= 0 || !dd.buckets.emplace(b, n).second) {
            return DataLoss("metrics JSON: a distribution bucket [" + std::to_string(b) + ", " + std::to_string(n) +
                            "] is out of range, not positive, or repeated");
          }
          in_buckets += n;
        }
        if (in_buckets > dd.count) return DataLoss("metrics JSON: a distribution's buckets count more values than it has");
      }
      s.distributions[MetricKey{d.at("namespace").get<std::string>(), d.at("name").get<std::string>()}] = dd;
    }
  } catch (...) {
    return FromCurrentException("parse metrics JSON");
  }
  return s;
}

std::string MetricsSnapshot::ToTable() const {
  std::string out;
  char line[256];
  for (const auto& [k, v] : counters) {
    std::snprintf(line, sizeof line, "  %-24s %-36s %14lld\n", k.ns.c_str(), k.name.c_str(), static_cast<long long>(v));
    out += line;
  }
  for (const auto& [k, d] : distributions) {
    std::snprintf(line, sizeof line, "  %-24s %-36s n=%lld mean=%.1f min=%lld max=%lld\n", k.ns.c_str(),
                  k.name.c_str(), static_cast<long long>(d.count), d.mean(), static_cast<long long>(d.min),
                  static_cast<long long>(d.max));
    out += line;
  }
  return out;
}

}  // namespace dfw
