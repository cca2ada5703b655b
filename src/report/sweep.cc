#include "dfw/report/sweep.h"

#include <cstdlib>

#include <cstring>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "dfw/common/strings.h"
#include "dfw/job/protocol.h"

namespace dfw::report {
namespace {

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

const char* KindName(StageKind k) {
  switch (k) {
    case StageKind::kRead: return "I/O-bound (read/parse)";
    case StageKind::kTransform: return "CPU preprocessing-bound: the accelerator would wait";
    case StageKind::kInference: return "inference-bound";
    case StageKind::kWrite: return "I/O-bound (write)";
  }
  return "?";
}

}  // namespace

const std::vector<std::string>& SweepKeys() {
  static const std::vector<std::string> keys = {"sdk_processes", "harness_threads", "model_copies", "mps", "batch_size",
                                                 "dtype"};
  return keys;
}

Result<SweepAxis> ParseSweep(std::string_view text) {
  const std::size_t eq = text.find('=');
  if (eq == std::string_view::npos) {
    return InvalidArgument("--sweep '" + std::string(text) + "': expected KEY=V1,V2,... (keys: " + Join(SweepKeys()) + ")");
  }
  SweepAxis axis;
  axis.key = std::string(Trim(text.substr(0, eq)));
  const auto& keys = SweepKeys();
  if (std::find(keys.begin(), keys.end(), axis.key) == keys.end()) {
    return InvalidArgument("--sweep: unknown key '" + axis.key + "'" + DidYouMeanSuffix(axis.key, keys) +
                           " (keys: " + Join(keys) + ")");
  }
  const std::string_view list = text.substr(eq + 1);
  if (Trim(list).empty()) return InvalidArgument("--sweep " + axis.key + ": the list of values is empty");
  for (const std::string& raw : Split(list, ',')) {
    const std::string v(Trim(raw));
    if (v.empty()) return InvalidArgument("--sweep " + axis.key + "='" + std::string(list) + "': an empty value");
    std::string norm;
    if (axis.key == "mps") {
      if (v == "on" || v == "true" || v == "1") norm = "on";
      else if (v == "off" || v == "false" || v == "0") norm = "off";
      else return InvalidArgument("--sweep mps: value '" + v + "' is not on/off (or true/false)");
    } else if (axis.key == "dtype") {
      if (v != "auto" && v != "float32" && v != "bfloat16" && v != "int8") {
        return InvalidArgument("--sweep dtype: value '" + v + "' is not one of auto, float32, bfloat16, int8");
      }
      norm = v;
    } else {
      auto n = ParseInt64(v);
      if (!n || *n < 1 || *n > 4096) {
        return InvalidArgument("--sweep " + axis.key + ": value '" + v + "' is not a whole number from 1 to 4096");
      }
      norm = std::to_string(*n);
    }
    if (std::find(axis.values.begin(), axis.values.end(), norm) != axis.values.end()) {
      return InvalidArgument("--sweep " + axis.key + ": value '" + v + "' is given twice");
    }
    axis.values.push_back(norm);
  }
  return axis;
}

Result<std::vector<SweepPoint>> MakeGrid(const std::vector<SweepAxis>& axes) {
  if (axes.empty()) return InvalidArgument("no --sweep KEY=V1,V2,... given (keys: " + Join(SweepKeys()) + ")");
  std::size_t points = 1;
  std::string shape;
  for (std::size_t i = 0; i < axes.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (axes[j].key == axes[i].key) return InvalidArgument("--sweep " + axes[i].key + " is given twice; list all values once");
    }
    points *= axes[i].values.size();
    shape += (i ? " x " : "") + std::to_string(axes[i].values.size()) + " " + axes[i].key;
  }
  if (points > kMaxSweepPoints) {
    return InvalidArgument("the grid has " + std::to_string(points) + " points (" + shape + "), more than " +
                           std::to_string(kMaxSweepPoints) + ": drop values or sweep fewer keys at once");
  }
  std::vector<SweepPoint> out(1);
  for (const SweepAxis& a : axes) {
    std::vector<SweepPoint> next;
    for (const SweepPoint& p : out) {
      for (const std::string& v : a.values) {
        SweepPoint q = p;
        q[a.key] = v;
        next.push_back(std::move(q));
      }
    }
    out = std::move(next);
  }
  return out;
}

std::string PointName(const SweepPoint& point) {
  std::string out;
  for (const std::string& key : SweepKeys()) {  // a fixed order, whatever the command line's
    auto it = point.find(key);
    if (it != point.end()) out += (out.empty() ? "" : " ") + key + "=" + it->second;
  }
  return out;
}

