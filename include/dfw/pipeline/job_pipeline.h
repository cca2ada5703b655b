// A pipeline job's job.json params, written by the launcher when it plans the job and read by the
// SDK processes (to run bundles) and the launcher again (to finalize): the pipeline's text and path,
// the working directory its relative paths resolve in, and which fused stage the job is.
#pragma once

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

// A pipeline as a process loads it once: `dfworker run` from the rendered file (the launcher plans
// the job, writes job.json and finalizes from this one load), or a --resume from its job dir's
// record. Every later step takes this value; none parses the text again.
struct LoadedPipeline {
  std::string path;  // as given on the command line (error positions, job.json)
  std::string yaml;  // the rendered text (job.json's pipeline_yaml: every SDK process loads it)
  // The job's working directory, which the pipeline's relative paths resolve against, when it is
  // not this process's (a --resume from elsewhere); "" = this process's.
  std::string base_dir;
  PipelineSpec spec;  // the whole pipeline
};

// Writes the pipeline (and, when `stage` is given, which fused stage this job is) and the job's
// working directory (the pipeline's base_dir, else this process's) into `job`'s params.
void SetJobPipeline(JobInfo& job, const LoadedPipeline& pipeline, const JobStage* stage);

// How the fused stages of `stage`'s pipeline are cut (partitions, where each stage commits).
FuseOptions FuseOptionsFor(const JobStage& stage);

// The job's pipeline: the whole spec, or the fused stage the job runs, its relative paths resolving
// against the job's working directory (JobBaseDir). kDataLoss for params that are missing or
// malformed; the loader's errors otherwise.
Result<PipelineSpec> LoadJobPipeline(const JobInfo& job, const StageRegistry& registry);

// The job's working directory (job.json param "cwd") when it is not this process's, else "": what
// StageConfig::base_dir is for the job's transforms. Nothing changes the process's own directory.
std::string JobBaseDir(const JobInfo& job);
// The same from a recorded working directory (a staged job's stages.json).
std::string BaseDirFor(const std::string& recorded_cwd);

}  // namespace dfw
