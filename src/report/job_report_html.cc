// The job report page. Every figure comes from the job dir; a chart whose metrics are absent is
// replaced by a sentence saying so (never an empty or invented chart).
#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "dfw/common/strings.h"
#include "dfw/job/protocol.h"
#include "dfw/report/job_report.h"
#include "dfw/report/svg.h"

namespace dfw::report {
namespace {

constexpr const char* kBusy = "#4a78b5";
constexpr const char* kIdle = "#d5d9de";
constexpr const char* kError = "#c0504d";
constexpr const char* kResidual = "#e8a33d";

std::string Kpi(const std::string& value, const std::string& label) {
  return "<span class=\"kpi\"><b>" + Escape(value) + "</b>" + Escape(label) + "</span>";
}

// Transform namespaces in the order they first appear (the metric map is sorted by name).
std::vector<std::string> Namespaces(const MetricsSnapshot& s) {
  std::set<std::string> seen;
  std::vector<std::string> out;
  for (const auto& [key, v] : s.counters) {
    if (key.ns != kRecordsNamespace && seen.insert(key.ns).second) out.push_back(key.ns);
  }
  return out;
}

std::string Distributions(const JobMetrics& m, const char* name, double scale, const char* id, const char* title,
                          const char* unit) {
  std::vector<Range> ranges;
  for (const auto& [key, d] : m.total.distributions) {
    if (key.name != name || d.count == 0) continue;
    auto quantile = [scale](const DistributionData& x, double q) { return x.Quantile(q).value_or(-scale) / scale; };
    ranges.push_back({key.ns + " (all)", d.min / scale, d.mean() / scale, d.max / scale, static_cast<double>(d.count),
                      quantile(d, 0.5), quantile(d, 0.99)});
    for (const JobMetrics::Process& p : m.processes) {
      auto it = p.metrics.distributions.find(key);
      if (it == p.metrics.distributions.end() || it->second.count == 0) continue;
      const DistributionData& pd = it->second;
      ranges.push_back({key.ns + " sdk-" + std::to_string(p.index), pd.min / scale, pd.mean() / scale, pd.max / scale,
                        static_cast<double>(pd.count), quantile(pd, 0.5), quantile(pd, 0.99)});
    }
  }
  if (ranges.empty()) {
    return "<p class=\"note\">The metrics have no " + std::string(name) + " distribution (no RunInference ran).</p>\n";
  }
  return RangeChart(id, title, ranges, unit) +
         "<p class=\"note\">Line: min to max; dot: mean; ticks: p50 and p99 from the distribution's log-spaced "
         "histogram (each bucket at most 19% wide; a percentile is its bucket's upper edge).</p>\n";
}

}  // namespace

std::string RenderJobReportHtml(const JobReportData& d) {
  const JobMetrics& m = d.metrics;
  const int64_t records = m.total.CounterOr(kRecordsNamespace, kRecordsCounter);
  int64_t errors = 0;
  for (const auto& [key, v] : m.total.counters) {
    if (key.name == "errors" || key.name == "failed_batches_counter") errors += v;
  }
  std::string body = "<h1>dfworker report: " + Escape(m.job_id) + "</h1>\n<p class=\"note\">" + Escape(d.job_dir) +
                     " · executor " + Escape(d.info.executor) +
                     (d.info.params.count("pipeline_path") ? " · " + Escape(d.info.params.at("pipeline_path")) : "") +
                     " · " + (d.finished ? "finished" : "not finished (no FINISHED file)") + "</p>\n<p>";
  body += Kpi(std::to_string(records), "records");
  body += Kpi(Fixed(m.elapsed_s) + " s", "wall time");
  body += Kpi(m.elapsed_s > 0 ? ShortNumber(static_cast<double>(records) / m.elapsed_s) : "-", "records/s");
  body += Kpi(std::to_string(m.processes.size()), "SDK processes");
  body += Kpi(std::to_string(m.bundles_committed), "bundles");
  body += Kpi(std::to_string(m.retries), "retries");
  body += Kpi(std::to_string(errors), "errors");
  body += "</p>\n";

  // Processes: busy vs idle over the run, and records.
  body += "<h2>SDK processes</h2>\n" + Legend({{kBusy, "busy (in a bundle)"}, {kIdle, "idle (start-up, waiting, shutdown)"}});
  std::vector<Bar> timeline, per_records;
  for (const JobMetrics::Process& p : m.processes) {
    const std::string name = "sdk-" + std::to_string(p.index);
    timeline.push_back({name,
                        {{p.busy_s, kBusy, "busy " + Fixed(p.busy_s) + " s"}, {p.idle_s, kIdle, "idle " + Fixed(p.idle_s) + " s"}},
                        Fixed(m.elapsed_s > 0 ? 100.0 * p.idle_s / m.elapsed_s : 0, 0) + "% idle"});
    per_records.push_back({name, {{static_cast<double>(p.records), kBusy, std::to_string(p.records) + " records"}},
                           std::to_string(p.records) + " rec, " + std::to_string(p.bundles) + " bundles"});
  }
  body += BarChart("chart-processes", "Busy and idle time per SDK process", timeline, "s");
  body += BarChart("chart-records", "Records and bundles per SDK process", per_records, "records");
  if (!m.timeline.empty()) {
    // Each committed bundle of this run, from its lease to its commit, per process; residuals of
    // work-rebalancing splits drawn in their own colour.
    std::vector<TimelineRow> rows;
    for (const JobMetrics::Process& p : m.processes) {
      TimelineRow row{"sdk-" + std::to_string(p.index), {}, ""};
      if (static_cast<std::size_t>(p.index) < m.process_splits.size()) {
        const auto& sp = m.process_splits[static_cast<std::size_t>(p.index)];
        row.note = std::to_string(sp.given) + " splits given, " + std::to_string(sp.taken) + " taken";
      }
      rows.push_back(std::move(row));
    }
    for (const JobMetrics::Span& sp : m.timeline) {
      if (sp.process < 0 || static_cast<std::size_t>(sp.process) >= rows.size()) continue;
      const bool planned = d.info.bundles.empty() ||
                           std::find(d.info.bundles.begin(), d.info.bundles.end(), sp.bundle) != d.info.bundles.end();
      rows[static_cast<std::size_t>(sp.process)].spans.push_back(
          {sp.start_s, sp.end_s, planned ? kBusy : kResidual,
           "bundle " + sp.bundle + (planned ? "" : " (a split's residual)") + ": " + Fixed(sp.start_s) + "-" +
               Fixed(sp.end_s) + " s, " + std::to_string(sp.records) + " records"});
    }
    body += Legend({{kBusy, "bundle of the plan"}, {kResidual, "residual of a split (work rebalancing)"}});
    body += TimelineChart("chart-timeline", "Timeline: each committed bundle from its lease to its commit (" +
                                                std::to_string(m.splits) + " splits)",
                          rows, m.elapsed_s, "s");
    // Throughput over time: records committed per interval of the run.
    constexpr int kBuckets = 20;
    const double span = std::max(m.elapsed_s, m.timeline.back().end_s);
    std::vector<double> per_bucket(kBuckets, 0.0);
    for (const JobMetrics::Span& sp : m.timeline) {
      int b = span > 0 ? static_cast<int>(sp.end_s / span * kBuckets) : 0;
      per_bucket[static_cast<std::size_t>(std::clamp(b, 0, kBuckets - 1))] += static_cast<double>(sp.records);
    }
    for (double& v : per_bucket) v = span > 0 ? v / (span / kBuckets) : 0;
    body += TimeColumnChart("chart-throughput", "Throughput over time: records committed per second, in " +
                                                    std::to_string(kBuckets) + " intervals of " + Duration(span / kBuckets) +
                                                    " (a bundle counts when it commits)",
                            per_bucket, "records/s", span);
  }

  // Stages: where the time went inside the processes.
  body += "<h2>Stages</h2>\n";
  std::vector<Bar> stages;
  for (const std::string& ns : Namespaces(m.total)) {
    if (!m.total.counters.count({ns, "process_bundle_usecs"})) continue;  // a handler's namespace, not a transform
    const double s = static_cast<double>(m.total.CounterOr(ns, "process_bundle_usecs")) / 1e6;
    stages.push_back({ns, {{s, kBusy, Fixed(s, 3) + " s"}}, Fixed(s, 3) + " s"});
  }
  bool any_stage_time = false;
  for (const Bar& b : stages) any_stage_time |= b.segments[0].value > 0;
  if (any_stage_time) {
    body += BarChart("chart-stage-time", "Time inside each transform (process_bundle_usecs, summed over threads and processes)",
                     stages, "s");
  } else {
    body += "<p class=\"note\">The metrics have no per-transform time (process_bundle_usecs).</p>\n";
  }
  // One row per namespace, its non-zero counters in one cell (every counter: metrics.json).
  std::map<std::string, std::string> nonzero;
  for (const auto& [key, v] : m.total.counters) {
    if (v == 0) continue;
    std::string& cell = nonzero[key.ns];
    cell += (cell.empty() ? "" : ", ") + key.name + " " + std::to_string(v);
  }
  body += "<table><tr><th>namespace</th><th class=\"text\">non-zero counters (all of them: metrics.json)</th></tr>\n";
  for (const auto& [ns, cell] : nonzero) {
    body += "<tr><td>" + Escape(ns) + "</td><td class=\"text\">" + Escape(cell) + "</td></tr>\n";
  }
  body += "</table>\n";

  // What each model ran as: precision, the CPU's matrix instructions, padding, achieved FLOP/s.
  if (const std::vector<ModelFigures> models = SummarizeModels(m.total); !models.empty()) {
    body += "<h2>Models</h2>\n<table><tr><th>namespace</th><th class=\"text\">precision</th><th class=\"text\">CPU "
            "instructions</th><th>padding</th><th>GFLOP/s</th><th class=\"text\">float32 check</th></tr>\n";
    for (const ModelFigures& f : models) {
      char pad[32] = "-", gf[32] = "-";
      if (f.padding >= 0) std::snprintf(pad, sizeof pad, "%.1f%%", 100.0 * f.padding);
      if (f.gflops >= 0) std::snprintf(gf, sizeof gf, "%.0f", f.gflops);
      body += "<tr><td>" + Escape(f.ns) + "</td><td class=\"text\">" + Escape(f.DType().empty() ? "-" : f.DType()) +
              "</td><td class=\"text\">" + Escape(f.isa_level >= 0 ? CpuIsaLevelName(f.isa_level) : "-") + "</td><td>" +
              pad + "</td><td>" + gf + "</td><td class=\"text\">" +
              Escape(f.DescribeCheck().empty() ? "-" : f.DescribeCheck()) + "</td></tr>\n";
    }
    body += "</table>\n<p class=\"note\">precision: the Linear layers' (linear_dtype_bits); padding: the share of the "
            "encoder's tokens that were padding (batch_tokens / batch_computed_tokens); GFLOP/s: the model's "
            "arithmetic (batch_kflop) over its inference time, padding included; float32 check: the sampled batches "
            "recomputed in float32 (precision_check_*, docs/precision.md).</p>\n";
  }

  body += "<h2>Batches</h2>\n";
  body += Distributions(m, "inference_request_batch_size", 1, "chart-batch-size", "Batch size (elements per inference call)",
                        "elements");
  body += Distributions(m, "inference_batch_latency_micro_secs", 1000, "chart-latency",
                        "Inference latency per batch (inference_batch_latency_micro_secs)", "ms");

  body += "<h2>Bundles</h2>\n";
  std::vector<double> per_bundle;
  for (const CommitEntry& c : d.commits) per_bundle.push_back(static_cast<double>(c.records));
  if (per_bundle.empty()) {
    body += "<p class=\"note\">manifest.jsonl holds no commits.</p>\n";
  } else {
    body += ColumnChart("chart-bundles", "Records per committed bundle, in commit order (the timeline above has when)",
                        per_bundle, "records", "commits");
  }

  body += "<h2>Errors</h2>\n";
  std::vector<Bar> error_bars;
  for (const std::string& ns : Namespaces(m.total)) {
    if (!m.total.counters.count({ns, "errors"}) && !m.total.counters.count({ns, "failed_batches_counter"})) continue;
    const double e = static_cast<double>(m.total.CounterOr(ns, "errors") + m.total.CounterOr(ns, "failed_batches_counter"));
    error_bars.push_back({ns, {{e, kError, std::to_string(static_cast<int64_t>(e)) + " errors"}},
                          std::to_string(static_cast<int64_t>(e))});
  }
  int64_t retried = 0;
  for (const CommitEntry& c : d.commits) retried += c.attempt > 1;
  error_bars.push_back({"bundle retries", {{static_cast<double>(m.retries), kError, "retries"}}, std::to_string(m.retries)});
  body += BarChart("chart-errors", "Errors per transform (errors + failed_batches_counter) and bundle retries", error_bars,
                   "");
  body += "<p class=\"note\">" + std::to_string(retried) + " committed bundle(s) needed more than one attempt.</p>\n";

  body += "<h2>GPU memory</h2>\n";
  if (!d.has_gpu_memory) {
    body += "<p class=\"note\">No gpu_memory.json: the worker had no accelerator (or the run predates it).</p>\n";
  } else {
    const GpuMemoryRecord& g = d.gpu_memory;
    constexpr double kGiB = 1073741824.0;
    std::vector<Bar> bars = {
        {"planned",
         {{g.contexts / kGiB, "#8c6bb1", "CUDA contexts " + Fixed(g.contexts / kGiB) + " GiB"},
          {g.models / kGiB, kBusy, "model copies " + Fixed(g.models / kGiB) + " GiB"},
          {g.workspace / kGiB, "#e8743b", "workspace " + Fixed(g.workspace / kGiB) + " GiB"}},
         HumanBytes(static_cast<uint64_t>(g.planned_peak)) + " peak"},
        {"capacity", {{g.capacity / kGiB, kIdle, "capacity"}}, HumanBytes(static_cast<uint64_t>(g.capacity))}};
    if (g.measured_model_hosts >= 0) {
      bars.insert(bars.begin() + 1, Bar{"measured (hosts)", {{g.measured_model_hosts / kGiB, "#19a979", "model hosts"}},
                                        HumanBytes(static_cast<uint64_t>(g.measured_model_hosts)) +
                                            " (plan: " + HumanBytes(static_cast<uint64_t>(g.models)) + ")"});
    }
    body += Legend({{"#8c6bb1", "CUDA contexts"}, {kBusy, "model copies"}, {"#e8743b", "workspace"}}) +
            BarChart("chart-gpu-memory", "GPU memory on the busiest " + g.gpu + " (" + g.backend + "): planned vs measured",
                     bars, "GiB") +
            "<p class=\"note\">Measured: what the emulated ledger saw the model hosts hold at the end of the run "
            "(the SDK processes' own allocations are released by then, so they are not measured).</p>\n";
  }
  return Page("dfworker report " + m.job_id, body);
}

}  // namespace dfw::report