std::string NameBottleneck(const std::map<std::string, double>& stage_busy_s, const std::map<std::string, StageKind>& kinds) {
  std::map<StageKind, double> by_kind;
  std::map<StageKind, std::pair<std::string, double>> leader;
  double total = 0;
  for (const auto& [stage, s] : stage_busy_s) {
    auto it = kinds.find(stage);
    const StageKind k = it == kinds.end() ? StageKind::kTransform : it->second;
    by_kind[k] += s;
    total += s;
    if (s > leader[k].second) leader[k] = {stage, s};
  }
  if (total <= 0) return "";
  auto top = std::max_element(by_kind.begin(), by_kind.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  char pct[16];
  std::snprintf(pct, sizeof pct, "%.0f%%", 100.0 * top->second / total);
  return std::string(KindName(top->first)) + " (" + leader[top->first].first + ": " + pct + " of stage time)";
}

PointSummary Summarize(const SweepPoint& point, std::vector<RunMeasurement> runs, const std::map<std::string, StageKind>& kinds) {
  PointSummary s;
  s.point = point;
  std::vector<double> rps, wall, idle, latency, batch, p50, p99;
  std::map<std::string, std::vector<double>> stages;
  for (const RunMeasurement& r : runs) {
    s.max_rss_kib = std::max(s.max_rss_kib, r.max_rss_kib);
    if (!r.error.empty()) {
      ++s.failed;
      continue;
    }
    const JobMetrics& m = r.metrics;
    s.records = m.total.CounterOr(kRecordsNamespace, kRecordsCounter);
    rps.push_back(m.elapsed_s > 0 ? static_cast<double>(s.records) / m.elapsed_s : 0);
    wall.push_back(r.wall_s);
    double idle_sum = 0;
    for (const JobMetrics::Process& p : m.processes) idle_sum += m.elapsed_s > 0 ? p.idle_s / m.elapsed_s : 0;
    idle.push_back(m.processes.empty() ? 0 : idle_sum / static_cast<double>(m.processes.size()));
    DistributionData lat, size;
    s.errors = 0;
    for (const auto& [key, d] : m.total.distributions) {
      if (key.name == "inference_batch_latency_micro_secs") lat.Merge(d);
      if (key.name == "inference_request_batch_size") size.Merge(d);
    }
    for (const auto& [key, v] : m.total.counters) {
      if (key.name == "errors" || key.name == "failed_batches_counter") s.errors += v;
      if (key.name == "process_bundle_usecs") stages[key.ns].push_back(static_cast<double>(v) / 1e6);
    }
    if (r.gpu_memory) {
      s.gpu_planned_bytes = r.gpu_memory->planned_peak;
      s.gpu_measured_bytes = r.gpu_memory->measured_model_hosts;
      s.gpu_capacity_bytes = r.gpu_memory->capacity;
      s.fits_with_headroom = r.gpu_memory->capacity > 0 && r.gpu_memory->planned_peak <= 0.9 * r.gpu_memory->capacity;
    }
    latency.push_back(lat.mean() / 1000.0);
    p50.push_back(lat.Quantile(0.5).value_or(0) / 1000.0);
    p99.push_back(lat.Quantile(0.99).value_or(0) / 1000.0);
    batch.push_back(size.mean());
    s.models = SummarizeModels(m.total);
    s.sdk_processes = static_cast<int>(m.processes.size());
  }
  if (!rps.empty()) {
    s.records_per_s = Median(rps);
    s.records_per_s_min = *std::min_element(rps.begin(), rps.end());
    s.records_per_s_max = *std::max_element(rps.begin(), rps.end());
    s.wall_s = Median(wall);
    s.idle_fraction = Median(idle);
    s.batch_latency_ms = Median(latency);
    s.batch_latency_p50_ms = Median(p50);
    s.batch_latency_p99_ms = Median(p99);
    s.batch_size = Median(batch);
    for (auto& [stage, v] : stages) s.stage_busy_s[stage] = Median(v);
    s.bottleneck = NameBottleneck(s.stage_busy_s, kinds);
    // The CPU side: every transform of the pipeline that is not RunInference (a namespace that is
    // no transform of it, e.g. dfworker's own, is not counted).
    for (const auto& [stage, busy] : s.stage_busy_s) {
      auto kind = kinds.find(stage);
      if (kind == kinds.end() || kind->second == StageKind::kInference || busy <= 0) continue;
      s.cpu_seconds += busy;
      s.cpu_stages.push_back(stage);
    }
    if (s.cpu_seconds > 0 && s.records > 0) s.cpu_records_per_second = static_cast<double>(s.records) / s.cpu_seconds;
  }
  s.runs = std::move(runs);
  return s;
}

std::vector<PointSummary> SortByThroughput(std::vector<PointSummary> points) {
  std::stable_sort(points.begin(), points.end(), [](const PointSummary& a, const PointSummary& b) {
    if ((a.failed == 0) != (b.failed == 0)) return a.failed == 0;
    return a.records_per_s > b.records_per_s;
  });
  return points;
}

const std::vector<std::string>& ConstraintMetrics() {
  static const std::vector<std::string> m = {"records_per_s",        "wall_s",       "batch_latency_ms",
                                             "p50_batch_latency_ms", "p99_batch_latency_ms", "peak_rss_mib",
                                             "peak_rss_gib",         "errors",       "idle_percent",
                                             "gpu_planned_gib"};
  return m;
}

Result<SweepConstraint> ParseConstraint(std::string_view text) {
  static const char* kOps[] = {"<=", ">=", "<", ">"};
  std::size_t at = std::string_view::npos;
  std::string op;
  for (const char* o : kOps) {
    const std::size_t p = text.find(o);
    if (p != std::string_view::npos && (at == std::string_view::npos || p < at || (p == at && std::strlen(o) > op.size()))) {
      at = p;
      op = o;
    }
  }
  if (at == std::string_view::npos) {
    return InvalidArgument("--constraint '" + std::string(text) + "': expected METRIC<=N (or <, >=, >), e.g. "
                           "p99_batch_latency_ms<=50 (metrics: " + Join(ConstraintMetrics()) + ")");
  }
  SweepConstraint c;
  c.metric = std::string(Trim(text.substr(0, at)));
  c.op = op;
  const auto& metrics = ConstraintMetrics();
  if (std::find(metrics.begin(), metrics.end(), c.metric) == metrics.end()) {
    return InvalidArgument("--constraint: unknown metric '" + c.metric + "'" + DidYouMeanSuffix(c.metric, metrics) +
                           " (metrics: " + Join(metrics) + ")");
  }
  const std::string value(Trim(text.substr(at + op.size())));
  char* end = nullptr;
  c.value = std::strtod(value.c_str(), &end);
  if (value.empty() || end != value.c_str() + value.size() || !std::isfinite(c.value)) {
    return InvalidArgument("--constraint " + c.metric + op + ": '" + value + "' is not a number");
  }
  c.text = c.metric + op + value;
  return c;
}

Result<SweepObjective> ParseObjective(std::string_view text) {
  if (text == "throughput") return SweepObjective::kThroughput;
  if (text == "latency") return SweepObjective::kLatency;
  if (text == "memory") return SweepObjective::kMemory;
  return InvalidArgument("--objective '" + std::string(text) + "': allowed: throughput, latency, memory");
}

const char* ObjectiveName(SweepObjective o) {
  return o == SweepObjective::kLatency ? "latency" : o == SweepObjective::kMemory ? "memory" : "throughput";
}

double MetricOf(const PointSummary& p, const std::string& m) {
  if (m == "records_per_s") return p.records_per_s;
  if (m == "wall_s") return p.wall_s;
  if (m == "batch_latency_ms") return p.batch_latency_ms;
  if (m == "p50_batch_latency_ms") return p.batch_latency_p50_ms;
  if (m == "p99_batch_latency_ms") return p.batch_latency_p99_ms;
  if (m == "peak_rss_mib") return static_cast<double>(p.max_rss_kib) / 1024.0;
  if (m == "peak_rss_gib") return static_cast<double>(p.max_rss_kib) / (1024.0 * 1024.0);
  if (m == "errors") return static_cast<double>(p.errors);
  if (m == "idle_percent") return 100.0 * p.idle_fraction;
  if (m == "gpu_planned_gib") return p.gpu_planned_bytes < 0 ? 0.0 : p.gpu_planned_bytes / (1024.0 * 1024.0 * 1024.0);
  return std::nan("");
}

std::string ConstraintMiss(const PointSummary& p, const std::vector<SweepConstraint>& constraints) {
  for (const SweepConstraint& c : constraints) {
    const double v = MetricOf(p, c.metric);
    const bool ok = c.op == "<=" ? v <= c.value : c.op == "<" ? v < c.value : c.op == ">=" ? v >= c.value : v > c.value;
    if (!ok) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "%s %.4g (needs %s %g)", c.metric.c_str(), v, c.op.c_str(), c.value);
      return buf;
    }
  }
  return "";
}

