// Text and JSON of the plan across the catalog.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "dfw/common/strings.h"
#include "dfw/plan/catalog_plan.h"

namespace dfw {
namespace {

std::string Configuration(const CatalogPlanRow& r) {
  if (!r.mig_profile.empty()) {
    return "MIG " + r.mig_profile + " (" + std::to_string(r.mig_compute_slices) + "/7 SMs, up to " +
           std::to_string(r.mig_max_instances) + " per GPU)";
  }
  return (r.machine_type.empty() ? std::string("(no --machine_type)") : r.machine_type) + ", " +
         std::to_string(r.gpu_count) + " GPU" + (r.gpu_count == 1 ? "" : "s");
}

std::string Gib(uint64_t bytes) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", static_cast<double>(bytes) / 1073741824.0);
  return b;
}

}  // namespace

std::string RenderCatalogPlanText(const CatalogPlan& plan) {
  std::string out =
      "plan across the catalog (> your flags' configuration, * smallest that fits with headroom; memory in GiB on "
      "the busiest GPU)\n";
  char line[512];
  std::snprintf(line, sizeof line, "  %-22s %-44s %5s %6s %6s %7s %7s %8s %9s  %s\n", "GPU", "configuration", "procs",
                "copies", "fit", "peak", "of", "headroom", "MPS", "verdict (rule)");
  out += line;
  for (const CatalogPlanRow& r : plan.rows) {
    int copies = 0;
    for (const auto& m : r.plan.models) copies += m.copies_per_gpu;
    const std::string fit = r.model_copies_that_fit < 0       ? "-"
                            : r.model_copies_that_fit > 99999 ? ">99999"
                                                              : std::to_string(r.model_copies_that_fit);
    const std::string mps = r.mps_clients > 0 ? std::to_string(r.mps_clients) + "/" + std::to_string(r.mps_client_limit) : "off";
    const char mark = r.selected ? '>' : r.smallest ? '*' : ' ';
    std::snprintf(line, sizeof line, "%c%c%-22s %-44s %5d %6d %6s %7s %7s %8s %9s  %s (%s)\n", mark,
                  r.selected && r.smallest ? '*' : ' ', r.gpu.c_str(), Configuration(r).c_str(), r.plan.sdk_processes,
                  copies, fit.c_str(), Gib(r.plan.gpu_memory.planned_peak_bytes).c_str(),
                  Gib(r.plan.gpu_memory.capacity_bytes).c_str(), Gib(r.headroom_bytes).c_str(), mps.c_str(),
                  FitVerdictName(r.verdict), r.rule.c_str());
    out += line;
  }
  out += "columns: procs = SDK processes per worker; copies = model copies on the busiest GPU; fit = copies of the "
         "pipeline's models that GPU holds beside its contexts and workspace; MPS = clients/limit per GPU\n";
  for (const CatalogPlanRow& r : plan.rows) {
    if (r.selected) out += "your flags: " + r.gpu + " " + Configuration(r) + ": " + FitVerdictName(r.verdict) + "\n";
  }
  bool any_smallest = false;
  for (const CatalogPlanRow& r : plan.rows) {
    if (!r.smallest) continue;
    any_smallest = true;
    out += std::string(r.mig_profile.empty() ? "smallest that fits: " : "smallest MIG slice that fits: ") + r.gpu +
           " " + Configuration(r) + " (headroom " + HumanBytes(r.headroom_bytes) + ")\n";
  }
  if (!any_smallest) out += "no configuration fits with headroom\n";
  for (const std::string& n : plan.notes) out += "note: " + n + "\n";
  bool any_mig = false;
  for (const CatalogPlanRow& r : plan.rows) any_mig |= !r.mig_profile.empty();
  if (any_mig && !plan.processes_note.empty()) out += "note: " + plan.processes_note + "\n";
  return out;
}

std::string RenderCatalogPlanJson(const CatalogPlan& plan) {
  nlohmann::json j;
  j["rows"] = nlohmann::json::array();
  for (const CatalogPlanRow& r : plan.rows) {
    nlohmann::json row = {
        {"gpu", r.gpu},
        {"machine_type", r.machine_type},
        {"gpu_count", r.gpu_count},
        {"sdk_processes", r.plan.sdk_processes},
        {"planned_peak_bytes", r.plan.gpu_memory.planned_peak_bytes},
        {"capacity_bytes", r.plan.gpu_memory.capacity_bytes},
        {"headroom_bytes", r.headroom_bytes},
        {"contexts", r.plan.gpu_memory.contexts},
        {"context_bytes", r.plan.gpu_memory.context_bytes},
        {"model_bytes", r.plan.gpu_memory.model_bytes},
        {"workspace_bytes", r.plan.gpu_memory.workspace_bytes},
        {"model_copies_that_fit", r.model_copies_that_fit},
        {"mps", r.plan.accelerator.mps},
        {"mps_clients", r.mps_clients},
        {"mps_client_limit", r.mps_client_limit},
        {"verdict", FitVerdictName(r.verdict)},
        {"rule", r.rule},
        {"selected", r.selected},
        {"smallest", r.smallest},
    };
    row["models"] = nlohmann::json::array();
    for (const auto& m : r.plan.models) {
      row["models"].push_back({{"name", m.name}, {"copies", m.copies}, {"copies_per_gpu", m.copies_per_gpu}, {"bytes", m.bytes}});
    }
    if (!r.mig_profile.empty()) {
      row["mig"] = {{"profile", r.mig_profile}, {"compute_slices", r.mig_compute_slices},
                    {"max_instances", r.mig_max_instances}};
    }
    j["rows"].push_back(std::move(row));
  }
  j["notes"] = plan.notes;
  j["processes_note"] = plan.processes_note;
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace dfw
