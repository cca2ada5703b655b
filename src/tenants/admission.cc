// Admission rules (admission.h). Each rule appends its findings; all run, so every violation is
// reported at once. Figures come from each tenant's WorkerPlan (plan module) and the catalog.
#include "dfw/tenants/admission.h"

#include <algorithm>
#include <map>

#include "dfw/common/strings.h"

namespace dfw {
namespace {

struct Ctx {
  const TenantsFile& file;
  const std::vector<TenantInput>& tenants;
  const Catalog& catalog;
  const WorkerPlan* worker = nullptr;  // the first tenant plan: the shared worker's shape
  Admission& out;

  void Add(const char* code, const TenantSpec* at, std::string message, std::string help) const {
    Origin o = at ? at->origin : Origin{file.path, "", 0};
    std::string where = at ? o.where + ": " : file.path + ": ";
    out.diagnostics.push_back(MakeDiagnostic(Severity::kError, code, where + std::move(message), std::move(help), o,
                                             o.value_offset, 0));
  }
};

std::string Quoted(const std::string& name) { return "'" + name + "'"; }

// Bytes one client (an SDK process or a model host) of this plan holds at its peak.
uint64_t LargestClientNeed(const WorkerPlan& plan) {
  uint64_t sdk = 0, host = 0;
  for (const WorkerPlan::Model& m : plan.models) {
    if (m.policy == CopiesPolicy::kPerProcess) sdk += m.bytes;
    else host = std::max(host, m.bytes);
    sdk += m.workspace.bytes;
  }
  return std::max(sdk, host);
}

// Bytes one SDK process of this plan adds: its per-process model copies and every model's workspace
// (shared copies live in model hosts, which borrowing does not add).
uint64_t SdkProcessNeed(const WorkerPlan& plan) {
  uint64_t sdk = 0;
  for (const WorkerPlan::Model& m : plan.models) {
    if (m.policy == CopiesPolicy::kPerProcess) sdk += m.bytes;
    sdk += m.workspace.bytes;
  }
  return sdk;
}

void CheckWorker(const Ctx& c) {
  for (const TenantInput& t : c.tenants) {
    if (!t.plan) continue;
    const auto& acc = t.plan->accelerator;
    if (!acc.present) {
      c.Add("tenants-mps-required", t.spec,
            "tenant " + Quoted(t.spec->name) + " has no GPU: tenants share one worker's GPU, and this worker declares none",
            "give the worker one GPU under MPS, e.g. --dataflow_service_options="
            "\"worker_accelerator=type:nvidia-l4;count:1;install-nvidia-driver;use_nvidia_mps\" (or in the tenants file's options:)");
      continue;
    }
    if (!acc.mps) {
      c.Add("tenants-mps-required", t.spec,
            "tenant " + Quoted(t.spec->name) + " runs on " + acc.type +
                " without MPS: without it nothing limits a process's GPU memory (time-slicing has no memory isolation)",
            "append ;use_nvidia_mps to worker_accelerator (count:1)");
      continue;
    }
    const WorkerPlan& w = *c.worker;
    if (&w != t.plan && (acc.type != w.accelerator.type || acc.count != w.accelerator.count ||
                         t.plan->machine_type != w.machine_type || t.plan->vcpus != w.vcpus)) {
      c.Add("tenants-worker-mismatch", t.spec,
            "tenant " + Quoted(t.spec->name) + "'s options give a different worker (" +
                (t.plan->machine_type.empty() ? "host cores" : t.plan->machine_type) + ", " + acc.type + ") than tenant " +
                Quoted(c.tenants.front().spec->name) + "'s (" + (w.machine_type.empty() ? "host cores" : w.machine_type) +
                ", " + w.accelerator.type + ")",
            "tenants share one worker: give its machine type and accelerator once, on the command line or in the "
            "tenants file's options:, not in the pipelines' options: blocks");
    }
  }
}

void CheckOutputs(const Ctx& c) {
  std::map<std::string, const TenantSpec*> owner;
  for (const TenantInput& t : c.tenants) {
    for (const std::string& path : t.sink_paths) {
      auto [it, fresh] = owner.emplace(path, t.spec);
      if (!fresh && it->second != t.spec) {
        c.Add("tenants-same-output", t.spec,
              "tenant " + Quoted(t.spec->name) + " writes '" + path + "', which tenant " + Quoted(it->second->name) +
                  " writes too: one would overwrite the other's output",
              "give each tenant's sinks their own path (or run the pipeline once)");
      }
    }
  }
}

void CheckBudgets(const Ctx& c) {
  Admission& a = c.out;
  uint64_t used = a.overhead_bytes;
  std::string fitted = a.overhead_bytes ? "context overhead " + HumanBytes(a.overhead_bytes) : "";
  for (const TenantInput& t : c.tenants) {
    if (!t.plan) continue;
    auto lim = std::find_if(a.tenants.begin(), a.tenants.end(), [&](const TenantLimits& l) { return l.name == t.spec->name; });
    const TenantLimits& l = *lim;
    const std::string name = Quoted(l.name);
    if (l.need_bytes > l.budget_bytes) {
      c.Add("tenant-over-budget", t.spec,
            "tenant " + name + "'s plan needs " + HumanBytes(l.need_bytes) + " of GPU memory (models " +
                HumanBytes(t.plan->gpu_memory.model_bytes) + " + workspace " + HumanBytes(t.plan->gpu_memory.workspace_bytes) +
                " for " + std::to_string(l.sdk_processes) + " SDK processes) but its gpu_memory is " + HumanBytes(l.budget_bytes) +
                " ('" + t.spec->gpu_memory.text + "')",
            "raise gpu_memory of " + name + " to at least " + HumanBytes(l.need_bytes) +
                ", lower its sdk_processes, or share model copies (model_copies / large_model)");
    } else if (l.clients > 0 && l.per_process_need_bytes > l.pinned_limit_bytes) {
      c.Add("tenant-client-share", t.spec,
            "tenant " + name + "'s budget " + HumanBytes(l.budget_bytes) + " divided among its " + std::to_string(l.clients) +
                " MPS clients is " + HumanBytes(l.pinned_limit_bytes) +
                " each (CUDA_MPS_PINNED_DEVICE_MEM_LIMIT), but one of them needs " + HumanBytes(l.per_process_need_bytes),
            "raise gpu_memory of " + name + " to at least " +
                HumanBytes(l.per_process_need_bytes * static_cast<uint64_t>(l.clients)) + ", or lower its sdk_processes");
    }
    const uint64_t before = used;
    used += l.budget_bytes;
    if (used > a.capacity_bytes) {
      const uint64_t room = a.capacity_bytes > before ? a.capacity_bytes - before : 0;
      c.Add("tenants-gpu-overcommitted", t.spec,
            "tenant " + name + " does not fit on one " + a.gpu_type + ": " + (fitted.empty() ? "" : fitted + " + ") +
                "budget " + HumanBytes(l.budget_bytes) + " = " + HumanBytes(used) + ", over the GPU's " +
                HumanBytes(a.capacity_bytes),
            room > 0 ? "lower gpu_memory of " + name + " to at most " + HumanBytes(room) +
                           ", lower the tenants before it, or use a GPU with more memory"
                     : "no memory is left for " + name + ": remove it, lower the tenants before it, or use a GPU with more memory");
    } else {
      fitted += (fitted.empty() ? "" : " + ") + name + " " + HumanBytes(l.budget_bytes);
    }
  }
}

void CheckClientsAndCpus(const Ctx& c) {
  const Admission& a = c.out;
  std::string clients, processes;
  const TenantSpec* last = nullptr;
  for (const TenantInput& t : c.tenants) {
    if (!t.plan) continue;
    for (const TenantLimits& l : a.tenants) {
      if (l.name != t.spec->name) continue;
      clients += (clients.empty() ? "" : " + ") + Quoted(l.name) + " " + std::to_string(l.clients);
      processes += (processes.empty() ? "" : " + ") + Quoted(l.name) + " " + std::to_string(l.sdk_processes);
    }
    last = t.spec;
  }
  if (a.client_limit > 0 && a.clients > a.client_limit) {
    c.Add("tenants-mps-client-limit", last,
          std::to_string(a.clients) + " MPS clients (" + clients + "; SDK processes + model hosts) on one " + a.gpu_type +
              ", but an MPS server takes at most " + std::to_string(a.client_limit) + " client CUDA contexts per device",
          "lower sdk_processes so that the tenants have at most " + std::to_string(a.client_limit) +
              " clients together, or share model copies instead of one per process");
  }
  if (a.vcpus > 0 && a.processes > a.vcpus) {
    const WorkerPlan& w = *c.worker;
    c.Add("tenants-vcpus", last,
          "guaranteed SDK processes " + processes + " = " + std::to_string(a.processes) + " exceed the " +
              std::to_string(a.vcpus) + " vCPUs of " + (w.machine_type.empty() ? std::string("this host") : w.machine_type),
          "lower sdk_processes (Dataflow runs one SDK process per vCPU), or use a machine type with at least " +
              std::to_string(a.processes) + " vCPUs");
  }
}

bool HasMig(const std::string& gpu) {
  return gpu == "nvidia-tesla-a100" || gpu == "nvidia-a100-80gb" || gpu == "nvidia-h100-80gb" ||
         gpu == "nvidia-h100-mega-80gb" || gpu == "nvidia-h200-141gb";
}

std::string MigLine(const Admission& a) {
  const MigLayout& m = *a.mig;
  std::string layout;
  for (const MigLayout::Slot& s : m.slots) {
    layout += (layout.empty() ? "" : ", ") + s.tenant + " -> " + (s.profile.empty() ? "no profile" : s.profile);
  }
  return "MIG: hardware isolation of memory, SMs and faults on " + a.gpu_type + "; the layout that would hold the tenants: " +
         layout + " (" + std::to_string(m.compute_slices) + " of " + std::to_string(m.gpu_compute_slices) +
         " compute slices): " + (m.fits ? "fits one GPU" : "does not fit: " + m.why_not) +
         ". Not used: Dataflow workers do not expose MIG, a slice's memory and SMs are fixed by its profile (budgets "
         "round up to profile sizes, and a finished tenant's SMs cannot be lent to the others), and changing the "
         "layout needs the GPU idle";
}

void DescribeIsolation(Admission& a) {
  if (a.gpu_type.empty()) return;
  a.isolation.push_back(
      std::string(a.strategy == "mps" ? "MPS split (used)" : "MPS split (not available: declare use_nvidia_mps)") +
      ": each process gets CUDA_MPS_PINNED_DEVICE_MEM_LIMIT (its tenant's budget / its processes; an allocation past "
      "it fails in that process only) and CUDA_MPS_ACTIVE_THREAD_PERCENTAGE (a cap, not a reservation), and the "
      "ledger holds each tenant to its budget; one shared server context; a fatal GPU fault reaches every client on "
      "the GPU (all tenants). Used because it is what a Dataflow GPU worker offers (whole GPUs, MPS) and it enforces "
      "budgets of any size");
  a.isolation.push_back(a.mig         ? MigLine(a)
                        : HasMig(a.gpu_type) ? "MIG: hardware isolation of memory, SMs and faults on " + a.gpu_type +
                                                   ", but the catalog lists no MIG profiles for it, so no layout is proposed"
                                             : "MIG: not available on " + a.gpu_type + " (the catalog lists no MIG profiles for it)");
  a.isolation.push_back(
      "time-slicing: no memory isolation and one CUDA context per process; not used for tenants");
}

}  // namespace

Admission AdmitTenants(const TenantsFile& file, const std::vector<TenantInput>& tenants, const Catalog& catalog) {
  Admission a;
  Ctx c{file, tenants, catalog, nullptr, a};
  for (const TenantInput& t : tenants) {
    if (t.plan && !c.worker) c.worker = t.plan;
  }
  CheckOutputs(c);
  if (!c.worker) return a;  // every pipeline failed to load: reported by the caller
  CheckWorker(c);
  const WorkerPlan& w = *c.worker;
  const GpuType* gpu = w.accelerator.present ? catalog.FindGpu(w.accelerator.type) : nullptr;
  a.gpu_type = w.accelerator.type;
  a.emulated = w.accelerator.backend != device::Accelerator::Kind::kCuda;
  a.capacity_bytes = w.accelerator.memory_bytes;
  a.client_limit = w.accelerator.mps_client_limit;
  a.vcpus = w.vcpus;
  if (w.accelerator.mps) a.strategy = "mps";
  for (const TenantInput& t : tenants) {
    if (!t.plan) continue;
    const WorkerPlan& p = *t.plan;
    TenantLimits l;
    l.name = t.spec->name;
    l.budget_bytes = t.spec->gpu_memory.BytesOf(a.capacity_bytes);
    l.need_bytes = p.gpu_memory.model_bytes + p.gpu_memory.workspace_bytes;
    l.per_process_need_bytes = LargestClientNeed(p);
    l.sdk_process_need_bytes = SdkProcessNeed(p);
    l.sdk_processes = p.sdk_processes;
    l.clients = p.gpu_memory.clients > 0 ? p.gpu_memory.clients : p.sdk_processes;
    l.model_hosts = l.clients - p.gpu_memory.processes_per_gpu;
    l.pinned_limit_bytes = l.budget_bytes / static_cast<uint64_t>(std::max(1, l.clients));
    l.active_thread_percentage = t.spec->active_thread_percentage;
    l.priority = t.spec->priority;
    l.over_quota_weight = t.spec->over_quota_weight;
    a.budgets_bytes += l.budget_bytes;
    a.clients += l.clients;
    a.processes += l.sdk_processes;
    a.tenants.push_back(std::move(l));
  }
  const uint64_t per_context = gpu ? gpu->context_overhead_bytes : 0;
  a.overhead_bytes = per_context * static_cast<uint64_t>(w.accelerator.mps ? 1 : std::max(1, a.clients));
  if (w.accelerator.present && w.accelerator.mps) CheckBudgets(c);
  CheckClientsAndCpus(c);
  if (gpu) a.mig = ProposeMigLayout(*gpu, a.tenants);
  DescribeIsolation(a);
  return a;
}

}  // namespace dfw

