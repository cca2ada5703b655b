// `dfworker export PIPELINE.yaml [pipeline flags] --to beam --out DIR [--allow_manual_steps]`:
// the pipeline and its flags are checked as `run --dry_run` checks them (every diagnostic, exit 2
// on an error), then written out for Beam (dfw/export/beam_export.h).
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <memory>

#include "commands.h"
#include "jinja_flags.h"
#include "dfw/catalog/catalog.h"
#include "dfw/common/exit_code.h"
#include "dfw/common/logging.h"
#include "dfw/job/job_dir.h"
#include "dfw/export/beam_export.h"
#include "dfw/options/parse.h"
#include "dfw/plan/plan.h"
#include "dfw/validate/report.h"
#include "dfw/validate/validate.h"
#include "dfw/launcher/host_info.h"
#include "dfw/launcher/launch_check.h"
#include "dfw/common/process.h"

namespace dfw::cli {
namespace {

struct ExportFlags {
  std::string pipeline_path;
  std::string to;
  std::string out;
  bool allow_manual_steps = false;
  std::string catalog_dir;
  JinjaFlags jinja;
};


// The companion package's source: python/ beside the working directory's checkout, else above
// the binary (build/src/cli/dfworker in a checkout). "" when neither has it.
std::string FindCompanionDir() {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::vector<fs::path> starts = {fs::current_path(ec)};
  const fs::path exe = SelfExecutable();
  if (exe.is_absolute()) starts.push_back(exe.parent_path());
  for (fs::path dir : starts) {
    for (int up = 0; up < 6 && !dir.empty(); ++up, dir = dir.parent_path()) {
      if (fs::exists(dir / "python" / "dfworker_beam" / "__init__.py", ec)) return (dir / "python").string();
      if (dir == dir.parent_path()) break;
    }
  }
  return "";
}

int Export(const ExportFlags& flags, const std::vector<std::string>& leftovers, std::vector<std::string> pipeline_args) {
  if (!leftovers.empty()) return InvocationError("dfworker", "unexpected argument '" + leftovers.front() + "' (one pipeline file is expected)");
  if (Status s = InitLogging("warn"); !s.ok()) return InvocationError("dfworker", s.message());
  Result<JinjaVariablesText> variables = JinjaVariables(flags.jinja, pipeline_args);
  if (!variables.ok()) return InvocationError("dfworker", variables.status().message());
  // A templated file is exported rendered (its variables applied): Beam then runs it as is.
  auto yaml = ReadPipelineFile(flags.pipeline_path, *variables);
  if (!yaml.ok()) return InvocationError("dfworker", yaml.status().message());
  auto catalog = Catalog::Locate(flags.catalog_dir);
  if (!catalog.ok()) return InvocationError("dfworker", "catalog: " + catalog.status().message());

  OptionsParser parser;
  parser.AddYamlFile(*yaml, flags.pipeline_path);
  parser.AddCommandLine(pipeline_args);
  PipelineOptions options = std::move(parser).Finish();
  LaunchRequest request;
  request.pipeline_path = flags.pipeline_path;
  request.pipeline_yaml = *yaml;
  const LaunchCheck check = CheckLaunch(request, options, *catalog);
  const std::vector<Diagnostic> diagnostics = check.All();
  if (HasErrors(diagnostics) || !check.pipeline.spec) {
    std::cerr << RenderTextReport(diagnostics, check.plan.ok() ? &*check.plan : nullptr) << std::flush;
    return InvocationError("dfworker", "export stopped: the pipeline or its flags do not pass `dfworker run --dry_run` (above)");
  }

  BeamExportOptions eo;
  eo.pipeline_path = flags.pipeline_path;
  eo.out_dir = flags.out;
  eo.companion_dir = FindCompanionDir();
  eo.allow_manual_steps = flags.allow_manual_steps;
  Result<BeamExport> exported = ExportPipelineToBeam(*yaml, options, eo);
  if (!exported.ok()) return InvocationError("dfworker", "export stopped: " + exported.status().message());
  if (Status s = WriteBeamExport(*exported, flags.out); !s.ok()) return InvocationError("dfworker", s.message());
  std::cout << "wrote " << flags.out << "/pipeline.yaml, README.md, launch.sh (Beam YAML"
            << (exported->uses_companion ? ", companion package dfworker_beam" : "")
            << (exported->uses_ml ? ", yaml_experimental_features: ML" : "") << ")\n";
  for (const std::string& n : exported->notes) std::cout << "  note: " << n << "\n";
  for (const std::string& m : exported->manual_steps) std::cout << "  MANUAL STEP: " << m << "\n";
  return 0;
}

}  // namespace

void AddExportCommand(CLI::App& app, CliContext& context) {
  auto flags = std::make_shared<ExportFlags>();
  CLI::App* cmd = app.add_subcommand("export", "Write a pipeline out for Apache Beam (DirectRunner, Dataflow)");
  cmd->footer("Pipeline flags (as for run) are validated and become the Dataflow launch flags. See docs/beam.md.");
  cmd->allow_extras();
  cmd->add_option("pipeline", flags->pipeline_path, "Pipeline file")->required();
  cmd->add_option("--to", flags->to, "Target")->required()->check(CLI::IsMember({"beam"}));
  cmd->add_option("--out", flags->out, "Output folder (pipeline.yaml, README.md, launch.sh)")->required();
  cmd->add_flag("--allow_manual_steps", flags->allow_manual_steps,
                "Write a transform with no Beam equivalent as a marked manual step instead of failing");
  cmd->add_option("--catalog_dir", flags->catalog_dir, "Directory of catalog *.yaml (as for run)");
  AddJinjaFlags(cmd, flags->jinja);
  cmd->callback([cmd, flags, &context] { context.exit_code = Export(*flags, cmd->remaining(), context.pipeline_args); });
}

}  // namespace dfw::cli
