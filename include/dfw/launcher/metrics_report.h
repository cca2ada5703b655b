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
  explicit MetricsReport(int processes)
      : per_process_(static_cast<std::size_t>(processes)), bundles_(per_process_.size()),
        splits_given_(per_process_.size()), splits_taken_(per_process_.size()), started_s_(per_process_.size(), 0.0) {}

  // Process slots added while the job runs (borrowed slots of finished tenants, tenants.md): `n`
  // more slots with the next indices, started `at_s` seconds into the run (their idle time counts
  // from then). Returns the first new index.
  int AddProcesses(int n, double at_s);

  // Adds the metrics of one committed bundle run by process slot `index` (out of range → total only).
  void AddBundle(int index, const MetricsSnapshot& bundle);
  // Adds a bundle committed by an earlier run of the job (--resume): counts in the total only.
  void AddEarlierBundle(const MetricsSnapshot& bundle) { total_.Merge(bundle); }
  const MetricsSnapshot& total() const { return total_; }
  // Dynamic work rebalancing: process slot `index` split its running bundle (gave the rest away),
  // or was granted a residual of such a split.
  void CountSplitGiven(int index);
  void CountSplitTaken(int index);
  // One committed bundle of this run, for the timeline: process slot, bundle id, when its lease
  // was granted and when it was committed (seconds since the run started), records read.
  struct Span {
    int process = 0;
    std::string bundle;
    double start_s = 0, end_s = 0;
    int64_t records = 0;
  };
  void AddSpan(Span span) { spans_.push_back(std::move(span)); }
  // {"job_id":..,"total":{snapshot},"processes":[{"index":i,"bundles":n,"records":..,"busy_s":..,
  //  "idle_s":..,"started_s":.. (0 unless added mid-run),"splits_given":..,"splits_taken":..,"metrics":{snapshot}}],
  //  "bundles_committed":..,"retries":..,"splits":..,"spread":{"records_min":..,"records_max":..,
  //  "idle_pct_max":..},"elapsed_s":..,"timeline":[{"process":i,"bundle":"b","start_s":..,"end_s":..,
  //  "records":n}] (this run's commits, in commit order)}
  std::string ToJson(const std::string& job_id, std::size_t bundles_committed, int retries, double elapsed_s) const;
  // The end-of-run report. Always: per-process bundles and records, and their spread. `full`:
  // then every metric as a table. Otherwise one line per transform with its non-zero counters and,
  // when `elapsed_s` > 0, records/s (a summary that fits a screen; metrics.json has everything).
  std::string SummaryTable(bool full = false, double elapsed_s = 0) const;

 private:
  std::vector<MetricsSnapshot> per_process_;
  std::vector<int64_t> bundles_;
  std::vector<int64_t> splits_given_;
  std::vector<int64_t> splits_taken_;
  std::vector<double> started_s_;  // when each slot was added (0 = at the start)
  std::vector<Span> spans_;
  MetricsSnapshot total_;
};

}  // namespace dfw
