// `dfworker bench PIPELINE.yaml --sweep KEY=V1,V2 [--sweep ...] [--records N] [--repeat R]
// [--report FILE.html] [--format text|json] [pipeline flags]`: runs the real `dfworker run` (this executable, through
// the launcher's process seam) once per grid point and repeat, each in a fresh job dir under a
// temporary root, and prints the table of dfw/report/sweep.h. Pipeline edits a point needs
// (batch size, model copies, the sample input, private output paths) go into a copy of the
// pipeline file; flags go on the command line.
#include <poll.h>
#include <signal.h>
#include <unistd.h>
#include <stdlib.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "commands.h"
#include "jinja_flags.h"
#include "dfw/common/file.h"
#include "dfw/common/exit_code.h"
#include "dfw/common/strings.h"
#include "dfw/job/job_dir.h"
#include "dfw/metrics/job_metrics.h"
#include "dfw/common/process_launcher.h"
#include "dfw/report/bench_json.h"
#include "dfw/report/sweep.h"
#include "dfw/options/parse.h"
#include "dfw/launcher/pipeline_job_plan.h"
#include "dfw/pipeline/spec.h"
#include "dfw/stages/stage.h"
#include "dfw/common/process.h"

namespace dfw::cli {
namespace {

namespace fs = std::filesystem;
using report::SweepPoint;

struct BenchFlags {
  std::string pipeline_path;
  std::vector<std::string> sweeps;
  std::vector<std::string> constraints;  // METRIC<=N a recommended point must meet
  std::string objective = "throughput";
  int64_t records = -1;  // -1 = the whole input
  int repeat = 3;
  std::string report;    // HTML page
  std::string format = "text";  // json: the sweep as one JSON document on stdout (report/bench_json.h)
  bool keep = false;     // keep the temporary root (job dirs, logs, outputs)
  JinjaFlags jinja;      // the file is rendered once; every run gets the rendered (and edited) text
};


volatile sig_atomic_t g_stop_signal = 0;  // set by the handler; the wait loop forwards it to the run
extern "C" void OnStopSignal(int sig) { g_stop_signal = sig; }


// worker_accelerator=...;use_nvidia_mps added or removed in a service-option string.
std::string SetMps(const std::string& text, bool on) {
  const std::size_t at = text.find("worker_accelerator=");
  if (at == std::string::npos) return text;
  const std::size_t begin = at + std::string("worker_accelerator=").size();
  std::size_t end = text.find(',', begin);
  if (end == std::string::npos) end = text.size();
  std::vector<std::string> kept;
  for (const std::string& item : Split(text.substr(begin, end - begin), ';')) {
    if (Trim(item) != "use_nvidia_mps" && !Trim(item).empty()) kept.push_back(item);
  }
  if (on) kept.push_back("use_nvidia_mps");
  return text.substr(0, begin) + Join(kept, ";") + text.substr(end);
}

// What the bench rewrites in the pipeline file, found once from the loader's pipeline: which
// transforms are which (the loader's own reading of the file, composites and chains included), and
// where each one stands in the file, to edit the YAML of every point there.
struct PipelineEdits {
  std::string text;  // the pipeline (after Jinja), parsed again for each point
  std::map<std::string, report::StageKind> kinds;  // by transform name, as its metrics name it
  bool accelerator_in_yaml = false;
  // 1-based line and column of a transform's mapping in `text` (StageConfig::line/column).
  using Position = std::pair<int, int>;
  std::vector<Position> run_inference;  // RunInference transforms (what batch_size / model_copies edit)
  // Sources replaced by a sample and sinks moved under the point's folder: the new `config.path`
  // ("@OUT@/" starts a sink's, replaced by the point's output folder).
  std::vector<std::pair<Position, std::string>> paths;
};

report::StageKind KindOf(const std::string& type) {
  if (type.starts_with("ReadFrom") || type == "Create") return report::StageKind::kRead;
  if (type.starts_with("WriteTo")) return report::StageKind::kWrite;
  if (type == "RunInference") return report::StageKind::kInference;
  return report::StageKind::kTransform;
}

// Every mapping of the document by its 1-based position, as the loader records a transform's
// (the mapping's own mark). Iterative, over a document the loader has already checked.
std::map<PipelineEdits::Position, YAML::Node> MappingsByPosition(const YAML::Node& root) {
  std::map<PipelineEdits::Position, YAML::Node> out;
  std::vector<YAML::Node> todo{root};
  while (!todo.empty()) {
    YAML::Node n = todo.back();
    todo.pop_back();
    if (n.IsMap()) {
      if (!n.Mark().is_null()) out.emplace(PipelineEdits::Position{n.Mark().line + 1, n.Mark().column + 1}, n);
      for (auto kv : n) todo.push_back(kv.second);
    } else if (n.IsSequence()) {
      for (auto item : n) todo.push_back(item);
    }
  }
  return out;
}

// Writes the first `records` records of `path` (a CSV keeps its header) to `out`.
Status Sample(const std::string& path, bool csv, int64_t records, const std::string& out, int64_t& written) {
  std::ifstream in(path);
  if (!in) return InvalidArgument("--records: cannot read the source file '" + path + "'");
  std::ofstream o(out);
  std::string line;
  written = 0;
  if (csv && std::getline(in, line)) o << line << "\n";
  while (written < records && std::getline(in, line)) {
    o << line << "\n";
    ++written;
  }
  if (!o) return Status(StatusCode::kIoError, "writing the sample " + out);
  return Status::OK();
}

Result<PipelineEdits> LoadEdits(const BenchFlags& flags, const std::string& pipeline_text, const PipelineSpec& spec,
                                const std::string& root_dir) {
  PipelineEdits e;
  e.text = pipeline_text;
  int index = 0;
  for (const TransformSpec& t : spec.transforms) {
    const StageConfig& c = t.config;
    e.kinds[c.name] = KindOf(c.type);
    const PipelineEdits::Position at{c.line, c.column};
    if (c.type == "RunInference") e.run_inference.push_back(at);
    if (!c.config["path"].IsScalar()) continue;
    const std::string path = c.config["path"].Scalar();
    const int i = index++;
    if (c.type.starts_with("WriteTo")) {
      // Private outputs per point: the job's own folder, never the pipeline's out/.
      e.paths.push_back({at, "@OUT@/" + std::to_string(i) + "/" + fs::path(path).filename().string()});
    } else if (c.type.starts_with("ReadFrom") && flags.records > 0) {
      std::error_code ec;
      if (!fs::is_regular_file(path, ec)) {
        return InvalidArgument("--records samples a source file, but '" + c.name + "' reads '" + path +
                               "' (not one file: a pattern or a folder); leave --records out to read it all");
      }
      const std::string sample = root_dir + "/sample-" + std::to_string(i) + fs::path(path).extension().string();
      int64_t written = 0;
      RETURN_IF_ERROR(Sample(path, c.type == "ReadFromCsv", flags.records, sample, written));
      if (written < flags.records) {
        std::cerr << "[bench] " << c.name << ": '" << path << "' has " << written << " records, fewer than --records "
                  << flags.records << "; using them all\n";
      }
      e.paths.push_back({at, sample});
    }
  }
  try {
    const YAML::Node root = YAML::Load(pipeline_text);
    if (YAML::Node opts = root["options"]; opts && opts.IsMap()) {
      for (const char* key : {"dataflow_service_options", "experiments"}) {
        if (YAML::Node v = opts[key]; v) e.accelerator_in_yaml |= YAML::Dump(v).find("worker_accelerator=") != std::string::npos;
      }
    }
  } catch (const YAML::Exception& ex) {  // (the loader read it: not expected)
    return InvalidArgument(flags.pipeline_path + ": not valid YAML: " + ex.msg);
  }
  return e;
}

// The pipeline file of one point: batch size, model copies and dtype in every RunInference, MPS
// in the YAML accelerator, sources and outputs as LoadEdits chose them (outputs under `out_dir`).
Result<std::string> PointYaml(const PipelineEdits& e, const SweepPoint& point, const std::string& out_dir) {
  try {
    YAML::Node root = YAML::Load(e.text);
    const std::map<PipelineEdits::Position, YAML::Node> at = MappingsByPosition(root);
    auto transform = [&](const PipelineEdits::Position& p) -> Result<YAML::Node> {
      auto it = at.find(p);
      if (it == at.end()) return Internal(fmt::format("bench: no transform at line {}, column {}", p.first, p.second));
      return it->second;
    };
    for (const auto& [p, path] : e.paths) {
      ASSIGN_OR_RETURN(YAML::Node t, transform(p));
      t["config"]["path"] = path.starts_with("@OUT@/") ? out_dir + path.substr(5) : path;
    }
    for (const PipelineEdits::Position& p : e.run_inference) {
      ASSIGN_OR_RETURN(YAML::Node t, transform(p));
      YAML::Node config = t["config"];
      if (!config || !config.IsMap() || !config["model_handler"] || !config["model_handler"]["config"]) continue;
      YAML::Node handler = config["model_handler"]["config"];
      if (auto it = point.find("batch_size"); it != point.end()) {
        handler["min_batch_size"] = it->second;
        handler["max_batch_size"] = it->second;
      }
      if (auto it = point.find("model_copies"); it != point.end()) handler["model_copies"] = it->second;
      // dtype where the handler takes one (an explicit dtype this CPU cannot run fails the point at
      // load, exit 2, with the reason in the table).
      if (auto it = point.find("dtype"); it != point.end()) {
        const std::string type = config["model_handler"]["type"] ? config["model_handler"]["type"].Scalar() : "";
        if (type == "SentenceEmbeddingHandler" || type == "MlpModelHandlerSafetensors") handler["dtype"] = it->second;
      }
    }
    if (auto it = point.find("mps"); it != point.end() && e.accelerator_in_yaml) {
      YAML::Node opts = root["options"];
      for (const char* key : {"dataflow_service_options", "experiments"}) {
        YAML::Node v = opts[key];
        if (!v) continue;
        if (v.IsScalar()) opts[key] = SetMps(v.Scalar(), it->second == "on");
        if (v.IsSequence()) {
          for (std::size_t i = 0; i < v.size(); ++i) v[i] = SetMps(v[i].Scalar(), it->second == "on");
        }
      }
    }
    YAML::Emitter out;
    out << root;
    return std::string(out.c_str()) + "\n";
  } catch (const YAML::Exception& ex) {
    return Internal("bench: editing the pipeline for a point: " + ex.msg);
  }
}

std::vector<std::string> PointArgs(const SweepPoint& point, const std::vector<std::string>& pipeline_args) {
  std::vector<std::string> args;
  for (const std::string& a : pipeline_args) {
    auto mps = point.find("mps");
    args.push_back(mps != point.end() && a.find("worker_accelerator=") != std::string::npos ? SetMps(a, mps->second == "on") : a);
  }
  if (auto it = point.find("sdk_processes"); it != point.end()) args.push_back("--sdk_worker_parallelism=" + it->second);
  if (auto it = point.find("harness_threads"); it != point.end()) {
    args.push_back("--number_of_worker_harness_threads=" + it->second);
  }
  return args;
}

// This host's CPU as /proc/cpuinfo names it ("" when it does not).
std::string HostCpuModel() {
  Result<std::string> cpuinfo = ReadWholeFile("/proc/cpuinfo", 16 * kMiB);
  if (!cpuinfo.ok()) return "";
  for (const std::string& line : Split(*cpuinfo, '\n')) {
    if (!line.starts_with("model name")) continue;
    const std::size_t colon = line.find(':');
    if (colon != std::string::npos) return std::string(Trim(line.substr(colon + 1)));
  }
  return "";
}

std::string LastLine(const std::string& path) {
  auto text = ReadWholeFile(path);
  if (!text.ok()) return "";
  std::string t = std::string(Trim(*text));
  const std::size_t nl = t.rfind('\n');
  return nl == std::string::npos ? t : t.substr(nl + 1);
}

// One `dfworker run` of a point, through the launcher's process seam; forwards SIGINT/SIGTERM.
report::RunMeasurement RunOnce(ProcessLauncher& launcher, const std::string& yaml_path, const std::vector<std::string>& args,
                               const std::string& run_dir) {
  report::RunMeasurement m;
  fs::create_directories(run_dir);
  ProcessSpec spec;
  spec.argv = {SelfExecutable(), "run", yaml_path, "--job_dir=" + run_dir + "/job",
               "--log_level=warn"};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.log_path = run_dir + "/run.log";
  const auto start = std::chrono::steady_clock::now();
  auto pid = launcher.Start(spec);
  if (!pid.ok()) {
    m.exit_code = -1;
    m.error = pid.status().message();
    return m;
  }
  bool forwarded = false;
  for (;;) {
    std::vector<ProcessExit> done = launcher.ReapExited();
    if (!done.empty()) {
      m.max_rss_kib = done[0].max_rss_kib;
      m.exit_code = done[0].exit.exited ? done[0].exit.exit_code : 128 + done[0].exit.signal;
      if (!done[0].exit.success()) m.error = "dfworker run " + done[0].exit.Describe() + ": " + LastLine(spec.log_path);
      break;
    }
    if (g_stop_signal != 0 && !forwarded) {
      launcher.Signal(*pid, g_stop_signal);
      forwarded = true;
    }
    ::poll(nullptr, 0, 5);  // the run takes ≥ 100 ms; 5 ms of reap latency is noise
  }
  m.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!m.error.empty()) return m;
  if (fs::exists(run_dir + "/job/stages.json")) {
    m.error = "the pipeline ran as fused stages (it has a Combine or Join), each stage a job dir with its own metrics.json; "
              "bench does not sweep staged pipelines yet";
    return m;
  }
  auto text = ReadWholeFile(run_dir + "/job/metrics.json");
  auto metrics = text.ok() ? ParseJobMetrics(*text) : Result<JobMetrics>(text.status());
  if (!metrics.ok()) {
    m.error = "metrics.json: " + metrics.status().message();
  } else {
    m.metrics = std::move(*metrics);
    m.gpu_memory = report::ReadGpuMemory(run_dir + "/job");
  }
  return m;
}

int Bench(const BenchFlags& flags, const std::vector<std::string>& leftovers, std::vector<std::string> pipeline_args) {
  if (!leftovers.empty()) return InvocationError("dfworker bench", "unexpected argument '" + leftovers.front() + "' (one pipeline file is expected)");
  if (flags.records == 0 || flags.records < -1) return InvocationError("dfworker bench", "--records " + std::to_string(flags.records) + ": must be 1 or more");
  if (flags.repeat < 1 || flags.repeat > 20) return InvocationError("dfworker bench", "--repeat " + std::to_string(flags.repeat) + ": must be from 1 to 20");
  std::vector<report::SweepAxis> axes;
  for (const std::string& s : flags.sweeps) {
    auto axis = report::ParseSweep(s);
    if (!axis.ok()) return InvocationError("dfworker bench", axis.status().message());
    axes.push_back(std::move(*axis));
  }
  auto grid = report::MakeGrid(axes);
  if (!grid.ok()) return InvocationError("dfworker bench", grid.status().message());
  report::SweepSelection selection;
  for (const std::string& c : flags.constraints) {
    auto parsed = report::ParseConstraint(c);
    if (!parsed.ok()) return InvocationError("dfworker bench", parsed.status().message());
    selection.constraints.push_back(std::move(*parsed));
  }
  auto objective = report::ParseObjective(flags.objective);
  if (!objective.ok()) return InvocationError("dfworker bench", objective.status().message());
  selection.objective = *objective;
  std::error_code ec;
  if (!fs::is_regular_file(flags.pipeline_path, ec)) return InvocationError("dfworker bench", "pipeline file '" + flags.pipeline_path + "' is not a file");
  Result<JinjaVariablesText> variables = JinjaVariables(flags.jinja, pipeline_args);
  if (!variables.ok()) return InvocationError("dfworker bench", variables.status().message());
  Result<std::string> pipeline_text = ReadPipelineFile(flags.pipeline_path, *variables);
  if (!pipeline_text.ok()) return InvocationError("dfworker bench", pipeline_text.status().message());
  StageRegistry registry;
  RegisterBuiltinStages(registry, ModelChecks::kConfigOnly);  // (each point's run checks it in full)
  // What the bench edits is found in the loader's pipeline; a pipeline it refuses would fail every point.
  Result<PipelineSpec> spec = LoadPipelineString(*pipeline_text, registry, flags.pipeline_path);
  if (!spec.ok()) return InvocationError("dfworker bench", spec.status().message());
  {
    auto stages = DescribePipelineStages(*spec, 1);
    if (stages.ok() && stages->count > 1) {
      return InvocationError("dfworker bench", "the pipeline has a Combine or Join, so it runs as " + std::to_string(stages->count) +
                   " fused stages, each a job dir with its own metrics; bench does not sweep staged pipelines yet "
                   "(run it with dfworker run; dfworker report JOB_DIR shows each stage)");
    }
  }

  std::string root_template = (fs::temp_directory_path() / "dfw-bench-XXXXXX").string();
  if (::mkdtemp(root_template.data()) == nullptr) return InvocationError("dfworker bench", "cannot create a temporary folder under " + fs::temp_directory_path().string());
  const std::string root = root_template;
  auto edits = LoadEdits(flags, *pipeline_text, *spec, root);
  bool has_accelerator = false;
  for (const std::string& a : pipeline_args) has_accelerator |= a.find("worker_accelerator=") != std::string::npos;
  int code = 0;
  if (!edits.ok()) {
    code = InvocationError("dfworker bench", edits.status().message());
  } else if (std::any_of(axes.begin(), axes.end(), [](const auto& a) { return a.key == "mps"; }) && !has_accelerator &&
             !edits->accelerator_in_yaml) {
    code = InvocationError("dfworker bench", "--sweep mps needs a worker_accelerator to switch MPS on and off, e.g. "
                 "--dataflow_service_options=\"worker_accelerator=type:nvidia-l4;count:1;install-nvidia-driver\"");
  } else if (edits->run_inference.empty()) {
    // These keys edit RunInference's model_handler: without one every point would be the same run.
    for (const auto& a : axes) {
      if (a.key == "batch_size" || a.key == "model_copies" || a.key == "dtype") {
        code = InvocationError("dfworker bench", "--sweep " + a.key + ": the pipeline has no RunInference transform, so " +
                                                     a.key + " would change nothing; sweep another key");
        break;
      }
    }
  }
  if (code == 0 && !flags.report.empty()) {
    // Before the sweep, not after it: a report that cannot be written fails in a second, not an hour.
    fs::path parent = fs::path(flags.report).parent_path();
    if (parent.empty()) parent = ".";
    if (!fs::is_directory(parent, ec) || ::access(parent.c_str(), W_OK) != 0) {
      code = InvocationError("dfworker bench", "--report " + flags.report + ": folder '" + parent.string() +
                                                   "' does not exist or is not writable");
    }
  }
  if (code != 0) {
    fs::remove_all(root, ec);
    return code;
  }

  struct sigaction sa {};
  sa.sa_handler = OnStopSignal;
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
  auto launcher = MakePosixProcessLauncher();
  std::vector<report::PointSummary> summaries;
  const std::size_t total = grid->size() * static_cast<std::size_t>(flags.repeat);
  std::size_t done = 0;
  std::cerr << "[bench] " << grid->size() << " point(s) x " << flags.repeat << " run(s) under " << root << "\n";
  for (std::size_t p = 0; p < grid->size() && g_stop_signal == 0; ++p) {
    const SweepPoint& point = (*grid)[p];
    const std::string point_dir = root + "/point-" + std::to_string(p);
    fs::create_directories(point_dir);
    std::vector<report::RunMeasurement> runs;
    for (int r = 0; r < flags.repeat && g_stop_signal == 0; ++r) {
      const std::string run_dir = point_dir + "/run-" + std::to_string(r);
      const std::string yaml_path = run_dir + ".yaml";
      report::RunMeasurement m;
      Result<std::string> yaml = PointYaml(*edits, point, run_dir + "/out");
      Status wrote = yaml.ok() ? WriteFileAtomically(yaml_path, *yaml, /*sync=*/false) : yaml.status();
      if (!wrote.ok()) {
        m.exit_code = 1;
        m.error = "cannot write the point's pipeline: " + wrote.message();  // a failed point, said so
      } else {
        m = RunOnce(*launcher, yaml_path, PointArgs(point, pipeline_args), run_dir);
      }
      ++done;
      if (g_stop_signal != 0) break;  // an interrupted run measures nothing
      char line[256];
      const int64_t recs = m.metrics.total.CounterOr("dfworker", "records");
      std::snprintf(line, sizeof line, "[bench] %zu/%zu %s run %d: ", done, total, report::PointName(point).c_str(), r + 1);
      std::cerr << line
                << (m.error.empty() ? std::to_string(recs) + " records, " +
                                          std::to_string(static_cast<int64_t>(m.metrics.elapsed_s > 0 ? recs / m.metrics.elapsed_s : 0)) +
                                          " records/s in " + std::to_string(m.wall_s).substr(0, 5) + " s"
                                    : "failed: " + m.error)
                << "\n";
      runs.push_back(std::move(m));
    }
    if (!runs.empty()) summaries.push_back(report::Summarize(point, std::move(runs), edits->kinds));
  }
  std::vector<report::PointSummary> sorted = report::SortByObjective(std::move(summaries), selection.objective);
  if (g_stop_signal != 0) {
    (flags.format == "json" ? std::cerr : std::cout) << "interrupted: " << sorted.size() << " of " << grid->size()
                                                     << " point(s) measured\n";
  }
  if (flags.format == "json") {
    report::BenchContext context;
    context.pipeline_path = flags.pipeline_path;
    // The file's own bytes (before Jinja), as `dfworker plan --cpu_rate_from` hashes the file it plans.
    auto raw = ReadWholeFile(flags.pipeline_path);
    context.pipeline_hash = report::PipelineContentHash(raw.ok() ? *raw : *pipeline_text);
    const PipelineOptions options = ParsePipelineOptions(pipeline_args, *pipeline_text, flags.pipeline_path);
    if (options.machine_type) context.machine_type = options.machine_type->value;
    context.host_cpu_cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    context.host_cpu_model = HostCpuModel();
    context.repeat = flags.repeat;
    context.records = flags.records;
    std::cout << report::RenderSweepJson(sorted, context, selection) << std::flush;
  } else {
    std::cout << report::RenderSweepTable(sorted, flags.repeat, selection) << std::flush;
  }
  bool report_failed = false;
  if (!flags.report.empty()) {
    Status s = WriteFileAtomically(flags.report, report::RenderSweepHtml(sorted, flags.pipeline_path, flags.repeat),
                                   /*sync=*/false, kOutputFileMode);
    if (!s.ok()) {
      // Asked for a report and none was written: the command failed, whatever the points did.
      std::cerr << "dfworker bench: error: writing " << flags.report << ": " << s.message() << "\n";
      report_failed = true;
    } else {
      std::cerr << "[bench] report: " << flags.report << "\n";
    }
  }
  if (flags.keep) {
    std::cerr << "[bench] job dirs kept under " << root << "\n";
  } else {
    fs::remove_all(root, ec);
  }
  if (g_stop_signal != 0) return g_stop_signal == SIGINT ? static_cast<int>(ExitCode::kInterrupted) : static_cast<int>(ExitCode::kTerminated);
  if (report_failed) return static_cast<int>(ExitCode::kRunFailed);
  for (const auto& s : sorted) {
    if (s.failed == 0) return 0;
  }
  return static_cast<int>(ExitCode::kRunFailed);
}

}  // namespace

