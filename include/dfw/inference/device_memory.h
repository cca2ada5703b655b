// How a model load in this process meets the job's device: the emulated GPU-memory ledger and the
// shared copies published by model hosts.
//
// `dfworker run` passes both through the SDK processes' environment (DFW_GPU_MEMORY_LEDGER,
// DFW_SHARED_MODELS_DIR); the process entry point (sdk_harness, model_host) turns them into a
// ModelProcessContext (model_process_context.h) once, before any model loads, and passes it down
// to every load. Without one (tests, the launcher's own planning load, a real GPU) models load
// privately and charge nothing.
//
// Charging (emulated device only): without sharing, each SDK process charges its own model bytes
// at load and its workspace as it grows; a shared copy is charged once, by its model host, under
// the host's name. A charge past capacity or past the pinned limit is the ledger's out-of-memory
// Status (naming the process, the request and the free memory). Charges are returned when their
// owner is destroyed, and the ledger reclaims them if the process dies.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "dfw/common/status.h"
#include "dfw/device/memory_ledger.h"
#include "dfw/device/mps_env.h"
#include "dfw/inference/model_process_context.h"

namespace dfw {

inline constexpr std::string_view kGpuMemoryLedgerEnv = "DFW_GPU_MEMORY_LEDGER";
inline constexpr std::string_view kSharedModelsDirEnv = "DFW_SHARED_MODELS_DIR";
// Set by `dfworker run --tenants` for each tenant's processes: the ledger holds them to its budget.
inline constexpr std::string_view kTenantEnv = device::kTenantEnv;

// Builds the context from this process's environment (the three variables above and
// CUDA_MPS_PINNED_DEVICE_MEM_LIMIT). A malformed pinned limit is kInvalidArgument naming it.
Result<ModelProcessContext> ModelProcessContextFromEnv(std::string client_name, int sdk_index);

// For a process registered as an MPS client: `daemon_limit` is the pinned limit the daemon granted
// (MpsClientSession::pinned_mem_limit_bytes(), its default for every client). The lower of it and
// the context's own limit applies; nullopt leaves the context as it is.
void ApplyDaemonPinnedLimit(ModelProcessContext& context, std::optional<uint64_t> daemon_limit);

// One owner's charges on the ledger (a model's weights and workspace). Not thread-safe: used by
// the Model that owns it, which runs on one thread at a time.
class DeviceMemoryCharge {
 public:
  // Opens the context's ledger. Returns null (charge nothing) when the context names none;
  // kNotFound when it names a ledger that does not exist.
  static Result<std::unique_ptr<DeviceMemoryCharge>> Open(const ModelProcessContext& context);
  ~DeviceMemoryCharge();  // frees what it charged (best effort: the ledger reclaims a dead pid anyway)
  DeviceMemoryCharge(const DeviceMemoryCharge&) = delete;
  DeviceMemoryCharge& operator=(const DeviceMemoryCharge&) = delete;

  // Charges `bytes` (0 is a no-op). The ledger's kResourceExhausted, prefixed with `what`
  // ("model weights of 'm'"), when it does not fit.
  Status Charge(uint64_t bytes, std::string_view what);
  uint64_t charged_bytes() const { return charged_; }

  // For a model's weights at load: charges `bytes` now if they fit, otherwise keeps them pending
  // (with a warning) for Settle(). Models call Settle() before each batch, so a model that did
  // not fit fails its batches — and their bundles, which the coordinator retries, as Beam retries
  // bundles whose DoFn setup (load_model) fails — with the ledger's out-of-memory message until
  // memory frees up, instead of the SDK process dying before it can report anything.
  void ChargeOrDefer(uint64_t bytes, std::string what);
  // Charges what is pending; OK when nothing is.
  Status Settle();

 private:
  DeviceMemoryCharge(device::MemoryLedger ledger, device::LedgerClient client)
      : ledger_(std::move(ledger)), client_(std::move(client)) {}
  device::MemoryLedger ledger_;
  device::LedgerClient client_;
  uint64_t charged_ = 0;
  uint64_t pending_ = 0;
  std::string pending_what_;
};

}  // namespace dfw
