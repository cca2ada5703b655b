#include "dfw/report/job_report.h"

#include <array>
#include <cstdio>
#include <fstream>
#include <map>
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

const char* CpuIsaLevelName(int level) {
  switch (level) {
    case 0: return "baseline";
    case 1: return "AVX2";
    case 2: return "AVX-512";
    case 3: return "AVX-512 VNNI/BF16";
    case 4: return "AMX";
    default: return "?";
  }
}

namespace {
const char* BitsName(int bits) { return bits == 32 ? "float32" : bits == 16 ? "bfloat16" : bits == 8 ? "int8" : "?"; }
}  // namespace

std::string ModelFigures::DType() const {
  if (dtype_bits_min < 0) return "";
  if (dtype_bits_min == dtype_bits_max) return BitsName(dtype_bits_min);
  return std::string("mixed (") + BitsName(dtype_bits_min) + " to " + BitsName(dtype_bits_max) + ")";
}

std::string ModelFigures::Describe() const {
  std::vector<std::string> parts;
  if (dtype_bits_min >= 0) parts.push_back(DType());
  if (isa_level >= 0) parts.push_back(CpuIsaLevelName(isa_level));
  char buf[64];
  if (padding >= 0) {
    std::snprintf(buf, sizeof buf, "padding %.1f%%", 100.0 * padding);
    parts.push_back(buf);
  }
  if (gflops >= 0) {
    std::snprintf(buf, sizeof buf, "%.0f GFLOP/s", gflops);
    parts.push_back(buf);
  }
  if (const std::string check = DescribeCheck(); !check.empty()) parts.push_back(check);
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : ", ") + p;
  return out;
}

std::string ModelFigures::DescribeCheck() const {
  if (checked_rows <= 0 && precision_switches <= 0) return "";
  char buf[160];
  std::string out = "checked " + std::to_string(checked_rows) + " rows against float32";
  if (check_min_cosine >= 0) {
    std::snprintf(buf, sizeof buf, ": min cosine %.5f, mean %.5f", check_min_cosine, check_mean_cosine);
    out += buf;
  } else if (check_argmax_agreement >= 0) {
    std::snprintf(buf, sizeof buf, ": argmax agreement %.2f%%, max |p - p_float32| %.2e", 100.0 * check_argmax_agreement,
                  check_max_prob_diff);
    out += buf;
  }
  if (precision_switches > 0) {
    out += "; " + std::to_string(precision_switches) + " switch" + (precision_switches > 1 ? "es" : "") + " to a safer dtype";
  }
  return out;
}

std::vector<ModelFigures> SummarizeModels(const MetricsSnapshot& total) {
  std::map<std::string, ModelFigures> by_ns;
  std::map<std::string, std::array<double, 4>> sums;  // tokens, computed, kflop, latency us
  for (const auto& [key, d] : total.distributions) {
    if (d.count == 0) continue;
    const std::string& n = key.name;
    const bool check = n == "precision_check_cosine_ppm" || n == "precision_check_argmax_same" ||
                       n == "precision_check_prob_diff_ppm" || n == "precision_switches";
    if (n != "linear_dtype_bits" && n != "cpu_isa_level" && n != "batch_tokens" && n != "batch_computed_tokens" &&
        n != "batch_kflop" && n != "inference_batch_latency_micro_secs" && !check) {
      continue;
    }
    ModelFigures& f = by_ns[key.ns];
    f.ns = key.ns;
    auto& sum = sums[key.ns];
    if (n == "precision_check_cosine_ppm") {
      f.checked_rows = d.count;
      f.check_min_cosine = static_cast<double>(d.min) * 1e-6;
      f.check_mean_cosine = static_cast<double>(d.sum) * 1e-6 / static_cast<double>(d.count);
    } else if (n == "precision_check_argmax_same") {
      f.checked_rows = d.count;
      f.check_argmax_agreement = static_cast<double>(d.sum) / static_cast<double>(d.count);
    } else if (n == "precision_check_prob_diff_ppm") {
      f.check_max_prob_diff = static_cast<double>(d.max) * 1e-6;
    } else if (n == "precision_switches") {
      f.precision_switches = d.sum;
    } else if (n == "linear_dtype_bits") {
      f.dtype_bits_min = static_cast<int>(d.min);
      f.dtype_bits_max = static_cast<int>(d.max);
    } else if (n == "cpu_isa_level") {
      f.isa_level = static_cast<int>(d.min);
    } else if (n == "batch_tokens") {
      sum[0] += static_cast<double>(d.sum);
    } else if (n == "batch_computed_tokens") {
      sum[1] += static_cast<double>(d.sum);
    } else if (n == "batch_kflop") {
      sum[2] += static_cast<double>(d.sum);
    } else {
      sum[3] += static_cast<double>(d.sum);
    }
  }
  std::vector<ModelFigures> out;
  for (auto& [ns, f] : by_ns) {
    const auto& sum = sums[ns];
    if (sum[1] > 0) f.padding = 1.0 - sum[0] / sum[1];
    if (sum[2] > 0 && sum[3] > 0) f.gflops = sum[2] * 1e3 / (sum[3] * 1e-6) / 1e9;
    if (f.dtype_bits_min < 0 && f.isa_level < 0 && f.padding < 0 && f.gflops < 0 && f.checked_rows == 0) continue;  // not a model
    out.push_back(f);
  }
  return out;
}

}  // namespace dfw::report
