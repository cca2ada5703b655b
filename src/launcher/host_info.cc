#include "dfw/launcher/host_info.h"

#include <algorithm>
#include <optional>
#include <thread>

#include <spdlog/spdlog.h>

#include "dfw/backend/registry.h"

namespace dfw {
namespace {

std::optional<device::DeclaredAccelerator> Declared(const PipelineOptions& options, const Catalog& catalog) {
  const AcceleratorSpec* spec = options.worker_accelerator ? &*options.worker_accelerator
                                : options.accelerator_hint ? &*options.accelerator_hint
                                                           : nullptr;
  if (!spec || spec->gpu_type.empty()) return std::nullopt;
  const GpuType* gpu = catalog.FindGpu(spec->gpu_type);
  if (!gpu) return std::nullopt;  // gpu-unknown-type is reported by the validate module
  return device::DeclaredAccelerator{gpu->name, gpu->memory_bytes, gpu->compute_capability.major,
                                     gpu->compute_capability.minor};
}

}  // namespace

HostView DetectHost(const PipelineOptions& options, const Catalog& catalog, device::AcceleratorBackend backend,
                    bool quiet) {
  HostView view;
  view.host.cpu_cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::unique_ptr<device::GpuProbe> probe = device::MakeSystemGpuProbe();
  auto gpus = probe->ListGpus();
  view.host.cuda_devices = gpus.ok() ? static_cast<int>(gpus->size()) : 0;
  // Loading the CUDA backend creates a context (slow): only try when a GPU is there and may be used.
  Status cuda_backend = gpus.ok() ? Status::OK() : gpus.status();
  if (gpus.ok() && gpus->empty()) cuda_backend = Unavailable("no CUDA device visible");
  if (cuda_backend.ok() && backend != device::AcceleratorBackend::kEmulated) {
    auto created = CreateBackend("cuda");
    cuda_backend = created.ok() ? Status::OK() : created.status();
  }
  const spdlog::level::level_enum level = spdlog::get_level();
  if (quiet) spdlog::set_level(spdlog::level::off);
  auto selected = device::SelectAccelerator(backend, Declared(options, catalog), *probe, cuda_backend);
  spdlog::set_level(level);
  if (!selected.ok()) {
    view.selection = selected.status();
    return view;
  }
  view.accelerator = std::move(selected).value();
  view.host.backend_reason = view.accelerator.fallback_reason;
  if (view.accelerator.kind != device::Accelerator::Kind::kNone) view.host.selected_backend = view.accelerator.kind;
  return view;
}

}  // namespace dfw
