// A pipeline job's job.json params, written by the launcher when it plans the job and read by the
// SDK processes (to run bundles) and the launcher again (to finalize): the pipeline's text and path,
// the working directory its relative paths resolve in, and which fused stage the job is.
#pragma once

#include <limits.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <string>

#include "dfw/common/status.h"
#include "dfw/job/job_dir.h"
#include "dfw/pipeline/fused_stages.h"
#include "dfw/pipeline/spec.h"
#include "dfw/stages/stage.h"

namespace dfw {

// A pipeline with a Combine runs as fused stages (dfw/pipeline/fused_stages.h), each its own job
// dir <root>/stage-<k>; a JobStage says which one a job is.
struct JobStage {
  int index = 0;            // k
  int count = 1;            // stages of the pipeline
  std::string root;         // absolute; stage k's job dir is <root>/stage-<k>
  int64_t partitions = 1;   // shuffle partitions of every Combine
  std::string JobDirOf(int k) const { return root + "/stage-" + std::to_string(k); }
};

// Writes the pipeline (and, when `stage` is given, which fused stage this job is) and the current
// working directory into `job`'s params.
void SetJobPipeline(JobInfo& job, const std::string& pipeline_path, const std::string& pipeline_yaml,
                    const JobStage* stage);

// How the fused stages of `stage`'s pipeline are cut (partitions, where each stage commits).
FuseOptions FuseOptionsFor(const JobStage& stage);

// The job's pipeline: the whole spec, or the fused stage the job runs. kDataLoss for params that
// are missing or malformed; the loader's errors otherwise.
Result<PipelineSpec> LoadJobPipeline(const JobInfo& job, const StageRegistry& registry);

// Runs `fn` with the job's working directory as the current one, then restores it.
template <typename Fn>
auto InJobCwd(const JobInfo& job, Fn fn) -> decltype(fn()) {
  auto cwd = job.params.find("cwd");
  char old[PATH_MAX];
  bool moved = false;
  if (cwd != job.params.end() && ::getcwd(old, sizeof old) != nullptr) {
    if (::chdir(cwd->second.c_str()) != 0) {
      return ErrnoError("change to the job's working directory '" + cwd->second + "'", errno);
    }
    moved = true;
  }
  auto result = fn();
  if (moved && ::chdir(old) != 0) return ErrnoError("return to the working directory", errno);
  return result;
}

}  // namespace dfw
