// `dfworker run` past validation: start the worker VM (launcher) with what its SDK processes share,
// started in the launcher's before_start hook and stopped on every return path:
//   - the emulated device's GPU-memory ledger (<job_dir>/device/gpu_memory.ledger) when the
//     accelerator is emulated: SDK processes and model hosts charge it at run time;
//   - the job's MPS daemon when the plan asks for MPS;
//   - one model-host process per shared model copy (model_copies / large_model), after the daemon,
//     so the hosts register as MPS clients.
#include "dfw/launcher/run_job.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>
#include <optional>

#include "dfw/backend/registry.h"
#include "dfw/common/exit_code.h"
#include "dfw/common/logging.h"
#include "dfw/common/process.h"
#include "dfw/common/strings.h"
#include "dfw/common/test_hooks.h"
#include "dfw/device/memory_ledger.h"
#include "dfw/device/mps_controller.h"
#include "dfw/device/mps_env.h"
#include "dfw/inference/device_memory.h"
#include "dfw/inference/mlp_handler.h"
#include "dfw/inference/shared_copy.h"
#include "dfw/job/job_dir.h"
#include "dfw/launcher/memory_cgroup.h"
#include "dfw/launcher/pipeline_launch.h"
#include "dfw/python/python.h"
#include "launcher/model_hosts.h"

namespace dfw {
namespace {

// The real NVIDIA daemon drives a real GPU; everywhere else (no GPU, emulated backend) the
// emulated daemon keeps the same lifecycle, client registry and limits.
std::string_view MpsKind(const WorkerPlan& plan) { return plan.accelerator.backend == device::Accelerator::Kind::kCuda ? "auto" : "emulated"; }

std::string EnvEntry(std::string_view key, const std::string& value) { return std::string(key) + "=" + value; }

// The worker's memory, as its SDK processes share it: the machine type's, capped at three quarters
// of the host's (all of it where no machine type is given), so that a run never takes the machine
// it runs on (the launcher, model hosts and the system keep the rest).
struct WorkerMemory {
  uint64_t bytes = 0;  // 0 = unknown
  std::string what;    // "the memory of n1-standard-2", "3/4 of this host's memory"
};

WorkerMemory WorkerMemoryOf(const RunContext& context) {
  const WorkerPlan& plan = context.plan;
  WorkerMemory m;
  if (!plan.machine_type.empty()) {
    // FindMachine knows fixed, family and valid custom types.
    if (std::optional<MachineType> t = context.catalog->FindMachine(plan.machine_type)) m.bytes = t->memory_bytes;
    m.what = "the memory of " + plan.machine_type;
  }
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGESIZE);
  const uint64_t host = pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : 0;
  if (m.bytes == 0 || (host > 0 && host / 4 * 3 < m.bytes)) {
    m.bytes = host / 4 * 3;
    m.what = plan.machine_type.empty() ? "3/4 of this host's memory (no --machine_type)"
                                       : "3/4 of this host's memory, less than the memory of " + plan.machine_type;
  }
  // A test hook: a small worker, so that a test reaches its limit in a moment.
  if (auto mb = ParseInt64(test_hooks::Get("WORKER_MEMORY_MB").value_or("")); mb && *mb > 0) {
    m.bytes = static_cast<uint64_t>(*mb) << 20;
    m.what = "DFW_TEST_WORKER_MEMORY_MB";
  }
  return m;
}

// The Python bounds of every SDK process (sdk_harness flags): each interpreter's heap is capped at
// the worker's memory over the SDK processes, as they share the VM on Dataflow, so a runaway
// callable ends as a MemoryError in its row. Only the interpreter's heap is counted (model weights
// and batches are not Python objects): the memory cgroup bounds the rest.
std::vector<std::string> PythonBoundsArgs(const RunContext& context, const WorkerMemory& memory) {
  const WorkerPlan& plan = context.plan;
  std::vector<std::string> args;
  if (memory.bytes > 0) {
    const uint64_t share_mb = std::max<uint64_t>(64, memory.bytes / static_cast<uint64_t>(std::max(1, plan.sdk_processes)) >> 20);
    args.push_back("--python_memory_mb=" + std::to_string(share_mb));
  }
  if (context.options.python_row_timeout_s > 0) {
    args.push_back("--python_row_timeout_ms=" + std::to_string(int64_t{context.options.python_row_timeout_s} * 1000));
  }
  return args;
}

// One host per shared copy, numbered across the pipeline's models in order. Only handlers that
// attach to published copies get hosts; the others load per process (and say so).
std::vector<ModelHostSpec> SharedCopySpecs(const RunContext& context) {
  std::vector<ModelHostSpec> specs;
  const WorkerPlan& plan = context.plan;
  for (std::size_t i = 0; i < plan.models.size() && i < context.model_sources.size(); ++i) {
    const WorkerPlan::Model& m = plan.models[i];
    const ModelSource& source = context.model_sources[i];
    if (m.policy == CopiesPolicy::kPerProcess) continue;
    if (source.handler_type != kMlpHandlerType) {
      ReportLine("note: model '{}' ({}) asks for shared copies, which only {} supports so far; each SDK process loads its own copy",
                 m.name, source.handler_type, kMlpHandlerType);
      continue;
    }
    for (int c = 0; c < m.copies; ++c) {
      specs.push_back({source.weights_path, c, "model-host-" + std::to_string(specs.size()), m.device});
    }
  }
  return specs;
}

// Measured (the ledger) next to the plan, while the hosts still hold their copies.
// Returns the bytes the model hosts hold (nullopt when the ledger could not be read).
std::optional<uint64_t> ReportSharedCopyMemory(const std::string& ledger_path, const WorkerPlan& plan) {
  Result<device::MemoryLedger> ledger = device::MemoryLedger::Open(ledger_path);
  Result<device::LedgerSnapshot> snap = ledger.ok() ? ledger->Snapshot() : Result<device::LedgerSnapshot>(ledger.status());
  if (!snap.ok()) {
    ReportLine("warning: reading the GPU-memory ledger: {}", snap.status().message());
    return std::nullopt;
  }
  uint64_t hosts = 0;
  int count = 0;
  for (const device::LedgerEntry& e : snap->entries) {
    if (e.name.rfind("model-host-", 0) != 0) continue;
    hosts += e.allocated_bytes;
    ++count;
  }
  ReportLine("GPU memory (emulated ledger): {} model host(s) hold {} ({} bytes) of shared copies; plan: {} ({} bytes) of model copies",
             count, HumanBytes(hosts), static_cast<unsigned long long>(hosts), HumanBytes(plan.gpu_memory.model_bytes),
             static_cast<unsigned long long>(plan.gpu_memory.model_bytes));
  return hosts;
}

// <job dir>/gpu_memory.json for `dfworker report`: the plan's GPU memory on the busiest GPU and,
// where the emulated ledger saw them, the bytes the model hosts held (SDK processes' own
// allocations are gone from the ledger by the end of the run, so they are not measured here).
void WriteGpuMemoryJson(const std::string& job_dir, const WorkerPlan& plan, std::optional<uint64_t> measured_hosts) {
  const auto& m = plan.gpu_memory;
  nlohmann::json j = {{"gpu", plan.accelerator.type},          {"backend", device::AcceleratorKindName(plan.accelerator.backend)},
                      {"capacity_bytes", m.capacity_bytes},    {"planned_peak_bytes", m.planned_peak_bytes},
                      {"context_bytes", m.context_bytes},      {"model_bytes", m.model_bytes},
                      {"workspace_bytes", m.workspace_bytes},  {"contexts", m.contexts},
                      {"clients", m.clients}};
  if (measured_hosts) j["measured_model_host_bytes"] = *measured_hosts;
  (void)WriteFileAtomically(job_dir + "/gpu_memory.json", j.dump(2) + "\n", /*sync=*/false);
}

}  // namespace

