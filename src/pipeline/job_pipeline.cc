#include "dfw/pipeline/job_pipeline.h"

#include <limits.h>
#include <unistd.h>

#include "dfw/common/strings.h"

namespace dfw {
namespace {

constexpr const char* kStageParam = "stage";            // k of a fused stage
constexpr const char* kStageRootParam = "stage_root";   // the stages' root dir
constexpr const char* kPartitionsParam = "shuffle_partitions";

}  // namespace

std::string BaseDirFor(const std::string& recorded_cwd) {
  if (recorded_cwd.empty()) return "";
  char here[PATH_MAX];
  if (::getcwd(here, sizeof here) != nullptr && recorded_cwd == here) return "";  // paths as written
  return recorded_cwd;
}

std::string JobBaseDir(const JobInfo& job) {
  auto cwd = job.params.find("cwd");
  return cwd == job.params.end() ? std::string() : BaseDirFor(cwd->second);
}

FuseOptions FuseOptionsFor(const JobStage& stage) {
  FuseOptions o;
  o.partitions = stage.partitions;
  o.committed_dir = [stage](int k) { return stage.JobDirOf(k) + "/committed"; };
  return o;
}

Result<PipelineSpec> LoadJobPipeline(const JobInfo& job, const StageRegistry& registry) {
  auto yaml = job.params.find("pipeline_yaml");
  if (yaml == job.params.end()) return DataLoss("job.json: executor 'pipeline' needs param 'pipeline_yaml'");
  auto path = job.params.find("pipeline_path");
  ASSIGN_OR_RETURN(PipelineSpec spec, LoadPipelineString(yaml->second, registry,
                                                         path == job.params.end() ? "<job>" : path->second,
                                                         JobBaseDir(job)));
  auto k = job.params.find(kStageParam);
  if (k == job.params.end()) {
    if (HasShuffle(spec)) return DataLoss("job.json: a pipeline with a Combine or Join needs param 'stage'");
    return spec;
  }
  JobStage stage;
  auto index = ParseInt64(k->second);
  auto root = job.params.find(kStageRootParam);
  auto partitions = job.params.find(kPartitionsParam);
  auto p = partitions == job.params.end() ? std::nullopt : ParseInt64(partitions->second);
  if (!index || *index < 0 || root == job.params.end() || !p || *p < 1) {
    return DataLoss("job.json: params 'stage', 'stage_root' and 'shuffle_partitions' of a fused stage are malformed");
  }
  stage.index = static_cast<int>(*index);
  stage.root = root->second;
  stage.partitions = *p;
  ASSIGN_OR_RETURN(std::vector<FusedStage> stages, FuseStages(spec, FuseOptionsFor(stage)));
  if (static_cast<std::size_t>(stage.index) >= stages.size()) {
    return DataLoss("job.json: stage " + k->second + " of a pipeline with " + std::to_string(stages.size()) + " stages");
  }
  return std::move(stages[static_cast<std::size_t>(stage.index)].spec);
}

void SetJobPipeline(JobInfo& job, const LoadedPipeline& pipeline, const JobStage* stage) {
  job.params["pipeline_yaml"] = pipeline.yaml;
  job.params["pipeline_path"] = pipeline.path;
  if (stage != nullptr) {
    job.params[kStageParam] = std::to_string(stage->index);
    job.params[kStageRootParam] = stage->root;
    job.params[kPartitionsParam] = std::to_string(stage->partitions);
  }
  if (!pipeline.base_dir.empty()) {
    job.params["cwd"] = pipeline.base_dir;
    return;
  }
  char cwd[PATH_MAX];
  if (::getcwd(cwd, sizeof cwd) != nullptr) job.params["cwd"] = cwd;
}

}  // namespace dfw
