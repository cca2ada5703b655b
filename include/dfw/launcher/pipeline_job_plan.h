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
#include "dfw/pipeline/staged_run.h"

namespace dfw {

// Plans a job of `pipeline` for `processes` SDK processes: its bundles (sized to the job:
// dfw/job/bundle_size.h) and the JobInfo (executor "pipeline", bundle ids "0".."n-1", params
// "bundle_table" and "bundle_target"). `stage_spec` is what the job runs: the whole spec, or for a
// pipeline with a Combine the fused stage `stage` says (dfw/pipeline/job_pipeline.h). Before stage 0
// every sink of the whole pipeline is checked writable, so no SDK process does work it could not
// deliver. Errors are the pipeline module's (kNotFound for an input glob matching nothing).
//
// Only the source stages are made (PlanSourceBundles): no model is loaded and no backend created in
// the launcher.
//
// Test-only hook (a -DDFW_TEST_HOOKS=ON build): DFW_TEST_BUNDLE_BYTES=N cuts files into bundles of
// N bytes, not job-sized.
Result<JobInfo> PlanPipelineJob(const LoadedPipeline& pipeline, const PipelineSpec& stage_spec, int processes,
                                const JobStage* stage = nullptr);

// The fused stages of a pipeline for `processes` SDK processes (a single stage without Combine):
// what `dfworker run` plans and the dry run shows. Errors are FuseStages'.
struct PipelineStages {
  int count = 1;
  int64_t partitions = 1;
  std::vector<std::vector<std::string>> transforms;  // per stage, its transforms (a Combine's two halves named)
};
Result<PipelineStages> DescribePipelineStages(const PipelineSpec& spec, int processes);

// Once every bundle is committed: the job's FinalizeStage (dfw/pipeline/finalize.h) with its
// committed dir and finalize journal — error thresholds over the merged metrics `total` (kAborted
// naming the transform), the Combine shuffles' commit, and the renames of committed outputs to
// Beam's sharded names, one shard per bundle in the order of `bundles` (every bundle id, residuals
// of work-rebalancing splits included, in data order). Shards are numbered here, once the set of
// bundles is final, so the number of shards follows the splits a run made, and a finalize redone
// by --resume uses the journal written the first time (the same names).
// `finalize` is the stage's (RunStagedJob's, or FinalizeStage over the job's one spec); this
// supplies the job dir's paths and the bundle ids as numbers (kDataLoss for a malformed one).
Status FinalizePipelineJob(const JobDir& dir, const MetricsSnapshot& total, const std::vector<std::string>& bundles,
                           const StageFinalize& finalize);

}  // namespace dfw
