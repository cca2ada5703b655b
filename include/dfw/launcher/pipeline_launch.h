// One call for `dfworker run` (src/launcher/run_job.cc): run a Beam-YAML pipeline on this machine the
// way a Dataflow worker VM does — a job dir, N SDK processes (`<self> sdk_harness ...`), leases,
// exactly-once commits, Beam-sharded outputs, metrics.json — or finish one with --resume.
#pragma once

#include <string>
#include <vector>

#include "dfw/launcher/launcher.h"
#include "dfw/pipeline/job_pipeline.h"

namespace dfw {

struct PipelineLaunchOptions {
  // The pipeline as `run` loaded it (planned, written into job.json and finalized from this one
  // load); not read with resume_dir, whose job dir records its own. Must outlive the call.
  const LoadedPipeline* pipeline = nullptr;
  int processes = 1;          // SDK processes (plan: vCPUs, or 1 without multiple SDK containers)
  int threads = 1;            // harness threads per process
  std::string job_dir;        // --job_dir; empty = ./.dfworker/jobs/<job id>
  bool full_report = false;   // --report=full: every metric at the end
  std::string resume_dir;     // --resume JOB_DIR
  std::string self_exe;       // the dfworker binary; empty = /proc/self/exe
  std::vector<std::string> sdk_env;  // extra environment for SDK processes (MPS pipe dirs, ...)
  std::vector<std::string> sdk_args;  // extra `sdk_harness` flags (the Python bounds, ...)
  std::function<std::string()> death_note;  // LauncherOptions::death_note
  std::vector<std::string> sdk_env_defaults;  // for keys the launcher's environment lacks (dfw/common/child_env.h)
  std::string memory_cgroup;                  // see LauncherOptions::memory_cgroup ("" = none)
  std::chrono::milliseconds grace{10000};  // after the first SIGINT/SIGTERM
  std::string processes_control_dir;  // see LauncherOptions::processes_control_dir ("" = off)
  // See LauncherOptions::before_start (the MPS daemon is started there).
  std::function<Result<std::vector<std::string>>(const JobDir&)> before_start;
};

// Returns the process exit code (0, 1, 2, 130, 143) after printing "run stopped: ..." on failure.
int RunPipelineJob(const PipelineLaunchOptions& options);

}  // namespace dfw
