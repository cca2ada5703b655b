#include "dfw/device/accelerator.h"

#include <spdlog/spdlog.h>

#include "dfw/common/strings.h"
#include "dfw/device/mps_controller.h"

namespace dfw::device {
namespace {

Accelerator Emulated(const DeclaredAccelerator& d, std::string reason) {
  Accelerator a;
  a.kind = Accelerator::Kind::kEmulated;
  a.name = d.type + " (emulated)";
  a.capacity_bytes = d.memory_bytes;
  a.cc_major = d.cc_major;
  a.cc_minor = d.cc_minor;
  a.fallback_reason = std::move(reason);
  return a;
}

// The first visible GPU with the CUDA backend loadable, or the reason there is none.
Result<Accelerator> TryCuda(GpuProbe& probe, const Status& cuda_backend) {
  ASSIGN_OR_RETURN(std::vector<GpuInfo> gpus, probe.ListGpus());
  if (gpus.empty()) return Unavailable("the NVIDIA driver reports no GPU");
  if (!cuda_backend.ok()) return Unavailable("a GPU is visible but the CUDA backend did not load: " + cuda_backend.message());
  const GpuInfo& g = gpus.front();
  Accelerator a;
  a.kind = Accelerator::Kind::kCuda;
  a.name = g.name;
  a.capacity_bytes = g.total_bytes;
  a.cc_major = g.cc_major;
  a.cc_minor = g.cc_minor;
  return a;
}

}  // namespace

Result<AcceleratorBackend> ParseAcceleratorBackend(std::string_view text) {
  if (text == "auto") return AcceleratorBackend::kAuto;
  if (text == "cuda") return AcceleratorBackend::kCuda;
  if (text == "emulated") return AcceleratorBackend::kEmulated;
  return InvalidArgument("--accelerator_backend '" + std::string(text) + "' is unknown; allowed: auto, cuda, emulated" +
                         DidYouMeanSuffix(text, {"auto", "cuda", "emulated"}));
}

std::string_view AcceleratorBackendName(AcceleratorBackend backend) {
  switch (backend) {
    case AcceleratorBackend::kAuto: return "auto";
    case AcceleratorBackend::kCuda: return "cuda";
    case AcceleratorBackend::kEmulated: return "emulated";
  }
  return "?";
}

std::string_view Accelerator::kind_name() const { return AcceleratorKindName(kind); }

std::string_view AcceleratorKindName(Accelerator::Kind kind) {
  using Kind = Accelerator::Kind;
  switch (kind) {
    case Kind::kCuda: return "cuda";
    case Kind::kEmulated: return "emulated";
    case Kind::kNone: return "none";
  }
  return "?";
}

int Accelerator::max_mps_clients() const { return MpsClientLimitForComputeCapability(cc_major); }

Result<Accelerator> SelectAccelerator(AcceleratorBackend backend, const std::optional<DeclaredAccelerator>& declared,
                                      GpuProbe& probe, const Status& cuda_backend) {
  if (declared && declared->memory_bytes == 0) {
    return InvalidArgument("accelerator type '" + declared->type + "' has no memory size in the catalog");
  }
  switch (backend) {
    case AcceleratorBackend::kEmulated:
      if (!declared) {
        return FailedPrecondition("--accelerator_backend=emulated needs a declared accelerator "
                                  "(worker_accelerator=type:<gpu>;count:1) to know what to emulate");
      }
      return Emulated(*declared, "");
    case AcceleratorBackend::kCuda: {
      Result<Accelerator> cuda = TryCuda(probe, cuda_backend);
      if (!cuda.ok()) return cuda.status().WithContext("--accelerator_backend=cuda");
      return cuda;
    }
    case AcceleratorBackend::kAuto:
      break;
  }
  Result<Accelerator> cuda = TryCuda(probe, cuda_backend);
  if (cuda.ok()) return cuda;
  if (!declared) {
    Accelerator none;
    none.fallback_reason = cuda.status().message();
    spdlog::info("accelerator: none declared and no usable GPU ({}); inference runs on the CPU", none.fallback_reason);
    return none;
  }
  Accelerator a = Emulated(*declared, cuda.status().message());
  spdlog::warn("accelerator: no usable CUDA GPU ({}); emulating {} with {} of device memory on the CPU",
               a.fallback_reason, declared->type, HumanBytes(declared->memory_bytes));
  return a;
}

}  // namespace dfw::device
