// The worker's memory as the VM bounds it on Dataflow: a Linux memory cgroup that the job's SDK
// processes join, limited to the machine type's memory, so that together they can use what the VM
// has and no more. Past it the kernel's OOM killer ends one of them (a SIGKILL the launcher sees
// as any other death: its bundle is retried, the job fails after the attempts), and the cgroup's
// OOM-kill count says that memory was the reason.
//
// cgroup v1 (a `memory` hierarchy, /sys/fs/cgroup/memory/<this process's memory cgroup>/) or v2
// (the unified hierarchy with the memory controller enabled for children). Where neither can be
// made here (no cgroup file system, no permission, the controller not delegated) Create says why
// and the run goes on with the per-process bounds alone (the Python heap caps).
#pragma once

#include <cstdint>
#include <string>

#include "dfw/common/status.h"

namespace dfw {

class MemoryCgroup {
 public:
  // Makes a child cgroup named `name` under this process's own memory cgroup, limited to
  // `limit_bytes` (swap included where the kernel accounts it). kUnavailable with the reason when
  // this host offers none.
  static Result<MemoryCgroup> Create(const std::string& name, uint64_t limit_bytes);

  MemoryCgroup(MemoryCgroup&& o) noexcept : dir_(std::move(o.dir_)), v2_(o.v2_), limit_(o.limit_) { o.dir_.clear(); }
  MemoryCgroup& operator=(MemoryCgroup&&) = delete;
  MemoryCgroup(const MemoryCgroup&) = delete;
  // Removes the cgroup once its processes are gone (retrying briefly while they exit).
  ~MemoryCgroup();

  const std::string& dir() const { return dir_; }
  uint64_t limit_bytes() const { return limit_; }
  // How many processes the kernel has OOM-killed in it so far.
  int64_t OomKills() const;

 private:
  MemoryCgroup(std::string dir, bool v2, uint64_t limit) : dir_(std::move(dir)), v2_(v2), limit_(limit) {}
  std::string dir_;
  bool v2_ = false;
  uint64_t limit_ = 0;
};

// Moves the calling process into the cgroup at `dir` (an SDK process, at its start); nothing to do
// when it is in it already (the launcher moved it: MoveIntoMemoryCgroup).
Status JoinMemoryCgroup(const std::string& dir);

// Moves process `pid` into the cgroup at `dir`. The launcher moves each SDK process it starts right
// after the fork: the first move into a cgroup waits for the kernel (an RCU grace period, ~14 ms
// measured on this VM's kernel; later moves take microseconds), and done here that wait overlaps
// the child's exec and start-up instead of delaying its first bundle. The child still checks and
// joins by itself (JoinMemoryCgroup), so a move that loses a race or fails changes nothing.
Status MoveIntoMemoryCgroup(const std::string& dir, int pid);

// Whether process `pid` is in the cgroup at `dir` (its cgroup.procs lists it); false when unreadable.
bool InMemoryCgroup(const std::string& dir, int pid);

}  // namespace dfw
