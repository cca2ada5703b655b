#include "dfw/report/tenants_report.h"

#include <unistd.h>

#include <cstdio>

#include <nlohmann/json.hpp>

#include "dfw/common/strings.h"
#include "dfw/job/job_dir.h"
#include "dfw/report/svg.h"

namespace dfw::report {
namespace {

using json = nlohmann::json;

std::string Cell(const std::string& text, bool left = false) {
  return std::string(left ? "<td class=\"text\">" : "<td>") + Escape(text) + "</td>";
}

std::string Bytes(const json& v) { return v.is_number() ? HumanBytes(v.get<uint64_t>()) : "-"; }

}  // namespace

bool IsTenantsJobDir(const std::string& dir) { return ::access((dir + "/tenants_report.json").c_str(), F_OK) == 0; }

Result<std::string> RenderTenantsReportHtml(const std::string& dir) {
  const std::string path = dir + "/tenants_report.json";
  ASSIGN_OR_RETURN(std::string text, ReadWholeFile(path));
  const json r = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!r.is_object() || !r.contains("tenants") || !r["tenants"].is_object()) {
    return Status(StatusCode::kDataLoss, "'" + path + "' is not a tenants run's report (no \"tenants\" object)");
  }
  std::string body = "<h1>Tenants run</h1><p class=\"note\">" + Escape(dir) + "</p>\n";
  body += "<h2>Tenants</h2><table><tr><th class=\"text\">tenant</th><th class=\"text\">ended</th><th>SDK processes</th>"
          "<th>guaranteed</th><th>borrowed</th><th>GPU-memory peak</th><th>budget</th><th class=\"text\">own report</th></tr>\n";
  double total_s = 0;
  for (const auto& [name, t] : r["tenants"].items()) {
    if (!t.is_object()) continue;
    for (const json& p : t.value("gpu_memory_timeline", json::array())) {
      if (p.is_array() && p.size() == 2 && p[0].is_number()) total_s = std::max(total_s, p[0].get<double>());
    }
    body += "<tr>" + Cell(name, true) + Cell(t.value("ended", "") + (t.value("success", false) ? "" : " (FAILED)"), true) +
            Cell(t.contains("processes_started") ? t["processes_started"].dump() : "-") +
            Cell(t.contains("processes_guaranteed") ? t["processes_guaranteed"].dump() : "-") +
            Cell(t.contains("processes_borrowed") ? t["processes_borrowed"].dump() : "-") +
            Cell(Bytes(t.value("gpu_memory_peak_bytes", json()))) + Cell(Bytes(t.value("gpu_memory_budget_bytes", json()))) +
            "<td class=\"text\"><a href=\"tenants/" + Escape(name) + "/report.html\">tenants/" + Escape(name) +
            "/report.html</a></td></tr>\n";
  }
  body += "</table>\n<h2>Borrowing</h2>\n";
  const json events = r.value("borrowing", json::array());
  if (events.empty()) {
    body += "<p class=\"note\">No tenant borrowed process slots.</p>\n";
  } else {
    body += "<table><tr><th>at</th><th class=\"text\">tenant</th><th class=\"text\">after</th><th>SDK processes</th></tr>\n";
    for (const json& e : events) {
      char at[32];
      std::snprintf(at, sizeof at, "%.1f s", e.value("at_s", 0.0));
      body += "<tr>" + Cell(at) + Cell(e.value("tenant", ""), true) + Cell(e.value("after", "") + " ended", true) +
              Cell(std::to_string(e.value("processes_before", 0)) + " -> " + std::to_string(e.value("processes_after", 0))) +
              "</tr>\n";
    }
    body += "</table>\n";
  }
  body += "<h2>GPU memory per tenant</h2>\n";
  const json sampling = r.value("gpu_memory_sampling", json::object());
  if (!sampling.is_object() || sampling.value("source", json()).is_null()) {
    body += "<p class=\"note\">Not sampled: " + Escape(sampling.is_object() ? sampling.value("why", "no sampling recorded") : "") +
            "</p>\n";
  } else {
    body += "<p class=\"note\">Sampled from the " + Escape(sampling.value("source", "")) + " every " +
            std::to_string(sampling.value("interval_ms", 0)) + " ms (" + std::to_string(sampling.value("samples", 0)) +
            " samples); the dashed line is the tenant's budget.</p>\n";
    for (const auto& [name, t] : r["tenants"].items()) {
      if (!t.is_object() || !t.contains("gpu_memory_timeline")) continue;
      std::vector<std::pair<double, double>> points;
      for (const json& p : t["gpu_memory_timeline"]) {
        if (p.is_array() && p.size() == 2 && p[0].is_number() && p[1].is_number()) {
          points.push_back({p[0].get<double>(), p[1].get<double>()});
        }
      }
      const double budget = t.value("gpu_memory_budget_bytes", 0.0);
      body += StepChart("chart-tenant-memory-" + name, "tenant " + name + ": GPU memory held (peak " +
                            Bytes(t.value("gpu_memory_peak_bytes", json())) + " of " + Bytes(t.value("gpu_memory_budget_bytes", json())) + ")",
                        points, total_s, budget, "bytes");
    }
  }
  return Page("dfworker tenants run", body);
}

}  // namespace dfw::report