void AddBenchCommand(CLI::App& app, CliContext& context) {
  auto flags = std::make_shared<BenchFlags>();
  CLI::App* bench = app.add_subcommand("bench", "Run the pipeline over a grid of configurations and find where the time goes");
  bench->footer("Keys: " + Join(report::SweepKeys()) +
                ". Pipeline flags are passed to every run. See docs/right-sizing.md.");
  bench->allow_extras();
  bench->add_option("pipeline", flags->pipeline_path, "Pipeline file")->required();
  bench->add_option("--sweep", flags->sweeps, "KEY=V1,V2,... (repeat for more keys; the grid is every combination)")
      ->allow_extra_args(false);
  bench->add_option("--constraint", flags->constraints,
                    "METRIC<=N (or <, >=, >) a recommended point must meet, e.g. p99_batch_latency_ms<=50, peak_rss_gib<=4 "
                    "(repeat for more)");
  bench->add_option("--objective", flags->objective, "What the best point is: throughput (default), latency (lowest p99 "
                    "batch latency) or memory (lowest peak RSS)");
  bench->add_option("--records", flags->records, "Run on the first N records of each source file (default: all)");
  bench->add_option("--repeat", flags->repeat, "Runs per grid point (median and spread), default 3");
  bench->add_option("--report", flags->report, "Also write the sweep as an HTML page here");
  bench->add_option("--format", flags->format,
                    "text (the table) or json (every point's medians and CPU side, for plan --cpu_rate_from)")
      ->check(CLI::IsMember({"text", "json"}));
  bench->add_flag("--keep", flags->keep, "Keep the temporary folder with every run's job dir");
  AddJinjaFlags(bench, flags->jinja);
  bench->callback([bench, flags, &context] {
    context.exit_code = Bench(*flags, bench->remaining(), context.pipeline_args);
  });
}

}  // namespace dfw::cli
