#include "dfw/device/memory_ledger.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "dfw/common/strings.h"
#include "process_info.h"

namespace dfw::device {
namespace {

constexpr char kMagic[8] = {'D', 'F', 'W', 'L', 'E', 'D', 'G', '1'};

// On-disk layout: one header followed by kMaxClients fixed slots. A slot with pid 0 is free.
struct DiskHeader {
  char magic[8];
  uint32_t version;
  uint32_t slots;
  uint64_t capacity_bytes;
  char device_name[64];
};

struct DiskSlot {
  int32_t pid;
  uint16_t has_limit;
  uint16_t tenant;  // 1 + index into DiskLedger::tenants; 0 = none
  uint64_t start_time;
  uint64_t allocated_bytes;
  uint64_t limit_bytes;
  char name[32];
};

// A tenant's budget (SetTenantBudget) and the most its processes held at once.
struct DiskTenant {
  char name[32];
  uint64_t budget_bytes;
  uint64_t peak_bytes;
};

struct DiskLedger {
  DiskHeader header;
  DiskSlot slots[MemoryLedger::kMaxClients];
  DiskTenant tenants[MemoryLedger::kMaxTenants];
};

constexpr uint32_t kVersion = 2;  // 2: tenants

static_assert(sizeof(DiskSlot) == 64);
static_assert(sizeof(DiskTenant) == 48);

// Exclusive flock for the scope; released by the kernel if the process dies while holding it.
class FileLock {
 public:
  explicit FileLock(int fd) : fd_(fd) {
    int rc;
    do rc = ::flock(fd_, LOCK_EX);
    while (rc != 0 && errno == EINTR);
    error_ = rc == 0 ? 0 : errno;
  }
  ~FileLock() {
    if (error_ == 0) ::flock(fd_, LOCK_UN);
  }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  int error() const { return error_; }

