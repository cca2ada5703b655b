#include <cstdio>

#include "dfw/common/strings.h"
#include "dfw/plan/plan.h"

namespace dfw {
namespace {

// A hint's size as people write it: "16 GB", "1.5 GB", "8 GiB" (HumanBytes for anything else).
std::string HintBytes(uint64_t bytes) {
  if (bytes > 0 && bytes % (uint64_t{1} << 30) == 0) return std::to_string(bytes >> 30) + " GiB";
  if (bytes % 1'000'000 == 0) {
    char text[32];
    std::snprintf(text, sizeof text, "%g GB", static_cast<double>(bytes) / 1e9);
    return text;
  }
  return HumanBytes(bytes);
}

// Text generation: the context, one sequence's KV cache, what the engine's cache holds, and on a GPU
// vLLM's question: how many sequences fit within gpu_memory_utilization.
template <typename Line>
void RenderSequences(const WorkerPlan::Model::Sequences& s, const WorkerPlan& plan, Line& line) {
  const std::string ctx = std::to_string(s.kv.context_tokens);
  line("", "text generation: context " + ctx + " tokens per sequence, " + s.kv.context_how);
  line("", "KV cache " + std::to_string(s.kv.bytes_per_token) + " B per token (" + s.kv.bytes_per_token_how + "); one sequence " +
               HumanBytes(s.sequence_bytes) + " (" + ctx + " tokens in blocks of " + std::to_string(s.kv.block_tokens) + ")");
  line("", "engine: cache " + HumanBytes(s.kv.cache_bytes) + " per process (" +
               (s.kv.cache_bytes_given ? "kv_cache_memory_bytes" : "default; set kv_cache_memory_bytes") + ") holds " +
               std::to_string(s.cache_sequences) + " sequence(s) of " + ctx + " tokens; max_num_seqs " +
               std::to_string(s.kv.max_sequences));
  if (!s.on_gpu) return;
  char util[16];
  std::snprintf(util, sizeof util, "%.2g", s.utilization);
  line("sequences:", SequencesText(s));
  line("", std::string("budget gpu_memory_utilization ") + util + " (vLLM's default) x " +
               HumanBytes(plan.gpu_memory.capacity_bytes) + " = " + HumanBytes(s.budget_bytes) + "; contexts, weights, " +
               "activations and other workspace " + HumanBytes(s.other_bytes) + " leave " + HumanBytes(s.kv_bytes_left) +
               " for " + std::to_string(s.kv_caches) + " KV cache(s), " + HumanBytes(s.kv_bytes_per_cache) + " each (" +
               std::to_string(s.kv_bytes_per_cache) + " B: the most kv_cache_memory_bytes may be)");
}

}  // namespace

std::string RenderPlanText(const WorkerPlan& plan) {
  std::string out = "worker plan\n";
  auto line = [&](const char* label, const std::string& value) {
    char head[32];
    std::snprintf(head, sizeof head, "  %-17s", label);
    out += head + value + "\n";
  };
  line("machine type:", plan.machine_type.empty() ? "(none: this host, " + std::to_string(plan.vcpus) + " cores)"
                                                  : plan.machine_type + " (" + std::to_string(plan.vcpus) + " vCPUs)");
  line("SDK processes:", std::to_string(plan.sdk_processes) + " (" + plan.sdk_processes_reason + ")");
  line("harness threads:", std::to_string(plan.harness_threads_per_process) + " per process");
  const auto& acc = plan.accelerator;
  if (!acc.present) {
    line("accelerator:", "none");
  } else {
    line("accelerator:", std::to_string(acc.count) + " x " + acc.type + " (" + HumanBytes(acc.memory_bytes) +
                             " each), MPS " + (acc.mps ? "on (up to " + std::to_string(acc.mps_client_limit) +
                                                             " clients per GPU)"
                                                       : std::string("off")) +
                             ", backend " + std::string(device::AcceleratorKindName(acc.backend)) +
                             (acc.backend_reason.empty() ? std::string() : " (" + acc.backend_reason + ")"));
  }
  if (!acc.declared_by.empty()) line("", "declared by the " + acc.declared_by + "; right fitting");
  if (acc.provisioning_model == "FLEX_START") {
    line("", "provisioning: flex-start (provisioning_model:FLEX_START; Preview, batch pipelines only: the job waits "
             "for GPU capacity)");
  }
  for (std::size_t i = 0; i < plan.resource_hints.size(); ++i) {
    const auto& h = plan.resource_hints[i];
    std::vector<std::string> parts;
    if (!h.accelerator.empty()) parts.push_back("accelerator " + h.accelerator + (h.accelerator_inherited ? " (from the pipeline level)" : ""));
    if (h.min_ram_bytes > 0) parts.push_back("min_ram " + HintBytes(h.min_ram_bytes));
    if (h.cpu_count > 0) parts.push_back("cpu_count " + std::to_string(h.cpu_count));
    const std::string who = h.transform.empty() ? "pipeline level" : "'" + h.transform + "' (" + h.where + ")";
    line(i == 0 ? "resource hints:" : "", who + ": " + (parts.empty() ? std::string("none") : Join(parts, ", ")));
  }
  if (plan.models.empty()) {
    line("models:", "none (no RunInference in the pipeline; GPU memory counts contexts only)");
  }
  for (const auto& m : plan.models) {
    line("model:", m.name + ": " + HumanBytes(m.bytes) + " x " + std::to_string(m.copies) + " copies (" +
                       CopiesPolicyName(m.policy) + "), " + std::to_string(m.copies_per_gpu) + " on the busiest GPU, device " +
                       m.device);
    if (!m.bytes_how.empty()) line("", "weights " + std::to_string(m.bytes) + " B: " + m.bytes_how);
    if (m.weights_absent) line("", "planned from config.json alone: the model directory has no model.safetensors (a run needs it)");
    if (!m.workspace.how.empty()) {
      line("", "workspace " + HumanBytes(m.workspace.bytes) + " per process (" + m.workspace.how + ")");
    }
    if (m.sequences) RenderSequences(*m.sequences, plan, line);
  }
  if (plan.bundles.stages.size() > 1) {
    line("stages:", std::to_string(plan.bundles.stages.size()) + " fused stages, a Combine's shuffle (" +
                        std::to_string(plan.bundles.shuffle_partitions) + " partitions) between each");
    for (std::size_t k = 0; k < plan.bundles.stages.size(); ++k) {
      std::string chain;
      for (const std::string& t : plan.bundles.stages[k]) chain += (chain.empty() ? "" : " -> ") + t;
      const std::string label = "  stage " + std::to_string(k + 1) + ":";
      line(label.c_str(), chain);
    }
  }
  if (!plan.bundles.target.empty()) {
    line("bundles:", std::to_string(plan.bundles.count) + (plan.bundles.stages.size() > 1 ? " in stage 1" : "") + " (" +
                         plan.bundles.target + ")");
  } else if (!plan.bundles.error.empty()) {
    line("bundles:", "not planned here: " + plan.bundles.error);
  }
  if (acc.present) {
    const auto& mem = plan.gpu_memory;
    double pct = mem.capacity_bytes ? 100.0 * static_cast<double>(mem.planned_peak_bytes) /
                                          static_cast<double>(mem.capacity_bytes)
                                    : 0.0;
    char pct_text[32];
    std::snprintf(pct_text, sizeof pct_text, "%.1f%%", pct);
    line("GPU memory:", "planned peak " + HumanBytes(mem.planned_peak_bytes) + " of " +
                            HumanBytes(mem.capacity_bytes) + " (" + pct_text + ") on the busiest GPU");
    line("", std::to_string(mem.contexts) + " CUDA context(s) " + HumanBytes(mem.context_bytes) + " + models " +
                 HumanBytes(mem.model_bytes) + " + workspace " + HumanBytes(mem.workspace_bytes) + "; " +
                 std::to_string(mem.clients) + " client process(es)");
  }
  return out;
}

}  // namespace dfw
