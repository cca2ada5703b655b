#include "dfw/report/job_report.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sys/stat.h>

#include "dfw/job/protocol.h"

namespace dfw::report {
namespace {

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

Result<std::vector<CommitEntry>> ReadManifest(const std::string& path) {
  std::vector<CommitEntry> out;
  if (!Exists(path)) return out;
  ASSIGN_OR_RETURN(std::string text, ReadWholeFile(path, kMaxManifestBytes));
  std::size_t start = 0;
  int line_no = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) break;  // a torn last line is not a commit (manifest.h)
    ++line_no;
    auto j = nlohmann::json::parse(text.substr(start, end - start), nullptr, false);
    start = end + 1;
    if (j.is_object() && j.contains("split") && j["split"].is_string()) continue;  // a split (manifest.h), not a commit
    if (j.is_discarded() || !j.is_object() || !j.contains("bundle") || !j["bundle"].is_string()) {
      return Status(StatusCode::kDataLoss, path + ":" + std::to_string(line_no) + ": not a manifest entry");
    }
    CommitEntry e;
    e.bundle = j["bundle"].get<std::string>();
    if (j.contains("attempt") && j["attempt"].is_number_integer()) e.attempt = j["attempt"].get<int64_t>();
    if (j.contains("metrics") && j["metrics"].is_object()) {
      auto m = MetricsSnapshot::FromJson(j["metrics"].dump());
      if (m.ok()) {
        e.records = m->CounterOr(kRecordsNamespace, kRecordsCounter);
        e.busy_s = static_cast<double>(m->CounterOr(kRecordsNamespace, kBusyMsCounter)) / 1000.0;
      }
    }
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace

std::optional<GpuMemoryRecord> ReadGpuMemory(const std::string& job_dir) {
  auto text = ReadWholeFile(job_dir + "/gpu_memory.json", 1 << 20);
  if (!text.ok()) return std::nullopt;
  auto j = nlohmann::json::parse(*text, nullptr, false);
  if (!j.is_object() || !j.contains("planned_peak_bytes")) return std::nullopt;
  auto num = [&](const char* k) { return j.contains(k) && j[k].is_number() ? j[k].get<double>() : 0.0; };
  GpuMemoryRecord g;
  g.gpu = j.value("gpu", "");
  g.backend = j.value("backend", "");
  g.capacity = num("capacity_bytes");
  g.planned_peak = num("planned_peak_bytes");
  g.contexts = num("context_bytes");
  g.models = num("model_bytes");
  g.workspace = num("workspace_bytes");
  if (j.contains("measured_model_host_bytes")) g.measured_model_hosts = num("measured_model_host_bytes");
  return g;
}

Result<JobReportData> LoadJobReport(const std::string& job_dir) {
  struct stat st;
  if (::stat(job_dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return InvalidArgument("'" + job_dir + "' is not a folder");
  }
  JobReportData d;
  d.job_dir = job_dir;
  const std::string job_json = job_dir + "/job.json";
  if (!Exists(job_json)) {
    return InvalidArgument("'" + job_dir + "' is not a job dir (no job.json; job dirs are printed by `dfworker run` "
                           "and live under ./.dfworker/jobs by default)");
  }
  auto info_text = ReadWholeFile(job_json, kMaxJobJsonBytes);
  if (!info_text.ok()) return Status(StatusCode::kDataLoss, job_json + ": " + info_text.status().message());
  auto info = JobInfoFromJson(*info_text);
  if (!info.ok()) return Status(StatusCode::kDataLoss, job_json + ": " + info.status().message());
  d.info = std::move(*info);
  const std::string metrics_path = job_dir + "/metrics.json";
  if (!Exists(metrics_path)) {
    return Status(StatusCode::kNotFound, metrics_path + " does not exist: the run has not ended (or was killed "
                                         "before writing it); finish it with `dfworker run --resume`");
  }
  auto metrics_text = ReadWholeFile(metrics_path);
  if (!metrics_text.ok()) return Status(StatusCode::kDataLoss, metrics_path + ": " + metrics_text.status().message());
  auto metrics = ParseJobMetrics(*metrics_text);
  if (!metrics.ok()) return Status(StatusCode::kDataLoss, job_dir + "/" + metrics.status().message());
  d.metrics = std::move(*metrics);
  ASSIGN_OR_RETURN(d.commits, ReadManifest(job_dir + "/manifest.jsonl"));
  d.finished = Exists(job_dir + "/FINISHED");
  // Optional: an unreadable gpu_memory.json only loses its chart.
  if (auto g = ReadGpuMemory(job_dir)) {
    d.has_gpu_memory = true;
    d.gpu_memory = *g;
  }
  return d;
}

}  // namespace dfw::report