 private:
  int fd_;
  int error_;
};

void CopyName(char* dst, std::size_t cap, std::string_view src) {
  std::memset(dst, 0, cap);
  std::memcpy(dst, src.data(), std::min(src.size(), cap - 1));
}

std::string SlotName(const DiskSlot& s) { return std::string(s.name, ::strnlen(s.name, sizeof s.name)); }

std::string Who(const DiskSlot& s) { return "process '" + SlotName(s) + "' (pid " + std::to_string(s.pid) + ")"; }

Status ReadAll(int fd, const std::string& path, DiskLedger& out) {
  ssize_t n = ::pread(fd, &out, sizeof out, 0);
  if (n < 0) return ErrnoError("read GPU-memory ledger '" + path + "'", errno);
  if (static_cast<std::size_t>(n) != sizeof out || std::memcmp(out.header.magic, kMagic, sizeof kMagic) != 0 ||
      out.header.version != kVersion || out.header.slots != MemoryLedger::kMaxClients) {
    return DataLoss("'" + path + "' is not a dfworker GPU-memory ledger (bad header or size)");
  }
  return Status::OK();
}

Status WriteAll(int fd, const std::string& path, const DiskLedger& in) {
  ssize_t n = ::pwrite(fd, &in, sizeof in, 0);
  if (n < 0) return ErrnoError("write GPU-memory ledger '" + path + "'", errno);
  if (static_cast<std::size_t>(n) != sizeof in) return IoError("short write to GPU-memory ledger '" + path + "'");
  return Status::OK();
}

uint64_t ReclaimDeadSlots(DiskLedger& d) {
  uint64_t reclaimed = 0;
  for (DiskSlot& s : d.slots) {
    if (s.pid != 0 && !ProcessAlive(s.pid, s.start_time)) {
      reclaimed += s.allocated_bytes;
      s = DiskSlot{};
    }
  }
  return reclaimed;
}

uint64_t UsedBytes(const DiskLedger& d) {
  uint64_t used = 0;
  for (const DiskSlot& s : d.slots) used += s.allocated_bytes;
  return used;
}

std::string TenantName(const DiskTenant& t) { return std::string(t.name, ::strnlen(t.name, sizeof t.name)); }

// 1 + the index of tenant `name`, or 0 when the ledger has no budget for it.
uint16_t FindTenant(const DiskLedger& d, std::string_view name) {
  for (std::size_t i = 0; i < MemoryLedger::kMaxTenants; ++i) {
    if (d.tenants[i].name[0] != 0 && TenantName(d.tenants[i]) == name) return static_cast<uint16_t>(i + 1);
  }
  return 0;
}

uint64_t TenantUsedBytes(const DiskLedger& d, uint16_t tenant) {
  uint64_t used = 0;
  for (const DiskSlot& s : d.slots) used += s.tenant == tenant ? s.allocated_bytes : 0;
  return used;
}

}  // namespace

std::string LedgerPathForJob(std::string_view job_dir) {
  std::string base(job_dir);
  while (base.size() > 1 && base.back() == '/') base.pop_back();
  return base + "/device/gpu_memory.ledger";
}

Result<MemoryLedger> MemoryLedger::Create(const std::string& path, std::string_view device_name,
                                          uint64_t capacity_bytes) {
  if (capacity_bytes == 0) return InvalidArgument("GPU-memory ledger capacity must be > 0 bytes");
  std::error_code ec;
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  if (ec) return IoError("create directory '" + parent.string() + "': " + ec.message());
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return ErrnoError("create GPU-memory ledger '" + path + "'", errno);
  MemoryLedger ledger(path, fd);
  FileLock lock(fd);
  if (lock.error() != 0) return ErrnoError("lock GPU-memory ledger '" + path + "'", lock.error());
  DiskLedger d{};
  std::memcpy(d.header.magic, kMagic, sizeof kMagic);
  d.header.version = kVersion;
  d.header.slots = kMaxClients;
  d.header.capacity_bytes = capacity_bytes;
  CopyName(d.header.device_name, sizeof d.header.device_name, device_name);
  if (::ftruncate(fd, sizeof d) != 0) return ErrnoError("resize GPU-memory ledger '" + path + "'", errno);
  RETURN_IF_ERROR(WriteAll(fd, path, d));
  return ledger;
}

Result<MemoryLedger> MemoryLedger::Open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return NotFound("GPU-memory ledger '" + path + "' does not exist (is the job running?)");
    return ErrnoError("open GPU-memory ledger '" + path + "'", errno);
  }
  MemoryLedger ledger(path, fd);
  DiskLedger d;
  FileLock lock(fd);
  RETURN_IF_ERROR(ReadAll(fd, path, d));
  return ledger;
}

MemoryLedger::MemoryLedger(MemoryLedger&& other) noexcept : path_(std::move(other.path_)), fd_(other.fd_) {
  other.fd_ = -1;
}