std::vector<PointSummary> SortByObjective(std::vector<PointSummary> points, SweepObjective objective) {
  points = SortByThroughput(std::move(points));
  if (objective == SweepObjective::kThroughput) return points;
  std::stable_sort(points.begin(), points.end(), [&](const PointSummary& a, const PointSummary& b) {
    if ((a.failed == 0) != (b.failed == 0)) return a.failed == 0;
    const double x = objective == SweepObjective::kLatency ? a.batch_latency_p99_ms : static_cast<double>(a.max_rss_kib);
    const double y = objective == SweepObjective::kLatency ? b.batch_latency_p99_ms : static_cast<double>(b.max_rss_kib);
    return x < y;  // ties keep the throughput order
  });
  return points;
}

std::string FlagsFor(const SweepPoint& point) {
  std::string flags, edits;
  for (const auto& [key, v] : point) {
    if (key == "sdk_processes") flags += " --sdk_worker_parallelism=" + v;
    else if (key == "harness_threads") flags += " --number_of_worker_harness_threads=" + v;
    else if (key == "mps") flags += std::string(" (worker_accelerator ") + (v == "on" ? "with" : "without") + " use_nvidia_mps)";
    else if (key == "model_copies") edits += "; model_copies: " + v;
    else if (key == "batch_size") edits += "; min_batch_size: " + v + ", max_batch_size: " + v;
    else if (key == "dtype") edits += "; dtype: " + v;
  }
  std::string out = Trim(flags).empty() ? std::string() : std::string(Trim(flags));
  if (!edits.empty()) {
    out += std::string(out.empty() ? "in" : " and in") + " every RunInference model_handler.config: " + edits.substr(2);
  }
  return out;
}

