// Admission of tenants onto one worker (design.md "Tenants"): before any process starts, every
// tenant's own WorkerPlan (the plan module's memory model: model copies, workspace; nothing is
// re-estimated here) must fit its budget, the budgets must fit the GPU after the per-context
// overhead, the MPS clients of all tenants must fit the server's limit and their guaranteed SDK
// processes the worker's vCPUs. Every violation is reported at once, with the tenant, the figure
// and the fix, as Diagnostics with stable codes (listed in validate's AllRules()).
//
// It also derives what the run enforces per tenant: its budget in bytes (the ledger holds the
// tenant to it) and the MPS per-client limits of each of its processes (the budget divided among
// its clients, since MPS limits are per client process, not per tenant).
//
// Pure function; no I/O. Threading: none.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "dfw/catalog/catalog.h"
#include "dfw/options/diagnostic.h"
#include "dfw/plan/plan.h"
#include "dfw/tenants/tenants_file.h"

namespace dfw {

// One tenant as the caller loaded it.
struct TenantInput {
  const TenantSpec* spec = nullptr;  // never null
  const WorkerPlan* plan = nullptr;  // null when its pipeline did not load or plan (already reported)
  std::vector<std::string> sink_paths;  // the `path` of every sink of its pipeline, as written
};

// What the run enforces for one admitted tenant.
struct TenantLimits {
  std::string name;
  uint64_t budget_bytes = 0;          // the tenant's GPU memory (ledger budget)
  uint64_t need_bytes = 0;            // its plan: model copies + workspace (contexts are counted per GPU)
  uint64_t per_process_need_bytes = 0;// the largest client's need (an SDK process or a model host)
  uint64_t sdk_process_need_bytes = 0;// what one more SDK process adds (its own model copies + workspace):
                                      // a borrowed process slot is taken only while the budget holds it
  int sdk_processes = 0;              // guaranteed
  int model_hosts = 0;                // shared copies (model_copies / large_model)
  int clients = 0;                    // MPS clients: SDK processes + model hosts
  uint64_t pinned_limit_bytes = 0;    // CUDA_MPS_PINNED_DEVICE_MEM_LIMIT of each client: budget / clients
  double active_thread_percentage = 100;
  TenantPriority priority = TenantPriority::kNormal;
  double over_quota_weight = 1;
};

// Where the GPU has MIG (catalog mig_profiles): the layout that would hold the tenants instead of
// the MPS split — each tenant in the smallest profile whose memory holds its budget (media-extension
// profiles left out), and whether the set fits one GPU: at most 7 compute slices in all and no
// profile used more often than one GPU holds it. NVIDIA's placement rules (which slices a profile
// may start at) are not modelled, so "fits" is necessary, not sufficient.
struct MigLayout {
  struct Slot {
    std::string tenant;
    std::string profile;         // "" = no profile holds the tenant's budget
    uint64_t memory_bytes = 0;   // the profile's memory
    int compute_slices = 0;
  };
  std::vector<Slot> slots;       // one per tenant, in file order
  int compute_slices = 0;        // sum over the slots
  int gpu_compute_slices = 0;    // the whole GPU's (GpuType::mig_compute_slices: 7, or 4 on RTX PRO 6000)
  bool fits = false;
  std::string why_not;           // when it does not fit
};

struct Admission {
  std::vector<Diagnostic> diagnostics;  // errors mean the tenants are refused
  std::vector<TenantLimits> tenants;    // one per tenant with a plan, in file order
  std::string gpu_type;                 // the shared worker's accelerator ("" when none)
  bool emulated = false;
  uint64_t capacity_bytes = 0;
  uint64_t overhead_bytes = 0;          // CUDA contexts: one MPS server context (or one per client without MPS)
  uint64_t budgets_bytes = 0;           // sum of the budgets
  int clients = 0, client_limit = 0;    // MPS clients of all tenants, and what one server takes
  int processes = 0, vcpus = 0;         // guaranteed SDK processes of all tenants, and the worker's vCPUs
  std::string strategy;                 // "mps" when admitted under MPS
  std::vector<std::string> isolation;   // one line per strategy: what it isolates, and why it is (not) used
  std::optional<MigLayout> mig;         // only where the GPU has MIG profiles
};

// The MIG layout of `tenants` (name, budget) on `gpu` (nullopt when it has no MIG profiles).
std::optional<MigLayout> ProposeMigLayout(const GpuType& gpu, const std::vector<TenantLimits>& tenants);

Admission AdmitTenants(const TenantsFile& file, const std::vector<TenantInput>& tenants, const Catalog& catalog);

// The admission as text (a table per tenant, the GPU and CPU totals, the isolation lines).
std::string RenderAdmissionText(const Admission& admission);
// The same as a JSON object (as text), for the "tenants" member of the --format=json report.
std::string RenderAdmissionJson(const Admission& admission);

}  // namespace dfw
