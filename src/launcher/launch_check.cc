// The one check of a launch (dfw/launcher/launch_check.h).
#include "dfw/launcher/launch_check.h"

namespace dfw {

LaunchCheck CheckLaunch(const LaunchRequest& request, const PipelineOptions& options, const Catalog& catalog) {
  LaunchCheck out;
  // The host first: its device warnings (quiet = false) come before anything the load says.
  if (request.plan_worker) out.view = DetectHost(options, catalog, request.backend, request.quiet);
  out.pipeline = LoadPipelineModels(request.pipeline_path, request.pipeline_yaml, request.checks);
  if (!request.plan_worker) return out;
  out.plan = MakePlan(options, catalog, out.pipeline.models, out.view.host);
  out.validation = Validate(options, catalog, out.plan.ok() ? &*out.plan : nullptr, request.rules);
  return out;
}

std::vector<Diagnostic> LaunchCheck::All() const {
  std::vector<Diagnostic> all = validation;
  all.insert(all.end(), pipeline.diagnostics.begin(), pipeline.diagnostics.end());
  if (!view.selection.ok()) {
    Diagnostic d;
    d.code = "accelerator-unavailable";
    d.message = view.selection.message();
    d.help = "use --accelerator_backend=auto (CUDA when usable, else the declared type emulated)";
    all.push_back(std::move(d));
  }
  return all;
}

bool LaunchCheck::ok() const { return plan.ok() && pipeline.spec.has_value() && !HasErrors(All()); }

}  // namespace dfw
