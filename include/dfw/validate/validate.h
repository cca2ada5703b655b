// Validation: one small function per rule over (options, catalog, plan), each with a stable code.
// All diagnostics are reported, not just the first. Rendering lives in report.h.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "dfw/catalog/catalog.h"
#include "dfw/options/diagnostic.h"
#include "dfw/options/options.h"
#include "dfw/plan/plan.h"

namespace dfw {

struct RuleInfo {
  const char* code;      // stable, e.g. "mps-multi-gpu"
  Severity severity;
  const char* doc_url;   // the page that states the rule
  const char* summary;   // one line for docs/options.md
};

// Every code dfworker can emit (parser codes included), in a stable order.
const std::vector<RuleInfo>& AllRules();

// Doc URL of `code` ("" when unknown).
std::string DocUrl(std::string_view code);

// What the verdict is for. A dry run (and `export`) gives Dataflow's verdict on the launch line; a
// local run also needs what dfworker itself can run (bounded, batch work: no --streaming).
enum class CheckFor {
  kDataflowLaunch,  // `run --dry_run`, `export`: exit 0 exactly when Dataflow would accept the launch
  kLocalRun,        // `run` without --dry_run, tenants: Dataflow's rules plus dfworker's own limits
};

// Parser diagnostics (options.diagnostics) followed by every rule's findings. `plan` may be null
// (MakePlan failed); rules that need it are skipped then. Pure function; no I/O.
std::vector<Diagnostic> Validate(const PipelineOptions& options, const Catalog& catalog, const WorkerPlan* plan,
                                 CheckFor check_for = CheckFor::kDataflowLaunch);

}  // namespace dfw
