// MPS rules M1–M10 of https://cloud.google.com/dataflow/docs/gpu/use-nvidia-mps, and the MPS
// server's client limit (nvidia-mps.md §5).
#include "dfw/common/strings.h"
#include "rules.h"

namespace dfw::validate_internal {
namespace {

const AcceleratorSpec* MpsSpec(const RuleContext& ctx) {
  return ctx.accelerator && ctx.accelerator->use_mps ? ctx.accelerator : nullptr;
}

// Points at the use_nvidia_mps sub-field.
std::pair<std::size_t, std::size_t> MpsField(const AcceleratorSpec& spec) {
  return spec.mps_field ? std::pair{spec.mps_field->offset, spec.mps_field->text.size()}
                        : std::pair{spec.origin.value_offset, std::size_t{0}};
}

void AtValue(const RuleContext& ctx, const char* code, const OptionValue& v, std::string message, std::string help) {
  ctx.Add(code, v.origin, v.origin.value_offset, v.value.size(), std::move(message), std::move(help));
}

}  // namespace

void MpsMultiGpu(const RuleContext& ctx) {
  const AcceleratorSpec* spec = MpsSpec(ctx);
  if (!spec || spec->count <= 1) return;
  std::size_t offset = spec->count_field->offset, length = spec->count_field->text.size();
  ctx.Add("mps-multi-gpu", spec->origin, offset, length,
          "use_nvidia_mps with count:" + std::to_string(spec->count) +
              "; MPS is supported only on Dataflow workers that use a single GPU",
          "set count:1, or drop use_nvidia_mps");
}

void MpsSingleSdkProcess(const RuleContext& ctx) {
  if (!MpsSpec(ctx) || !ctx.options.no_use_multiple_sdk_containers) return;
  AtValue(ctx, "mps-single-sdk-process", *ctx.options.no_use_multiple_sdk_containers,
          "'no_use_multiple_sdk_containers' with use_nvidia_mps: it restricts the worker to one SDK process, "
          "so MPS cannot divide the GPU across processes",
          "remove --experiments=no_use_multiple_sdk_containers; use model_copies or large_model to bound GPU memory");
}

void MpsPrime(const RuleContext& ctx) {
  if (!MpsSpec(ctx) || !ctx.options.enable_prime) return;
  AtValue(ctx, "mps-prime", *ctx.options.enable_prime, "'enable_prime' with use_nvidia_mps: Dataflow Prime doesn't support MPS",
          "drop enable_prime or use_nvidia_mps");
}

void MpsOutsideAccelerator(const RuleContext& ctx) {
  for (const OptionValue& v : ctx.options.standalone_mps) {
    AtValue(ctx, "mps-outside-accelerator", v,
            "'use_nvidia_mps' given as its own option; it is only valid inside worker_accelerator",
            "append it to the accelerator: "
            "--dataflow_service_options=\"worker_accelerator=type:<gpu>;count:1;install-nvidia-driver;use_nvidia_mps\"");
  }
}

void MpsRestrictedParallelism(const RuleContext& ctx) {
  if (!MpsSpec(ctx)) return;
  const auto& o = ctx.options;
  if (o.number_of_worker_harness_threads == 1) {
    AtValue(ctx, "mps-restricted-parallelism", *o.number_of_worker_harness_threads_origin,
            "--number_of_worker_harness_threads=1 with use_nvidia_mps: the pipeline can't use options that "
            "restrict parallelism",
            "leave the thread count unset or above 1");
  }
  if (o.sdk_worker_parallelism == 1) {
    AtValue(ctx, "mps-restricted-parallelism", *o.sdk_worker_parallelism_origin,
            "--sdk_worker_parallelism=1 with use_nvidia_mps forces one SDK process, so MPS has nothing to share",
            "leave it unset (one SDK process per vCPU)");
  }
}

void MpsSingleVcpu(const RuleContext& ctx) {
  const AcceleratorSpec* spec = MpsSpec(ctx);
  if (!spec || !ctx.plan || ctx.plan->vcpus != 1 || !ctx.options.machine_type) return;
  AtValue(ctx, "mps-single-vcpu", *ctx.options.machine_type,
          "'" + ctx.options.machine_type->value + "' has 1 vCPU; MPS targets workers with more than one vCPU",
          "pick a machine type with several vCPUs, or drop use_nvidia_mps");
}

void MpsClientLimit(const RuleContext& ctx) {
  const AcceleratorSpec* spec = MpsSpec(ctx);
  if (!spec || !ctx.plan || !ctx.plan->accelerator.mps) return;
  const auto& plan = *ctx.plan;
  int limit = plan.accelerator.mps_client_limit;
  int clients = plan.gpu_memory.clients;
  if (limit <= 0 || clients <= limit) return;
  std::string message = std::to_string(clients) + " MPS clients (" + std::to_string(plan.gpu_memory.processes_per_gpu) +
                        " SDK processes, " + plan.sdk_processes_reason + ") on one " + plan.accelerator.type +
                        ", but an MPS server takes at most " + std::to_string(limit) + " client CUDA contexts per device";
  std::string help = "use a machine type with at most " + std::to_string(limit) + " vCPUs, or set --sdk_worker_parallelism";
  if (ctx.options.machine_type) {
    AtValue(ctx, "mps-client-limit", *ctx.options.machine_type, message, help);
  } else {
    auto [offset, length] = MpsField(*spec);
    ctx.Add("mps-client-limit", spec->origin, offset, length, message, help);
  }
}

void MpsRecommended(const RuleContext& ctx) {
  if (!ctx.plan || !ctx.accelerator || !ctx.plan->accelerator.present || ctx.plan->accelerator.mps) return;
  for (const auto& m : ctx.plan->models) {
    if (m.copies_per_gpu <= 1) continue;
    const AcceleratorSpec& spec = *ctx.accelerator;
    ctx.Add("mps-recommended", spec.origin, spec.origin.value_offset,
            spec.origin.text.size() - spec.origin.value_offset,
            "model '" + m.name + "' is loaded " + std::to_string(m.copies_per_gpu) + " times onto one " + spec.gpu_type +
                " without MPS; CUDA time-slices between the processes",
            "append ;use_nvidia_mps to worker_accelerator (count:1), or share one copy with large_model / model_copies");
    return;
  }
}

}  // namespace dfw::validate_internal
