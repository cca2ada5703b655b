// Metrics of a run, merged in the launcher from committed bundles: per SDK process slot and in
// total (counters summed, distributions merged). Only committed bundles count, so a bundle that
// was retried is counted once and the totals reconcile with the outputs.
#pragma once

#include <string>
#include <vector>

#include "dfw/job/protocol.h"  // kRecordsNamespace, kRecordsCounter, kBusyMsCounter
#include "dfw/metrics/metrics.h"

namespace dfw {

class MetricsReport {
 public:
  explicit MetricsReport(int processes) : per_process_(static_cast<std::size_t>(processes)), bundles_(per_process_.size()) {}

  // Adds the metrics of one committed bundle run by process slot `index` (out of range → total only).
  void AddBundle(int index, const MetricsSnapshot& bundle);
  // Adds a bundle committed by an earlier run of the job (--resume): counts in the total only.
  void AddEarlierBundle(const MetricsSnapshot& bundle) { total_.Merge(bundle); }
  const MetricsSnapshot& total() const { return total_; }
  // {"job_id":..,"total":{snapshot},"processes":[{"index":i,"bundles":n,"metrics":{snapshot}}],
  //  "bundles_committed":..,"retries":..,"elapsed_s":..}
  std::string ToJson(const std::string& job_id, std::size_t bundles_committed, int retries, double elapsed_s) const;
  // The end-of-run report. Always: per-process bundles and records, and their spread. `full`:
  // then every metric as a table. Otherwise one line per transform with its non-zero counters and,
  // when `elapsed_s` > 0, records/s (a summary that fits a screen; metrics.json has everything).
  std::string SummaryTable(bool full = false, double elapsed_s = 0) const;

 private:
  std::vector<MetricsSnapshot> per_process_;
  std::vector<int64_t> bundles_;
  MetricsSnapshot total_;
};

}  // namespace dfw
