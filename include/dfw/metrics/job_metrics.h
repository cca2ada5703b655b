// metrics.json read back (what MetricsReport::ToJson writes), for `dfworker report`, `dfworker
// bench` and metrics.prom.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "dfw/common/status.h"
#include "dfw/metrics/metrics.h"

namespace dfw {

struct JobMetrics {
  std::string job_id;
  int64_t bundles_committed = 0;
  int64_t retries = 0;
  double elapsed_s = 0;  // the launcher's wall time from start to the end of the run
  MetricsSnapshot total;
  struct Process {
    int64_t index = 0;
    int64_t bundles = 0;
    int64_t records = 0;
    double busy_s = 0;  // time inside bundles (counter busy_ms)
    double idle_s = 0;  // elapsed_s - busy_s
    MetricsSnapshot metrics;
  };
  std::vector<Process> processes;
  // This run's commits in commit order (absent in metrics.json of older runs: empty). Seconds
  // since the run started: when the lease was granted, when the commit was taken.
  struct Span {
    int64_t process = 0;
    std::string bundle;
    double start_s = 0, end_s = 0;
    int64_t records = 0;
  };
  std::vector<Span> timeline;
  int64_t splits = 0;  // splits of running bundles (work rebalancing); 0 when absent
  struct ProcessSplits {
    int64_t given = 0, taken = 0;
  };
  std::vector<ProcessSplits> process_splits;  // by process, when metrics.json has them
};

// kDataLoss naming the field when `json` is not a metrics.json (not JSON, a field missing or of
// the wrong type). Never throws.
Result<JobMetrics> ParseJobMetrics(std::string_view json);

// metrics.prom: every metric of the total (process="all") and of each SDK process (process="<i>"),
// plus the run's own gauges (elapsed, bundles committed, retries, per-process busy/idle seconds),
// all labelled job_id="<id>". Sum per-process series with process!="all".
std::string JobMetricsToPrometheus(const JobMetrics& metrics);

// Writes <job dir>/metrics.prom from the text of metrics.json (atomically, like metrics.json).
Status WriteMetricsProm(const std::string& job_dir, const std::string& metrics_json);

}  // namespace dfw