namespace dfw {

std::optional<MigLayout> ProposeMigLayout(const GpuType& gpu, const std::vector<TenantLimits>& tenants) {
  std::vector<const MigProfile*> profiles;
  for (const MigProfile& p : gpu.mig_profiles) {
    if (!p.media_extensions) profiles.push_back(&p);
  }
  if (profiles.empty()) return std::nullopt;
  // Smallest memory first, then fewest compute slices.
  std::stable_sort(profiles.begin(), profiles.end(), [](const MigProfile* x, const MigProfile* y) {
    return x->memory_bytes != y->memory_bytes ? x->memory_bytes < y->memory_bytes : x->compute_slices < y->compute_slices;
  });
  MigLayout m;
  m.gpu_compute_slices = gpu.mig_compute_slices;
  std::map<std::string, int> used;
  std::vector<std::string> unheld;
  for (const TenantLimits& t : tenants) {
    MigLayout::Slot slot;
    slot.tenant = t.name;
    for (const MigProfile* p : profiles) {
      if (p->memory_bytes < t.budget_bytes) continue;
      slot.profile = p->name;
      slot.memory_bytes = p->memory_bytes;
      slot.compute_slices = p->compute_slices;
      break;
    }
    if (slot.profile.empty()) unheld.push_back("'" + t.name + "' (" + HumanBytes(t.budget_bytes) + ")");
    else ++used[slot.profile];
    m.compute_slices += slot.compute_slices;
    m.slots.push_back(std::move(slot));
  }
  std::vector<std::string> why;
  if (!unheld.empty()) {
    std::string list;
    for (const std::string& u : unheld) list += (list.empty() ? "" : ", ") + u;
    why.push_back("no profile holds the budget of " + list + " (the largest is " + profiles.back()->name + ")");
  }
  if (m.compute_slices > m.gpu_compute_slices) {
    why.push_back(std::to_string(m.compute_slices) + " compute slices are more than one " + gpu.name + "'s " +
                  std::to_string(m.gpu_compute_slices));
  }
  for (const MigProfile* p : profiles) {
    auto it = used.find(p->name);
    if (it != used.end() && it->second > p->max_instances) {
      why.push_back(std::to_string(it->second) + " x " + p->name + " but one GPU holds " + std::to_string(p->max_instances));
    }
  }
  m.fits = why.empty();
  for (const std::string& w : why) m.why_not += (m.why_not.empty() ? "" : "; ") + w;
  return m;
}

}  // namespace dfw
