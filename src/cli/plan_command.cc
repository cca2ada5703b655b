// `dfworker plan PIPELINE.yaml [pipeline flags] [--gpu T,...] [--mig_instances N] [--format text|json]`:
// the job's worker plan on every GPU type × machine type of the catalog and on MIG slices.
#include <iostream>
#include <memory>
#include <thread>

#include "commands.h"
#include "jinja_flags.h"
#include "dfw/catalog/catalog.h"
#include "dfw/common/exit_code.h"
#include "dfw/job/job_dir.h"
#include "dfw/options/parse.h"
#include "dfw/plan/catalog_plan.h"
#include "dfw/validate/report.h"
#include "dfw/launcher/pipeline_models.h"

namespace dfw::cli {
namespace {

struct PlanFlags {
  std::string pipeline_path;
  std::vector<std::string> gpus;
  int mig_instances = 1;
  std::string format = "text";
  std::string catalog_dir;
  JinjaFlags jinja;
};


int Plan(const PlanFlags& flags, const std::vector<std::string>& leftovers, std::vector<std::string> pipeline_args) {
  if (!leftovers.empty()) return InvocationError("dfworker plan", "unexpected argument '" + leftovers.front() + "' (one pipeline file is expected)");
  Result<tmpl::Value> variables = JinjaVariables(flags.jinja, pipeline_args);
  if (!variables.ok()) return InvocationError("dfworker plan", variables.status().message());
  auto yaml = ReadPipelineFile(flags.pipeline_path, *variables);
  if (!yaml.ok()) return InvocationError("dfworker plan", yaml.status().message());
  auto catalog = Catalog::Locate(flags.catalog_dir);
  if (!catalog.ok()) return InvocationError("dfworker plan", "catalog: " + catalog.status().message());
  PipelineOptions options = ParsePipelineOptions(pipeline_args, *yaml, flags.pipeline_path);
  PipelineModels pipeline = LoadPipelineModels(flags.pipeline_path, *yaml);
  std::vector<Diagnostic> errors;
  for (const auto* list : {&options.diagnostics, &pipeline.diagnostics}) {
    for (const Diagnostic& d : *list) {
      if (d.severity == Severity::kError) errors.push_back(d);
    }
  }
  if (!errors.empty()) {
    for (const Diagnostic& d : errors) std::cerr << RenderDiagnosticText(d) << "\n";
    return InvocationError("dfworker plan", std::to_string(errors.size()) + " error(s) in the pipeline or its flags; nothing planned");
  }
  HostInfo host;
  host.cpu_cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  CatalogPlanRequest request{flags.gpus, flags.mig_instances};
  auto plan = MakeCatalogPlan(options, *catalog, pipeline.models, host, request);
  if (!plan.ok()) return InvocationError("dfworker plan", plan.status().message());
  std::cout << (flags.format == "json" ? RenderCatalogPlanJson(*plan) : RenderCatalogPlanText(*plan)) << std::flush;
  return 0;
}

}  // namespace

void AddPlanCommand(CLI::App& app, CliContext& context) {
  auto flags = std::make_shared<PlanFlags>();
  CLI::App* plan = app.add_subcommand(
      "plan", "Plan the job on every GPU and machine type of the catalog (and MIG slices): fits, tight or not");
  plan->footer(
      "Pipeline flags (worker_accelerator, --machine_type, --sdk_worker_parallelism, ...) apply to every row;\n"
      "--machine_type restricts the rows to that machine type. See docs/right-sizing.md.");
  plan->allow_extras();
  plan->add_option("pipeline", flags->pipeline_path, "Pipeline file")->required();
  plan->add_option("--gpu", flags->gpus, "GPU types to plan (default: every type); repeat or separate with commas")
      ->delimiter(',');
  plan->add_option("--mig_instances", flags->mig_instances,
                   "MIG rows: copies of this job that must share one GPU (instances of one profile), default 1");
  plan->add_option("--format", flags->format, "Output format")->check(CLI::IsMember({"text", "json"}));
  plan->add_option("--catalog_dir", flags->catalog_dir, "Directory of catalog *.yaml (default: as for run)");
  AddJinjaFlags(plan, flags->jinja);
  plan->callback([plan, flags, &context] {
    context.exit_code = Plan(*flags, plan->remaining(), context.pipeline_args);
  });
}

}  // namespace dfw::cli
