// `dfworker bench`: the sweep grid (parsing and validation), the measurements of each run, their
// median and spread per grid point, the table sorted by throughput, the recommendation and the
// bottleneck named from per-stage busy time. No processes here (the CLI runs them); pure values.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "dfw/common/status.h"
#include "dfw/metrics/job_metrics.h"
#include "dfw/report/job_report.h"

namespace dfw::report {

// The keys a sweep may vary, and what each maps to (docs/right-sizing.md):
//   sdk_processes   --sdk_worker_parallelism=N
//   harness_threads --number_of_worker_harness_threads=N
//   model_copies    model_handler.config.model_copies: N of every RunInference
//   mps             use_nvidia_mps added to / removed from worker_accelerator (on|off)
//   batch_size      model_handler.config min_batch_size = max_batch_size = N of every RunInference
//   dtype           model_handler.config dtype (auto, float32, bfloat16, int8) of every RunInference
//                   whose handler takes one (SentenceEmbeddingHandler, MlpModelHandlerSafetensors)
const std::vector<std::string>& SweepKeys();

// Points a sweep may have (every point runs --repeat times).
inline constexpr std::size_t kMaxSweepPoints = 64;

struct SweepAxis {
  std::string key;
  std::vector<std::string> values;  // normalised: integers as written, mps as "on"/"off"
};

// "KEY=V1,V2,..." → axis. kInvalidArgument naming the key or value: unknown key (did you mean),
// no '=', an empty list or empty value, a value that is not a whole number in [1, 4096] (mps:
// on/off/true/false; dtype: auto/float32/bfloat16/int8), a value given twice.
Result<SweepAxis> ParseSweep(std::string_view text);

using SweepPoint = std::map<std::string, std::string>;  // key -> value

// Every combination (first axis varies slowest). kInvalidArgument for a key swept twice, no axis,
// or more than kMaxSweepPoints points (saying how many and how to narrow it).
Result<std::vector<SweepPoint>> MakeGrid(const std::vector<SweepAxis>& axes);

// "sdk_processes=2 batch_size=64".
std::string PointName(const SweepPoint& point);

// What a stage does, for naming the bottleneck.
enum class StageKind { kRead, kTransform, kInference, kWrite };

// One run of one point.
struct RunMeasurement {
  int exit_code = 0;
  std::string error;          // why it failed ("" = ok)
  double wall_s = 0;          // fork to reap, measured by bench
  JobMetrics metrics;         // its metrics.json (valid when error is "")
  int64_t max_rss_kib = 0;    // wait4 ru_maxrss of the run's process tree (largest process)
  std::optional<GpuMemoryRecord> gpu_memory;  // the run's gpu_memory.json (workers with an accelerator)
};

struct PointSummary {
  SweepPoint point;
  std::vector<RunMeasurement> runs;
  int failed = 0;
  // Medians over the successful runs (0 when none succeeded), and the spread of records/s.
  double records_per_s = 0, records_per_s_min = 0, records_per_s_max = 0;
  double wall_s = 0;
  double idle_fraction = 0;    // mean over processes of idle_s / elapsed_s
  int64_t max_rss_kib = 0;     // the largest over runs
  double batch_latency_ms = 0; // mean inference latency per batch (0 = no RunInference)
  double batch_latency_p50_ms = 0, batch_latency_p99_ms = 0;  // from the histogram (median over runs)
  double batch_size = 0;       // mean batch size
  // What the models ran as (the last successful run): precision, ISA, padding, achieved FLOP/s.
  std::vector<ModelFigures> models;
  int64_t errors = 0;          // errors + failed_batches_counter, last successful run
  int64_t records = 0;
  std::map<std::string, double> stage_busy_s;  // median per transform of process_bundle_usecs
  std::string bottleneck;      // e.g. "inference-bound (Classify: 71% of stage time)"
  // GPU memory of the last successful run that had an accelerator: the plan's peak, what the
  // model hosts were measured to hold (emulated ledger; -1 = not measured), the GPU's capacity.
  // Without an accelerator all are -1 and the point fits.
  double gpu_planned_bytes = -1, gpu_measured_bytes = -1, gpu_capacity_bytes = -1;
  // The planned peak leaves 10% of the GPU free (validate's gpu-memory-tight rule): only such a
  // point is recommended.
  bool fits_with_headroom = true;
  // The CPU side of the point (what `dfworker plan --cpu_rate_from BENCH.json` reads): SDK processes
  // of the last successful run, the medians of process_bundle_usecs summed over the transforms that
  // are not RunInference (`cpu_stages`, by name), and records / that time:
  // records per CPU-second, i.e. per vCPU (0 when there is no such time).
  int sdk_processes = 0;
  double cpu_seconds = 0;
  std::vector<std::string> cpu_stages;
  double cpu_records_per_second = 0;
};

// `kinds` names each transform's kind (from the pipeline spec); an unknown name counts as kTransform.
PointSummary Summarize(const SweepPoint& point, std::vector<RunMeasurement> runs,
                       const std::map<std::string, StageKind>& kinds);

// The bottleneck from per-stage busy time: the kind with the largest share, with its leading stage.
// "inference-bound", "CPU preprocessing-bound: the accelerator would wait", "I/O-bound (read/parse)",
// "I/O-bound (write)"; "" without stage times.
std::string NameBottleneck(const std::map<std::string, double>& stage_busy_s,
                           const std::map<std::string, StageKind>& kinds);

// Sorted by median records/s (failed points last). The recommendation is the first point with no
// failed run; its flags are those that select it (FlagsFor).
std::vector<PointSummary> SortByThroughput(std::vector<PointSummary> points);

// Model-Analyzer-style selection: constraints a recommended point must meet, and what "best" is.
//   --constraint METRIC<=N (or <, >=, >), METRIC one of ConstraintMetrics():
//     records_per_s, wall_s, batch_latency_ms, p50_batch_latency_ms, p99_batch_latency_ms,
//     peak_rss_mib, peak_rss_gib, errors, idle_percent, gpu_planned_gib
//   --objective throughput (most records/s, the default) | latency (lowest p99 batch latency, then
//     throughput) | memory (lowest peak RSS, then throughput)
struct SweepConstraint {
  std::string metric, op;
  double value = 0;
  std::string text;  // as written, normalised ("p99_batch_latency_ms<=50")
};
const std::vector<std::string>& ConstraintMetrics();
// kInvalidArgument naming the problem: no operator, an unknown metric (did you mean), a value that
// is not a number.
Result<SweepConstraint> ParseConstraint(std::string_view text);
enum class SweepObjective { kThroughput, kLatency, kMemory };
Result<SweepObjective> ParseObjective(std::string_view text);
const char* ObjectiveName(SweepObjective objective);
// The value of `metric` for a point (the medians above); NaN for an unknown name.
double MetricOf(const PointSummary& point, const std::string& metric);
// "" when the point meets every constraint, else the first it misses: "p99_batch_latency_ms 73.1
// (needs <= 50)".
std::string ConstraintMiss(const PointSummary& point, const std::vector<SweepConstraint>& constraints);
struct SweepSelection {
  std::vector<SweepConstraint> constraints;
  SweepObjective objective = SweepObjective::kThroughput;
};
// Sorted best first by the objective (failed points last).
std::vector<PointSummary> SortByObjective(std::vector<PointSummary> points, SweepObjective objective);

// The index in `sorted` of the recommendation: the first point with no failed run, headroom on the
// GPU and every constraint met; -1 = none.
int RecommendedIndex(const std::vector<PointSummary>& sorted, const SweepSelection& selection);

// The table; the recommendation is the best point (the order of `sorted`) with no failed run,
// headroom on the GPU and every constraint met; a row that misses a constraint says which.
std::string RenderSweepTable(const std::vector<PointSummary>& sorted, int repeat, const SweepSelection& selection = {});
// The command-line flags / pipeline edits that select `point` (e.g. "--sdk_worker_parallelism=2
// (batch_size: set min_batch_size and max_batch_size to 64 in the RunInference config)").
std::string FlagsFor(const SweepPoint& point);

// The sweep as an HTML page: throughput per point with its spread, wall time, idle share, peak RSS,
// per-stage time per point. Chart ids: chart-sweep-throughput, chart-sweep-stages, chart-sweep-idle.
std::string RenderSweepHtml(const std::vector<PointSummary>& sorted, const std::string& pipeline, int repeat);

}  // namespace dfw::report
