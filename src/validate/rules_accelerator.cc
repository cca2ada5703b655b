// Rules on GPU type, count, machine type, driver and right fitting (reference §6–§8, §11).
#include <algorithm>

#include "dfw/common/strings.h"
#include "rules.h"

namespace dfw::validate_internal {
namespace {

std::string JoinInts(const std::vector<int>& v) {
  std::vector<std::string> s;
  for (int i : v) s.push_back(std::to_string(i));
  return Join(s);
}

// Value part of a "key:value" sub-field: offset and length inside origin.text.
std::pair<std::size_t, std::size_t> ValueOf(const std::optional<SubField>& f) {
  if (!f) return {0, 0};
  std::size_t colon = f->text.find(':');
  if (colon == std::string::npos) return {f->offset, f->text.size()};
  return {f->offset + colon + 1, f->text.size() - colon - 1};
}

const GpuType* KnownGpu(const RuleContext& ctx) {
  return ctx.accelerator ? ctx.catalog.FindGpu(ctx.accelerator->gpu_type) : nullptr;
}

std::optional<MachineType> KnownMachine(const RuleContext& ctx) {
  return ctx.options.machine_type ? ctx.catalog.FindMachine(ctx.options.machine_type->value) : std::nullopt;
}

// " (did you mean 'nvidia-l4' (NVIDIA L4, g2 machine types)?)" for a product-style name, else the
// plain edit-distance suggestion.
std::string ProductNameSuggestion(const Catalog& catalog, const std::string& written) {
  std::vector<const GpuType*> like = catalog.GpuTypesLike(written);
  if (like.empty()) return DidYouMeanSuffix(written, catalog.GpuNames());
  std::vector<std::string> parts;
  for (const GpuType* g : like) {
    parts.push_back("'" + g->name + "' (" + g->display_name + ", " + Join(g->machine_families, "/") +
                    " machine types)");
  }
  return " (did you mean " + Join(parts, " or ") + "?)";
}

}  // namespace

void GpuUnknownType(const RuleContext& ctx) {
  for (const auto* spec : {ctx.options.worker_accelerator ? &*ctx.options.worker_accelerator : nullptr,
                           ctx.options.accelerator_hint ? &*ctx.options.accelerator_hint : nullptr}) {
    if (!spec || spec->gpu_type.empty() || ctx.catalog.FindGpu(spec->gpu_type)) continue;
    auto [offset, length] = ValueOf(spec->type_field);
    if (const RetiredGpu* retired = ctx.catalog.FindRetiredGpu(spec->gpu_type)) {
      ctx.Add("gpu-unknown-type", spec->origin, offset, length,
              "GPU type '" + spec->gpu_type + "' (" + retired->display_name + ") is retired: " + retired->reason,
              "pick a current type, e.g. nvidia-tesla-t4 on N1 or nvidia-l4 on G2 (" + retired->source + ")");
      continue;
    }
    ctx.Add("gpu-unknown-type", spec->origin, offset, length,
            "unknown GPU type '" + spec->gpu_type + "'" + ProductNameSuggestion(ctx.catalog, spec->gpu_type),
            "GPU types are Compute Engine accelerator names; known: " + Join(ctx.catalog.GpuNames()));
  }
}

void MachineUnknownType(const RuleContext& ctx) {
  const auto& mt = ctx.options.machine_type;
  if (auto custom = mt ? ctx.catalog.CustomMachine(mt->value) : std::nullopt; custom && !custom->ok()) {
    ctx.Add("machine-unknown-type", mt->origin, mt->origin.value_offset, mt->value.size(), custom->status().message(),
            "custom types are <family>-custom-<vCPUs>-<memory MB>[-ext] (custom-... is N1), e.g. custom-8-30720 or "
            "n2-custom-8-32768; see configs/machines.yaml for each family's rules");
  } else if (mt && !ctx.catalog.FindMachine(mt->value)) {
    ctx.Add("machine-unknown-type", mt->origin, mt->origin.value_offset, mt->value.size(),
            "unknown machine type '" + mt->value + "'" + DidYouMeanSuffix(mt->value, ctx.catalog.MachineNames()),
            "use a Compute Engine type such as g2-standard-8, a2-highgpu-1g, n1-standard-8 or custom-<vCPUs>-<MB>");
  }
  const auto& hint = ctx.options.accelerator_hint;
  if (hint && !hint->machine_type.empty() && !ctx.catalog.FindMachine(hint->machine_type)) {
    auto [offset, length] = ValueOf(hint->machine_field);
    ctx.Add("machine-unknown-type", hint->origin, offset, length,
            "unknown machine type '" + hint->machine_type + "'" +
                DidYouMeanSuffix(hint->machine_type, ctx.catalog.MachineNames()),
            "use a Compute Engine machine type such as g2-standard-8");
  }
}

void GpuCountInvalid(const RuleContext& ctx) {
  const GpuType* gpu = KnownGpu(ctx);
  if (!gpu || ctx.accelerator->count <= 0) return;
  const AcceleratorSpec& spec = *ctx.accelerator;
  auto [offset, length] = ValueOf(spec.count_field);
  auto machine = KnownMachine(ctx);
  if (machine && machine->fixed_gpu == gpu->name) {
    if (spec.count != machine->fixed_gpu_count) {
      ctx.Add("gpu-count-invalid", spec.origin, offset, length,
              "count:" + std::to_string(spec.count) + " does not match machine type '" + machine->name +
                  "', which comes with " + std::to_string(machine->fixed_gpu_count) + " x " + gpu->name,
              "set count:" + std::to_string(machine->fixed_gpu_count) +
                  " or pick the machine type of that GPU count (accelerator-optimized types have a fixed count)");
    }
    return;
  }
  if (std::find(gpu->counts.begin(), gpu->counts.end(), spec.count) == gpu->counts.end()) {
    ctx.Add("gpu-count-invalid", spec.origin, offset, length,
            "count:" + std::to_string(spec.count) + " is not offered for " + gpu->name,
            "allowed counts for " + gpu->name + ": " + JoinInts(gpu->counts));
  }
}

void GpuMachineMismatch(const RuleContext& ctx) {
  const GpuType* gpu = KnownGpu(ctx);
  auto machine = KnownMachine(ctx);
  if (!gpu || !machine) return;
  auto [offset, length] = ValueOf(ctx.accelerator->type_field);
  const std::string families = Join(gpu->machine_families);
  if (!machine->fixed_gpu.empty() && machine->fixed_gpu != gpu->name) {
    ctx.Add("gpu-machine-mismatch", ctx.accelerator->origin, offset, length,
            "GPU type '" + gpu->name + "' does not fit machine type '" + machine->name + "', which comes with " +
                std::to_string(machine->fixed_gpu_count) + " x " + machine->fixed_gpu,
            "use type:" + machine->fixed_gpu + ", or a " + families + " machine type for " + gpu->name);
  } else if (machine->fixed_gpu.empty() &&
             std::find(gpu->machine_families.begin(), gpu->machine_families.end(), machine->family) ==
                 gpu->machine_families.end()) {
    ctx.Add("gpu-machine-mismatch", ctx.accelerator->origin, offset, length,
            "GPU type '" + gpu->name + "' is available only with " + families + " machine types, not '" +
                machine->name + "' (" + machine->family + ")",
            gpu->machine_families == std::vector<std::string>{"g2"}
                ? "nvidia-l4 needs a G2 machine type, e.g. --machine_type=g2-standard-8"
                : "pick a " + families + " machine type");
  }
}

void N1GpuShape(const RuleContext& ctx) {
  const GpuType* gpu = KnownGpu(ctx);
  auto machine = KnownMachine(ctx);
  if (!gpu || !machine || !machine->gpu_attachable || ctx.accelerator->count <= 0) return;
  const N1GpuLimit* limit = ctx.catalog.FindN1Limit(gpu->name, ctx.accelerator->count);
  if (!limit || (machine->vcpus <= limit->max_vcpus && machine->memory_bytes <= limit->max_memory_bytes)) return;
  const auto& mt = *ctx.options.machine_type;
  ctx.Add("n1-gpu-shape", mt.origin, mt.origin.value_offset, mt.value.size(),
          "'" + machine->name + "' (" + std::to_string(machine->vcpus) + " vCPUs, " + HumanBytes(machine->memory_bytes) +
              ") is larger than N1 allows with " + std::to_string(limit->gpus) + " x " + gpu->name + " (up to " +
              std::to_string(limit->max_vcpus) + " vCPUs, " + HumanBytes(limit->max_memory_bytes) + ")",
          "these bounds are unverified; attach more GPUs or pick a smaller N1 type");
}

void DriverNotInstalled(const RuleContext& ctx) {
  const AcceleratorSpec* spec = ctx.accelerator;
  if (!spec || spec->install_driver || spec->gpu_type.empty()) return;
  std::size_t offset = spec->type_field ? spec->type_field->offset : spec->origin.value_offset;
  ctx.Add("driver-not-installed", spec->origin, offset, 0,
          std::string(AcceleratorFormName(spec->form)) + " accelerator '" + spec->gpu_type +
              "' without install-nvidia-driver: the VM has no NVIDIA driver, so the GPU is unusable",
          "append ;install-nvidia-driver to the accelerator value");
}

void RightFittingConflict(const RuleContext& ctx) {
  const auto& hint = ctx.options.accelerator_hint;
  const auto& wa = ctx.options.worker_accelerator;
  if (!hint || !wa) return;
  ctx.Add("right-fitting-conflict", hint->origin, hint->origin.value_offset,
          hint->origin.text.size() - hint->origin.value_offset,
          "accelerator resource hint used together with worker_accelerator (" + wa->origin.where + ": '" +
              wa->origin.text + "')",
          "when you use right fitting, don't use the worker_accelerator service option: keep one of them");
}

}  // namespace dfw::validate_internal
