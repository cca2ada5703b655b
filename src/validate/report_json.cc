#include <nlohmann/json.hpp>

#include "dfw/validate/report.h"
#include "dfw/validate/validate.h"
#include "report_internal.h"

namespace dfw {
namespace {

nlohmann::json PlanJson(const WorkerPlan& plan) {
  nlohmann::json models = nlohmann::json::array();
  for (const auto& m : plan.models) {
    models.push_back({{"name", m.name}, {"bytes", m.bytes}, {"policy", CopiesPolicyName(m.policy)},
                      {"copies", m.copies}, {"copies_per_gpu", m.copies_per_gpu}, {"device", m.device},
                      {"workspace_bytes", m.workspace.bytes}, {"workspace_how", m.workspace.how}});
  }
  nlohmann::json hints = nlohmann::json::array();
  for (const auto& h : plan.resource_hints) {
    hints.push_back({{"transform", h.transform.empty() ? nlohmann::json(nullptr) : nlohmann::json(h.transform)},
                     {"where", h.where},
                     {"accelerator", h.accelerator.empty() ? nlohmann::json(nullptr) : nlohmann::json(h.accelerator)},
                     {"accelerator_inherited", h.accelerator_inherited},
                     {"min_ram_bytes", h.min_ram_bytes},
                     {"cpu_count", h.cpu_count}});
  }
  const auto& acc = plan.accelerator;
  const auto& mem = plan.gpu_memory;
  return {
      {"resource_hints", hints},
      {"machine_type", plan.machine_type.empty() ? nlohmann::json(nullptr) : nlohmann::json(plan.machine_type)},
      {"vcpus", plan.vcpus},
      {"sdk_processes", plan.sdk_processes},
      {"sdk_processes_reason", plan.sdk_processes_reason},
      {"harness_threads_per_process", plan.harness_threads_per_process},
      {"accelerator",
       acc.present ? nlohmann::json{{"type", acc.type}, {"count", acc.count}, {"memory_bytes", acc.memory_bytes},
                                    {"mps", acc.mps}, {"backend", device::AcceleratorKindName(acc.backend)},
                                    {"backend_reason", acc.backend_reason}, {"mps_client_limit", acc.mps_client_limit},
                                    {"declared_by", acc.declared_by},
                                    {"provisioning_model", acc.provisioning_model.empty()
                                                               ? nlohmann::json(nullptr)
                                                               : nlohmann::json(acc.provisioning_model)}}
                   : nlohmann::json{{"type", nullptr}, {"count", 0}, {"memory_bytes", 0}, {"mps", false},
                                    {"backend", "none"}, {"mps_client_limit", 0}}},
      {"gpu_memory",
       {{"capacity_bytes", mem.capacity_bytes}, {"planned_peak_bytes", mem.planned_peak_bytes},
        {"contexts", mem.contexts}, {"clients", mem.clients}, {"context_bytes", mem.context_bytes},
        {"model_bytes", mem.model_bytes}, {"workspace_bytes", mem.workspace_bytes}}},
      {"models", models},
      {"bundles", plan.bundles.target.empty() && plan.bundles.error.empty()
                      ? nlohmann::json(nullptr)
                      : nlohmann::json{{"count", plan.bundles.count}, {"target", plan.bundles.target},
                                       {"error", plan.bundles.error}, {"stages", plan.bundles.stages},
                                       {"shuffle_partitions", plan.bundles.shuffle_partitions}}},
  };
}

}  // namespace

std::string RenderJsonReport(const std::vector<Diagnostic>& diagnostics, const WorkerPlan* plan,
                             const PipelineOptions* options) {
  nlohmann::json list = nlohmann::json::array();
  int errors = 0, warnings = 0;
  for (const Diagnostic& d : diagnostics) {
    (d.severity == Severity::kError ? errors : warnings)++;
    nlohmann::json j = {{"severity", SeverityName(d.severity)}, {"code", d.code}, {"message", d.message},
                        {"help", d.help}, {"doc_url", DocUrl(d.code)}};
    if (d.origin) {
      j["origin"] = {{"where", d.origin->where}, {"text", d.origin->text}, {"caret_offset", d.caret_offset},
                     {"caret_length", d.caret_length}};
    }
    list.push_back(std::move(j));
  }
  nlohmann::json report = {{"valid", errors == 0}, {"errors", errors}, {"warnings", warnings},
                           {"diagnostics", std::move(list)},
                           {"plan", plan ? PlanJson(*plan) : nlohmann::json(nullptr)},
                           {"options", options ? validate_internal::OptionsJson(*options) : nlohmann::json(nullptr)}};
  // Invalid UTF-8 in user text must not throw: replace it.
  return report.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace dfw
