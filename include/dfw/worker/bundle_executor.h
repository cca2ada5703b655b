// How an SDK process runs one bundle. The production executor runs the pipeline (pipeline
// module's RunBundle); LineRangeExecutor is a small real executor used by tests and benchmarks.
//
// Contract for every executor: write each output under `staging_dir/<sink>/` (the launcher
// promotes those files to committed/<sink>/ on commit, so names must be unique per bundle, e.g.
// "bundle-<id>.done"); fill `metrics` with this bundle's metrics only (a delta), counting records
// read in counter ("dfworker", "records"); return a non-OK Status for a failed attempt (it is
// retried up to the attempt limit).
// Threading: RunBundle is called from one thread at a time.
#pragma once

#include <memory>
#include <optional>
#include <utility>
#include <string>

#include "dfw/common/status.h"
#include "dfw/job/job_dir.h"
#include "dfw/job/work_range.h"
#include "dfw/inference/model_process_context.h"
#include "dfw/metrics/metrics.h"
#include "dfw/stages/stage.h"

namespace dfw {

class BundleExecutor {
 public:
  virtual ~BundleExecutor() = default;
  virtual Status RunBundle(const std::string& bundle_id, const std::string& staging_dir, MetricsSnapshot* metrics) = 0;

  // Runs the bundle over `range` when the lease names one (dynamic work rebalancing may have cut
  // it, or made the bundle) and returns the range really read, which the commit reports. The
  // default runs RunBundle and returns `range` unchanged: right for executors that never split.
  virtual Result<std::optional<WorkRange>> RunWork(const std::string& bundle_id, const std::optional<WorkRange>& range,
                                                   const std::string& staging_dir, MetricsSnapshot* metrics) {
    RETURN_IF_ERROR(RunBundle(bundle_id, staging_dir, metrics));
    return range;
  }
  // Rebalancing, called from another thread while RunWork runs (implementations synchronise):
  // the running bundle's position, and splitting off its unread part (SplitReader::TrySplit's
  // rules). nullopt = not known / refused. A split returns {primary, residual}.
  virtual std::optional<SplitProgress> Progress() const { return std::nullopt; }
  virtual std::optional<std::pair<WorkRange, WorkRange>> TrySplit(double /*fraction*/) { return std::nullopt; }
};

// Copies a line range of a text file to `<staging>/<sink>/bundle-<id>.done` (via a temporary
// file and rename). Bundle ids are "<first>-<end>" line numbers (0-based, end exclusive), as made
// by LineRangeBundles. Job params: "input" (the file), "sink" (default "out").
//
// Test-only hooks, read from the environment (so real-process tests can plant faults):
//   DFW_TEST_CRASH_ON_RECORD=TEXT     abort() on a line equal to TEXT (a poison record)
//   DFW_TEST_HANG_ON_RECORD=TEXT      on a line equal to TEXT, stop the whole process (SIGSTOP: no
//                                     heartbeats) — only once per job, guarded by
//   DFW_TEST_HANG_ONCE_FILE=PATH      created (O_EXCL) by the process that hangs
//   DFW_TEST_RECORD_DELAY_US=N        sleep N microseconds per record (slow stage)
//   DFW_TEST_RECORD_SPIN_US=N         busy-spin N microseconds per record (CPU-bound stage)
std::unique_ptr<BundleExecutor> MakeLineRangeExecutor(const JobInfo& job);

// Bundle ids "<first>-<end>" that cut `line_count` lines into bundles of `lines_per_bundle`.
std::vector<std::string> LineRangeBundles(int64_t line_count, int64_t lines_per_bundle);

// What an SDK process brings to its executor, beyond job.json.
struct ExecutorContext {
  int threads = 1;                    // harness threads (sdk_harness --threads)
  ModelProcessContext model_process;  // how model loads meet the job's device (the process's entry point builds it)
  // The SDK processes sharing the machine when the launcher grew the job past job.json's count
  // (a tenant borrowing slots); 0 = job.json's sdk_processes. Sizes the BLAS threads and lanes.
  int sdk_processes = 0;
};

// The executor named by job.json's "executor": "pipeline" → the pipeline module's runner
// (pipeline_job.h), "lines" → LineRangeExecutor; other kinds are kUnimplemented naming both.
Result<std::unique_ptr<BundleExecutor>> MakeExecutorForJob(const JobInfo& job, const ExecutorContext& context);

}  // namespace dfw
