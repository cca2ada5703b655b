#include "dfw/metrics/job_metrics.h"

#include <nlohmann/json.hpp>

#include "dfw/common/file.h"
#include "dfw/metrics/prometheus.h"

namespace dfw {
namespace {

using nlohmann::json;

Status Missing(const std::string& field, const char* what) {
  return Status(StatusCode::kDataLoss, "metrics.json: field '" + field + "' " + what);
}

template <typename T>
Status Get(const json& j, const char* key, const std::string& where, T& out) {
  auto it = j.find(key);
  if (it == j.end()) return Missing(where + key, "is missing");
  if constexpr (std::is_same_v<T, std::string>) {
    if (!it->is_string()) return Missing(where + key, "is not a string");
  } else {
    if (!it->is_number()) return Missing(where + key, "is not a number");
  }
  out = it->get<T>();
  return Status::OK();
}

Result<MetricsSnapshot> Snapshot(const json& j, const std::string& field) {
  if (!j.is_object()) return Missing(field, "is not an object");
  auto s = MetricsSnapshot::FromJson(j.dump());
  if (!s.ok()) return Missing(field, ("is not a metrics snapshot: " + s.status().message()).c_str());
  return s;
}

}  // namespace

Result<JobMetrics> ParseJobMetrics(std::string_view text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Status(StatusCode::kDataLoss, "metrics.json: not valid JSON");
  if (!j.is_object()) return Status(StatusCode::kDataLoss, "metrics.json: the top level is not an object");
  JobMetrics m;
  RETURN_IF_ERROR(Get(j, "job_id", "", m.job_id));
  RETURN_IF_ERROR(Get(j, "bundles_committed", "", m.bundles_committed));
  RETURN_IF_ERROR(Get(j, "retries", "", m.retries));
  RETURN_IF_ERROR(Get(j, "elapsed_s", "", m.elapsed_s));
  if (!j.contains("total")) return Missing("total", "is missing");
  ASSIGN_OR_RETURN(m.total, Snapshot(j["total"], "total"));
  if (!j.contains("processes") || !j["processes"].is_array()) return Missing("processes", "is missing or not a list");
  for (std::size_t i = 0; i < j["processes"].size(); ++i) {
    const json& p = j["processes"][i];
    const std::string where = "processes[" + std::to_string(i) + "].";
    if (!p.is_object()) return Missing("processes[" + std::to_string(i) + "]", "is not an object");
    JobMetrics::Process out;
    RETURN_IF_ERROR(Get(p, "index", where, out.index));
    RETURN_IF_ERROR(Get(p, "bundles", where, out.bundles));
    RETURN_IF_ERROR(Get(p, "records", where, out.records));
    RETURN_IF_ERROR(Get(p, "busy_s", where, out.busy_s));
    RETURN_IF_ERROR(Get(p, "idle_s", where, out.idle_s));
    if (!p.contains("metrics")) return Missing(where + "metrics", "is missing");
    ASSIGN_OR_RETURN(out.metrics, Snapshot(p["metrics"], where + "metrics"));
    JobMetrics::ProcessSplits splits;
    if (p.contains("splits_given")) RETURN_IF_ERROR(Get(p, "splits_given", where, splits.given));
    if (p.contains("splits_taken")) RETURN_IF_ERROR(Get(p, "splits_taken", where, splits.taken));
    m.process_splits.push_back(splits);
    m.processes.push_back(std::move(out));
  }
  if (j.contains("splits")) RETURN_IF_ERROR(Get(j, "splits", "", m.splits));
  if (j.contains("timeline")) {
    if (!j["timeline"].is_array()) return Missing("timeline", "is not a list");
    for (std::size_t i = 0; i < j["timeline"].size(); ++i) {
      const json& t = j["timeline"][i];
      const std::string where = "timeline[" + std::to_string(i) + "].";
      if (!t.is_object()) return Missing("timeline[" + std::to_string(i) + "]", "is not an object");
      JobMetrics::Span span;
      RETURN_IF_ERROR(Get(t, "process", where, span.process));
      RETURN_IF_ERROR(Get(t, "bundle", where, span.bundle));
      RETURN_IF_ERROR(Get(t, "start_s", where, span.start_s));
      RETURN_IF_ERROR(Get(t, "end_s", where, span.end_s));
      RETURN_IF_ERROR(Get(t, "records", where, span.records));
      if (span.end_s < span.start_s || span.start_s < 0) return Missing(where + "end_s", "is before start_s");
      m.timeline.push_back(std::move(span));
    }
  }
  return m;
}

std::string JobMetricsToPrometheus(const JobMetrics& m) {
  PrometheusWriter w;
  const PrometheusWriter::Labels job = {{"job_id", m.job_id}};
  w.Add("dfworker_elapsed_seconds", "gauge", "wall time of the run", job, m.elapsed_s);
  w.Add("dfworker_bundles_committed", "gauge", "bundles committed", job, static_cast<double>(m.bundles_committed));
  w.Add("dfworker_retries", "gauge", "bundle attempts that were retried", job, static_cast<double>(m.retries));
  w.AddSnapshot(m.total, {{"job_id", m.job_id}, {"process", "all"}});
  for (const JobMetrics::Process& p : m.processes) {
    const PrometheusWriter::Labels l = {{"job_id", m.job_id}, {"process", std::to_string(p.index)}};
    w.Add("dfworker_process_busy_seconds", "gauge", "time an SDK process spent in bundles", l, p.busy_s);
    w.Add("dfworker_process_idle_seconds", "gauge", "run time an SDK process spent outside bundles", l, p.idle_s);
    w.Add("dfworker_process_bundles", "gauge", "bundles an SDK process committed", l, static_cast<double>(p.bundles));
    w.AddSnapshot(p.metrics, l);
  }
  return w.Text();
}

Status WriteMetricsProm(const std::string& job_dir, const std::string& metrics_json) {
  ASSIGN_OR_RETURN(JobMetrics m, ParseJobMetrics(metrics_json));
  return WriteFileAtomically(job_dir + "/metrics.prom", JobMetricsToPrometheus(m));
}

}  // namespace dfw
