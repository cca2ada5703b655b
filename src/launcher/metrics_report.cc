#include "dfw/launcher/metrics_report.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>

namespace dfw {

void MetricsReport::AddBundle(int index, const MetricsSnapshot& bundle) {
  total_.Merge(bundle);
  if (index < 0 || static_cast<std::size_t>(index) >= per_process_.size()) return;
  per_process_[static_cast<std::size_t>(index)].Merge(bundle);
  ++bundles_[static_cast<std::size_t>(index)];
}

void MetricsReport::CountSplitGiven(int index) {
  if (index >= 0 && static_cast<std::size_t>(index) < splits_given_.size()) ++splits_given_[static_cast<std::size_t>(index)];
}

void MetricsReport::CountSplitTaken(int index) {
  if (index >= 0 && static_cast<std::size_t>(index) < splits_taken_.size()) ++splits_taken_[static_cast<std::size_t>(index)];
}

int MetricsReport::AddProcesses(int n, double at_s) {
  const int first = static_cast<int>(per_process_.size());
  const std::size_t size = per_process_.size() + static_cast<std::size_t>(std::max(0, n));
  per_process_.resize(size);
  bundles_.resize(size);
  splits_given_.resize(size);
  splits_taken_.resize(size);
  started_s_.resize(size, at_s);
  return first;
}

std::string MetricsReport::ToJson(const std::string& job_id, std::size_t bundles_committed, int retries,
                                  double elapsed_s) const {
  nlohmann::json j;
  j["job_id"] = job_id;
  j["bundles_committed"] = bundles_committed;
  j["retries"] = retries;
  j["elapsed_s"] = elapsed_s;
  j["total"] = nlohmann::json::parse(total_.ToJson(), nullptr, false);
  j["processes"] = nlohmann::json::array();
  int64_t splits = 0, lo = INT64_MAX, hi = 0;
  double idle_max = 0;
  for (std::size_t i = 0; i < per_process_.size(); ++i) {
    const double busy_s = static_cast<double>(per_process_[i].CounterOr(kRecordsNamespace, kBusyMsCounter)) / 1000.0;
    const int64_t records = per_process_[i].CounterOr(kRecordsNamespace, kRecordsCounter);
    const double idle_s = std::max(0.0, elapsed_s - started_s_[i] - busy_s);  // from when the slot began
    splits += splits_given_[i];
    lo = std::min(lo, records);
    hi = std::max(hi, records);
    if (elapsed_s > 0) idle_max = std::max(idle_max, 100.0 * idle_s / elapsed_s);
    j["processes"].push_back({{"index", i},
                              {"bundles", bundles_[i]},
                              {"records", records},
                              {"busy_s", busy_s},
                              {"idle_s", idle_s},
                              {"started_s", started_s_[i]},
                              {"splits_given", splits_given_[i]},
                              {"splits_taken", splits_taken_[i]},
                              {"metrics", nlohmann::json::parse(per_process_[i].ToJson(), nullptr, false)}});
  }
  j["splits"] = splits;
  j["timeline"] = nlohmann::json::array();
  for (const Span& s : spans_) {
    j["timeline"].push_back({{"process", s.process},
                             {"bundle", s.bundle},
                             {"start_s", s.start_s},
                             {"end_s", s.end_s},
                             {"records", s.records}});
  }
  if (!per_process_.empty()) j["spread"] = {{"records_min", lo}, {"records_max", hi}, {"idle_pct_max", idle_max}};
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::string MetricsReport::SummaryTable(bool full, double elapsed_s) const {
  std::string out;
  char line[256];
  const int64_t records = total_.CounterOr(kRecordsNamespace, kRecordsCounter);
  if (!per_process_.empty()) {
    int64_t lo = INT64_MAX, hi = 0;
    for (const MetricsSnapshot& p : per_process_) {
      int64_t r = p.CounterOr(kRecordsNamespace, kRecordsCounter);
      lo = std::min(lo, r);
      hi = std::max(hi, r);
    }
    std::snprintf(line, sizeof line, "SDK processes: %zu (records per process: min %lld, max %lld)\n", per_process_.size(),
                  static_cast<long long>(lo), static_cast<long long>(hi));
    out += line;
    const bool any_splits = std::any_of(splits_given_.begin(), splits_given_.end(), [](int64_t n) { return n > 0; });
    for (std::size_t i = 0; i < per_process_.size(); ++i) {
      const double busy_s = static_cast<double>(per_process_[i].CounterOr(kRecordsNamespace, kBusyMsCounter)) / 1000.0;
      std::snprintf(line, sizeof line, "  sdk-%-3zu %6lld bundles %9lld records  busy %6.2f s", i,
                    static_cast<long long>(bundles_[i]),
                    static_cast<long long>(per_process_[i].CounterOr(kRecordsNamespace, kRecordsCounter)), busy_s);
      out += line;
      // Idle = the run's wall time not spent in a bundle (start-up, waiting for work, shutdown).
      const double lived_s = elapsed_s - started_s_[i];
      if (lived_s > 0) {
        std::snprintf(line, sizeof line, "  idle %3.0f%%", 100.0 * std::max(0.0, 1.0 - busy_s / lived_s));
        out += line;
      }
      if (any_splits) {
        std::snprintf(line, sizeof line, "  splits given %lld, taken %lld", static_cast<long long>(splits_given_[i]),
                      static_cast<long long>(splits_taken_[i]));
        out += line;
      }
      if (started_s_[i] > 0) {
        std::snprintf(line, sizeof line, "  (added at %.1f s)", started_s_[i]);
        out += line;
      }
      out += "\n";
    }
  }
  if (full) return out + total_.ToTable();
  // Per transform, only what happened: the counters that are not zero, on one line each.
  std::map<std::string, std::string> by_ns;
  for (const auto& [key, value] : total_.counters) {
    if (value == 0 || key.ns == kRecordsNamespace) continue;  // dfworker's own: shown per process above
    std::string& l = by_ns[key.ns];
    l += (l.empty() ? "" : ", ") + key.name + " " + std::to_string(value);
  }
  for (const auto& [ns, counters] : by_ns) out += "  " + ns + ": " + counters + "\n";
  if (elapsed_s > 0) {
    std::snprintf(line, sizeof line, "records: %lld in %.2f s (%.0f records/s); every metric: metrics.json or --report=full\n",
                  static_cast<long long>(records), elapsed_s, static_cast<double>(records) / elapsed_s);
    out += line;
  }
  return out;
}

}  // namespace dfw