MemoryLedger& MemoryLedger::operator=(MemoryLedger&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(other.path_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

MemoryLedger::~MemoryLedger() {
  if (fd_ >= 0) ::close(fd_);
}

Status MemoryLedger::Allocate(const LedgerClient& client, uint64_t bytes) {
  if (client.pid <= 0) return InvalidArgument("GPU-memory allocation needs a process id > 0, got " + std::to_string(client.pid));
  if (bytes == 0) return InvalidArgument("GPU-memory allocation of 0 bytes by process '" + client.name + "'");
  FileLock lock(fd_);
  if (lock.error() != 0) return ErrnoError("lock GPU-memory ledger '" + path_ + "'", lock.error());
  DiskLedger d;
  RETURN_IF_ERROR(ReadAll(fd_, path_, d));
  ReclaimDeadSlots(d);
  std::optional<uint64_t> start = ProcessStartTime(client.pid);
  if (!start) return NotFound("GPU-memory allocation for process " + std::to_string(client.pid) + ", which does not run");
  const uint16_t tenant = client.tenant.empty() ? 0 : FindTenant(d, client.tenant);
  if (!client.tenant.empty() && tenant == 0) {
    return FailedPrecondition("GPU-memory ledger '" + path_ + "' has no budget for tenant '" + client.tenant +
                              "' (process '" + client.name + "')");
  }

  DiskSlot* slot = nullptr;
  DiskSlot* empty = nullptr;
  for (DiskSlot& s : d.slots) {
    if (s.pid == client.pid) slot = &s;
    else if (s.pid == 0 && empty == nullptr) empty = &s;
  }
  if (slot == nullptr) {
    if (empty == nullptr) {
      return ResourceExhausted("GPU-memory ledger '" + path_ + "' already tracks " + std::to_string(kMaxClients) +
                               " live processes; process '" + client.name + "' cannot allocate");
    }
    slot = empty;
    *slot = DiskSlot{};
    slot->pid = client.pid;
    slot->start_time = *start;
    slot->tenant = tenant;
    CopyName(slot->name, sizeof slot->name, client.name);
  }
  if (client.pinned_limit_bytes && (!slot->has_limit || *client.pinned_limit_bytes < slot->limit_bytes)) {
    slot->has_limit = 1;
    slot->limit_bytes = *client.pinned_limit_bytes;
  }
  const uint64_t used = UsedBytes(d);
  const uint64_t free = d.header.capacity_bytes > used ? d.header.capacity_bytes - used : 0;
  if (slot->has_limit && bytes > slot->limit_bytes - std::min(slot->limit_bytes, slot->allocated_bytes)) {
    uint64_t left = slot->limit_bytes - std::min(slot->limit_bytes, slot->allocated_bytes);
    return ResourceExhausted("out of GPU memory: " + Who(*slot) + " requested " + HumanBytes(bytes) +
                             " past its pinned limit CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=" +
                             HumanBytes(slot->limit_bytes) + " (" + HumanBytes(slot->allocated_bytes) +
                             " allocated, " + HumanBytes(left) + " left under the limit; device free " +
                             HumanBytes(free) + ")");
  }
  if (bytes > free) {
    std::string device(d.header.device_name, ::strnlen(d.header.device_name, sizeof d.header.device_name));
    return ResourceExhausted("out of GPU memory on " + device + ": " + Who(*slot) + " requested " +
                             HumanBytes(bytes) + "; " + HumanBytes(free) + " free of " +
                             HumanBytes(d.header.capacity_bytes));
  }
  if (slot->tenant != 0) {
    DiskTenant& t = d.tenants[slot->tenant - 1];
    const uint64_t held = TenantUsedBytes(d, slot->tenant);
    if (bytes > t.budget_bytes - std::min(t.budget_bytes, held)) {
      return ResourceExhausted("out of GPU memory: tenant '" + TenantName(t) + "' " + Who(*slot) + " requested " +
                               HumanBytes(bytes) + " past the tenant's budget of " + HumanBytes(t.budget_bytes) + " (" +
                               HumanBytes(held) + " held by its processes; device free " + HumanBytes(free) + ")");
    }
    t.peak_bytes = std::max(t.peak_bytes, held + bytes);
  }
  slot->allocated_bytes += bytes;
  return WriteAll(fd_, path_, d);
}

Status MemoryLedger::SetTenantBudget(std::string_view tenant, uint64_t budget_bytes) {
  if (tenant.empty() || tenant.size() >= sizeof(DiskTenant::name)) {
    return InvalidArgument("tenant name '" + std::string(tenant) + "' must have 1 to 31 bytes");
  }
  FileLock lock(fd_);
  if (lock.error() != 0) return ErrnoError("lock GPU-memory ledger '" + path_ + "'", lock.error());
  DiskLedger d;
  RETURN_IF_ERROR(ReadAll(fd_, path_, d));
  uint16_t index = FindTenant(d, tenant);
  for (std::size_t i = 0; index == 0 && i < kMaxTenants; ++i) {
    if (d.tenants[i].name[0] == 0) index = static_cast<uint16_t>(i + 1);
  }
  if (index == 0) return ResourceExhausted("GPU-memory ledger '" + path_ + "' holds at most " + std::to_string(kMaxTenants) + " tenants");
  DiskTenant& t = d.tenants[index - 1];
  CopyName(t.name, sizeof t.name, tenant);
  t.budget_bytes = budget_bytes;
  return WriteAll(fd_, path_, d);
}

Status MemoryLedger::Free(pid_t pid, uint64_t bytes) {
  FileLock lock(fd_);
  if (lock.error() != 0) return ErrnoError("lock GPU-memory ledger '" + path_ + "'", lock.error());
  DiskLedger d;
  RETURN_IF_ERROR(ReadAll(fd_, path_, d));
  for (DiskSlot& s : d.slots) {
    if (s.pid != pid) continue;
    if (bytes > s.allocated_bytes) {
      return FailedPrecondition(Who(s) + " frees " + HumanBytes(bytes) + " but holds only " +
                                HumanBytes(s.allocated_bytes));
    }
    s.allocated_bytes -= bytes;
    return WriteAll(fd_, path_, d);
  }
  return FailedPrecondition("process " + std::to_string(pid) + " frees " + HumanBytes(bytes) +
                            " but holds no GPU memory in '" + path_ + "'");
}

Status MemoryLedger::Release(pid_t pid) {
  FileLock lock(fd_);
  if (lock.error() != 0) return ErrnoError("lock GPU-memory ledger '" + path_ + "'", lock.error());
  DiskLedger d;
  RETURN_IF_ERROR(ReadAll(fd_, path_, d));
  for (DiskSlot& s : d.slots) {
    if (s.pid == pid) s = DiskSlot{};
  }
  return WriteAll(fd_, path_, d);
}

Result<uint64_t> MemoryLedger::ReclaimDead() {
  FileLock lock(fd_);
  if (lock.error() != 0) return ErrnoError("lock GPU-memory ledger '" + path_ + "'", lock.error());
  DiskLedger d;
  RETURN_IF_ERROR(ReadAll(fd_, path_, d));
  uint64_t reclaimed = ReclaimDeadSlots(d);
  RETURN_IF_ERROR(WriteAll(fd_, path_, d));
  return reclaimed;
}

Result<LedgerSnapshot> MemoryLedger::Snapshot() {
  FileLock lock(fd_);
  if (lock.error() != 0) return ErrnoError("lock GPU-memory ledger '" + path_ + "'", lock.error());
  DiskLedger d;
  RETURN_IF_ERROR(ReadAll(fd_, path_, d));
  if (ReclaimDeadSlots(d) > 0) RETURN_IF_ERROR(WriteAll(fd_, path_, d));
  LedgerSnapshot snap;
  snap.device_name.assign(d.header.device_name, ::strnlen(d.header.device_name, sizeof d.header.device_name));
  snap.capacity_bytes = d.header.capacity_bytes;
  for (const DiskSlot& s : d.slots) {
    if (s.pid == 0) continue;
    LedgerEntry e{s.pid, SlotName(s), s.allocated_bytes, std::nullopt,
                  s.tenant != 0 && s.tenant <= kMaxTenants ? TenantName(d.tenants[s.tenant - 1]) : std::string()};
    if (s.has_limit) e.pinned_limit_bytes = s.limit_bytes;
    snap.used_bytes += s.allocated_bytes;
    snap.entries.push_back(std::move(e));
  }
  for (std::size_t i = 0; i < kMaxTenants; ++i) {
    const DiskTenant& t = d.tenants[i];
    if (t.name[0] == 0) continue;
    snap.tenants.push_back({TenantName(t), t.budget_bytes, TenantUsedBytes(d, static_cast<uint16_t>(i + 1)), t.peak_bytes});
  }
  return snap;
}

}  // namespace dfw::device
