// The launcher's side of a pipeline job (dfw/launcher/pipeline_job_plan.h): plan it, finalize it.
#include "dfw/launcher/pipeline_job_plan.h"

#include <algorithm>

#include "dfw/common/strings.h"
#include "dfw/common/test_hooks.h"
#include "dfw/pipeline/bundle.h"
#include "dfw/pipeline/finalize.h"
#include "dfw/pipeline/fused_stages.h"
#include "dfw/pipeline/job_pipeline.h"
#include "dfw/pipeline/spec.h"
#include "dfw/stages/combine.h"
#include "dfw/stages/join.h"
#include "dfw/stages/stage.h"
#include "dfw/worker/bundle_table.h"

namespace dfw {

Result<PipelineStages> DescribePipelineStages(const PipelineSpec& spec, int processes) {
  JobStage probe;
  probe.root = "/";
  probe.partitions = DefaultShufflePartitions(processes);
  ASSIGN_OR_RETURN(std::vector<FusedStage> stages, FuseStages(spec, FuseOptionsFor(probe)));
  PipelineStages out;
  out.count = static_cast<int>(stages.size());
  out.partitions = stages.size() > 1 ? probe.partitions : 0;
  for (const FusedStage& s : stages) {
    std::vector<std::string> names;
    for (const TransformSpec& t : s.spec.transforms) {
      const std::string& type = t.config.type;
      if (type == kJoinPartialType) {
        auto shuffle = JoinPartialShuffleName(t.config);
        names.push_back((shuffle.ok() ? *shuffle : t.config.name) + " (join input, shuffle write)");
        continue;
      }
      names.push_back(t.config.name + (type == kCombinePartialType ? " (partial combine, shuffle write)"
                                       : type == kCombineMergeType ? " (shuffle read, merge)"
                                       : type == kJoinMergeType    ? " (shuffle read, join)"
                                                                   : ""));
    }
    out.transforms.push_back(std::move(names));
  }
  return out;
}

Result<JobInfo> PlanPipelineJob(const LoadedPipeline& pipeline, const PipelineSpec& stage_spec, int processes,
                                const JobStage* stage) {
  JobInfo job;
  job.executor = "pipeline";
  SetJobPipeline(job, pipeline, stage);
  // Before any SDK process does work it could not deliver (every stage's sinks, before the first).
  if (stage != nullptr && stage->index == 0) RETURN_IF_ERROR(CheckSinksWritable(pipeline.spec));
  RETURN_IF_ERROR(CheckSinksWritable(stage_spec));
  // Only the sources are made (PlanSourceBundles): the launcher never loads a model, creates a
  // backend or sizes a BLAS pool; SDK processes and model hosts do.
  StageRegistry registry;
  RegisterBuiltinStages(registry, ModelChecks::kConfigOnly);
  int64_t bundle_bytes = 0;
  // Test hook: a fixed bundle size, so a real-process test can give 8 processes one bundle to share.
  if (auto bytes = ParseInt64(test_hooks::Get("BUNDLE_BYTES").value_or(""))) bundle_bytes = *bytes;
  ASSIGN_OR_RETURN(SourcePlan plan, PlanSourceBundles(stage_spec, registry, std::max(1, processes), bundle_bytes));
  const std::vector<Bundle>& bundles = plan.bundles;
  job.params["bundle_target"] = plan.target.ToString();
  for (const Bundle& b : bundles) job.bundles.push_back(std::to_string(b.id));
  if (auto table = EncodeBundleTable(bundles)) job.params[kBundleTableParam] = std::move(*table);
  return job;
}

Status FinalizePipelineJob(const JobDir& dir, const MetricsSnapshot& total, const std::vector<std::string>& bundles,
                           const StageFinalize& finalize) {
  std::vector<int64_t> ids;
  for (const auto& b : bundles) {
    auto id = ParseInt64(b);
    if (!id) return DataLoss("job.json: pipeline bundle id '" + b + "' is not a number");
    ids.push_back(*id);
  }
  return finalize(dir.CommittedDir(), dir.FinalizeJournalPath(), total, ids);
}

}  // namespace dfw
