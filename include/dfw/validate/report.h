// Rendering a dry-run report: diagnostics like a compiler (text) or one JSON object.
#pragma once

#include <string>
#include <vector>

#include "dfw/options/diagnostic.h"
#include "dfw/options/options.h"
#include "dfw/plan/plan.h"

namespace dfw {

// One diagnostic:
//   error[mps-multi-gpu]: message
//     --> command line
//      |
//      | --dataflow_service_options=worker_accelerator=type:nvidia-l4;count:2;use_nvidia_mps
//      |                                                              ^^^^^^^
//      = help: ...
//      = see: https://...
std::string RenderDiagnosticText(const Diagnostic& diagnostic);

// Every diagnostic, then the plan (when given), then "dry run: N errors, M warnings".
std::string RenderTextReport(const std::vector<Diagnostic>& diagnostics, const WorkerPlan* plan);

// {"valid", "errors", "warnings", "diagnostics": [...], "plan": {...} | null, "options": {...} | null}
// on one line. `options` (may be null) adds the parsed options and their sources
// (docs/options.md, "The parsed options in JSON").
std::string RenderJsonReport(const std::vector<Diagnostic>& diagnostics, const WorkerPlan* plan,
                             const PipelineOptions* options = nullptr);

// The parsed options, one per line with where each came from (shown with --log_level=debug).
std::string RenderOptionsText(const PipelineOptions& options);

}  // namespace dfw
