// The worker plan: processes (design.md "Process model"), model copies (Beam RunInference) and the
// GPU-memory budget (per-process context overhead, or one shared server context under MPS).
#include "dfw/plan/plan.h"

#include <algorithm>

namespace dfw {
namespace {

int CeilDiv(int a, int b) { return b <= 0 ? a : (a + b - 1) / b; }

// Machine shape: the machine type's vCPUs, or this host's cores when none is given.
Status PlanMachine(const PipelineOptions& options, const Catalog& catalog, const HostInfo& host, WorkerPlan& plan) {
  if (!options.machine_type) {
    plan.vcpus = std::max(1, host.cpu_cores);
    plan.sdk_processes_reason = "this host's " + std::to_string(plan.vcpus) + " cores (no --machine_type)";
    return Status::OK();
  }
  const std::string& name = options.machine_type->value;
  auto machine = catalog.FindMachine(name);
  if (!machine) return InvalidArgument("unknown machine type '" + name + "'");
  plan.machine_type = name;
  plan.vcpus = machine->vcpus;
  plan.sdk_processes_reason = "one per vCPU of " + name;
  return Status::OK();
}

void PlanProcesses(const PipelineOptions& options, WorkerPlan& plan) {
  plan.sdk_processes = plan.vcpus;
  if (options.no_use_multiple_sdk_containers) {
    plan.sdk_processes = 1;
    plan.sdk_processes_reason = "--experiments=no_use_multiple_sdk_containers";
  } else if (options.sdk_worker_parallelism.value_or(0) > 0) {
    plan.sdk_processes = *options.sdk_worker_parallelism;
    plan.sdk_processes_reason = "--sdk_worker_parallelism";
  }
}

// Harness threads per SDK process: the option; else kDefaultHarnessThreads where a second thread
// has work of its own (a GPU: one thread waits on the device while another reads and prepares the
// next batch; or fewer processes than vCPUs), else one: on the CPU alone the processes already take
// every vCPU, and a second thread in each only contends for the same cores (2 cores, 2 processes,
// alternating runs with two threads a process and with one: the 1M-record JSON job best 0.517 ->
// 0.429 s; all-MiniLM-L6-v2 on 2,048 sentences 6.57-8.03 -> 5.94-7.87 s; docs/options.md).
void PlanHarnessThreads(const PipelineOptions& options, WorkerPlan& plan) {
  const bool second_thread_has_work = plan.accelerator.present || plan.sdk_processes < plan.vcpus;
  plan.harness_threads_per_process =
      options.number_of_worker_harness_threads.value_or(second_thread_has_work ? kDefaultHarnessThreads : kCpuHarnessThreads);
}

Status PlanAccelerator(const PipelineOptions& options, const Catalog& catalog, const HostInfo& host,
                       WorkerPlan& plan) {
  const AcceleratorSpec* spec = options.worker_accelerator   ? &*options.worker_accelerator
                                : options.accelerator_hint ? &*options.accelerator_hint
                                                           : nullptr;
  if (!spec || spec->gpu_type.empty()) return Status::OK();
  const GpuType* gpu = catalog.FindGpu(spec->gpu_type);
  if (!gpu) return InvalidArgument("unknown GPU type '" + spec->gpu_type + "'");
  auto& acc = plan.accelerator;
  acc.present = true;
  acc.type = gpu->name;
  acc.count = std::max(1, spec->count);  // a malformed count is reported by the options parser
  acc.memory_bytes = gpu->memory_bytes;
  acc.mps = spec->use_mps;
  acc.provisioning_model = spec->provisioning_model;
  using Kind = device::Accelerator::Kind;
  const bool selected = host.selected_backend && *host.selected_backend != Kind::kNone;
  acc.backend = selected ? *host.selected_backend : host.cuda_devices > 0 ? Kind::kCuda : Kind::kEmulated;
  if (acc.backend != Kind::kCuda) acc.backend_reason = host.backend_reason;
  acc.mps_client_limit = acc.mps ? catalog.MpsClientLimit(*gpu) : 0;
  return Status::OK();
}

std::string AcceleratorText(const AcceleratorSpec& a) {
  std::string out = "type:" + a.gpu_type + ";count:" + std::to_string(a.count);
  if (a.install_driver) out += ";install-nvidia-driver" + (a.driver_arg.empty() ? std::string() : ":" + a.driver_arg);
  if (a.use_mps) out += ";use_nvidia_mps";
  if (!a.machine_type.empty()) out += ";machine_type:" + a.machine_type;
  if (!a.provisioning_model.empty()) out += ";provisioning_model:" + a.provisioning_model;
  return out;
}

void PlanResourceHints(const PipelineOptions& options, WorkerPlan& plan) {
  auto add = [&](const TransformResourceHints& h) {
    WorkerPlan::ResourceHints out;
    out.transform = h.transform;
    out.where = h.where;
    if (h.accelerator && !h.accelerator->gpu_type.empty()) out.accelerator = AcceleratorText(*h.accelerator);
    out.accelerator_inherited = !h.own_accelerator && !out.accelerator.empty();
    out.min_ram_bytes = h.min_ram_bytes.value_or(0);
    out.cpu_count = h.cpu_count.value_or(0);
    plan.resource_hints.push_back(std::move(out));
  };
  if (options.pipeline_hints) add(*options.pipeline_hints);
  for (const TransformResourceHints& h : options.transform_hints) add(h);
  if (!plan.accelerator.present || options.worker_accelerator || !options.accelerator_hint) return;
  const auto own = std::find_if(options.transform_hints.begin(), options.transform_hints.end(),
                                [](const TransformResourceHints& h) { return h.own_accelerator; });
  plan.accelerator.declared_by = own != options.transform_hints.end() && own->accelerator &&
                                         own->accelerator->origin.where == options.accelerator_hint->origin.where
                                     ? "resource hint of transform '" + own->transform + "' (" + own->where + ")"
                                     : "pipeline-level resource hint (" + options.accelerator_hint->origin.where + ")";
}

// Text generation, as vLLM sizes its cache: the budget kGpuMemoryUtilization x capacity, less
// everything but the KV caches (contexts, weights, activations, other models' workspace), is split
// between the KV caches on the GPU (one per SDK process and text-generation model) and counted in
// whole sequences of the context.
void PlanSequences(WorkerPlan& plan, const std::vector<ModelRequirement>& models) {
  const auto& mem = plan.gpu_memory;
  uint64_t kv_on_gpu = 0;
  int decoders = 0;
  for (const ModelRequirement& m : models) {
    if (!m.kv_cache) continue;
    ++decoders;
    kv_on_gpu += static_cast<uint64_t>(mem.processes_per_gpu) * m.kv_cache->cache_bytes;
  }
  for (std::size_t i = 0; i < models.size(); ++i) {
    if (!models[i].kv_cache) continue;
    WorkerPlan::Model::Sequences s;
    s.kv = *models[i].kv_cache;
    s.sequence_bytes = s.kv.SequenceBytes();
    s.cache_sequences = s.sequence_bytes ? static_cast<int64_t>(s.kv.cache_bytes / s.sequence_bytes) : 0;
    if (plan.accelerator.present) {
      s.on_gpu = true;
      s.budget_bytes = static_cast<uint64_t>(s.utilization * static_cast<double>(mem.capacity_bytes));
      s.other_bytes = mem.planned_peak_bytes - std::min(kv_on_gpu, mem.planned_peak_bytes);
      s.kv_bytes_left = s.budget_bytes > s.other_bytes ? s.budget_bytes - s.other_bytes : 0;
      s.processes = mem.processes_per_gpu;
      s.kv_caches = std::max(1, s.processes * decoders);
      s.kv_bytes_per_cache = s.kv_bytes_left / static_cast<uint64_t>(s.kv_caches);
      s.per_process = s.sequence_bytes ? static_cast<int64_t>(s.kv_bytes_per_cache / s.sequence_bytes) : 0;
      s.per_gpu = s.per_process * s.processes;
    }
    plan.models[i].sequences = std::move(s);
  }
}

void PlanModelsAndMemory(const Catalog& catalog, const std::vector<ModelRequirement>& models, WorkerPlan& plan) {
  const int gpus = plan.accelerator.present ? plan.accelerator.count : 1;
  auto& mem = plan.gpu_memory;
  mem.processes_per_gpu = CeilDiv(plan.sdk_processes, gpus);
  int hosts_per_gpu = 0;  // model-host processes holding shared copies
  for (const ModelRequirement& m : models) {
    WorkerPlan::Model out{m.name, m.bytes, m.policy, 0, 0, m.device, m.origin, m.workspace, m.bytes_how, std::nullopt,
                          m.weights_absent};
    switch (m.policy) {
      case CopiesPolicy::kPerProcess:
        out.copies = plan.sdk_processes;
        out.copies_per_gpu = mem.processes_per_gpu;
        break;
      case CopiesPolicy::kLargeModel:
      case CopiesPolicy::kModelCopies:
        out.copies = m.policy == CopiesPolicy::kLargeModel ? 1 : std::max(1, m.model_copies);
        out.copies_per_gpu = CeilDiv(out.copies, gpus);
        hosts_per_gpu += out.copies_per_gpu;
        break;
    }
    mem.model_bytes += static_cast<uint64_t>(out.copies_per_gpu) * m.bytes;
    mem.workspace_bytes += static_cast<uint64_t>(mem.processes_per_gpu) * m.workspace.bytes;
    plan.models.push_back(std::move(out));
  }
  if (!plan.accelerator.present) {
    mem = {};
    PlanSequences(plan, models);
    return;
  }
  const GpuType* gpu = catalog.FindGpu(plan.accelerator.type);
  mem.capacity_bytes = plan.accelerator.memory_bytes;
  mem.clients = mem.processes_per_gpu + hosts_per_gpu;
  // Without MPS every client process owns a context; under MPS they share the server's one.
  mem.contexts = plan.accelerator.mps ? 1 : mem.clients;
  mem.context_bytes = static_cast<uint64_t>(mem.contexts) * (gpu ? gpu->context_overhead_bytes : 0);
  mem.planned_peak_bytes = mem.context_bytes + mem.model_bytes + mem.workspace_bytes;
  PlanSequences(plan, models);
}

}  // namespace

uint64_t KvCacheRequirement::SequenceBytes() const {
  const int64_t block = std::max(1, block_tokens);
  const int64_t blocks = (std::max<int64_t>(context_tokens, 0) + block - 1) / block;
  return bytes_per_token * static_cast<uint64_t>(blocks * block);
}

const char* CopiesPolicyName(CopiesPolicy policy) {
  switch (policy) {
    case CopiesPolicy::kPerProcess: return "per-process";
    case CopiesPolicy::kLargeModel: return "large_model";
    case CopiesPolicy::kModelCopies: return "model_copies";
  }
  return "?";
}

Result<WorkerPlan> MakePlan(const PipelineOptions& options, const Catalog& catalog,
                            const std::vector<ModelRequirement>& models, const HostInfo& host) {
  WorkerPlan plan;
  RETURN_IF_ERROR(PlanMachine(options, catalog, host, plan));
  PlanProcesses(options, plan);
  RETURN_IF_ERROR(PlanAccelerator(options, catalog, host, plan));
  PlanModelsAndMemory(catalog, models, plan);
  PlanHarnessThreads(options, plan);
  PlanResourceHints(options, plan);
  return plan;
}

}  // namespace dfw
