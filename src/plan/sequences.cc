// Text generation in the plan, said in words: how many sequences of the context fit, and why not
// when none does (the numbers of PlanSequences in plan.cc).
#include <cstdio>

#include "dfw/common/strings.h"
#include "dfw/plan/plan.h"

namespace dfw {
namespace {

std::string Fraction(double v) {
  char b[16];
  std::snprintf(b, sizeof b, "%.2g", v);
  return b;
}

}  // namespace

std::string SequencesText(const WorkerPlan::Model::Sequences& s) {
  const std::string ctx = std::to_string(s.kv.context_tokens) + " tokens";
  if (!s.on_gpu) return "no GPU planned; the cache holds " + std::to_string(s.cache_sequences) + " sequence(s) of " + ctx;
  return std::to_string(s.per_gpu) + " sequence(s) of " + ctx + " per GPU (" + std::to_string(s.per_process) +
         " per process x " + std::to_string(s.processes) + " process(es))";
}

std::vector<std::string> SequenceShortfalls(const WorkerPlan& plan) {
  std::vector<std::string> out;
  for (const WorkerPlan::Model& m : plan.models) {
    if (!m.sequences || !m.sequences->on_gpu || m.sequences->per_process > 0) continue;
    const auto& s = *m.sequences;
    out.push_back("model '" + m.name + "': not one sequence of " + std::to_string(s.kv.context_tokens) + " tokens (" +
                  s.kv.context_how + ") fits one " + plan.accelerator.type + ": the budget gpu_memory_utilization " +
                  Fraction(s.utilization) + " x " + HumanBytes(plan.gpu_memory.capacity_bytes) + " = " +
                  HumanBytes(s.budget_bytes) + ", less " + HumanBytes(s.other_bytes) + " (" +
                  std::to_string(plan.gpu_memory.contexts) + " CUDA context(s) " + HumanBytes(plan.gpu_memory.context_bytes) +
                  ", weights " + HumanBytes(plan.gpu_memory.model_bytes) + ", activations and other workspace), leaves " +
                  HumanBytes(s.kv_bytes_left) + " for " + std::to_string(s.kv_caches) + " KV cache(s), " +
                  HumanBytes(s.kv_bytes_per_cache) + " each; one sequence needs " + HumanBytes(s.sequence_bytes) + " (" +
                  std::to_string(s.kv.bytes_per_token) + " B per token: " + s.kv.bytes_per_token_how + ")");
  }
  return out;
}

}  // namespace dfw
