// `dfworker bench --format=json` and its reader for `dfworker plan --cpu_rate_from` (bench_json.h).
#include "dfw/report/bench_json.h"

#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "dfw/common/json_text.h"
#include "dfw/common/strings.h"

namespace dfw::report {
namespace {

using nlohmann::json;

// NaN and infinities are not JSON: a figure that is not finite is written as null.
json Finite(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

json PointJson(const PointSummary& p, const SweepSelection& selection) {
  json point = json::object();
  for (const auto& [k, v] : p.point) point[k] = v;
  json stages = json::object();
  for (const auto& [name, s] : p.stage_busy_s) stages[name] = Finite(s);
  json models = json::array();
  for (const ModelFigures& f : p.models) {
    json m = {{"transform", f.ns}};
    m["dtype"] = f.dtype_bits_min >= 0 ? json(f.DType()) : json(nullptr);
    m["padding"] = f.padding >= 0 ? Finite(f.padding) : json(nullptr);
    m["gflops"] = f.gflops >= 0 ? Finite(f.gflops) : json(nullptr);
    if (f.checked_rows > 0 || f.precision_switches > 0) {  // the run-time float32 check
      json c = {{"rows", f.checked_rows}, {"switches", f.precision_switches}};
      if (f.check_min_cosine >= 0) c["min_cosine"] = Finite(f.check_min_cosine), c["mean_cosine"] = Finite(f.check_mean_cosine);
      if (f.check_argmax_agreement >= 0) c["argmax_agreement"] = Finite(f.check_argmax_agreement);
      if (f.check_max_prob_diff >= 0) c["max_prob_diff"] = Finite(f.check_max_prob_diff);
      m["precision_check"] = std::move(c);
    }
    models.push_back(std::move(m));
  }
  json errors = json::array();
  for (const RunMeasurement& r : p.runs) {
    if (!r.error.empty()) errors.push_back(r.error);
  }
  return {{"name", PointName(p.point)},
          {"point", point},
          {"flags", FlagsFor(p.point)},
          {"runs", p.runs.size()},
          {"failed", p.failed},
          {"run_errors", errors},
          {"records", p.records},
          {"records_per_s", Finite(p.records_per_s)},
          {"records_per_s_min", Finite(p.records_per_s_min)},
          {"records_per_s_max", Finite(p.records_per_s_max)},
          {"wall_s", Finite(p.wall_s)},
          {"idle_fraction", Finite(p.idle_fraction)},
          {"peak_rss_kib", p.max_rss_kib},
          {"batch_size", Finite(p.batch_size)},
          {"batch_latency_ms", Finite(p.batch_latency_ms)},
          {"p50_batch_latency_ms", Finite(p.batch_latency_p50_ms)},
          {"p99_batch_latency_ms", Finite(p.batch_latency_p99_ms)},
          {"errors", p.errors},
          {"bottleneck", p.bottleneck},
          {"stage_busy_s", stages},
          {"sdk_processes", p.sdk_processes},
          {"cpu_stages", p.cpu_stages},
          {"cpu_seconds", Finite(p.cpu_seconds)},
          {"cpu_records_per_vcpu_second", Finite(p.cpu_records_per_second)},
          {"gpu_planned_bytes", Finite(p.gpu_planned_bytes)},
          {"gpu_measured_bytes", Finite(p.gpu_measured_bytes)},
          {"gpu_capacity_bytes", Finite(p.gpu_capacity_bytes)},
          {"fits_with_headroom", p.fits_with_headroom},
          {"constraint_miss", ConstraintMiss(p, selection.constraints)},
          {"models", models}};
}

std::string Figure(double v, const char* fmt) {
  char b[64];
  std::snprintf(b, sizeof b, fmt, v);
  return b;
}

}  // namespace

std::string PipelineContentHash(std::string_view text) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char b[17];
  std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(h));
  return b;
}

