// The accelerator view: which GPU this worker computes on, or which one it emulates.
//
//   cuda      a GPU visible through the NVIDIA driver (dlopen'd: the binary runs without one),
//             with the CUDA backend loadable; capacity = the device's memory.
//   emulated  no usable GPU: capacity = the catalog's memory for the declared worker_accelerator
//             type; compute runs on the CPU backend, memory is enforced by the MemoryLedger.
//   none      no GPU and none declared: inference runs on the CPU with no device memory to plan.
//
// --accelerator_backend: auto picks cuda when possible and otherwise emulates the declared type,
// saying why in one log line; cuda and emulated are demands (a reason is returned when unmet).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dfw/common/status.h"

namespace dfw::device {

enum class AcceleratorBackend { kAuto, kCuda, kEmulated };

// "auto" | "cuda" | "emulated"; anything else is kInvalidArgument with the allowed values.
Result<AcceleratorBackend> ParseAcceleratorBackend(std::string_view text);
std::string_view AcceleratorBackendName(AcceleratorBackend backend);

// One GPU as the driver reports it.
struct GpuInfo {
  int ordinal = 0;
  std::string name;               // "NVIDIA H200"
  uint64_t total_bytes = 0;       // cuDeviceTotalMem
  int cc_major = 0, cc_minor = 0; // compute capability
};

// Device memory as measured now (NVML when present, else the driver).
struct GpuMemoryUsage {
  uint64_t total_bytes = 0;
  uint64_t used_bytes = 0;
  uint64_t free_bytes = 0;
  std::string source;  // "nvml" or "cuda driver"
};

// The seam to the NVIDIA driver and NVML. The system implementation dlopens libcuda.so.1 and
// libnvidia-ml.so.1 at run time; tests substitute a fake. Not thread-safe.
class GpuProbe {
 public:
  virtual ~GpuProbe() = default;
  // Visible GPUs; kUnavailable naming the reason when there is no driver or no device.
  virtual Result<std::vector<GpuInfo>> ListGpus() = 0;
  // Current memory use of one GPU.
  virtual Result<GpuMemoryUsage> MemoryUsage(int ordinal) = 0;
};

std::unique_ptr<GpuProbe> MakeSystemGpuProbe();

// The accelerator declared by the job (worker_accelerator type), with its catalog facts.
struct DeclaredAccelerator {
  std::string type;                 // e.g. "nvidia-tesla-t4"
  uint64_t memory_bytes = 0;        // catalog memory of one such GPU
  int cc_major = 7, cc_minor = 5;   // catalog compute capability (decides the MPS client limit)
};

struct Accelerator {
  enum class Kind { kCuda, kEmulated, kNone };
  Kind kind = Kind::kNone;
  std::string name;                 // "NVIDIA H200" or "nvidia-tesla-t4 (emulated)"
  uint64_t capacity_bytes = 0;      // 0 for kNone
  int cc_major = 0, cc_minor = 0;
  std::string fallback_reason;      // why auto did not pick cuda ("" when it did or was not asked)

  std::string_view kind_name() const;  // AcceleratorKindName(kind)
  // MPS client contexts this device takes (48 Volta+, 16 before).
  int max_mps_clients() const;
};

// "cuda", "emulated" or "none" (the plan, the dry run and metrics.json spell it so).
std::string_view AcceleratorKindName(Accelerator::Kind kind);

// Chooses the accelerator. `cuda_backend` is the caller's attempt to load the CUDA backend library
// (OK when it loaded); device does not link the backend module.
// kFailedPrecondition: `emulated` without a declared type; kUnavailable: `cuda` with no usable GPU.
Result<Accelerator> SelectAccelerator(AcceleratorBackend backend, const std::optional<DeclaredAccelerator>& declared,
                                      GpuProbe& probe, const Status& cuda_backend);

}  // namespace dfw::device
