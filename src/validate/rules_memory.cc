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

}  // namespace dfw::validate_internal