std::string RenderSweepJson(const std::vector<PointSummary>& sorted, const BenchContext& context,
                            const SweepSelection& selection) {
  json constraints = json::array();
  for (const SweepConstraint& c : selection.constraints) constraints.push_back(c.text);
  json points = json::array();
  for (const PointSummary& p : sorted) points.push_back(PointJson(p, selection));
  json machine = {{"machine_type", context.machine_type.empty() ? json(nullptr) : json(context.machine_type)},
                  {"host_cpu_cores", context.host_cpu_cores},
                  {"host_cpu_model", context.host_cpu_model}};
  json doc = {{"format", kBenchJsonFormat},
              {"format_version", kBenchJsonVersion},
              {"pipeline", {{"path", context.pipeline_path}, {"content_hash", context.pipeline_hash}}},
              {"machine", machine},
              {"repeat", context.repeat},
              {"records", context.records > 0 ? json(context.records) : json(nullptr)},
              {"objective", ObjectiveName(selection.objective)},
              {"constraints", constraints},
              {"recommended_point", RecommendedIndex(sorted, selection)},
              {"points", points}};
  return doc.dump(2) + "\n";
}

Result<BenchCpuRate> ReadBenchCpuRate(const std::string& path, const std::string& text, const std::string& pipeline_path,
                                      const std::string& pipeline_text) {
  ASSIGN_OR_RETURN(json doc, ParseJsonText(path, text));
  const std::string make_one = " (write one with `dfworker bench PIPELINE.yaml --sweep ... --format=json > FILE.json`)";
  if (!doc.is_object() || !doc.contains("format") || doc["format"] != kBenchJsonFormat) {
    return InvalidArgument(path + ": not a dfworker bench result: no \"format\": \"" + kBenchJsonFormat + "\"" + make_one);
  }
  if (!doc.contains("format_version") || !doc["format_version"].is_number_integer() ||
      doc["format_version"].get<int64_t>() != kBenchJsonVersion) {
    return InvalidArgument(path + ": format_version " + (doc.contains("format_version") ? doc["format_version"].dump() : "missing") +
                           ": this dfworker reads version " + std::to_string(kBenchJsonVersion) + make_one);
  }
  BenchCpuRate rate;
  try {
    const json& pipeline = doc.at("pipeline");
    const std::string bench_path = pipeline.at("path").get<std::string>();
    const std::string bench_hash = pipeline.at("content_hash").get<std::string>();
    const std::string plan_hash = PipelineContentHash(pipeline_text);
    if (bench_hash != plan_hash) {
      return InvalidArgument(path + ": a bench result of another pipeline: it ran '" + bench_path + "' (content hash " +
                             bench_hash + "), the plan is of '" + pipeline_path + "' (content hash " + plan_hash + ")" +
                             (bench_path == pipeline_path ? "; the file changed since the bench: run the bench again" : ""));
    }
    const json& machine = doc.at("machine");
    if (machine.at("machine_type").is_string()) rate.machine_type = machine["machine_type"].get<std::string>();
    rate.host_cpu_cores = machine.at("host_cpu_cores").get<int>();
    rate.host_cpu_model = machine.value("host_cpu_model", std::string());
    const json& points = doc.at("points");
    if (!points.is_array()) return InvalidArgument(path + ": \"points\" is not a list");
    const int64_t recommended = doc.at("recommended_point").get<int64_t>();
    if (recommended < -1 || recommended >= static_cast<int64_t>(points.size())) {
      return InvalidArgument(path + ": recommended_point " + std::to_string(recommended) + " is not -1 or an index into its " +
                             std::to_string(points.size()) + " point(s)");
    }
    const json* chosen = nullptr;
    if (recommended >= 0) {
      chosen = &points[static_cast<std::size_t>(recommended)];
      rate.recommended = true;
    } else {
      for (const json& p : points) {
        if (p.at("failed").get<int64_t>() == 0 && p.at("cpu_records_per_vcpu_second").is_number() &&
            p["cpu_records_per_vcpu_second"].get<double>() > 0 && p.at("cpu_seconds").is_number() &&
            p["cpu_seconds"].get<double>() > 0) {
          chosen = &p;
          break;
        }
      }
      if (!chosen) {
        return InvalidArgument(path + ": no point of the bench ran without failures with time outside RunInference; "
                                      "nothing to take the CPU rate from");
      }
    }
    const json& p = *chosen;
    rate.point = p.at("name").get<std::string>();
    rate.records = p.at("records").get<int64_t>();
    rate.cpu_seconds = p.at("cpu_seconds").is_number() ? p["cpu_seconds"].get<double>() : 0;
    rate.records_per_vcpu_second =
        p.at("cpu_records_per_vcpu_second").is_number() ? p["cpu_records_per_vcpu_second"].get<double>() : 0;
    rate.sdk_processes = p.at("sdk_processes").get<int>();
    rate.stages = p.at("cpu_stages").get<std::vector<std::string>>();
    const std::string which = "point '" + (rate.point.empty() ? std::string("(no sweep keys)") : rate.point) + "'";
    if (!(rate.records_per_vcpu_second > 0) || !std::isfinite(rate.records_per_vcpu_second)) {
      return InvalidArgument(path + ": " + which + (rate.recommended ? " (recommended)" : "") +
                             " has a CPU rate of 0: no records or no time in the pipeline's non-inference transforms");
    }
    // A rate needs time and records behind it: a point with no positive cpu_seconds (0, -1, a
    // hand-edited file) states a rate nothing measured.
    if (!(rate.cpu_seconds > 0) || !std::isfinite(rate.cpu_seconds) || rate.records <= 0) {
      return InvalidArgument(path + ": " + which + (rate.recommended ? " (recommended)" : "") + " has cpu_seconds " +
                             Figure(rate.cpu_seconds, "%.6g") + " and records " + std::to_string(rate.records) +
                             ": a CPU rate needs a positive time and at least one record behind it");
    }
    {
      const double again = static_cast<double>(rate.records) / rate.cpu_seconds;
      if (std::fabs(again - rate.records_per_vcpu_second) > 1e-6 * again) {
        return InvalidArgument(path + ": " + which + ": cpu_records_per_vcpu_second " +
                               Figure(rate.records_per_vcpu_second, "%.6g") + " is not records / cpu_seconds (" +
                               Figure(again, "%.6g") + ")");
      }
    }
  } catch (const json::exception& e) {
    std::string why = e.what();
    if (const std::size_t end = why.find("] "); end != std::string::npos) why = why.substr(end + 2);
    return InvalidArgument(path + ": not a dfworker bench result of this version: " + why + make_one);
  }
  const std::string machine =
      rate.machine_type.empty() ? "no --machine_type" : "--machine_type=" + rate.machine_type;
  rate.how = "dfworker bench (" + path + "), " + (rate.recommended ? "its recommended " : "its best ") +
             (rate.point.empty() ? std::string("run") : "point '" + rate.point + "'") + ": " +
             std::to_string(rate.records) + " records / " + Figure(rate.cpu_seconds, "%.4g") + " CPU-s in " +
             Join(rate.stages) + ", on " + std::to_string(rate.sdk_processes) + " SDK process(es), " + machine +
             ", a host of " + std::to_string(rate.host_cpu_cores) + " core(s)" +
             (rate.host_cpu_model.empty() ? std::string() : " (" + rate.host_cpu_model + ")") +
             (rate.host_cpu_cores > 0 && rate.sdk_processes > rate.host_cpu_cores
                  ? " (more processes than cores: the time inside calls counts waits for a core, so the rate is low)"
                  : std::string()) +
             "; taken as the rate of one vCPU of every machine type";
  return rate;
}

}  // namespace dfw::report
