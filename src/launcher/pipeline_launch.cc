#include "dfw/launcher/pipeline_launch.h"

#include <limits.h>
#include <unistd.h>

#include <cstdio>

#include "dfw/worker/pipeline_job.h"

namespace dfw {
namespace {

std::string SelfExe() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : "dfworker";
}

int Stop(const std::string& message, ExitCode code) {
  std::fprintf(stderr, "run stopped: %s\n", message.c_str());
  return static_cast<int>(code);
}

}  // namespace

int RunPipelineJob(const PipelineLaunchOptions& o) {
  LauncherOptions opts;
  opts.job_dir = o.job_dir;
  opts.resume_dir = o.resume_dir;
  opts.full_report = o.full_report;
  opts.processes = o.processes;
  opts.threads = o.threads;
  opts.sdk_command = {o.self_exe.empty() ? SelfExe() : o.self_exe, "sdk_harness"};
  opts.sdk_env = o.sdk_env;
  if (o.processes > 1) {
    // With several SDK processes each gets one BLAS thread (DefaultBlasThreads). OpenBLAS starts
    // its pool when the library loads, sized to the CPUs, and a pool thread spins (sched_yield)
    // for a while before it sleeps: N processes x that spin at start-up competes with the real
    // start-up work on a small machine. The variable sizes the pool at load; a model's explicit
    // blas_threads still grows it later. A default: a value the user exported wins.
    opts.sdk_env_defaults.push_back("OPENBLAS_NUM_THREADS=1");
  }
  opts.grace = o.grace;
  opts.before_start = o.before_start;
  opts.finalize = [](const JobDir& dir, const MetricsSnapshot& total, const std::vector<std::string>& bundles) {
    return FinalizePipelineJob(dir, total, bundles);
  };
  if (o.resume_dir.empty()) {
    auto job = PlanPipelineJob(o.pipeline_path, o.pipeline_yaml, o.threads, o.processes);
    if (!job.ok()) return Stop(job.status().message(), ExitCodeFor(job.status()));
    // SDK processes size their BLAS threads from it (DefaultBlasThreads): never oversubscribe.
    job->params["sdk_processes"] = std::to_string(o.processes);
    opts.job = std::move(*job);
  }
  LaunchResult r = RunLauncher(opts);
  if (!r.message.empty()) return Stop(r.message, r.code);
  return static_cast<int>(r.code);
}

}  // namespace dfw
