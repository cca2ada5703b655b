// The launcher's side of a pipeline job: plan it (its bundles, or its fused stages when it has a
// Combine) before any SDK process starts, and finalize it once every bundle is committed. The SDK
// processes run its bundles (dfw/worker/pipeline_job.h); both read the job's pipeline through
// dfw/pipeline/job_pipeline.h.
#pragma once

#include <string>
#include <vector>

#include "dfw/common/status.h"
#include "dfw/job/job_dir.h"
#include "dfw/metrics/metrics.h"
#include "dfw/pipeline/job_pipeline.h"

namespace dfw {

// Loads `pipeline_yaml` (read from `pipeline_path`, used in error positions), plans its bundles
// for `processes` SDK processes (sized to the job: dfw/job/bundle_size.h) and returns the JobInfo
// (executor "pipeline", bundle ids "0".."n-1", params "bundle_table" and "bundle_target"). Errors
// are the pipeline module's (kInvalidArgument with file:line:column, kNotFound for an input glob
// matching nothing).
//
// A pipeline with a Combine runs as fused stages, each its own job (dfw/pipeline/job_pipeline.h);
// `stage` says which one this job is (the default: the whole pipeline, which must then have no
// Combine).
//
// Only the source stages are made (PlanSourceBundles): no model is loaded and no backend created in
// the launcher.
//
// Test-only hook (a -DDFW_TEST_HOOKS=ON build): DFW_TEST_BUNDLE_BYTES=N cuts files into bundles of
// N bytes, not job-sized.
Result<JobInfo> PlanPipelineJob(const std::string& pipeline_path, const std::string& pipeline_yaml, int processes,
                                const JobStage* stage = nullptr);

// The fused stages of a pipeline for `processes` SDK processes (a single stage without Combine):
// what `dfworker run` plans and the dry run shows. Errors are the loader's and FuseStages'.
struct PipelineStages {
  int count = 1;
  int64_t partitions = 1;
  std::vector<std::vector<std::string>> transforms;  // per stage, its transforms (a Combine's two halves named)
};
Result<PipelineStages> PlanPipelineStages(const std::string& pipeline_path, const std::string& pipeline_yaml,
                                          int processes);

// Once every bundle is committed: checks error_handling thresholds over the merged metrics
// `total` (kAborted naming the transform) and renames committed outputs to Beam's sharded names,
// one shard per bundle in the order of `bundles` (every bundle id, residuals of work-rebalancing
// splits included, in data order). Shards are numbered here, once the set of bundles is final, so
// the number of shards follows the splits a run made, and a finalize redone by --resume uses the
// journal written the first time (the same names).
Status FinalizePipelineJob(const JobDir& dir, const MetricsSnapshot& total, const std::vector<std::string>& bundles);

}  // namespace dfw
