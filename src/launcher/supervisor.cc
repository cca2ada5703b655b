#include "dfw/launcher/supervisor.h"

#include "dfw/launcher/memory_cgroup.h"

namespace dfw {

void Supervisor::MoveIntoCgroup(int first, int last) {
  if (memory_cgroup_.empty()) return;
  for (int i = first; i < last; ++i) {
    // A process that has ended or moved already is no failure: each one also joins by itself.
    if (pid_t pid = pids_[static_cast<std::size_t>(i)]; pid != 0) (void)MoveIntoMemoryCgroup(memory_cgroup_, pid);
  }
}

Status Supervisor::StartAll() {
  for (int i = 0; i < size(); ++i) {
    if (pids_[static_cast<std::size_t>(i)] != 0) continue;
    Result<pid_t> pid = launcher_.Start(spec_for_(i));
    if (!pid.ok()) {
      MoveIntoCgroup(0, i);
      return pid.status();
    }
    pids_[static_cast<std::size_t>(i)] = *pid;
  }
  MoveIntoCgroup(0, size());
  return Status::OK();
}

Status Supervisor::Grow(int n) {
  Status first = Status::OK();
  const int from = size();
  for (int k = 0; k < n; ++k) {
    pids_.push_back(0);
    auto pid = launcher_.Start(spec_for_(size() - 1));
    if (pid.ok()) pids_.back() = *pid;
    else if (first.ok()) first = pid.status();
  }
  MoveIntoCgroup(from, size());
  return first;
}

Status Supervisor::Restart(int index) {
  auto& slot = pids_.at(static_cast<std::size_t>(index));
  if (slot != 0) return FailedPrecondition("SDK process " + std::to_string(index) + " is still running");
  ASSIGN_OR_RETURN(pid_t pid, launcher_.Start(spec_for_(index)));
  slot = pid;
  ++restarts_;
  MoveIntoCgroup(index, index + 1);
  return Status::OK();
}

std::optional<int> Supervisor::OnExit(const ProcessExit& exit) {
  auto index = IndexOf(exit.pid);
  if (index) pids_[static_cast<std::size_t>(*index)] = 0;
  return index;
}

void Supervisor::SignalAll(int signal) {
  for (pid_t pid : pids_) {
    if (pid != 0) launcher_.Signal(pid, signal);
  }
}

std::optional<int> Supervisor::IndexOf(pid_t pid) const {
  for (std::size_t i = 0; i < pids_.size(); ++i) {
    if (pids_[i] == pid && pid != 0) return static_cast<int>(i);
  }
  return std::nullopt;
}

int Supervisor::live() const {
  int n = 0;
  for (pid_t pid : pids_) n += pid != 0;
  return n;
}

}  // namespace dfw
