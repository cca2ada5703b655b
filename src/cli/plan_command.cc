// `dfworker plan PIPELINE.yaml [pipeline flags] [--gpu T,...] [--mig_instances N] [--format text|json]
//  [--records N] [--prices FILE] [--price_region R] [--cpu_rate R | --cpu_rate_from JOB_DIR|BENCH.json]
//  [--gpu_efficiency E | --gpu_efficiency_from FILE]`:
// the job's worker plan on every GPU type × machine type of the catalog and on MIG slices, with a
// speed and cost estimate per configuration (docs/right-sizing.md).
#include <filesystem>
#include <iostream>
#include <memory>
#include <thread>

#include "commands.h"
#include "jinja_flags.h"
#include "test_command.h"
#include "dfw/catalog/catalog.h"
#include "dfw/catalog/prices.h"
#include "dfw/common/strings.h"
#include "dfw/common/exit_code.h"
#include "dfw/job/job_dir.h"
#include "dfw/options/parse.h"
#include "dfw/python/python.h"
#include "dfw/plan/catalog_plan.h"
#include "dfw/report/bench_json.h"
#include "dfw/validate/report.h"
#include "dfw/metrics/job_metrics.h"
#include "dfw/launcher/launch_check.h"

namespace dfw::cli {
namespace {

struct PlanFlags {
  std::string pipeline_path;
  std::vector<std::string> gpus;
  int mig_instances = 1;
  std::string format = "text";
  std::string catalog_dir;
  std::string records;         // --records N (> 0)
  std::string prices;          // --prices FILE (default: the catalog's price table)
  // --price_region: the region of the prices (default: the pipeline's --region, else us-central1). Not
  // --region: that is the pipeline's own flag, which the options parser reads.
  std::string region;
  std::string cpu_rate;        // --cpu_rate records/s per vCPU
  std::string cpu_rate_from;   // --cpu_rate_from JOB_DIR | BENCH.json: measured by a run or a bench of this pipeline
  std::string gpu_efficiency;  // --gpu_efficiency in (0, 1]
  std::string gpu_efficiency_from;  // --gpu_efficiency_from FILE: per handler, measured by scripts/gpu-check.sh
  std::string max_cost_per_million;  // --max_cost_per_million (currency of the prices)
  std::string deadline;              // --deadline HOURS (needs --records)
  bool all = false;                  // --all: every fitting row in the estimate table
  std::string objective;             // --objective cost|time|fit (default cost with prices, else time)
  JinjaFlags jinja;
};

constexpr const char* kDefaultPriceRegion = "us-central1";

// A positive number from a flag, or the message saying what is allowed.
Result<double> PositiveFlag(const std::string& flag, const std::string& text, double max) {
  auto v = ParseDouble(text);
  if (!v || !(*v > 0) || *v > max) {
    return InvalidArgument(flag + " '" + text + "': expected a number above 0 and at most " + std::to_string(static_cast<int64_t>(max)));
  }
  return *v;
}

// The workers of the job: --num_workers, else --max_num_workers (Python or Java spelling), else 1.
Result<int> Workers(const PipelineOptions& options) {
  for (const char* name : {"num_workers", "numWorkers", "max_num_workers", "maxNumWorkers"}) {
    auto it = options.other.find(name);
    if (it == options.other.end()) continue;
    auto n = ParseInt64(it->second);
    if (!n || *n < 1 || *n > 100000) return InvalidArgument("--" + std::string(name) + " '" + it->second + "': expected 1 to 100000 workers");
    return static_cast<int>(*n);
  }
  return 1;
}

// Records per CPU-second of the pipeline's non-inference transforms, from a finished run's
// metrics.json: committed records / (the summed process_bundle_usecs of every transform that is
// not RunInference). The time inside a transform's calls stands in for its CPU time (they are
// CPU-bound here), so one vCPU does this many records per second.
Result<std::pair<double, std::string>> CpuRateFromJob(const std::string& job_dir, const PipelineSpec& spec) {
  const std::string path = job_dir + "/metrics.json";
  ASSIGN_OR_RETURN(std::string text, ReadWholeFile(path, FileKind{"job's metrics.json", 256 * kMiB}));
  Result<JobMetrics> metrics = ParseJobMetrics(text);
  if (!metrics.ok()) return InvalidArgument(path + ": " + metrics.status().message());
  int64_t records = 0;
  for (const JobMetrics::Process& p : metrics->processes) records += p.records;
  double cpu_s = 0;
  std::vector<std::string> counted;
  for (const TransformSpec& t : spec.transforms) {
    if (t.config.type == "RunInference") continue;
    const int64_t usecs = metrics->total.CounterOr(t.config.name, "process_bundle_usecs");
    if (usecs <= 0) continue;
    cpu_s += static_cast<double>(usecs) / 1e6;
    counted.push_back(t.config.name);
  }
  if (records <= 0 || cpu_s <= 0) {
    return InvalidArgument(path + ": no committed records or no time in the pipeline's non-inference transforms "
                                  "(is it a run of this pipeline?)");
  }
  char how[160];
  std::snprintf(how, sizeof how, "%lld records / %.3f CPU-s in ", static_cast<long long>(records), cpu_s);
  return std::make_pair(static_cast<double>(records) / cpu_s, std::string(how) + Join(counted) + " (" + path + ")");
}

// The CPU side from a `dfworker bench --format=json` result of the same pipeline file.
Result<std::pair<double, std::string>> CpuRateFromBench(const std::string& path, const std::string& pipeline_path) {
  ASSIGN_OR_RETURN(std::string text, ReadWholeFile(path, kBenchResultFile));
  ASSIGN_OR_RETURN(std::string pipeline_text, ReadWholeFile(pipeline_path, kMaxPipelineFileBytes));
  ASSIGN_OR_RETURN(report::BenchCpuRate rate, report::ReadBenchCpuRate(path, text, pipeline_path, pipeline_text));
  return std::make_pair(rate.records_per_vcpu_second, rate.how);
}

// Per model of the pipeline, the efficiency measured for its handler (a model whose handler the
// file does not list keeps its default, said so in the inputs of every row).
Result<std::map<std::string, MeasuredEfficiency>> EfficiencyFrom(const std::string& path, const Catalog& catalog,
                                                                 const PipelineModels& pipeline) {
  ASSIGN_OR_RETURN(std::string text, ReadWholeFile(path, kGpuEfficiencyFile));
  ASSIGN_OR_RETURN(GpuEfficiencyFile file, ParseGpuEfficiencyFile(path, text));
  if (!catalog.FindGpu(file.gpu)) return InvalidArgument(path + ": gpu '" + file.gpu + "' is not a GPU type of the catalog");
  std::map<std::string, MeasuredEfficiency> out;
  for (std::size_t i = 0; i < pipeline.models.size() && i < pipeline.sources.size(); ++i) {
    for (const GpuEfficiencyEntry& e : file.entries) {
      if (e.handler != pipeline.sources[i].handler_type) continue;
      char how[200];
      std::snprintf(how, sizeof how, "measured: %s on %s, %.4g GFLOP/s of %.4g TFLOP/s FP32", e.handler.c_str(),
                    file.gpu.c_str(), e.achieved_gflops, e.peak_tflops);
      out[pipeline.models[i].name] = MeasuredEfficiency{
          e.efficiency, std::string(how) + (file.measured.empty() ? "" : ", " + file.measured) + ", " + path +
                            (file.note.empty() ? "" : " [" + file.note + "]") + "; taken as the same on every GPU"};
    }
  }
  if (out.empty()) {
    std::vector<std::string> listed, used;
    for (const GpuEfficiencyEntry& e : file.entries) listed.push_back(e.handler);
    for (const ModelSource& s : pipeline.sources) used.push_back(s.handler_type);
    return InvalidArgument(path + ": no entry for the pipeline's handler(s) " + (used.empty() ? "(none)" : Join(used)) +
                           " (the file measured " + Join(listed) + ")");
  }
  return out;
}

// Speed and cost inputs from the flags; `prices` keeps the table the inputs point into.
Result<EstimateInputs> EstimateFlags(const PlanFlags& flags, const PipelineOptions& options, const Catalog& catalog,
                                     const PipelineModels& pipeline, std::optional<PriceTable>& prices) {
  EstimateInputs in;
  if (!flags.records.empty()) {
    auto n = ParseInt64(flags.records);
    if (!n || *n <= 0) return InvalidArgument("--records '" + flags.records + "': expected a whole number of records above 0");
    in.records = *n;
  }
  if (!flags.cpu_rate.empty()) {
    ASSIGN_OR_RETURN(in.cpu_records_per_vcpu_second, PositiveFlag("--cpu_rate", flags.cpu_rate, 1e9));
    in.cpu_rate_given = true;
  }
  if (!flags.cpu_rate_from.empty()) {
    if (!flags.cpu_rate.empty()) return InvalidArgument("--cpu_rate and --cpu_rate_from: give one of them");
    if (!pipeline.spec) return InvalidArgument("--cpu_rate_from: the pipeline did not load");
    std::error_code ec;
    // Anything there that is not a folder goes to the bench reader, which names a FIFO or a device
    // as such (and never opens it in a way that blocks).
    const bool is_file = std::filesystem::exists(flags.cpu_rate_from, ec) && !std::filesystem::is_directory(flags.cpu_rate_from, ec);
    if (!is_file && !std::filesystem::is_directory(flags.cpu_rate_from, ec)) {
      return InvalidArgument("--cpu_rate_from '" + flags.cpu_rate_from +
                             "': neither a job dir nor a file (a `dfworker bench --format=json` result)");
    }
    Result<std::pair<double, std::string>> measured = is_file ? CpuRateFromBench(flags.cpu_rate_from, flags.pipeline_path)
                                                              : CpuRateFromJob(flags.cpu_rate_from, *pipeline.spec);
    if (!measured.ok()) return Status(measured.status().code(), "--cpu_rate_from: " + measured.status().message());
    in.cpu_records_per_vcpu_second = measured->first;
    in.cpu_rate_given = true;
    in.cpu_rate_how = "measured: " + measured->second;
  }
  if (!flags.gpu_efficiency.empty()) {
    ASSIGN_OR_RETURN(double e, PositiveFlag("--gpu_efficiency", flags.gpu_efficiency, 1));
    in.gpu_efficiency = e;
  }
  if (!flags.gpu_efficiency_from.empty()) {
    if (!flags.gpu_efficiency.empty()) return InvalidArgument("--gpu_efficiency and --gpu_efficiency_from: give one of them");
    Result<std::map<std::string, MeasuredEfficiency>> measured = EfficiencyFrom(flags.gpu_efficiency_from, catalog, pipeline);
    if (!measured.ok()) return Status(measured.status().code(), "--gpu_efficiency_from: " + measured.status().message());
    in.gpu_efficiency_by_model = std::move(*measured);
  }
  if (!flags.max_cost_per_million.empty()) {
    ASSIGN_OR_RETURN(double max, PositiveFlag("--max_cost_per_million", flags.max_cost_per_million, 1e12));
    in.max_cost_per_million = max;
  }
  if (!flags.deadline.empty()) {
    ASSIGN_OR_RETURN(double hours, PositiveFlag("--deadline", flags.deadline, 1e6));
    if (!in.records) return InvalidArgument("--deadline " + flags.deadline + " h needs --records N (the job's size)");
    in.deadline_hours = hours;
  }
  ASSIGN_OR_RETURN(in.workers, Workers(options));
  in.objective = flags.objective == "time" ? Objective::kTime : Objective::kCost;
  in.streaming = options.streaming;
  if (!flags.prices.empty()) {
    Result<PriceTable> table = PriceTable::Load(flags.prices);
    if (!table.ok()) return Status(table.status().code(), "--prices: " + table.status().message());
    prices = std::move(*table);
  } else if (Result<PriceTable> table = catalog.Prices(); table.ok()) {
    prices = std::move(*table);
  }
  if (prices) {
    const std::string region = !flags.region.empty() ? flags.region : options.region.value_or(kDefaultPriceRegion);
    in.prices = prices->Find(region);
    // The pipeline's own --region without list prices for it: plan without costs, saying so. A
    // region asked for (--price_region) or a price file given (--prices) must have its rates.
    if (!in.prices && flags.region.empty() && flags.prices.empty()) {
      in.price_note = "no list prices for the pipeline's region '" + region + "' in " + prices->origin() +
                      " (regions: " + Join(prices->Regions()) + "): no costs; pass --prices FILE with its rates";
      if (flags.objective.empty()) in.objective = Objective::kTime;
      return in;
    }
    if (!in.prices) {
      return InvalidArgument("region '" + region + "' is not in the price table " + prices->origin() +
                             DidYouMeanSuffix(region, prices->Regions()) + " (regions: " + Join(prices->Regions()) +
                             "; add it to a --prices FILE)");
    }
  }
  if (!in.prices && flags.objective.empty()) in.objective = Objective::kTime;  // nothing to be cheap by
  return in;
}


int Plan(const PlanFlags& flags, const std::vector<std::string>& leftovers, std::vector<std::string> pipeline_args) {
  if (!leftovers.empty()) return InvocationError("dfworker plan", "unexpected argument '" + leftovers.front() + "' (one pipeline file is expected)");
  Result<JinjaVariablesText> variables = JinjaVariables(flags.jinja, pipeline_args);
  if (!variables.ok()) return InvocationError("dfworker plan", variables.status().message());
  auto yaml = ReadPipelineFile(flags.pipeline_path, *variables);
  if (!yaml.ok()) return InvocationError("dfworker plan", yaml.status().message());
  auto catalog = Catalog::Locate(flags.catalog_dir);
  if (!catalog.ok()) return InvocationError("dfworker plan", "catalog: " + catalog.status().message());
  PipelineOptions options = ParsePipelineOptions(pipeline_args, *yaml, flags.pipeline_path);
  // The user's Python, as `run` takes it: the pipeline's callables load in it below.
  const std::string python_env = options.python_env ? options.python_env->value : std::string();
  if (Status s = python::UseEnvironment(python_env); !s.ok()) return InvocationError("dfworker plan", s.message());
  if (Status s = UsePipelineDependencies(*yaml, flags.pipeline_path, python_env); !s.ok()) {
    return InvocationError("dfworker plan", s.message());
  }
  // The launch check's loading half: the catalog-wide plan below replaces the one-worker plan.
  LaunchRequest launch;
  launch.pipeline_path = flags.pipeline_path;
  launch.pipeline_yaml = *yaml;
  launch.checks = ModelChecks::kConfigOnly;
  launch.plan_worker = false;
  PipelineModels pipeline = CheckLaunch(launch, options, *catalog).pipeline;
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
  std::optional<PriceTable> prices;
  Result<EstimateInputs> estimate = EstimateFlags(flags, options, *catalog, pipeline, prices);
  if (!estimate.ok()) return InvocationError("dfworker plan", estimate.status().message());
  CatalogPlanRequest request{flags.gpus, flags.mig_instances, *estimate};
  if (flags.objective == "fit") request.estimate.reset();  // memory fit only, as before estimates
  auto plan = MakeCatalogPlan(options, *catalog, pipeline.models, host, request);
  if (!plan.ok()) return InvocationError("dfworker plan", plan.status().message());
  if (!plan->constraint_miss.empty()) return InvocationError("dfworker plan", plan->constraint_miss);
  if (!plan->sequence_miss.empty()) return InvocationError("dfworker plan", plan->sequence_miss);
  for (const Diagnostic& d : pipeline.diagnostics) {
    if (d.code == "model-weights-absent") plan->notes.push_back(d.message);
  }
  std::cout << (flags.format == "json" ? RenderCatalogPlanJson(*plan) : RenderCatalogPlanText(*plan, flags.all)) << std::flush;
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
  plan->add_option("--records", flags->records, "Records in the job: adds its hours and cost per configuration");
  plan->add_option("--prices", flags->prices,
                   "Price table of your own rates (format of configs/prices.yaml; default: the catalog's list prices)");
  plan->add_option("--price_region", flags->region,
                   "Region of the prices (default: the pipeline's --region, else us-central1)");
  plan->add_option("--cpu_rate", flags->cpu_rate,
                   "Records/s one vCPU reads, parses, maps and writes (default: an assumed 2000; measure with bench)");
  plan->add_option("--cpu_rate_from", flags->cpu_rate_from,
                   "Job dir of a finished `dfworker run` of this pipeline, or a `dfworker bench --format=json` result of "
                   "it: its records per CPU-second outside RunInference");
  plan->add_option("--gpu_efficiency", flags->gpu_efficiency,
                   "Share of the GPU's FP32 peak the model reaches, in (0, 1] (default: the handler's stated value)");
  plan->add_option("--gpu_efficiency_from", flags->gpu_efficiency_from,
                   "File of handler efficiencies measured on a GPU (scripts/gpu-check.sh writes gpu-efficiency.json)");
  plan->add_option("--objective", flags->objective,
                   "cost (default with prices), time (most records/s per worker leads), or fit (memory only)")
      ->check(CLI::IsMember({"cost", "time", "fit"}));
  plan->add_flag("--all", flags->all, "List every fitting configuration in the estimate table (default: the 10 cheapest)");
  plan->add_option("--max_cost_per_million", flags->max_cost_per_million,
                   "Recommend only configurations at most this cost per million records (exit 2 when none)");
  plan->add_option("--deadline", flags->deadline,
                   "Recommend only configurations whose job (--records) takes at most this many hours (exit 2 when none)");
  AddJinjaFlags(plan, flags->jinja);
  plan->callback([plan, flags, &context] {
    context.exit_code = Plan(*flags, plan->remaining(), context.pipeline_args);
  });
}

}  // namespace dfw::cli
