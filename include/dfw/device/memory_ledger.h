// GPU-memory ledger for the emulated device: one small file in the job dir shared by every
// process of the job (launcher, SDK processes, model hosts).
//
// It holds the device capacity and, per client process (keyed by pid + process start time, so a
// reused pid is not mistaken for the old process), the bytes it has allocated and its pinned limit
// (CUDA_MPS_PINNED_DEVICE_MEM_LIMIT). Allocate() refuses a request past the device's free memory or
// past the client's pinned limit with kResourceExhausted naming the process, the request and the
// free memory. A client may belong to a tenant (several pipelines sharing the GPU): then the
// tenant's live processes together are also held to the tenant's budget, and the ledger keeps the
// tenant's peak. Entries of dead processes (exited, killed, zombie) are reclaimed before every
// decision, so a SIGKILLed process's memory comes back without its cooperation.
//
// Concurrency: every operation takes an exclusive flock() on the file for its duration (the
// kernel drops it if the holder dies), so any number of processes and threads may share one file.
// A MemoryLedger object itself is not thread-safe; open one per thread or serialise.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dfw/common/status.h"

namespace dfw::device {

// <job_dir>/device/gpu_memory.ledger
std::string LedgerPathForJob(std::string_view job_dir);

// Who is allocating.
struct LedgerClient {
  pid_t pid = 0;                                  // the allocating process
  std::string name;                               // e.g. "sdk-3", "model-host-0" (truncated to 31 bytes)
  std::optional<uint64_t> pinned_limit_bytes;     // per-client cap; nullopt = none
  std::string tenant = {};                        // the tenant it belongs to ("" = none); needs a budget
};

struct LedgerEntry {
  pid_t pid = 0;
  std::string name;
  uint64_t allocated_bytes = 0;
  std::optional<uint64_t> pinned_limit_bytes;
  std::string tenant = {};  // "" = none
};

// A tenant's budget, what its live processes hold, and the most they held at once.
struct LedgerTenant {
  std::string name;
  uint64_t budget_bytes = 0;
  uint64_t used_bytes = 0;
  uint64_t peak_bytes = 0;
};

struct LedgerSnapshot {
  std::string device_name;       // e.g. "nvidia-tesla-t4 (emulated)"
  uint64_t capacity_bytes = 0;
  uint64_t used_bytes = 0;       // sum over live entries
  std::vector<LedgerEntry> entries;  // live clients, in slot order
  std::vector<LedgerTenant> tenants; // in the order their budgets were set
  uint64_t free_bytes() const { return capacity_bytes - used_bytes; }
};

class MemoryLedger {
 public:
  // Maximum number of client processes one ledger tracks at a time.
  static constexpr int kMaxClients = 128;
  // Maximum number of tenants with a budget.
  static constexpr std::size_t kMaxTenants = 16;

  // Creates (or resets) the ledger file at `path` for a device of `capacity_bytes`; the parent
  // directory is created if needed. Called once by the launcher at job start.
  static Result<MemoryLedger> Create(const std::string& path, std::string_view device_name, uint64_t capacity_bytes);
  // Opens an existing ledger (clients). kNotFound if absent; kDataLoss if it is not a ledger.
  static Result<MemoryLedger> Open(const std::string& path);

  MemoryLedger(MemoryLedger&& other) noexcept;
  MemoryLedger& operator=(MemoryLedger&& other) noexcept;
  MemoryLedger(const MemoryLedger&) = delete;
  MemoryLedger& operator=(const MemoryLedger&) = delete;
  ~MemoryLedger();

  // Records `bytes` more for `client`. The first allocation of a pid creates its entry with the
  // client's pinned limit; later calls may lower, never raise, that limit (MPS semantics).
  // kResourceExhausted past capacity, past the pinned limit, or when kMaxClients are live;
  // kInvalidArgument for pid <= 0 or bytes == 0.
  Status Allocate(const LedgerClient& client, uint64_t bytes);
  // Sets (or changes) the GPU-memory budget of `tenant` (1 to 31 bytes). From then on the live
  // processes of clients naming that tenant may hold at most `budget_bytes` together: Allocate()
  // refuses past it with kResourceExhausted naming the tenant. A client naming a tenant without a
  // budget is refused (kFailedPrecondition). kResourceExhausted past kMaxTenants.
  Status SetTenantBudget(std::string_view tenant, uint64_t budget_bytes);
  // Returns `bytes` of `pid`'s allocation. kFailedPrecondition if the pid holds fewer bytes.
  Status Free(pid_t pid, uint64_t bytes);
  // Drops `pid`'s entry (normal exit). OK if it has none.
  Status Release(pid_t pid);
  // Removes entries of processes that no longer run; returns the bytes reclaimed.
  Result<uint64_t> ReclaimDead();
  // Current state (after reclaiming dead entries).
  Result<LedgerSnapshot> Snapshot();

  const std::string& path() const { return path_; }

 private:
  MemoryLedger(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  std::string path_;
  int fd_ = -1;
};

}  // namespace dfw::device
