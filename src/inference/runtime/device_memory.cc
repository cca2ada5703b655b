#include "dfw/inference/device_memory.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include <spdlog/spdlog.h>

#include "dfw/device/mps_env.h"

namespace dfw {
namespace {

std::string Env(std::string_view name) {
  const char* v = std::getenv(std::string(name).c_str());
  return v == nullptr ? std::string() : std::string(v);
}

}  // namespace

Result<ModelProcessContext> ModelProcessContextFromEnv(std::string client_name, int sdk_index) {
  ModelProcessContext c;
  c.ledger_path = Env(kGpuMemoryLedgerEnv);
  c.models_dir = Env(kSharedModelsDirEnv);
  c.tenant = Env(kTenantEnv);
  c.client_name = std::move(client_name);
  c.sdk_index = sdk_index;
  ASSIGN_OR_RETURN(device::MpsClientLimits limits, device::MpsClientLimitsFromEnv());
  c.pinned_limit_bytes = limits.pinned_mem_limit_bytes;
  return c;
}

void ApplyDaemonPinnedLimit(ModelProcessContext& context, std::optional<uint64_t> daemon_limit) {
  if (!daemon_limit) return;
  context.pinned_limit_bytes = std::min(context.pinned_limit_bytes.value_or(UINT64_MAX), *daemon_limit);
}

Result<std::unique_ptr<DeviceMemoryCharge>> DeviceMemoryCharge::Open(const ModelProcessContext& context) {
  if (context.ledger_path.empty()) return std::unique_ptr<DeviceMemoryCharge>();
  ASSIGN_OR_RETURN(device::MemoryLedger ledger, device::MemoryLedger::Open(context.ledger_path));
  device::LedgerClient client{::getpid(), context.client_name.empty() ? "pid-" + std::to_string(::getpid())
                                                                      : context.client_name,
                              context.pinned_limit_bytes, context.tenant};
  return std::unique_ptr<DeviceMemoryCharge>(new DeviceMemoryCharge(std::move(ledger), std::move(client)));
}

DeviceMemoryCharge::~DeviceMemoryCharge() {
  // A forked child inherits the object but is not the process that was charged.
  if (charged_ > 0 && client_.pid == ::getpid()) (void)ledger_.Free(client_.pid, charged_);
}

Status DeviceMemoryCharge::Charge(uint64_t bytes, std::string_view what) {
  if (bytes == 0) return Status::OK();
  RETURN_IF_ERROR(ledger_.Allocate(client_, bytes).WithContext(what));
  charged_ += bytes;
  return Status::OK();
}

void DeviceMemoryCharge::ChargeOrDefer(uint64_t bytes, std::string what) {
  pending_ += bytes;
  pending_what_ = std::move(what);
  if (Status s = Settle(); !s.ok()) spdlog::warn("{} (each batch retries the charge)", s.message());
}

Status DeviceMemoryCharge::Settle() {
  if (pending_ == 0) return Status::OK();
  RETURN_IF_ERROR(Charge(pending_, pending_what_));
  pending_ = 0;
  return Status::OK();
}

}  // namespace dfw
