// `dfworker report JOB_DIR`: one self-contained HTML page of a finished (or stopped) run, from the
// job dir's job.json, manifest.jsonl and metrics.json. Inline SVG only: no script, no network.
#pragma once

#include <string>
#include <vector>

#include "dfw/common/status.h"
#include "dfw/job/job_dir.h"
#include "dfw/launcher/job_metrics.h"

namespace dfw::report {

// One line of manifest.jsonl.
struct CommitEntry {
  std::string bundle;
  int64_t attempt = 0;
  int64_t records = 0;    // the bundle's dfworker/records counter
  double busy_s = 0;      // its dfworker/busy_ms counter
};

struct JobReportData {
  std::string job_dir;
  JobInfo info;
  JobMetrics metrics;
  std::vector<CommitEntry> commits;  // in commit order
  bool finished = false;             // FINISHED exists
};

// kInvalidArgument when `job_dir` is not a job dir (no job.json, or not one), kDataLoss naming
// the file for a corrupt job.json / metrics.json / manifest line, kNotFound when the run never
// wrote metrics.json. Reads only; never writes into the job dir.
Result<JobReportData> LoadJobReport(const std::string& job_dir);

// The page: headline figures, per-process timeline and records, per-stage time, batch-size and
// latency distributions, records per committed bundle, error counts. Chart ids: chart-processes,
// chart-records, chart-stage-time, chart-batch-size, chart-latency, chart-bundles, chart-errors.
std::string RenderJobReportHtml(const JobReportData& data);

}  // namespace dfw::report
