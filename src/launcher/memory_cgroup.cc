#include "dfw/launcher/memory_cgroup.h"

#include "dfw/common/file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <sstream>
#include <thread>

namespace dfw {
namespace {

// A small kernel file ("" when unreadable); ReadWholeFile reads to the end whatever size the
// file states (cgroupfs and /proc state 0).
std::string ReadKernelFile(const std::string& path) {
  Result<std::string> text = ReadWholeFile(path, 1 << 20);
  return text.ok() ? std::move(text).value() : std::string();
}

Status WriteKernelFile(const std::string& path, const std::string& value) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return Unavailable("cannot open " + path + ": " + std::strerror(errno));
  const ssize_t n = ::write(fd, value.data(), value.size());
  const int err = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(value.size())) return Unavailable("cannot write '" + value + "' to " + path + ": " + std::strerror(err));
  return Status::OK();
}

bool IsDir(const std::string& p) {
  struct stat st{};
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// This process's cgroup path in the hierarchy whose /proc/self/cgroup line has `controllers`
// ("memory" for v1, "" for the v2 line "0::/path"); nullopt when there is none.
std::optional<std::string> OwnCgroupPath(const std::string& controllers) {
  std::istringstream lines(ReadKernelFile("/proc/self/cgroup"));
  std::string line;
  while (std::getline(lines, line)) {
    const std::size_t a = line.find(':');
    const std::size_t b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    const std::string list = line.substr(a + 1, b - a - 1);
    bool match = controllers.empty() ? list.empty() : false;
    std::istringstream names(list);
    std::string name;
    while (!controllers.empty() && std::getline(names, name, ',')) match = match || name == controllers;
    if (match) return line.substr(b + 1);
  }
  return std::nullopt;
}

std::string Join(const std::string& root, const std::string& path) {
  return root + (path == "/" ? std::string() : path);
}

// The value after `key ` on its own line of a flat-keyed cgroup file ("oom_kill 3").
int64_t KeyedValue(const std::string& text, const std::string& key) {
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind(key + " ", 0) == 0) return std::atoll(line.c_str() + key.size() + 1);
  }
  return 0;
}

}  // namespace

Result<MemoryCgroup> MemoryCgroup::Create(const std::string& name, uint64_t limit_bytes) {
  std::string why_not;
  // cgroup v1: a memory hierarchy of its own.
  if (std::optional<std::string> own = OwnCgroupPath("memory"); own && IsDir("/sys/fs/cgroup/memory")) {
    const std::string dir = Join("/sys/fs/cgroup/memory", *own) + "/" + name;
    if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
      why_not = "cannot make " + dir + ": " + std::strerror(errno);
    } else {
      MemoryCgroup cg(dir, /*v2=*/false, limit_bytes);
      Status s = WriteKernelFile(dir + "/memory.limit_in_bytes", std::to_string(limit_bytes));
      if (s.ok()) {
        // Swap counts too where the kernel accounts it (memsw), so the limit is the VM's memory.
        if (IsDir(dir) && ::access((dir + "/memory.memsw.limit_in_bytes").c_str(), W_OK) == 0) {
          (void)WriteKernelFile(dir + "/memory.memsw.limit_in_bytes", std::to_string(limit_bytes));
        }
        return cg;
      }
      why_not = s.message();
    }
  }
  // cgroup v2: the unified hierarchy, with memory delegated to children.
  if (std::optional<std::string> own = OwnCgroupPath(""); own && ::access("/sys/fs/cgroup/cgroup.controllers", R_OK) == 0) {
    const std::string parent = Join("/sys/fs/cgroup", *own);
    const std::string enabled = ReadKernelFile(parent + "/cgroup.subtree_control");
    if (enabled.find("memory") == std::string::npos) {
      if (why_not.empty()) why_not = "the memory controller is not enabled for children of " + parent;
    } else {
      const std::string dir = parent + "/" + name;
      if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
        if (why_not.empty()) why_not = "cannot make " + dir + ": " + std::strerror(errno);
      } else {
        MemoryCgroup cg(dir, /*v2=*/true, limit_bytes);
        Status s = WriteKernelFile(dir + "/memory.max", std::to_string(limit_bytes));
        if (s.ok()) {
          (void)WriteKernelFile(dir + "/memory.swap.max", "0");
          return cg;
        }
        if (why_not.empty()) why_not = s.message();
      }
    }
  }
  return Unavailable("no memory cgroup: " + (why_not.empty() ? std::string("this host has no cgroup memory controller") : why_not));
}

MemoryCgroup::~MemoryCgroup() {
  if (dir_.empty()) return;
  // A process killed a moment ago may still be leaving it: rmdir is EBUSY until it is gone.
  for (int i = 0; i < 50 && ::rmdir(dir_.c_str()) != 0 && errno == EBUSY; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

int64_t MemoryCgroup::OomKills() const {
  if (dir_.empty()) return 0;
  return KeyedValue(ReadKernelFile(dir_ + (v2_ ? "/memory.events" : "/memory.oom_control")), "oom_kill");
}

Status JoinMemoryCgroup(const std::string& dir) {
  if (InMemoryCgroup(dir, ::getpid())) return Status::OK();
  return MoveIntoMemoryCgroup(dir, ::getpid());
}

Status MoveIntoMemoryCgroup(const std::string& dir, int pid) {
  return WriteKernelFile(dir + "/cgroup.procs", std::to_string(pid));
}

bool InMemoryCgroup(const std::string& dir, int pid) {
  std::istringstream procs(ReadKernelFile(dir + "/cgroup.procs"));
  for (long p = 0; procs >> p;) {
    if (p == pid) return true;
  }
  return false;
}

}  // namespace dfw
