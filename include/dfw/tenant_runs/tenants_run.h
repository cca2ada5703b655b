// The real run of tenants that passed admission (`dfworker run --tenants FILE`, docs/tenants.md):
// the parent job dir (tenants.json: the admission), what the tenants share (the emulated GPU-memory
// ledger with one budget per tenant, one MPS daemon), and each tenant as its own
// `dfworker run PIPELINE --job_dir <job>/tenants/<name> --tenant_of <job> --tenant <name> ...`
// process, whose SDK processes and model hosts get the tenant's MPS per-client limits. --resume
// finishes every tenant that has not finished. Loading and admitting the tenants is the cli's
// (src/cli/tenants_command.cc); running them is this module's, with the launcher's process seam
// and signal watcher.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "dfw/launcher/run_job.h"
#include "dfw/plan/plan.h"
#include "dfw/tenants/admission.h"
#include "dfw/tenants/tenants_file.h"

namespace dfw {

// The flags of `dfworker run --tenants` (parsed by the cli).
struct TenantsFlags {
  std::string tenants_path;        // --tenants FILE
  bool dry_run = false;
  std::string format = "text";     // text | json
  std::string log_level = "info";
  std::string catalog_dir;
  std::string accelerator_backend = "auto";
  std::string job_dir;             // --job_dir: the tenants' parent job dir
  std::string resume;              // --resume: a tenants job dir to finish
  std::string report = "summary";
};

// One tenant as loaded for admission (cli) and run (here).
struct LoadedTenant {
  const TenantSpec* spec = nullptr;  // into the parsed file, which outlives it
  std::optional<WorkerPlan> plan;    // empty when its pipeline did not load or plan
  std::vector<std::string> sinks;    // its sinks' `path`s, as written
};

// Runs tenants that passed admission: creates or resumes the parent job dir, starts the shared
// ledger and MPS daemon and one `dfworker run` per unfinished tenant, drains and resumes once on an
// MPS fault, and prints and writes the summary. Returns the process exit code.
int RunAdmittedTenants(const TenantsFlags& flags, const TenantsFile& file, const Admission& admission,
                       const std::vector<LoadedTenant>& tenants, const std::vector<std::string>& args);

// In a tenant's own run (--tenant_of ROOT --tenant NAME): what ROOT's admission gave that tenant.
// kNotFound / kInvalidArgument name the file and the tenant.
Result<TenantDevice> LoadTenantDevice(const std::string& root, const std::string& name);

}  // namespace dfw
