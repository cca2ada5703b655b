#include "dfw/metrics/metrics.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>

namespace dfw {

void DistributionData::Update(int64_t v) {
  if (count == 0) {
    min = max = v;
  } else {
    min = std::min(min, v);
    max = std::max(max, v);
  }
  ++count;
  sum += v;
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
}

DistributionData DistributionCell::value() const {
  DistributionData d;
  d.count = count_.load(std::memory_order_relaxed);
  d.sum = sum_.load(std::memory_order_relaxed);
  if (d.count > 0) {
    d.min = min_.load(std::memory_order_relaxed);
    d.max = max_.load(std::memory_order_relaxed);
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
    j["distributions"].push_back({{"namespace", k.ns}, {"name", k.name}, {"count", d.count}, {"sum", d.sum},
                                  {"min", d.min}, {"max", d.max}, {"mean", d.mean()}});
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
