#include "dfw/launcher/metrics_report.h"

#include <cstdio>
#include <nlohmann/json.hpp>

namespace dfw {

void MetricsReport::AddBundle(int index, const MetricsSnapshot& bundle) {
  total_.Merge(bundle);
  if (index < 0 || static_cast<std::size_t>(index) >= per_process_.size()) return;
  per_process_[static_cast<std::size_t>(index)].Merge(bundle);
  ++bundles_[static_cast<std::size_t>(index)];
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
  for (std::size_t i = 0; i < per_process_.size(); ++i) {
    j["processes"].push_back({{"index", i},
                              {"bundles", bundles_[i]},
                              {"metrics", nlohmann::json::parse(per_process_[i].ToJson(), nullptr, false)}});
  }
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::string MetricsReport::SummaryTable() const {
  std::string out = "process  bundles  records\n";
  char line[128];
  for (std::size_t i = 0; i < per_process_.size(); ++i) {
    std::snprintf(line, sizeof line, "sdk-%-4zu %7lld  %7lld\n", i, static_cast<long long>(bundles_[i]),
                  static_cast<long long>(per_process_[i].CounterOr(kRecordsNamespace, kRecordsCounter)));
    out += line;
  }
  out += total_.ToTable();
  return out;
}

}  // namespace dfw
