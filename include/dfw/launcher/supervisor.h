// Keeps N SDK processes running: one slot per process index, started through a ProcessLauncher,
// restarted when its process ends (Dataflow restarts a dead SDK harness). Knows nothing about
// bundles; the launcher tells the coordinator which process died.
//
// Threading: not thread-safe; used from the launcher's event loop.
#pragma once

#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "dfw/common/process_launcher.h"

namespace dfw {

class Supervisor {
 public:
  using SpecFn = std::function<ProcessSpec(int index)>;

  // `launcher` must outlive the supervisor. `spec_for(i)` builds the command of process i.
  // `memory_cgroup` (memory_cgroup.h; "" none): every process started is moved into it at once
  // (MoveIntoMemoryCgroup), after a whole batch of starts, so the kernel's wait on the first move
  // overlaps the processes' start-up; each process also joins by itself.
  Supervisor(ProcessLauncher& launcher, int processes, SpecFn spec_for, std::string memory_cgroup = "")
      : launcher_(launcher),
        spec_for_(std::move(spec_for)),
        pids_(static_cast<std::size_t>(processes), 0),
        memory_cgroup_(std::move(memory_cgroup)) {}

  // Starts every slot that has no live process.
  Status StartAll();
  // Adds `n` slots with the next indices and starts them (the job grows while it runs). Slots whose
  // start failed stay empty; the error is the first failure.
  Status Grow(int n);
  // Starts slot `index` again (after its process ended).
  Status Restart(int index);
  // Records an exit from ProcessLauncher::ReapExited; returns the slot it belonged to.
  std::optional<int> OnExit(const ProcessExit& exit);
  void SignalAll(int signal);
  void Signal(pid_t pid, int signal) { launcher_.Signal(pid, signal); }

  std::optional<int> IndexOf(pid_t pid) const;
  pid_t PidOf(int index) const { return pids_.at(static_cast<std::size_t>(index)); }
  int live() const;
  int size() const { return static_cast<int>(pids_.size()); }
  int restarts() const { return restarts_; }

 private:
  // The live processes of slots [first, last) into memory_cgroup_.
  void MoveIntoCgroup(int first, int last);

  ProcessLauncher& launcher_;
  SpecFn spec_for_;
  std::vector<pid_t> pids_;  // 0 = no live process in the slot
  std::string memory_cgroup_;
  int restarts_ = 0;
};

}  // namespace dfw
