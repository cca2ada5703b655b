// The admission as the dry run prints it: text for people, one JSON object for tools.
#include <nlohmann/json.hpp>

#include <cstdio>

#include "dfw/common/strings.h"
#include "dfw/tenants/admission.h"

namespace dfw {
namespace {

std::string Number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

std::string Percent(double p) { return Number(p) + "%"; }

}  // namespace

std::string RenderAdmissionText(const Admission& a) {
  std::string out;
  if (a.gpu_type.empty()) return "tenants: no GPU declared for the shared worker\n";
  out += "tenants on one " + a.gpu_type + (a.emulated ? " (emulated)" : "") + ", " + HumanBytes(a.capacity_bytes) +
         (a.strategy == "mps" ? ", MPS split:\n" : ":\n");
  for (const TenantLimits& l : a.tenants) {
    out += "  " + l.name + ": budget " + HumanBytes(l.budget_bytes) + ", plan " + HumanBytes(l.need_bytes) + ", " +
           std::to_string(l.sdk_processes) + " SDK process" + (l.sdk_processes == 1 ? "" : "es") +
           (l.model_hosts > 0 ? " + " + std::to_string(l.model_hosts) + " model host(s)" : "") +
           "; per client CUDA_MPS_PINNED_DEVICE_MEM_LIMIT " + HumanBytes(l.pinned_limit_bytes) + ", threads " +
           Percent(l.active_thread_percentage) + ", priority " + TenantPriorityName(l.priority) + ", over-quota weight " +
           Number(l.over_quota_weight) + "\n";
  }
  out += "  GPU memory: budgets " + HumanBytes(a.budgets_bytes) + " + context overhead " + HumanBytes(a.overhead_bytes) +
         " of " + HumanBytes(a.capacity_bytes) + "\n";
  out += "  MPS clients: " + std::to_string(a.clients) + " of " + std::to_string(a.client_limit) +
         "; guaranteed SDK processes: " + std::to_string(a.processes) + " of " + std::to_string(a.vcpus) + " vCPUs\n";
  if (!a.isolation.empty()) {
    out += "isolation:\n";
    for (const std::string& line : a.isolation) out += "  - " + line + "\n";
  }
  return out;
}

std::string RenderAdmissionJson(const Admission& a) {
  nlohmann::json tenants = nlohmann::json::array();
  for (const TenantLimits& l : a.tenants) {
    tenants.push_back({{"name", l.name},
                       {"budget_bytes", l.budget_bytes},
                       {"need_bytes", l.need_bytes},
                       {"per_process_need_bytes", l.per_process_need_bytes},
                       {"sdk_process_need_bytes", l.sdk_process_need_bytes},
                       {"sdk_processes", l.sdk_processes},
                       {"model_hosts", l.model_hosts},
                       {"clients", l.clients},
                       {"pinned_limit_bytes", l.pinned_limit_bytes},
                       {"active_thread_percentage", l.active_thread_percentage},
                       {"priority", TenantPriorityName(l.priority)},
                       {"over_quota_weight", l.over_quota_weight}});
  }
  nlohmann::json j = {{"gpu_type", a.gpu_type.empty() ? nlohmann::json(nullptr) : nlohmann::json(a.gpu_type)},
                      {"emulated", a.emulated},
                      {"capacity_bytes", a.capacity_bytes},
                      {"overhead_bytes", a.overhead_bytes},
                      {"budgets_bytes", a.budgets_bytes},
                      {"clients", a.clients},
                      {"client_limit", a.client_limit},
                      {"processes", a.processes},
                      {"vcpus", a.vcpus},
                      {"strategy", a.strategy.empty() ? nlohmann::json(nullptr) : nlohmann::json(a.strategy)},
                      {"isolation", a.isolation},
                      {"tenants", std::move(tenants)}};
  if (a.mig) {  // the MIG layout that would hold the tenants (not used: see isolation)
    nlohmann::json slots = nlohmann::json::array();
    for (const MigLayout::Slot& m : a.mig->slots) {
      slots.push_back({{"tenant", m.tenant},
                       {"profile", m.profile.empty() ? nlohmann::json(nullptr) : nlohmann::json(m.profile)},
                       {"memory_bytes", m.memory_bytes},
                       {"compute_slices", m.compute_slices}});
    }
    j["mig"] = {{"slots", std::move(slots)}, {"compute_slices", a.mig->compute_slices}, {"fits", a.mig->fits},
                {"why_not", a.mig->why_not}, {"used", false}};
  }
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace dfw