std::string RenderSweepTable(const std::vector<PointSummary>& sorted, int repeat, const SweepSelection& selection) {
  std::string out;
  char line[768];
  std::snprintf(line, sizeof line, "%-44s %10s %17s %7s %6s %8s %13s %8s %7s %7s %7s %6s %9s %5s %7s  %s\n",
                "configuration", "records/s", "(min-max)", "wall s", "idle", "RSS MiB", "GPU MiB p/m", "batch", "lat ms",
                "p50 ms", "p99 ms", "errors", "dtype", "pad%", "GFLOP/s", "bottleneck");
  out += line;
  for (const PointSummary& p : sorted) {
    if (p.failed == static_cast<int>(p.runs.size())) {
      std::snprintf(line, sizeof line, "%-44s   failed: %s\n", PointName(p.point).c_str(),
                    p.runs.empty() ? "not run" : p.runs.back().error.c_str());
      out += line;
      continue;
    }
    char spread[48];
    std::snprintf(spread, sizeof spread, "(%.0f-%.0f)", p.records_per_s_min, p.records_per_s_max);
    char gpu[48] = "-";
    if (p.gpu_planned_bytes >= 0) {
      const double mib = 1024.0 * 1024.0;
      if (p.gpu_measured_bytes >= 0) {
        std::snprintf(gpu, sizeof gpu, "%.0f/%.0f%s", p.gpu_planned_bytes / mib, p.gpu_measured_bytes / mib,
                      p.fits_with_headroom ? "" : "!");
      } else {
        std::snprintf(gpu, sizeof gpu, "%.0f/-%s", p.gpu_planned_bytes / mib, p.fits_with_headroom ? "" : "!");
      }
    }
    // The first model's figures (a pipeline with several RunInference shows them in its report).
    std::string dtype = "-", pad = "-", gflops = "-";
    if (!p.models.empty()) {
      const ModelFigures& f = p.models.front();
      if (f.dtype_bits_min >= 0) dtype = f.dtype_bits_min == f.dtype_bits_max ? f.DType() : "mixed";
      char b[32];
      if (f.padding >= 0) {
        std::snprintf(b, sizeof b, "%.1f", 100.0 * f.padding);
        pad = b;
      }
      if (f.gflops >= 0) {
        std::snprintf(b, sizeof b, "%.0f", f.gflops);
        gflops = b;
      }
    }
    std::snprintf(line, sizeof line,
                  "%-44s %10.0f %17s %7.2f %5.0f%% %8.0f %13s %8.1f %7.2f %7.2f %7.2f %6lld %9s %5s %7s  %s%s\n",
                  PointName(p.point).c_str(), p.records_per_s, spread, p.wall_s, 100.0 * p.idle_fraction,
                  static_cast<double>(p.max_rss_kib) / 1024.0, gpu, p.batch_size, p.batch_latency_ms,
                  p.batch_latency_p50_ms, p.batch_latency_p99_ms,
                  static_cast<long long>(p.errors), dtype.c_str(), pad.c_str(), gflops.c_str(), p.bottleneck.c_str(),
                  (std::string(p.failed ? " [" + std::to_string(p.failed) + " failed run(s)]" : "") +
                   (ConstraintMiss(p, selection.constraints).empty() ? "" : " [misses " + ConstraintMiss(p, selection.constraints) + "]"))
                      .c_str());
    out += line;
  }
  out += "records/s: median of " + std::to_string(repeat) +
         " run(s) (records / the launcher's wall time); idle: mean share of the run an SDK process spent outside "
         "bundles; RSS: the largest process of the run (wait4); GPU MiB p/m: the plan's peak / what the model hosts "
         "held (emulated ledger), '!' = less than 10% of the GPU left (never recommended); batch, lat: mean batch "
         "size and inference latency "
         "per batch; p50, p99: inference latency per batch from the distribution's histogram (to within its 19% "
         "buckets); dtype: the Linear layers' precision the model ran in; pad%: the share of the encoder's tokens "
         "that were padding; GFLOP/s: the model's arithmetic over its inference time (padding included)\n";
  // The fastest point that ran without failures and fits with headroom; the next such point is
  // what it is compared with.
  if (!selection.constraints.empty() || selection.objective != SweepObjective::kThroughput) {
    std::string list;
    for (const SweepConstraint& c : selection.constraints) list += (list.empty() ? "" : ", ") + c.text;
    out += std::string("objective: ") + ObjectiveName(selection.objective) +
           (list.empty() ? "" : "; constraints: " + list) + "\n";
  }
  std::vector<const PointSummary*> ok;
  bool any_missed = false;
  for (const PointSummary& p : sorted) {
    if (p.failed != 0 || !p.fits_with_headroom) continue;
    if (!ConstraintMiss(p, selection.constraints).empty()) {
      any_missed = true;
      continue;
    }
    ok.push_back(&p);
  }
  // (the first of `ok` is RecommendedIndex's point)
  bool any_tight = false;
  for (const PointSummary& p : sorted) any_tight |= p.failed == 0 && !p.fits_with_headroom;
  if (!ok.empty()) {
    const PointSummary& p = *ok[0];
    out += "recommended: " + PointName(p.point) + " (" + std::to_string(std::llround(p.records_per_s)) +
           " records/s, " + (p.bottleneck.empty() ? "no stage times" : p.bottleneck) + ")\n";
    out += "  flags: " + FlagsFor(p.point) + "\n";
    if (any_tight) out += "  note: faster points that leave less than 10% of the GPU free are not recommended (marked !)\n";
    if (any_missed) out += "  note: points that miss a constraint are not recommended (marked [misses ...])\n";
    if (selection.objective == SweepObjective::kThroughput && ok.size() > 1 && ok[1]->records_per_s > 0) {
      const PointSummary& next = *ok[1];
      const double ratio = p.records_per_s / next.records_per_s;
      char spread[160];
      std::snprintf(spread, sizeof spread, "%.0f-%.0f vs %.0f-%.0f", p.records_per_s_min, p.records_per_s_max,
                    next.records_per_s_min, next.records_per_s_max);
      if (ratio >= 1.05 && p.records_per_s_min < next.records_per_s_max) {
        out += "  note: its runs overlap the next point's (" + std::string(spread) + " records/s, " +
               PointName(next.point) + "): a noisy machine; more --repeat or a quieter machine would settle it\n";
      }
      if (ratio < 1.05) {
        out += "  note: the next point (" + PointName(next.point) + ") is within 5% (" +
               std::to_string(std::llround(next.records_per_s)) + " records/s): on a noisy machine treat them as equal\n";
      }
    }
    return out;
  }
  if (any_missed) return out + "recommended: none: no point that ran meets the constraints (marked [misses ...])\n";
  if (any_tight) out += "recommended: none: every point that ran leaves less than 10% of the GPU free (marked !)\n";
  return out + "no configuration ran successfully\n";
}

int RecommendedIndex(const std::vector<PointSummary>& sorted, const SweepSelection& selection) {
  for (std::size_t i = 0; i < sorted.size(); ++i) {
    const PointSummary& p = sorted[i];
    if (p.failed == 0 && p.fits_with_headroom && ConstraintMiss(p, selection.constraints).empty()) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace dfw::report
