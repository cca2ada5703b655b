// `dfworker run --tenants FILE [worker flags] [--dry_run] [--format=json] [--job_dir D | --resume D]`:
// several pipelines share one worker and its GPU (docs/tenants.md).
//
// The parent run loads every tenant's pipeline with the worker's flags, plans each with the plan
// module and admits them together (dfw/tenants/admission.h). The dry run prints that; a real run
// then creates <job>/ (tenants.json: the admission), starts what the tenants share (the emulated
// GPU-memory ledger with one budget per tenant, one MPS daemon) and runs each tenant as its own
// `dfworker run PIPELINE --job_dir <job>/tenants/<name> --tenant_of <job> --tenant <name> ...`
// process, whose SDK processes and model hosts get the tenant's MPS per-client limits. --resume
// finishes every tenant that has not finished.
#pragma once

#include <string>
#include <vector>

#include <optional>

#include "dfw/plan/plan.h"
#include "dfw/tenants/admission.h"
#include "dfw/tenants/tenants_file.h"
#include "run_job.h"

namespace dfw::cli {

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

// Returns the process exit code (design.md "Exit codes").
int RunTenantsCommand(const TenantsFlags& flags, const std::vector<std::string>& pipeline_args);

// One tenant as loaded for admission (tenants_command.cc) and run (tenants_run.cc).
struct LoadedTenant {
  const TenantSpec* spec = nullptr;  // into the parsed file, which outlives it
  std::optional<WorkerPlan> plan;    // empty when its pipeline did not load or plan
  std::vector<std::string> sinks;    // its sinks' `path`s, as written
};

// tenants_run.cc: runs tenants that passed admission (called by RunTenantsCommand): creates or
// resumes the parent job dir, starts the shared ledger and MPS daemon and one `dfworker run` per
// unfinished tenant, drains and resumes once on an MPS fault, and prints and writes the summary.
int RunAdmittedTenants(const TenantsFlags& flags, const TenantsFile& file, const Admission& admission,
                       const std::vector<LoadedTenant>& tenants, const std::vector<std::string>& args);

// In a tenant's own run (--tenant_of ROOT --tenant NAME): what ROOT's admission gave that tenant.
// kNotFound / kInvalidArgument name the file and the tenant.
Result<TenantDevice> LoadTenantDevice(const std::string& root, const std::string& name);

}  // namespace dfw::cli
