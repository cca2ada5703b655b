// The seam between `dfworker run` (flags, validation, plan) and the launcher that runs the job.
#pragma once

#include <string>
#include <vector>

#include "dfw/catalog/catalog.h"
#include "dfw/device/accelerator.h"
#include "dfw/device/mps_env.h"
#include "dfw/options/options.h"
#include "dfw/plan/plan.h"
#include "dfw/launcher/pipeline_models.h"
#include "dfw/pipeline/job_pipeline.h"

namespace dfw {

// One tenant of `dfworker run --tenants` (tenants_run.h): the device its parent run shares
// between the tenants. RunJob then starts neither a ledger nor an MPS daemon of its own; it hands
// these to its SDK processes and model hosts.
struct TenantDevice {
  std::string name;                 // DFW_TENANT: the ledger budget it is held to
  std::string ledger_path;          // the shared emulated GPU-memory ledger ("" = a real GPU)
  std::optional<device::MpsDirs> mps;  // the shared MPS daemon's dirs
  device::MpsClientLimits limits;   // per client: pinned memory, thread percentage, priority
};

// Everything `run` knows once the options are valid. Owned by the caller for the whole call.
struct RunContext {
  LoadedPipeline pipeline;                  // the rendered file, loaded once by the launch check
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
  std::optional<TenantDevice> tenant;  // set when this run is one tenant of `run --tenants`
};

// Runs the job; returns the process exit code (design.md "Exit codes").
int RunJob(const RunContext& context);

}  // namespace dfw
