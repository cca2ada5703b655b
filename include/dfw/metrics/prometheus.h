// Prometheus text exposition format (version 0.0.4) of metrics snapshots, with Beam's metric names:
// a counter ("num_inferences") keeps its name, its namespace becomes the `namespace` label; a
// distribution becomes a summary (`<name>_count`, `<name>_sum`) plus `<name>_min` / `<name>_max`
// gauges. Names are sanitised to [a-zA-Z0-9_:] (anything else becomes '_').
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dfw/metrics/metrics.h"

namespace dfw {

class PrometheusWriter {
 public:
  using Labels = std::vector<std::pair<std::string, std::string>>;

  // One sample of family `name` ("counter", "gauge" or "summary" for `type`; the first call for a
  // family sets its type and help).
  void Add(std::string_view name, std::string_view type, std::string_view help, const Labels& labels, double value);
  // Every counter and distribution of `snapshot`, each with `labels` plus namespace="<ns>".
  // Metrics in namespace `own_namespace` (dfworker's own) are named "<own_namespace>_<name>" instead.
  void AddSnapshot(const MetricsSnapshot& snapshot, const Labels& labels, std::string_view own_namespace = "dfworker");
  // The exposition text: families sorted by name, each with # HELP and # TYPE once, then its samples.
  std::string Text() const;

  static std::string SanitizeName(std::string_view name);

 private:
  struct Family {
    std::string type, help;
    std::vector<std::string> samples;
  };
  std::map<std::string, Family> families_;
};

}  // namespace dfw