int RunJob(const RunContext& context) {
  const WorkerPlan& plan = context.plan;
  // No usable GPU in the plan: RunInference with device: GPU runs on the CPU (plan.h), so every SDK
  // process and model host skips the CUDA probe, ~130 ms of CPU each that can only fail
  // (registry.h), through its environment (a default, so a value the user exported is kept). The
  // launcher makes no backend at all (bundles are planned from the sources alone).
  std::vector<std::string> child_defaults;
  if (plan.accelerator.backend != device::Accelerator::Kind::kCuda) {
    std::string why = plan.accelerator.present
                          ? "the worker's accelerator is " + std::string(device::AcceleratorKindName(plan.accelerator.backend)) +
                                (plan.accelerator.backend_reason.empty() ? "" : " (" + plan.accelerator.backend_reason + ")")
                          : "no accelerator is declared for this worker";
    child_defaults.push_back(EnvEntry(kCudaUnavailableEnv, why));
  }
  // Both outlive the launcher: stopped below on every return path (and by their destructors).
  std::unique_ptr<device::MpsController> mps;
  std::unique_ptr<ModelHostGroup> hosts;
  std::string ledger_path;
  std::string job_root;  // set once the job dir exists (gpu_memory.json)

  PipelineLaunchOptions launch;
  launch.pipeline = &context.pipeline;
  launch.processes = plan.sdk_processes;
  launch.threads = plan.harness_threads_per_process;
  launch.job_dir = context.job_dir;
  launch.full_report = context.full_report;
  launch.resume_dir = context.resume_dir;
  launch.self_exe = SelfExecutable();
  launch.sdk_env_defaults = child_defaults;
  const WorkerMemory memory = WorkerMemoryOf(context);
  launch.sdk_args = PythonBoundsArgs(context, memory);
  // The SDK processes together get the worker's memory (memory_cgroup.h); where the host offers no
  // memory cgroup, the Python heap caps above are the bound.
  std::optional<MemoryCgroup> cgroup;
  int64_t oom_kills_seen = 0;
  if (memory.bytes > 0) {
    auto made = MemoryCgroup::Create("dfworker-" + std::to_string(::getpid()), memory.bytes);
    if (made.ok()) {
      cgroup.emplace(std::move(made).value());
      launch.sdk_args.push_back("--memory_cgroup=" + cgroup->dir());
      launch.memory_cgroup = cgroup->dir();
      spdlog::info("worker memory: the SDK processes share {} ({}), a memory cgroup ({})", HumanBytes(memory.bytes),
                   memory.what, cgroup->dir());
    } else {
      spdlog::info("worker memory: {}; each SDK process's Python heap is capped at its share of {} ({})",
                   made.status().message(), HumanBytes(memory.bytes), memory.what);
    }
  }
  launch.death_note = [&]() -> std::string {
    if (!cgroup) return "";
    const int64_t kills = cgroup->OomKills();
    if (kills <= oom_kills_seen) return "";
    oom_kills_seen = kills;
    return " — out of memory: the SDK processes together reached the worker's " + HumanBytes(cgroup->limit_bytes()) +
           " (" + memory.what + ") and the kernel's OOM killer ended this one";
  };
  // The run's Python environment (--python_env, dependencies:), the same in every SDK process.
  if (const std::string py = python::EnvironmentRoot(); !py.empty()) {
    launch.sdk_env.push_back(EnvEntry(python::kEnvironmentVariable, py));
  }
  // A tenant's launcher grows when the tenants run lends it the slots of finished tenants (tenants.md).
  if (context.tenant) launch.processes_control_dir = context.resume_dir.empty() ? context.job_dir : context.resume_dir;
  const std::vector<ModelHostSpec> shared = SharedCopySpecs(context);
  const bool emulated = plan.accelerator.present && plan.accelerator.backend == device::Accelerator::Kind::kEmulated;
  const bool use_mps = plan.accelerator.present && plan.accelerator.mps;
  if (emulated || use_mps || !shared.empty() || context.tenant) {
    launch.before_start = [&](const JobDir& dir) -> Result<std::vector<std::string>> {
      std::vector<std::string> env;
      job_root = dir.root();
      if (context.tenant) {  // the ledger and the daemon are the parent run's, shared by its tenants
        const TenantDevice& t = *context.tenant;
        env.push_back(EnvEntry(device::kTenantEnv, t.name));
        if (!t.ledger_path.empty()) env.push_back(EnvEntry(kGpuMemoryLedgerEnv, t.ledger_path));
        if (t.mps) {
          for (const auto& [k, v] : device::MpsClientEnv(*t.mps, t.limits)) env.push_back(k + "=" + v);
        }
      } else if (emulated) {
        ledger_path = device::LedgerPathForJob(dir.root());
        RETURN_IF_ERROR(device::MemoryLedger::Create(ledger_path, plan.accelerator.type + " (emulated)",
                                                     plan.accelerator.memory_bytes)
                            .status()
                            .WithContext("create the GPU-memory ledger"));
        env.push_back(EnvEntry(kGpuMemoryLedgerEnv, ledger_path));
      }
      if (use_mps && !context.tenant) {
        device::MpsDaemonOptions o;
        o.dirs = device::MpsDirsForJob(dir.root());
        if (plan.accelerator.mps_client_limit > 0) o.max_clients_per_device = plan.accelerator.mps_client_limit;
        o.daemon_command = {launch.self_exe, "mps", "daemon"};
        ASSIGN_OR_RETURN(mps, device::MakeMpsController(MpsKind(plan), o));
        RETURN_IF_ERROR(mps->Start().WithContext("start the MPS control daemon"));
        ReportLine("MPS: {} control daemon (pid {}), pipe dir {}", mps->kind(), static_cast<int>(mps->daemon_pid()),
                   o.dirs.pipe_dir);
        for (const auto& [k, v] : mps->ClientEnv(device::MpsClientLimits{})) env.push_back(k + "=" + v);
      }
      if (!shared.empty()) {
        ModelHostGroupOptions o;
        o.self_exe = launch.self_exe;
        o.models_dir = SharedModelsDirForJob(dir.root());
        o.log_dir = dir.LogsDir();
        o.extra_env = env;
        o.default_env = child_defaults;
        ASSIGN_OR_RETURN(hosts, ModelHostGroup::Start(o, shared));
        ReportLine("model hosts: {} shared cop{} published under {}", shared.size(), shared.size() == 1 ? "y" : "ies",
                   o.models_dir);
        env.push_back(EnvEntry(kSharedModelsDirEnv, o.models_dir));
      }
      return env;
    };
  }
  int code = RunPipelineJob(launch);
  std::optional<uint64_t> measured_hosts;
  if (hosts && !ledger_path.empty()) measured_hosts = ReportSharedCopyMemory(ledger_path, plan);
  if (!job_root.empty() && plan.accelerator.present) WriteGpuMemoryJson(job_root, plan, measured_hosts);
  if (hosts) {
    Status stop = hosts->Stop();
    if (!stop.ok()) ReportLine("warning: {}", stop.message());
  }
  if (mps) {
    Status quit = mps->Quit();
    if (!quit.ok()) ReportLine("warning: stopping the MPS daemon: {}", quit.message());
  }
  return code;
}

}  // namespace dfw
