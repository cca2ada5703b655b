// `dfworker run`: parse options (pipeline file's options: block, then flags), plan, validate;
// print the dry-run report or hand over to RunJob.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include <sys/stat.h>

#include "commands.h"
#include "jinja_flags.h"
#include "dfw/catalog/catalog.h"
#include "dfw/common/exit_code.h"
#include "dfw/common/logging.h"
#include "dfw/options/parse.h"
#include "dfw/plan/plan.h"
#include "dfw/python/python.h"
#include "dfw/validate/report.h"
#include "dfw/validate/validate.h"
#include "dfw/device/accelerator.h"
#include "dfw/job/job_dir.h"
#include "dfw/launcher/launcher.h"
#include "dfw/pipeline/bundle.h"
#include "dfw/launcher/pipeline_job_plan.h"
#include "dfw/launcher/host_info.h"
#include "dfw/launcher/launch_check.h"
#include "dfw/launcher/pipeline_models.h"
#include "dfw/launcher/run_job.h"
#include "tenants_command.h"
#include "test_command.h"

namespace dfw::cli {
namespace {

struct RunFlags {
  std::string pipeline_path;
  bool dry_run = false;
  std::string format = "text";
  std::string log_level = "info";
  std::string catalog_dir;
  std::string accelerator_backend = "auto";
  std::string job_dir;  // --job_dir
  std::string resume;   // --resume JOB_DIR
  std::string report = "summary";  // --report
  std::string tenants;       // --tenants FILE: several pipelines as tenants (tenants_command.h)
  std::string tenant_of;     // hidden: this run is tenant `tenant` of the tenants run in this job dir
  std::string tenant;
  std::string options_from;  // hidden: another file's options: block, read after the pipeline's
  JinjaFlags jinja;          // --jinja_variables, --jinja_variable_flags (jinja_flags.h)
  bool render = false;       // --render (with --dry_run): print the rendered pipeline file
  bool test = false;         // --test: run the pipeline's own tests instead (test_command.h), as Beam spells it
  PipelineTestFlags tests;   // --test_suite, --fix_tests, --create_test, --junit_xml (with --test)
};


// A failure that stops the dry run before a plan exists (unreadable file, bad catalog): in JSON
// mode one JSON object with valid=false on stdout, so callers parsing stdout always get JSON.
int RunFailure(const RunFlags& flags, const char* code, const std::string& message) {
  if (flags.format == "json") {
    Diagnostic d;
    d.code = code;
    d.message = message;
    std::cout << RenderJsonReport({d}, nullptr) << std::flush;
  } else {
    std::cerr << "dfworker: error: " << message << "\n";
  }
  return kInvalid;
}

// A pipeline file is configuration: 4 MiB is far beyond any real one (data belongs in input
// files), and a bigger file is refused at once instead of spending seconds in the YAML parser.

Result<std::string> ReadFile(const std::string& path) {
  Result<std::string> text = ReadWholeFile(path, kMaxPipelineFileBytes);
  if (!text.ok()) {
    const bool too_big = text.status().message().find("over the limit") != std::string::npos;
    return Status(text.status().code(), "pipeline file: " + text.status().message() +
                                            (too_big ? " (pipeline files are at most 4 MiB: put data in input files)" : ""));
  }
  return text;
}

// --resume takes a job dir path, or the id of a job under the default jobs folder.
std::string ResolveResume(const std::string& arg) {
  if (arg.empty() || arg.find('/') != std::string::npos) return arg;
  std::error_code ec;
  if (std::filesystem::is_directory(arg, ec)) return arg;
  std::string by_id = std::string(kDefaultJobsDir) + "/" + arg;
  return std::filesystem::is_directory(by_id, ec) ? by_id : arg;
}

int Run(const RunFlags& flags, const std::vector<std::string>& leftovers, std::vector<std::string> pipeline_args) {
  const bool test_flags = !flags.tests.test_suite.empty() || flags.tests.fix_tests || flags.tests.create_test ||
                          !flags.tests.junit_xml.empty();
  if (test_flags && !flags.test) {
    return RunFailure(flags, "command-line", "--test_suite, --fix_tests, --create_test and --junit_xml need --test (or use dfworker test)");
  }
  if (flags.test) {
    if (flags.dry_run || !flags.tenants.empty() || !flags.resume.empty()) {
      return RunFailure(flags, "command-line", "--test runs the pipeline's tests; it does not combine with --dry_run, --tenants or --resume");
    }
    if (!leftovers.empty()) {
      return RunFailure(flags, "command-line", "unexpected argument '" + leftovers.front() + "' (one pipeline file is expected)");
    }
    PipelineTestFlags tests = flags.tests;
    tests.pipeline_path = flags.pipeline_path;
    tests.jinja = flags.jinja;
    return RunPipelineTests(tests, std::move(pipeline_args));
  }
  const bool jinja = !flags.jinja.variables.empty() || !flags.jinja.variable_flags.empty();
  if (!flags.tenants.empty() && (jinja || flags.render)) {
    return RunFailure(flags, "command-line", "--jinja_variables, --jinja_variable_flags and --render apply to one pipeline file, not to --tenants");
  }
  if (flags.render && !flags.dry_run) return RunFailure(flags, "command-line", "--render needs --dry_run");
  if (!flags.tenants.empty()) {
    if (!flags.pipeline_path.empty() || !leftovers.empty()) {
      return RunFailure(flags, "command-line", "--tenants names the pipelines; no pipeline file is expected beside it");
    }
    return RunTenantsCommand({flags.tenants, flags.dry_run, flags.format, flags.log_level, flags.catalog_dir,
                              flags.accelerator_backend, flags.job_dir, flags.resume, flags.report},
                             pipeline_args);
  }
  if (flags.pipeline_path.empty()) return RunFailure(flags, "command-line", "a pipeline file (or --tenants FILE) is expected");
  if (!leftovers.empty()) {
    return RunFailure(flags, "command-line", "unexpected argument '" + leftovers.front() + "' (one pipeline file is expected)");
  }
  if (Status s = InitLogging(flags.log_level); !s.ok()) return RunFailure(flags, "command-line", s.message());
  auto backend = device::ParseAcceleratorBackend(flags.accelerator_backend);
  if (!backend.ok()) return RunFailure(flags, "command-line", "--accelerator_backend: " + backend.status().message());
  Result<JinjaVariablesText> variables = JinjaVariables(flags.jinja, pipeline_args);
  if (!variables.ok()) return RunFailure(flags, "command-line", variables.status().message());
  // Jinja renders in the user's Python: the command line's --python_env applies before the file is read.
  if (Status s = UsePipelinePythonEnv("", flags.pipeline_path, pipeline_args); !s.ok()) {
    return RunFailure(flags, "python-env", s.message());
  }
  // Rendered once, here: the launcher, the job dir's job.json and so every SDK process get this text.
  auto yaml = ReadPipelineFile(flags.pipeline_path, *variables);
  if (!yaml.ok()) {
    const bool unreadable = yaml.status().message().rfind("pipeline file: ", 0) == 0;
    return RunFailure(flags, unreadable ? "file-unreadable" : "pipeline-template", yaml.status().message());
  }
  if (flags.render) std::cout << *yaml << std::flush;
  auto catalog = Catalog::Locate(flags.catalog_dir);
  if (!catalog.ok()) return RunFailure(flags, "catalog-invalid", "catalog: " + catalog.status().message());

  OptionsParser parser;
  parser.AddYamlFile(*yaml, flags.pipeline_path);
  Result<std::string> more = flags.options_from.empty() ? Result<std::string>(std::string()) : ReadFile(flags.options_from);
  if (!more.ok()) return RunFailure(flags, "file-unreadable", more.status().message());
  if (!flags.options_from.empty()) parser.AddYamlFile(*more, flags.options_from);
  parser.AddCommandLine(pipeline_args);
  RunContext context;
  context.pipeline_args = pipeline_args;
  context.options = std::move(parser).Finish();
  // The options: block's --python_env, checked for the dry run too; SDK processes inherit it (DFW_PYTHON_ENV).
  if (Status s = python::UseEnvironment(context.options.python_env ? context.options.python_env->value : std::string());
      !s.ok()) {
    return RunFailure(flags, "python-env", s.message());
  }
  if (Status s = UsePipelineDependencies(*yaml, flags.pipeline_path,
                                         context.options.python_env ? context.options.python_env->value : std::string());
      !s.ok()) {
    return RunFailure(flags, "python-dependencies", s.message());
  }
  context.catalog = &*catalog;
  context.accelerator_backend = *backend;
  context.job_dir = flags.job_dir;
  context.resume_dir = ResolveResume(flags.resume);
  if (!flags.tenant.empty()) {
    Result<TenantDevice> tenant = LoadTenantDevice(flags.tenant_of, flags.tenant);
    if (!tenant.ok()) return RunFailure(flags, "tenants-file-invalid", tenant.status().message());
    context.tenant = std::move(*tenant);
  }
  context.log_level = flags.log_level;
  context.full_report = flags.report == "full" || flags.log_level == "debug" || flags.log_level == "trace";

  // The pipeline loaded once, with the models its RunInference transforms need; the host; the plan;
  // the launch rules. The dry run plans from config.json where a handler can (a model directory
  // written for planning has no weights yet); the run needs every model file.
  LaunchRequest request;
  request.pipeline_path = flags.pipeline_path;
  request.pipeline_yaml = *yaml;
  request.backend = *backend;
  request.quiet = flags.dry_run;
  request.checks = flags.dry_run ? ModelChecks::kConfigOnly : ModelChecks::kFull;
  request.rules = flags.dry_run ? CheckFor::kDataflowLaunch : CheckFor::kLocalRun;
  LaunchCheck check = CheckLaunch(request, context.options, *catalog);
  context.host = check.view.host;
  Result<WorkerPlan>& plan = check.plan;
  const WorkerPlan* plan_ptr = plan.ok() ? &*plan : nullptr;
  const std::vector<Diagnostic> diagnostics = check.All();
  const bool valid = check.ok();

  if (flags.dry_run && plan.ok() && check.pipeline.spec) {
    // How the inputs would be cut for these SDK processes (sources only: no model is loaded).
    const PipelineSpec& spec = *check.pipeline.spec;
    Result<PipelineStages> stages = DescribePipelineStages(spec, plan->sdk_processes);
    if (stages.ok() && stages->count > 1) {  // (a pipeline that cannot be cut has a diagnostic already)
      plan->bundles.stages = stages->transforms;
      plan->bundles.shuffle_partitions = stages->partitions;
    }
    StageRegistry registry;
    RegisterBuiltinStages(registry, ModelChecks::kConfigOnly);
    Result<BundlePreview> preview = PreviewBundles(spec, registry, plan->sdk_processes);
    if (preview.ok()) {
      plan->bundles.count = preview->bundles;
      plan->bundles.target = preview->target.ToString();
    } else {
      plan->bundles.error = preview.status().message();
    }
  }
  if (flags.dry_run || !valid) {
    std::string report = flags.format == "json" ? RenderJsonReport(diagnostics, plan_ptr, &context.options)
                                                : RenderTextReport(diagnostics, plan_ptr);
    if (flags.format != "json" && (flags.log_level == "debug" || flags.log_level == "trace")) {
      report = RenderOptionsText(context.options) + "\n" + report;
    }
    // With --render stdout is the rendered file alone (`> rendered.yaml`), so the report goes to stderr.
    (!flags.render && (flags.dry_run || flags.format == "json") ? std::cout : std::cerr) << report << std::flush;
    return valid ? 0 : kInvalid;
  }
  for (const Diagnostic& d : diagnostics) std::cerr << RenderDiagnosticText(d) << "\n";
  // What a run creates is private whatever the umask it was started with: the job dir and all in
  // it (0700/0600), and so its SDK processes, model hosts and MPS daemon (they inherit it).
  // Outputs get their documented modes explicitly (kOutputFileMode, kOutputFolderMode).
  ::umask(077);
  context.plan = std::move(*plan);
  context.model_sources = std::move(check.pipeline.sources);
  context.pipeline.path = flags.pipeline_path;
  context.pipeline.yaml = std::move(*yaml);
  context.pipeline.spec = std::move(*check.pipeline.spec);
  return RunJob(context);
}

}  // namespace

void AddRunCommand(CLI::App& app, CliContext& context) {
  auto flags = std::make_shared<RunFlags>();
  CLI::App* run = app.add_subcommand("run", "Run a pipeline file on this machine as one Dataflow worker");
  run->footer(
      "Beam/Dataflow pipeline flags (Python or Java spellings) may be mixed in, e.g.\n"
      "  --dataflow_service_options=\"worker_accelerator=type:nvidia-l4;count:1;install-nvidia-driver;use_nvidia_mps\"\n"
      "  --machine_type=g2-standard-8 --experiments=... --number_of_worker_harness_threads=N\n"
      "See docs/options.md for every flag and rule.");
  run->allow_extras();  // pipeline flags arrive through CliContext::pipeline_args (arg_split.h)
  run->add_option("pipeline", flags->pipeline_path, "Pipeline file (Beam YAML subset with an options: block)");
  run->add_option("--tenants", flags->tenants,
                  "Run the pipelines of this tenants file together on the worker, each with its GPU-memory budget "
                  "and MPS limits, admitted before launch (docs/tenants.md)");
  run->add_option("--tenant_of", flags->tenant_of)->group("");  // hidden: set by --tenants for each tenant
  run->add_option("--tenant", flags->tenant)->group("");
  run->add_option("--options_from", flags->options_from)->group("");
  run->add_flag("--dry_run", flags->dry_run, "Validate, print the worker plan and diagnostics, do not run");
  AddJinjaFlags(run, flags->jinja);
  run->add_flag("--render", flags->render,
                "With --dry_run: print the pipeline file as rendered with the Jinja variables (stdout), the report on stderr");
  run->add_flag("--test", flags->test, "Run the pipeline's own tests: instead of the pipeline (as dfworker test)");
  run->add_option("--test_suite", flags->tests.test_suite, "With --test: the tests: of this file instead");
  run->add_flag("--fix_tests", flags->tests.fix_tests, "With --test: rewrite failing expectations with the rows that arrived");
  run->add_flag("--create_test", flags->tests.create_test, "With --test: append one test recorded from a run");
  run->add_option("--junit_xml", flags->tests.junit_xml, "With --test: also write a JUnit XML report");
  run->add_option("--format", flags->format, "Report format")->check(CLI::IsMember({"text", "json"}));
  run->add_option("--log_level", flags->log_level, "trace|debug|info|warn|error|critical|off");
  run->add_option("--report", flags->report,
                  "End-of-run report: summary (non-zero counters per transform, records/s) or full (every metric)")
      ->check(CLI::IsMember({"summary", "full"}));
  run->add_option("--catalog_dir", flags->catalog_dir,
                  "Directory of catalog *.yaml (default: $DFW_CATALOG_DIR, the source tree's configs/, "
                  "then the copy built into the binary)");
  run->add_option("--accelerator_backend", flags->accelerator_backend,
                  "auto (CUDA when a GPU and the CUDA backend load, else the declared worker_accelerator emulated), "
                  "cuda or emulated")
      ->check(CLI::IsMember({"auto", "cuda", "emulated"}));
  run->add_option("--job_dir", flags->job_dir,
                  "Where the job dir goes (default: ./.dfworker/jobs/<job id>, printed at start); holds the manifest, "
                  "logs and metrics.json");
  run->add_option("--resume", flags->resume,
                  "Finish the job in this job dir, or with this job id under ./.dfworker/jobs (a killed or "
                  "interrupted run): committed bundles are kept, the rest are redone")
      ->excludes("--dry_run");
  run->callback([run, flags, &context] {
    context.exit_code = Run(*flags, run->remaining(), context.pipeline_args);
  });
}

}  // namespace dfw::cli
