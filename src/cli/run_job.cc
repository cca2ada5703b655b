// `dfworker run` past validation: start the worker VM (launcher), with the job's MPS daemon when
// the plan asks for MPS.
#include "run_job.h"

#include <unistd.h>

#include <cstdio>
#include <memory>

#include "dfw/common/exit_code.h"
#include "dfw/device/mps_controller.h"
#include "dfw/device/mps_env.h"
#include "dfw/launcher/pipeline_launch.h"

namespace dfw::cli {
namespace {

std::string SelfExe() {
  char buf[4096];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : "dfworker";
}

// The real NVIDIA daemon drives a real GPU; everywhere else (no GPU, emulated backend) the
// emulated daemon keeps the same lifecycle, client registry and limits.
std::string_view MpsKind(const WorkerPlan& plan) { return plan.accelerator.backend == "cuda" ? "auto" : "emulated"; }

}  // namespace

int RunJob(const RunContext& context) {
  const WorkerPlan& plan = context.plan;
  std::unique_ptr<device::MpsController> mps;  // outlives the launcher: stopped on every return path

  PipelineLaunchOptions launch;
  launch.pipeline_path = context.pipeline_path;
  launch.pipeline_yaml = context.pipeline_yaml;
  launch.processes = plan.sdk_processes;
  launch.threads = plan.harness_threads_per_process;
  launch.job_dir = context.job_dir;
  launch.resume_dir = context.resume_dir;
  launch.self_exe = SelfExe();
  if (plan.accelerator.present && plan.accelerator.mps) {
    launch.before_start = [&](const JobDir& dir) -> Result<std::vector<std::string>> {
      device::MpsDaemonOptions o;
      o.dirs = device::MpsDirsForJob(dir.root());
      if (plan.accelerator.mps_client_limit > 0) o.max_clients_per_device = plan.accelerator.mps_client_limit;
      o.daemon_command = {launch.self_exe, "mps", "daemon"};
      ASSIGN_OR_RETURN(mps, device::MakeMpsController(MpsKind(plan), o));
      RETURN_IF_ERROR(mps->Start().WithContext("start the MPS control daemon"));
      std::fprintf(stderr, "[dfworker] MPS: %.*s control daemon (pid %d), pipe dir %s\n",
                   static_cast<int>(mps->kind().size()), mps->kind().data(), static_cast<int>(mps->daemon_pid()),
                   o.dirs.pipe_dir.c_str());
      std::vector<std::string> env;
      for (const auto& [k, v] : mps->ClientEnv(device::MpsClientLimits{})) env.push_back(k + "=" + v);
      return env;
    };
  }
  int code = RunPipelineJob(launch);
  if (mps) {
    Status quit = mps->Quit();
    if (!quit.ok()) std::fprintf(stderr, "[dfworker] warning: stopping the MPS daemon: %s\n", quit.message().c_str());
  }
  return code;
}

}  // namespace dfw::cli
