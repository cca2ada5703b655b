// Rules on the min_ram and cpu_count resource hints against the machine type (reference §4: min_ram
// "is an aggregate, per-worker specification"), wherever the hint was written (flag, options:
// block, the pipeline file's resource_hints).
#include <algorithm>
#include <tuple>

#include "dfw/common/strings.h"
#include "rules.h"

namespace dfw::validate_internal {
namespace {

// The worker's machine type: --machine_type, else the right-fitting hint's machine_type:M.
std::optional<MachineType> HintMachine(const RuleContext& ctx) {
  if (ctx.options.machine_type) return ctx.catalog.FindMachine(ctx.options.machine_type->value);
  const auto& hint = ctx.options.accelerator_hint;
  if (hint && !hint->machine_type.empty()) return ctx.catalog.FindMachine(hint->machine_type);
  return std::nullopt;
}

// The smallest machine type of the same family (and the same built-in GPU count) that holds both
// minimums, or "" when the family has none.
std::string SmallestFitting(const Catalog& catalog, const MachineType& machine, uint64_t min_ram, int cpus) {
  std::optional<MachineType> best;
  for (const std::string& name : catalog.MachineNames()) {
    auto m = catalog.FindMachine(name);
    if (!m || m->family != machine.family || m->fixed_gpu != machine.fixed_gpu) continue;
    if (!machine.fixed_gpu.empty() && m->fixed_gpu_count != machine.fixed_gpu_count) continue;
    if (m->memory_bytes < min_ram || m->vcpus < cpus) continue;
    if (!best || std::tie(m->memory_bytes, m->vcpus) < std::tie(best->memory_bytes, best->vcpus)) best = m;
  }
  return best ? best->name + " (" + std::to_string(best->vcpus) + " vCPUs, " + HumanBytes(best->memory_bytes) + ")"
              : "";
}

std::string Fix(const Catalog& catalog, const MachineType& machine, uint64_t min_ram, int cpus) {
  std::string fit = SmallestFitting(catalog, machine, min_ram, cpus);
  return fit.empty() ? "no " + machine.family + " machine type holds it: lower the hint or pick another machine family"
                     : "pick a machine type that holds it, e.g. --machine_type=" + fit + ", or lower the hint";
}

}  // namespace

void ResourceHintExceedsMachine(const RuleContext& ctx) {
  const PipelineOptions& o = ctx.options;
  auto machine = HintMachine(ctx);
  if (!machine) return;  // no machine type (the host is the worker) or an unknown one (reported elsewhere)
  const uint64_t min_ram = o.min_ram_bytes.value_or(0);
  const int cpus = o.cpu_count.value_or(0);
  if (o.min_ram_bytes && o.min_ram_origin && min_ram > machine->memory_bytes) {
    const OptionValue& v = *o.min_ram_origin;
    ctx.Add("resource-hint-exceeds-machine", v.origin, v.origin.value_offset, v.value.size(),
            "resource hint min_ram '" + v.value + "' (" + HumanBytes(min_ram) + ") is more than machine type '" +
                machine->name + "' has (" + HumanBytes(machine->memory_bytes) +
                "); min_ram is per worker, so the worker cannot run the transform",
            Fix(ctx.catalog, *machine, min_ram, cpus));
  }
  if (o.cpu_count && o.cpu_count_origin && cpus > machine->vcpus) {
    const OptionValue& v = *o.cpu_count_origin;
    ctx.Add("resource-hint-exceeds-machine", v.origin, v.origin.value_offset, v.value.size(),
            "resource hint cpu_count " + std::to_string(cpus) + " is more than machine type '" + machine->name +
                "' has (" + std::to_string(machine->vcpus) + " vCPUs)",
            Fix(ctx.catalog, *machine, min_ram, cpus));
  }
}

}  // namespace dfw::validate_internal
