// `dfworker run --tenants FILE [worker flags] [--dry_run] [--format=json] [--job_dir D | --resume D]`:
// several pipelines share one worker and its GPU (docs/tenants.md).
//
// Loads every tenant's pipeline with the worker's flags, plans each with the plan module and admits
// them together (dfw/tenants/admission.h). The dry run prints that; a real run hands the admitted
// tenants to the tenants runtime (dfw/tenant_runs/tenants_run.h).
#pragma once

#include <string>
#include <vector>

#include "dfw/tenant_runs/tenants_run.h"

namespace dfw::cli {

// Returns the process exit code (design.md "Exit codes").
int RunTenantsCommand(const TenantsFlags& flags, const std::vector<std::string>& pipeline_args);

}  // namespace dfw::cli
