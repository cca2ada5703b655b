// The plan across the catalog: one MakePlan per configuration, then the verdict and the marks.
#include "dfw/plan/catalog_plan.h"

#include <algorithm>
#include <tuple>

#include "dfw/common/strings.h"

namespace dfw {
namespace {

// The user's accelerator (service option, experiment or resource hint), or none.
const AcceleratorSpec* UserAccelerator(const PipelineOptions& options) {
  if (options.worker_accelerator && !options.worker_accelerator->gpu_type.empty()) return &*options.worker_accelerator;
  if (options.accelerator_hint && !options.accelerator_hint->gpu_type.empty()) return &*options.accelerator_hint;
  return nullptr;
}

// The user's options with this machine type (empty = as given) and `count` GPUs of `gpu`.
PipelineOptions WithConfiguration(const PipelineOptions& options, const std::string& machine_type,
                                  const std::string& gpu, int count) {
  PipelineOptions out = options;
  if (!machine_type.empty()) out.machine_type = OptionValue{machine_type, Origin{"dfworker plan", machine_type, 0}};
  AcceleratorSpec spec;
  if (const AcceleratorSpec* user = UserAccelerator(options)) spec = *user;
  spec.form = AcceleratorForm::kServiceOption;
  spec.gpu_type = gpu;
  spec.count = count;
  out.worker_accelerator = spec;
  out.accelerator_hint.reset();
  return out;
}

// Verdict of a planned row: memory first (what cannot be worked around), then the MPS client limit.
void Judge(CatalogPlanRow& row) {
  const auto& mem = row.plan.gpu_memory;
  const uint64_t cap = mem.capacity_bytes, peak = mem.planned_peak_bytes;
  row.headroom_bytes = peak < cap ? cap - peak : 0;
  const double share = cap ? static_cast<double>(peak) / static_cast<double>(cap) : 1.0;
  char pct[32];
  std::snprintf(pct, sizeof pct, "%.0f%%", share * 100.0);
  const std::vector<std::string> shortfalls = SequenceShortfalls(row.plan);
  if (peak > cap) {
    row.verdict = FitVerdict::kDoesNotFit;
    row.rule = "planned peak " + HumanBytes(peak) + " > " + HumanBytes(cap) + " per GPU";
  } else if (!shortfalls.empty()) {
    row.verdict = FitVerdict::kDoesNotFit;
    row.rule = "no sequence of the context fits the " + std::to_string(static_cast<int>(kGpuMemoryUtilization * 100)) +
               "% budget";
  } else if (row.mps_client_limit > 0 && row.mps_clients > row.mps_client_limit) {
    row.verdict = FitVerdict::kDoesNotFit;
    row.rule = std::to_string(row.mps_clients) + " MPS clients > the server's limit of " +
               std::to_string(row.mps_client_limit) + " per " + (row.mig_profile.empty() ? "GPU" : "MIG instance");
  } else if (share > kTightMemoryFraction) {
    row.verdict = FitVerdict::kTight;
    row.rule = std::string("planned peak is ") + pct + " of the GPU memory (> 90%)";
  } else {
    row.verdict = FitVerdict::kFits;
    row.rule = std::string("planned peak is ") + pct + " of the GPU memory (<= 90%)";
  }
}

void Finish(CatalogPlanRow& row, const std::vector<ModelRequirement>& models) {
  const auto& mem = row.plan.gpu_memory;
  row.mps_clients = row.plan.accelerator.mps ? mem.clients : 0;
  if (row.mps_client_limit == 0) row.mps_client_limit = row.plan.accelerator.mps_client_limit;
  for (const auto& m : row.plan.models) {
    if (!m.sequences) continue;
    row.sequences_per_gpu = row.sequences_per_gpu < 0 ? m.sequences->per_gpu : std::min(row.sequences_per_gpu, m.sequences->per_gpu);
  }
  uint64_t per_copy = 0;
  for (const ModelRequirement& m : models) per_copy += m.bytes;
  if (per_copy > 0) {
    const uint64_t fixed = mem.context_bytes + mem.workspace_bytes;
    row.model_copies_that_fit =
        mem.capacity_bytes > fixed ? static_cast<int64_t>((mem.capacity_bytes - fixed) / per_copy) : 0;
  }
  Judge(row);
}

Result<CatalogPlanRow> WholeGpuRow(const PipelineOptions& options, const Catalog& catalog,
                                   const std::vector<ModelRequirement>& models, const HostInfo& host,
                                   const std::string& machine, const std::string& gpu, int count) {
  CatalogPlanRow row;
  row.gpu = gpu;
  row.machine_type = machine;
  row.gpu_count = count;
  ASSIGN_OR_RETURN(row.plan, MakePlan(WithConfiguration(options, machine, gpu, count), catalog, models, host));
  Finish(row, models);
  return row;
}

// GPUs of `gpu` an N1 machine of `vcpus` needs: the user's count when allowed, else the smallest
// offered count whose N1 limit admits the machine; 0 when none does.
int N1Count(const Catalog& catalog, const GpuType& gpu, const MachineType& machine, int user_count) {
  auto admits = [&](int count) {
    const N1GpuLimit* limit = catalog.FindN1Limit(gpu.name, count);
    return limit && machine.vcpus <= limit->max_vcpus && machine.memory_bytes <= limit->max_memory_bytes;
  };
  if (user_count > 0 && std::count(gpu.counts.begin(), gpu.counts.end(), user_count) && admits(user_count)) {
    return user_count;
  }
  for (int c : gpu.counts) {
    if (admits(c)) return c;
  }
  return 0;
}

// The machine types this GPU type comes in (fixed) or attaches to (N1: the standard variant only,
// one row per vCPU size; other variants and custom types are planned when named by --machine_type).
std::vector<std::pair<MachineType, int>> MachinesFor(const Catalog& catalog, const GpuType& gpu,
                                                     const std::vector<MachineType>& named, int user_count) {
  std::vector<std::pair<MachineType, int>> out;
  std::vector<MachineType> candidates = named;
  if (candidates.empty()) {
    for (const std::string& name : catalog.MachineNames()) {
      auto m = catalog.FindMachine(name);
      if (!m) continue;
      if (!m->fixed_gpu.empty() || name.rfind("n1-standard-", 0) == 0) candidates.push_back(*m);
    }
  }
  for (const MachineType& m : candidates) {
    if (!m.fixed_gpu.empty()) {
      if (m.fixed_gpu == gpu.name) out.emplace_back(m, m.fixed_gpu_count);
    } else if (m.gpu_attachable &&
               std::count(gpu.machine_families.begin(), gpu.machine_families.end(), m.family)) {
      if (int c = N1Count(catalog, gpu, m, user_count); c > 0) out.emplace_back(m, c);
    }
  }
  return out;
}

// MIG rows of one GPU type: the profiles with at least `instances` instances that could hold the
// job (memory above the planned peak), or a note saying none does.
void MigRows(const PipelineOptions& options, const Catalog& catalog, const std::vector<ModelRequirement>& models,
             const HostInfo& host, const GpuType& gpu, int instances, CatalogPlan& out) {
  if (gpu.mig_profiles.empty()) return;
  // Processes as the user's flags give them (their machine type, or this host's cores).
  PipelineOptions opts = WithConfiguration(options, "", gpu.name, 1);
  auto base = MakePlan(opts, catalog, models, host);
  if (!base.ok()) return;
  std::vector<CatalogPlanRow> rows;
  std::string largest_n_way;
  for (const MigProfile& p : gpu.mig_profiles) {
    // "+me" adds media engines only: same memory and SMs as its base profile, one per GPU.
    if (p.media_extensions || p.max_instances < instances) continue;
    largest_n_way = p.name;
    CatalogPlanRow row;
    row.gpu = gpu.name;
    row.gpu_count = 1;
    row.mig_profile = p.name;
    row.mig_compute_slices = p.compute_slices;
    row.mig_gpu_slices = gpu.mig_compute_slices;
    row.mig_max_instances = p.max_instances;
    row.plan = *base;
    row.plan.accelerator.memory_bytes = p.memory_bytes;
    row.plan.gpu_memory.capacity_bytes = p.memory_bytes;
    // MIG user guide, "MIG with CUDA MPS": the client limit is lowered in proportion to the slice.
    if (row.plan.accelerator.mps) {
      row.mps_client_limit = std::max(1, row.plan.accelerator.mps_client_limit * p.compute_slices / gpu.mig_compute_slices);
      row.plan.accelerator.mps_client_limit = row.mps_client_limit;
    }
    Finish(row, models);
    if (row.plan.gpu_memory.planned_peak_bytes <= p.memory_bytes) rows.push_back(std::move(row));
  }
  const uint64_t peak = base->gpu_memory.planned_peak_bytes;
  if (rows.empty()) {
    out.notes.push_back("MIG on " + gpu.name + ": no profile with " + std::to_string(instances) +
                        " instance(s) holds the planned " + HumanBytes(peak) +
                        (largest_n_way.empty() ? std::string() : " (the largest is " + largest_n_way + ")"));
    return;
  }
  auto best = std::find_if(rows.begin(), rows.end(), [](const CatalogPlanRow& r) { return r.verdict == FitVerdict::kFits; });
  if (best != rows.end()) best->smallest = true;
  for (CatalogPlanRow& r : rows) out.rows.push_back(std::move(r));
}

bool SameConfiguration(const CatalogPlanRow& row, const std::string& machine, const std::string& gpu, int count) {
  return row.mig_profile.empty() && row.machine_type == machine && row.gpu == gpu && row.gpu_count == count;
}

}  // namespace

const char* FitVerdictName(FitVerdict verdict) {
  switch (verdict) {
    case FitVerdict::kFits: return "fits";
    case FitVerdict::kTight: return "tight";
    case FitVerdict::kDoesNotFit: return "does not fit";
  }
  return "?";
}

Result<CatalogPlan> MakeCatalogPlan(const PipelineOptions& options, const Catalog& catalog,
                                    const std::vector<ModelRequirement>& models, const HostInfo& host,
                                    const CatalogPlanRequest& request) {
  if (request.mig_instances < 1) {
    return InvalidArgument("--mig_instances " + std::to_string(request.mig_instances) + ": must be 1 or more");
  }
  std::vector<const GpuType*> gpus;
  for (const std::string& name : request.gpus) {
    const GpuType* g = catalog.FindGpu(name);
    if (!g) {
      std::string hint;
      auto like = catalog.GpuTypesLike(name);
      if (!like.empty()) hint = " (did you mean '" + like.front()->name + "'?)";
      else hint = DidYouMeanSuffix(name, catalog.GpuNames());
      return InvalidArgument("--gpu '" + name + "': unknown GPU type" + hint);
    }
    gpus.push_back(g);
  }
  if (gpus.empty()) {
    for (const std::string& name : catalog.GpuNames()) gpus.push_back(catalog.FindGpu(name));
  }
  std::vector<MachineType> named;
  std::string user_machine;
  if (options.machine_type) {
    user_machine = options.machine_type->value;
    auto m = catalog.FindMachine(user_machine);
    if (!m) return InvalidArgument("--machine_type '" + user_machine + "': unknown machine type" +
                                   DidYouMeanSuffix(user_machine, catalog.MachineNames()));
    named.push_back(*m);
  }
  const AcceleratorSpec* user = UserAccelerator(options);
  const int user_count = user ? std::max(1, user->count) : 0;

  CatalogPlan out;
  std::vector<CatalogPlanRow> whole;
  for (const GpuType* gpu : gpus) {
    for (const auto& [machine, count] : MachinesFor(catalog, *gpu, named, user && user->gpu_type == gpu->name ? user_count : 0)) {
      ASSIGN_OR_RETURN(CatalogPlanRow row, WholeGpuRow(options, catalog, models, host, machine.name, gpu->name, count));
      whole.push_back(std::move(row));
    }
  }
  if (whole.empty() && !user_machine.empty()) {
    return InvalidArgument("--machine_type '" + user_machine + "' takes none of the GPU types asked for" +
                           (request.gpus.empty() ? std::string() : " (" + Join(request.gpus) + ")"));
  }
  // The user's own configuration: a catalog row when it is one, else a row of its own first.
  if (user && catalog.FindGpu(user->gpu_type)) {
    auto it = std::find_if(whole.begin(), whole.end(), [&](const CatalogPlanRow& r) {
      return SameConfiguration(r, user_machine, user->gpu_type, user_count);
    });
    if (it != whole.end()) {
      it->selected = true;
    } else {
      ASSIGN_OR_RETURN(CatalogPlanRow row, WholeGpuRow(options, catalog, models, host, "", user->gpu_type, user_count));
      row.machine_type = user_machine;
      row.selected = true;
      whole.insert(whole.begin(), std::move(row));
      if (!user_machine.empty()) {
        out.notes.push_back("the flags' " + std::to_string(user_count) + " x " + user->gpu_type + " on " + user_machine +
                            " is not a configuration the catalog offers (`dfworker run --dry_run` names the rule)");
      }
    }
  }
  // Smallest that fits with headroom: least GPU memory per worker, then fewest vCPUs.
  auto size = [](const CatalogPlanRow& r) {
    return std::make_tuple(r.plan.accelerator.memory_bytes * static_cast<uint64_t>(r.gpu_count), r.plan.vcpus, r.gpu);
  };
  CatalogPlanRow* smallest = nullptr;
  for (CatalogPlanRow& r : whole) {
    if (r.verdict == FitVerdict::kFits && (!smallest || size(r) < size(*smallest))) smallest = &r;
  }
  if (smallest) smallest->smallest = true;
  out.rows = std::move(whole);
  for (const GpuType* gpu : gpus) MigRows(options, catalog, models, host, *gpu, request.mig_instances, out);
  out.processes_note = "MIG rows: SDK processes as the flags give them (" +
                       (user_machine.empty() ? std::string("this host's cores, no --machine_type") : user_machine) +
                       "); Dataflow does not expose MIG, these are what the job needs on a GPU box or GKE";
  // Text generation with no row that holds one sequence: the closest row (most KV room per cache).
  const CatalogPlanRow* closest = nullptr;
  uint64_t closest_room = 0;
  bool any_holds = false;
  for (const CatalogPlanRow& r : out.rows) {
    if (r.sequences_per_gpu < 0) continue;
    any_holds |= r.sequences_per_gpu > 0;
    for (const auto& m : r.plan.models) {
      if (m.sequences && (!closest || m.sequences->kv_bytes_per_cache > closest_room)) {
        closest = &r;
        closest_room = m.sequences->kv_bytes_per_cache;
      }
    }
  }
  if (closest && !any_holds) {
    const std::vector<std::string> why = SequenceShortfalls(closest->plan);
    out.sequence_miss = "no configuration holds one sequence; the closest, " + closest->gpu + " " +
                        (closest->mig_profile.empty() ? closest->machine_type : "MIG " + closest->mig_profile) + ": " +
                        (why.empty() ? std::string("?") : why.front()) +
                        ". Shorten the context (max_length), share the weights (large_model / model_copies), use "
                        "use_nvidia_mps, or run fewer SDK processes (--sdk_worker_parallelism)";
  }
  if (request.estimate) AddEstimates(out, catalog, models, *request.estimate);
  return out;
}

}  // namespace dfw
