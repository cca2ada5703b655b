// GPU memory plan vs capacity (MPS page M7; design.md "GPU memory is planned before launch").
#include <cstdio>

#include "dfw/common/strings.h"
#include "rules.h"

namespace dfw::validate_internal {

void GpuMemory(const RuleContext& ctx) {
  if (!ctx.plan || !ctx.accelerator || !ctx.plan->accelerator.present) return;
  const auto& mem = ctx.plan->gpu_memory;
  if (mem.capacity_bytes == 0) return;
  const double fraction = static_cast<double>(mem.planned_peak_bytes) / static_cast<double>(mem.capacity_bytes);
  if (fraction <= 0.9) return;
  char pct[32];
  std::snprintf(pct, sizeof pct, "%.0f%%", fraction * 100.0);
  std::string breakdown = std::to_string(mem.contexts) + " CUDA context(s) " + HumanBytes(mem.context_bytes) +
                          " + models " + HumanBytes(mem.model_bytes) + " + workspace " + HumanBytes(mem.workspace_bytes);
  const AcceleratorSpec& spec = *ctx.accelerator;
  std::size_t offset = spec.type_field ? spec.type_field->offset : spec.origin.value_offset;
  std::size_t length = spec.type_field ? spec.type_field->text.size() : 0;
  bool exceeded = mem.planned_peak_bytes > mem.capacity_bytes;
  ctx.Add(exceeded ? "gpu-memory-exceeded" : "gpu-memory-tight", spec.origin, offset, length,
          "planned GPU memory " + HumanBytes(mem.planned_peak_bytes) + " is " + pct + " of the " +
              HumanBytes(mem.capacity_bytes) + " of one " + ctx.plan->accelerator.type + " (" + breakdown + ")",
          std::string(exceeded ? "it will not fit: " : "little headroom: ") +
              (ctx.plan->accelerator.mps ? "" : "use_nvidia_mps shares one context; ") +
              "share model copies (large_model / model_copies), run fewer SDK processes, or pick a GPU with more memory");
}

void KvCacheSequences(const RuleContext& ctx) {
  if (!ctx.plan) return;
  for (const std::string& why : SequenceShortfalls(*ctx.plan)) {
    const AcceleratorSpec* spec = ctx.accelerator;
    const Origin origin = spec ? spec->origin : Origin{"pipeline", "", 0};
    ctx.Add("kv-cache-no-sequence", origin, spec && spec->type_field ? spec->type_field->offset : origin.value_offset,
            spec && spec->type_field ? spec->type_field->text.size() : 0, why,
            "vLLM refuses this too (\"try increasing gpu_memory_utilization or decreasing max_model_len\"): shorten the "
            "context (pipeline_args max_length), share the weights (large_model / model_copies), " +
                std::string(ctx.plan->accelerator.mps ? "" : "use_nvidia_mps (one context), ") +
                "run fewer SDK processes (--sdk_worker_parallelism), or pick a GPU with more memory");
  }
  for (const auto& m : ctx.plan->models) {
    if (!m.sequences || m.sequences->cache_sequences > 0) continue;
    const auto& s = *m.sequences;
    const Origin origin = m.origin.value_or(Origin{"pipeline", "", 0});
    ctx.Add("kv-cache-short", origin, origin.value_offset, 0,
            "model '" + m.name + "': the engine's KV cache of " + std::to_string(s.kv.cache_bytes) + " B per process holds " +
                std::to_string(s.kv.bytes_per_token ? s.kv.cache_bytes / s.kv.bytes_per_token : 0) + " tokens, less than one "
                "sequence of " + std::to_string(s.kv.context_tokens) + " tokens (" + s.kv.context_how + ", " +
                std::to_string(s.sequence_bytes) + " B)",
            "records whose prompt and new tokens do not fit go to the error output; set pipeline_args "
            "kv_cache_memory_bytes to at least " + std::to_string(s.sequence_bytes) + " or a shorter max_length");
  }
}

}  // namespace dfw::validate_internal
