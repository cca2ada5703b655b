// `dfworker run --tenants` (tenants_command.h): load and plan every tenant with the worker's flags,
// admit them together, print the report; a valid real run goes on in the tenants runtime (dfw/tenant_runs/tenants_run.h).
#include <sys/stat.h>

#include "tenants_command.h"

#include <iostream>
#include <set>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "dfw/common/exit_code.h"
#include "dfw/common/logging.h"
#include "dfw/common/strings.h"
#include "dfw/job/job_dir.h"
#include "dfw/options/parse.h"
#include "dfw/stages/config.h"
#include "dfw/tenants/admission.h"
#include "dfw/validate/report.h"
#include "dfw/validate/validate.h"
#include "dfw/launcher/host_info.h"
#include "dfw/launcher/launch_check.h"

namespace dfw::cli {
namespace {

using json = nlohmann::json;

constexpr std::size_t kMaxFileBytes = std::size_t{4} << 20;  // as for pipeline files

Diagnostic AtTenant(const TenantSpec& t, const char* code, std::string message, std::string help = "") {
  return MakeDiagnostic(Severity::kError, code, t.origin.where + ": tenant '" + t.name + "': " + std::move(message),
                        std::move(help), t.origin, t.origin.value_offset, 0);
}

// The tenant's options: its pipeline's options: block, then the tenants file's (the shared
// worker), then the command line, then its guaranteed SDK processes.
PipelineOptions TenantOptions(const TenantsFile& file, const TenantSpec& t, const std::string& pipeline_yaml,
                              const std::vector<std::string>& args) {
  OptionsParser parser;
  parser.AddYamlFile(pipeline_yaml, t.pipeline);
  parser.AddYamlFile(file.text, file.path);
  std::vector<std::string> all = args;
  all.push_back("--sdk_worker_parallelism=" + std::to_string(t.sdk_processes));
  parser.AddCommandLine(all);
  return std::move(parser).Finish();
}

// Loads, plans and validates one tenant; its findings are appended to `out` (a finding that an
// earlier tenant already reported word for word, such as a shared flag's warning, only once).
LoadedTenant LoadTenant(const TenantsFile& file, const TenantSpec& t, const Catalog& catalog,
                        device::AcceleratorBackend backend, const std::vector<std::string>& args,
                        std::vector<Diagnostic>& out, std::set<std::string>& seen) {
  LoadedTenant loaded;
  loaded.spec = &t;
  Result<std::string> yaml = ReadWholeFile(t.pipeline, kMaxFileBytes);
  if (!yaml.ok()) {
    out.push_back(AtTenant(t, "tenants-pipeline-invalid", "field 'pipeline': " + yaml.status().message(),
                           "pipeline paths are relative to the working directory"));
    return loaded;
  }
  PipelineOptions options = TenantOptions(file, t, *yaml, args);
  LaunchRequest request;
  request.pipeline_path = t.pipeline;
  request.pipeline_yaml = *yaml;
  request.backend = backend;
  request.rules = CheckFor::kLocalRun;
  LaunchCheck check = CheckLaunch(request, options, catalog);
  const PipelineModels& pipeline = check.pipeline;
  const HostView& view = check.view;
  Result<WorkerPlan>& plan = check.plan;
  bool loads = pipeline.diagnostics.empty() && pipeline.spec;
  for (const Diagnostic& d : pipeline.diagnostics) {
    out.push_back(AtTenant(t, "tenants-pipeline-invalid", "field 'pipeline': " + d.message, d.help));
  }
  for (Diagnostic d : check.validation) {
    if (!seen.insert(d.code + "\n" + d.message).second) continue;
    if (d.severity == Severity::kError) loads = false;
    d.message = "tenant '" + t.name + "': " + d.message;
    out.push_back(std::move(d));
  }
  if (!view.selection.ok()) {
    out.push_back(AtTenant(t, "accelerator-unavailable", view.selection.message()));
    loads = false;
  }
  if (!loads || !plan.ok()) return loaded;
  loaded.plan = std::move(*plan);
  for (const TransformSpec& tr : pipeline.spec->transforms) {
    if (!tr.traits.is_sink) continue;
    if (Result<std::string> path = ConfigString(tr.config, "path", std::string()); path.ok() && !path->empty()) {
      loaded.sinks.push_back(*path);
    }
  }
  return loaded;
}

std::string Indent(const std::string& text) {
  std::string out;
  for (const std::string& line : Split(text, '\n')) {
    if (!line.empty()) out += "  " + line + "\n";
  }
  return out;
}

void PrintReport(const TenantsFlags& flags, const std::vector<Diagnostic>& diagnostics,
                 const std::vector<LoadedTenant>& tenants, const Admission* admission, bool dry_run) {
  if (flags.format == "json") {
    json report = json::parse(RenderJsonReport(diagnostics, nullptr));
    report["tenants"] = admission ? json::parse(RenderAdmissionJson(*admission)) : json(nullptr);
    json plans = json::object();
    for (const LoadedTenant& t : tenants) {
      if (t.plan) plans[t.spec->name] = json::parse(RenderJsonReport({}, &*t.plan))["plan"];
    }
    report["tenant_plans"] = std::move(plans);
    (dry_run ? std::cout : std::cerr) << report.dump(-1, ' ', false, json::error_handler_t::replace) << "\n"
                                      << std::flush;
    return;
  }
  std::string text;
  int errors = 0, warnings = 0;
  for (const Diagnostic& d : diagnostics) {
    text += RenderDiagnosticText(d) + "\n";
    (d.severity == Severity::kError ? errors : warnings)++;
  }
  if (dry_run) {
    for (const LoadedTenant& t : tenants) {
      if (t.plan) text += "tenant '" + t.spec->name + "' (" + t.spec->pipeline + "):\n" + Indent(RenderPlanText(*t.plan));
    }
  }
  if (admission) text += RenderAdmissionText(*admission);
  text += std::string(dry_run ? "dry run" : "admission") + ": " + std::to_string(errors) +
          (errors == 1 ? " error, " : " errors, ") + std::to_string(warnings) + (warnings == 1 ? " warning" : " warnings") +
          (errors ? " — the tenants would be refused\n" : " — ok\n");
  (dry_run ? std::cout : std::cerr) << text << std::flush;
}

}  // namespace

int RunTenantsCommand(const TenantsFlags& flags, const std::vector<std::string>& args) {
  if (Status s = InitLogging(flags.log_level); !s.ok()) {
    std::cerr << "dfworker: error: " << s.message() << "\n";
    return kInvalid;
  }
  std::vector<Diagnostic> diagnostics;
  auto fail = [&](const char* code, const std::string& message) {
    Diagnostic d;
    d.code = code;
    d.message = message;
    diagnostics.push_back(d);
    PrintReport(flags, diagnostics, {}, nullptr, flags.dry_run || flags.format == "json");
    return kInvalid;
  };
  auto backend = device::ParseAcceleratorBackend(flags.accelerator_backend);
  if (!backend.ok()) return fail("command-line", "--accelerator_backend: " + backend.status().message());
  Result<std::string> text = ReadWholeFile(flags.tenants_path, kMaxFileBytes);
  if (!text.ok()) return fail("tenants-file-invalid", "tenants file: " + text.status().message());
  auto catalog = Catalog::Locate(flags.catalog_dir);
  if (!catalog.ok()) return fail("catalog-invalid", "catalog: " + catalog.status().message());

  TenantsParse parsed = ParseTenantsFile(*text, flags.tenants_path);
  diagnostics = parsed.diagnostics;
  std::vector<LoadedTenant> tenants;
  std::set<std::string> seen;
  for (const TenantSpec& t : parsed.file.tenants) {
    tenants.push_back(LoadTenant(parsed.file, t, *catalog, *backend, args, diagnostics, seen));
  }
  std::vector<TenantInput> inputs;
  for (const LoadedTenant& t : tenants) inputs.push_back({t.spec, t.plan ? &*t.plan : nullptr, t.sinks});
  Admission admission = AdmitTenants(parsed.file, inputs, *catalog);
  diagnostics.insert(diagnostics.end(), admission.diagnostics.begin(), admission.diagnostics.end());
  const bool valid = !HasErrors(diagnostics) && parsed.file.tenants.size() == admission.tenants.size();
  if (flags.dry_run || !valid) {
    PrintReport(flags, diagnostics, tenants, &admission, flags.dry_run);
    return valid ? 0 : kInvalid;
  }
  PrintReport(flags, diagnostics, tenants, &admission, /*dry_run=*/false);
  ::umask(077);  // the tenants' job dirs are private whatever the umask, as a single run's (run_command.cc)
  return RunAdmittedTenants(flags, parsed.file, admission, tenants, args);
}

}  // namespace dfw::cli
