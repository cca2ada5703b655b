// The seam between `dfworker run` (flags, validation, plan) and the launcher that runs the job.
#pragma once

#include <string>
#include <vector>

#include "dfw/catalog/catalog.h"
#include "dfw/device/accelerator.h"
#include "dfw/options/options.h"
#include "dfw/plan/plan.h"
#include "pipeline_models.h"

namespace dfw::cli {

// Everything `run` knows once the options are valid. Owned by the caller for the whole call.
struct RunContext {
  std::string pipeline_path;                // as given on the command line
  std::string pipeline_yaml;                // the file's contents (the pipeline module parses `pipeline:`)
  std::vector<std::string> pipeline_args;   // the Beam/Dataflow flags as given, in order
  PipelineOptions options;                  // parsed and validated (no errors; warnings possible)
  const Catalog* catalog = nullptr;         // never null
  WorkerPlan plan;                          // the plan the dry run prints
  std::vector<ModelSource> model_sources;   // one per plan.models entry, same order (model hosts need the files)
  HostInfo host;
  std::string log_level;                    // as passed to InitLogging
  device::AcceleratorBackend accelerator_backend = device::AcceleratorBackend::kAuto;  // --accelerator_backend
  std::string job_dir;     // --job_dir: where the job dir goes ("" = ./.dfworker/jobs/<job id>)
  bool full_report = false;  // --report=full (or --log_level debug/trace): every metric at the end
  std::string resume_dir;  // --resume JOB_DIR: finish a killed job instead of starting one
};

// Runs the job; returns the process exit code (design.md "Exit codes").
int RunJob(const RunContext& context);

}  // namespace dfw::cli
