// ModelProcessContext: how model loads in one process meet the job's device — the emulated
// GPU-memory ledger to charge and the shared copies that model hosts publish. A plain value: the
// process entry points build it (ModelProcessContextFromEnv in dfw/inference/device_memory.h) and
// pass it down explicitly (RunnerOptions → StageRunContext → ModelHandler::LoadModel). The default
// (tests, the launcher's own planning load, a real GPU) loads privately and charges nothing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace dfw {

struct ModelProcessContext {
  std::string ledger_path;   // the emulated device's ledger; "" = charge nothing
  std::string models_dir;    // where model hosts publish shared copies; "" = load shared models privately
  std::string client_name;   // this process in the ledger and logs: "sdk-3", "model-host-0"
  int sdk_index = 0;         // SDK processes: their slot (chooses the shared copy); model hosts: 0
  std::optional<uint64_t> pinned_limit_bytes;  // CUDA_MPS_PINNED_DEVICE_MEM_LIMIT for device 0, if any
  std::string tenant = {};   // DFW_TENANT: the tenant whose budget the ledger charges ("" = none)
};

}  // namespace dfw
