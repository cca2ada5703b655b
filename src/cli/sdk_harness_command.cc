// `dfworker sdk_harness --job_dir D --index I --threads T` (hidden): one SDK process of a running
// job. The launcher fork+execs it (design.md "Process model": exec'd so CUDA and TBB start clean);
// it is not meant to be run by hand. Logs go to stderr, which the launcher points at
// <job_dir>/logs/sdk-I.log.
//
// Before the harness loads the pipeline, the process registers with the job's emulated MPS daemon
// (when CUDA_MPS_PIPE_DIRECTORY names one; it stays registered until it exits or dies) and builds
// its model context (dfw/inference/model_process_context.h) from the environment the launcher
// set: its ledger name "sdk-I" and pinned limit, and where model hosts publish shared copies. The
// context goes down explicitly to every model load (SdkHarnessOptions → RunnerOptions).
#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>

#include <sys/stat.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include "commands.h"
#include "dfw/common/exit_code.h"
#include "dfw/common/logging.h"
#include "dfw/common/step_board.h"
#include "dfw/common/stop_request.h"
#include "dfw/device/mps_client.h"
#include "dfw/inference/device_memory.h"
#include "dfw/launcher/memory_cgroup.h"
#include "dfw/python/python.h"
#include "dfw/worker/sdk_harness.h"

namespace dfw::cli {
namespace {

// The launcher's bounds on this process's Python (launcher/run_job.cc PythonBoundsArgs): its
// share of the machine type's memory and --python_row_timeout.
struct PythonBounds {
  int64_t memory_mb = 0;  // 0 = the library's default cap
  int64_t row_timeout_ms = 0;
  std::string memory_cgroup;  // the job's memory cgroup to join ("" none: dfw/launcher/memory_cgroup.h)
};

Status RunSdkProcess(SdkHarnessOptions options, const PythonBounds& bounds) {
  if (!bounds.memory_cgroup.empty()) {  // first, so that everything this process allocates counts
    if (Status s = JoinMemoryCgroup(bounds.memory_cgroup); !s.ok()) {
      spdlog::warn("not in the worker's memory cgroup: {}", s.message());
    }
  }
  python::RuntimeOptions py = python::ConfiguredOptions();
  if (bounds.memory_mb > 0) py.memory_limit_bytes = bounds.memory_mb << 20;
  py.row_time_limit_ms = bounds.row_timeout_ms;
  RETURN_IF_ERROR(python::Configure(py));
  spdlog::info("Python bounds: heap cap {} MiB, per-row time limit {}", py.memory_limit_bytes >> 20,
               py.row_time_limit_ms > 0 ? std::to_string(py.row_time_limit_ms) + " ms" : std::string("none"));
  // The launcher's --python_env, checked there and handed down in DFW_PYTHON_ENV.
  RETURN_IF_ERROR(python::UseEnvironment(""));
  const std::string name = "sdk-" + std::to_string(options.index);
  // The steps this process is in, for the launcher to name should the process be killed.
  if (Status s = StepBoard::Open(options.job_dir + "/logs/" + name + ".steps"); !s.ok()) {
    spdlog::warn("the launcher will not know which step this process was in if it is killed: {}", s.message());
  }
  ASSIGN_OR_RETURN(std::optional<device::MpsClientSession> mps, device::MpsClientSession::RegisterFromEnv(name));
  ASSIGN_OR_RETURN(ModelProcessContext model_context, ModelProcessContextFromEnv(name, options.index));
  if (mps) ApplyDaemonPinnedLimit(model_context, mps->pinned_mem_limit_bytes());
  options.model_process = std::move(model_context);
  return RunSdkHarnessMain(options);
}

}  // namespace

void AddSdkHarnessCommand(CLI::App& app, CliContext& context) {
  auto options = std::make_shared<SdkHarnessOptions>();
  auto log_level = std::make_shared<std::string>("info");
  auto bounds = std::make_shared<PythonBounds>();
  CLI::App* sdk = app.add_subcommand("sdk_harness", "One SDK process of a running job (started by the launcher)");
  sdk->group("");  // hidden
  sdk->add_option("--job_dir", options->job_dir, "The job dir the launcher created")->required();
  sdk->add_option("--index", options->index, "This process's slot")->required();
  sdk->add_option("--threads", options->threads, "Harness threads");
  sdk->add_option("--coordinator_socket", options->coordinator_socket, "The launcher's private coordinator socket");
  sdk->add_option("--sdk_processes", options->sdk_processes,
                  "SDK processes now sharing the machine, when the launcher grew the job past job.json's count")
      ->check(CLI::Range(1, 1024));
  sdk->add_option("--log_level", *log_level, "trace|debug|info|warn|error");
  sdk->add_option("--python_memory_mb", bounds->memory_mb, "Cap on this process's Python heap, MiB")
      ->check(CLI::Range(int64_t{16}, int64_t{1} << 30));
  sdk->add_option("--python_row_timeout_ms", bounds->row_timeout_ms, "Per-row time limit of Python callables, ms")
      ->check(CLI::Range(int64_t{0}, int64_t{86'400'000}));
  sdk->add_option("--memory_cgroup", bounds->memory_cgroup, "The job's memory cgroup to join");
  sdk->callback([options, log_level, bounds, &context] {
    ::umask(077);  // as the launcher sets it (run_command.cc), for one started by hand
    options->launcher_pid = ::getppid();  // checked at every bundle gate (SdkHarnessOptions::launcher_pid)
    Status s = InitLogging(*log_level, "sdk-" + std::to_string(options->index));
    // The launcher's stop request reaches long loops (decode steps) before its grace period ends.
    if (s.ok()) s = InstallStopRequestHandler();
    if (s.ok()) s = RunSdkProcess(*options, *bounds);
    if (!s.ok()) ReportLineAs("sdk-" + std::to_string(options->index), "error: {}", s.message());
    context.exit_code = static_cast<int>(ExitCodeFor(s));
  });
}

}  // namespace dfw::cli
