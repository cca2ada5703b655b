// The one check of a launch that `run` (and its --dry_run), `export` and each tenant of
// `run --tenants` make, and whose loading half `plan` makes: the pipeline loaded once with its
// models sized (pipeline_models.h), the host seen (host_info.h), the worker planned (dfw/plan) and
// the launch rules applied (dfw/validate). Callers parse the options their own way (a tenant's
// come from three files) and print the findings their own way; what is checked is the same.
#pragma once

#include <string>
#include <vector>

#include "dfw/catalog/catalog.h"
#include "dfw/device/accelerator.h"
#include "dfw/launcher/host_info.h"
#include "dfw/launcher/pipeline_models.h"
#include "dfw/options/diagnostic.h"
#include "dfw/options/options.h"
#include "dfw/plan/plan.h"
#include "dfw/validate/validate.h"

namespace dfw {

struct LaunchRequest {
  std::string pipeline_path;  // as given (error positions)
  std::string pipeline_yaml;  // the rendered text
  device::AcceleratorBackend backend = device::AcceleratorBackend::kAuto;
  bool quiet = true;                        // DetectHost: no device warnings on stderr
  ModelChecks checks = ModelChecks::kFull;  // kConfigOnly for the dry run and plan
  CheckFor rules = CheckFor::kDataflowLaunch;
  // false: load the pipeline and size its models only — no host probe, no worker plan, no rules
  // (`plan` makes its own plan across the catalog).
  bool plan_worker = true;
};

struct LaunchCheck {
  HostView view;
  PipelineModels pipeline;                      // the models and the loaded spec (once)
  Result<WorkerPlan> plan = FailedPrecondition("not planned");
  std::vector<Diagnostic> validation;           // the launch rules' findings (none without plan_worker)
  // Every finding, in the order `run` prints them: the launch rules', the pipeline's, then an
  // --accelerator_backend that cannot be honoured.
  std::vector<Diagnostic> All() const;
  // Whether the launch may go ahead: every piece made and no error among All().
  bool ok() const;
};

LaunchCheck CheckLaunch(const LaunchRequest& request, const PipelineOptions& options, const Catalog& catalog);

}  // namespace dfw
