// `dfworker report JOB_DIR`: one self-contained HTML page of a finished (or stopped) run, from the
// job dir's job.json, manifest.jsonl and metrics.json. Inline SVG only: no script, no network.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "dfw/common/status.h"
#include "dfw/job/job_dir.h"
#include "dfw/metrics/job_metrics.h"

namespace dfw::report {

// What the models of a run ran as, per metrics namespace of a RunInference handler, from the
// figures the handlers record (model_handler.h LoadFigures/BatchFigures): the precision of the
// Linear layers (linear_dtype_bits; min and max over processes), the CPU's matrix instructions
// (cpu_isa_level, CpuIsa::Level), the share of the encoder's work spent on padding
// (batch_tokens / batch_computed_tokens) and the model's achieved FLOP/s (batch_kflop over
// inference_batch_latency_micro_secs). Each is absent (< 0) when the run has no such figure.
struct ModelFigures {
  std::string ns;
  int dtype_bits_min = -1, dtype_bits_max = -1;
  int isa_level = -1;
  double padding = -1;  // in [0, 1)
  double gflops = -1;
  // The run-time precision check (dfw/inference/precision_monitor.h): rows recomputed in float32,
  // their worst and mean cosine (embeddings) or argmax agreement and largest |p - p_float32|
  // (classifiers), and how many switches to a safer dtype it made. -1: no such figure.
  int64_t checked_rows = 0;
  double check_min_cosine = -1, check_mean_cosine = -1;
  double check_argmax_agreement = -1, check_max_prob_diff = -1;
  int64_t precision_switches = 0;
  // "checked 512 rows against float32: min cosine 0.99812, mean 0.99950; 1 switch to a safer dtype"
  // ("" without checks).
  std::string DescribeCheck() const;
  // "bfloat16, AMX, padding 12.7%, 270 GFLOP/s" (the parts it has; "" for none).
  std::string Describe() const;
  // "float32" / "bfloat16" / "int8", "mixed (…)" when processes differ, "" without the figure.
  std::string DType() const;
};
std::vector<ModelFigures> SummarizeModels(const MetricsSnapshot& total);
// cpu_isa_level's name (the levels of dfw/backend/cpu_isa.h CpuIsa::Level): "baseline", "AVX2",
// "AVX-512", "AVX-512 VNNI/BF16", "AMX"; "?" out of range.
const char* CpuIsaLevelName(int level);

// One line of manifest.jsonl.
struct CommitEntry {
  std::string bundle;
  int64_t attempt = 0;
  int64_t records = 0;    // the bundle's dfworker/records counter
  double busy_s = 0;      // its dfworker/busy_ms counter
};

// gpu_memory.json, written by `dfworker run` when the worker has an accelerator.
struct GpuMemoryRecord {
  std::string gpu, backend;
  double capacity = 0, planned_peak = 0, contexts = 0, models = 0, workspace = 0;  // bytes
  double measured_model_hosts = -1;  // bytes the model hosts held (emulated ledger); -1 = not measured
};

// <job_dir>/gpu_memory.json, or nullopt when it is absent or unreadable (a CPU-only worker has none).
std::optional<GpuMemoryRecord> ReadGpuMemory(const std::string& job_dir);

struct JobReportData {
  std::string job_dir;
  JobInfo info;
  JobMetrics metrics;
  std::vector<CommitEntry> commits;  // in commit order
  bool finished = false;             // FINISHED exists
  bool has_gpu_memory = false;       // gpu_memory.json was there and read
  GpuMemoryRecord gpu_memory;
};

// kInvalidArgument when `job_dir` is not a job dir (no job.json, or not one), kDataLoss naming
// the file for a corrupt job.json / metrics.json / manifest line, kNotFound when the run never
// wrote metrics.json. Reads only; never writes into the job dir.
Result<JobReportData> LoadJobReport(const std::string& job_dir);

// The page: headline figures, per-process timeline and records, per-stage time, batch-size and
// latency distributions, records per committed bundle, error counts. Chart ids: chart-processes,
// chart-records, chart-stage-time, chart-batch-size, chart-latency, chart-bundles, chart-errors, chart-gpu-memory (when gpu_memory.json exists).
std::string RenderJobReportHtml(const JobReportData& data);

}  // namespace dfw::report
