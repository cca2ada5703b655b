// Bundles: the units of work a pipeline's sources are cut into, and how they are planned from the
// source stages alone (no other stage is made: no model is loaded, no backend created).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dfw/common/status.h"
#include "dfw/job/bundle_size.h"
#include "dfw/pipeline/spec.h"
#include "dfw/stages/stage.h"

namespace dfw {

// One unit of work: a split of one source. Ids are stable: PlanBundles over the same spec and the
// same input files returns the same bundles with the same ids (0..n-1), so another process can
// re-plan and run "bundle 7" without the bundle being serialised.
struct Bundle {
  int64_t id = 0;
  int source = 0;     // index of the source transform in PipelineSpec::transforms
  SourceSplit split;  // the byte range it covers
};

// A running bundle cut in two: the primary (kept by the running attempt) and the residual.
struct SplitHalves {
  SourceSplit primary;
  SourceSplit residual;
};

// The job-sized bundle plan for `processes` SDK processes, without making the pipeline: only the
// source stages are instantiated (no model is loaded), so the dry run can show it.
struct BundlePreview {
  int64_t bundles = 0;
  BundleTarget target;
};
Result<BundlePreview> PreviewBundles(const PipelineSpec& spec, const StageRegistry& registry, int processes);

// The bundles themselves, planned the same way (source stages only: no model is loaded, no backend
// made, no BLAS pool sized): what the launcher writes into job.json. `bundle_bytes` > 0 fixes the
// bundle size (a test hook); 0 sizes bundles to the job (job/bundle_size.h).
struct SourcePlan {
  std::vector<Bundle> bundles;
  BundleTarget target;
};
Result<SourcePlan> PlanSourceBundles(const PipelineSpec& spec, const StageRegistry& registry, int processes,
                                     int64_t bundle_bytes = 0);
// What a job's rows cost, for its bundle sizes (job/bundle_size.h): kCostly when a transform runs
// a text model (RunInference with SentenceEmbeddingHandler or HuggingFacePipelineModelHandler,
// MLTransform), milliseconds a row; kCheap otherwise.
RowCost RowCostOf(const PipelineSpec& spec);

}  // namespace dfw
