// Rules about the pipeline's models (RunInference transforms) rather than the launch flags.
#include "rules.h"

namespace dfw::validate_internal {

// Beam's RunInference with device: GPU and no GPU attached logs a warning and runs on the CPU; the
// job still works, but slowly, and usually a worker_accelerator was forgotten.
void GpuRequestedNoAccelerator(const RuleContext& ctx) {
  if (!ctx.plan || ctx.plan->accelerator.present) return;
  for (const auto& m : ctx.plan->models) {
    if (m.device != "GPU") continue;
    const Origin origin = m.origin.value_or(Origin{"pipeline", "device: GPU", 0});
    const std::size_t at = origin.text.find("GPU", origin.value_offset);
    ctx.Add("gpu-requested-no-accelerator", origin, at == std::string::npos ? origin.value_offset : at,
            at == std::string::npos ? 0 : 3,
            "model '" + m.name + "' asks for device: GPU but no accelerator is declared; Beam runs it on the CPU",
            "declare a GPU with --dataflow_service_options=\"worker_accelerator=type:nvidia-l4;count:1;"
            "install-nvidia-driver\" (and a matching --machine_type), or set device: CPU");
  }
}

}  // namespace dfw::validate_internal
