// The production path: a Beam-YAML pipeline run by the launcher and its SDK processes.
// The job's JobInfo carries the pipeline text itself (so --resume needs nothing but the job dir)
// and the launcher's working directory (relative paths in the pipeline resolve the same way in
// every process and on resume).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "dfw/common/status.h"
#include "dfw/job/job_dir.h"
#include "dfw/metrics/metrics.h"
#include "dfw/worker/bundle_executor.h"

namespace dfw {

// Loads `pipeline_yaml` (read from `pipeline_path`, used in error positions), plans its bundles
// for `processes` SDK processes (sized to the job: dfw/job/bundle_size.h) and returns the JobInfo
// (executor "pipeline", bundle ids "0".."n-1", params "bundle_table" and "bundle_target"). Errors
// are the pipeline module's (kInvalidArgument with file:line:column, kNotFound for an input glob
// matching nothing).
//
// A pipeline with a Combine runs as fused stages (dfw/pipeline/fused_stages.h), each its own job
// dir <root>/stage-<k>; `stage` says which one this job is (the default: the whole pipeline, which
// must then have no Combine).
struct JobStage {
  int index = 0;            // k
  int count = 1;            // stages of the pipeline
  std::string root;         // absolute; stage k's job dir is <root>/stage-<k>
  int64_t partitions = 1;   // shuffle partitions of every Combine
  std::string JobDirOf(int k) const { return root + "/stage-" + std::to_string(k); }
};
Result<JobInfo> PlanPipelineJob(const std::string& pipeline_path, const std::string& pipeline_yaml, int threads,
                                int processes, const JobStage* stage = nullptr);

// The fused stages of a pipeline for `processes` SDK processes (a single stage without Combine):
// what `dfworker run` plans and the dry run shows. Errors are the loader's and FuseStages'.
struct PipelineStages {
  int count = 1;
  int64_t partitions = 1;
  std::vector<std::vector<std::string>> transforms;  // per stage, its transforms (a Combine's two halves named)
};
Result<PipelineStages> PlanPipelineStages(const std::string& pipeline_path, const std::string& pipeline_yaml,
                                          int processes);

// An executor that runs bundles of the job's pipeline with `threads` harness threads. Each
// RunBundle reports the bundle's metric delta (counters exact; distribution min/max are this
// process's running min/max, which merge correctly) plus ("dfworker", "records") = rows read.
//
// Test-only hooks (dfw/common/test_hooks.h: only in a -DDFW_TEST_HOOKS=ON build), read from the
// environment (real-process tests of `dfworker run` plant faults):
//   DFW_TEST_BUNDLE_DELAY_MS=N    sleep N ms before each bundle (so a kill lands mid-run)
//   DFW_TEST_CRASH_ON_BUNDLE=ID   abort() whenever bundle ID is run (a poison bundle)
//   DFW_TEST_BUNDLE_BYTES=N       (PlanPipelineJob) cut files into bundles of N bytes, not job-sized
//   DFW_TEST_SOURCE_BATCH_DELAY_MS=N  (pipeline graph) sleep N ms before each source batch is read
//   DFW_TEST_SOURCE_GATE_FILE=PATH    (pipeline graph) after a bundle's first source batch, read no
//                                 more until PATH exists (60 s at most): a test opens the gate once
//                                 it has seen the splits it wants, instead of hoping a delay is long
Result<std::unique_ptr<BundleExecutor>> MakePipelineExecutor(const JobInfo& job, int threads);

// Once every bundle is committed: checks error_handling thresholds over the merged metrics
// `total` (kAborted naming the transform) and renames committed outputs to Beam's sharded names,
// one shard per bundle in the order of `bundles` (every bundle id, residuals of work-rebalancing
// splits included, in data order). Shards are numbered here, once the set of bundles is final, so
// the number of shards follows the splits a run made, and a finalize redone by --resume uses the
// journal written the first time (the same names).
Status FinalizePipelineJob(const JobDir& dir, const MetricsSnapshot& total, const std::vector<std::string>& bundles);

}  // namespace dfw
