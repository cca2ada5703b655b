// A ProcessLauncher with no processes behind it: it records what was started and signalled, and
// the test (or a hook it installs) decides when a child ends and what a child started with a ready
// fd writes there. Waiting never blocks: a fake child that has not ended when asked is "running".
// A child that is sent SIGTERM or SIGKILL dies of it, like a child without handlers, unless the
// test installs on_signal.
//
// Threading: every member may be called from any thread; hooks run without the fake's lock held,
// so they may call back into it (Exit from on_start: a child that dies at once).
#pragma once

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dfw/common/process_launcher.h"

namespace dfw::fakes {

inline ChildExit ExitedWith(int code) { return DecodeWaitStatus(code << 8); }
inline ChildExit KilledBy(int signal) { return DecodeWaitStatus(signal); }

class FakeProcessLauncher final : public ProcessLauncher {
 public:
  struct Started {
    pid_t pid = 0;
    ProcessSpec spec;
    int ready_fd = -1;  // -1: started with Start, not StartAndAwaitReady
  };

  // The pid of start number `n` (0-based); default 1000 + n.
  std::function<pid_t(int n)> pid_for;
  // What start number `n` writes on its ready fd; default "ready".
  std::function<std::string(int n, const ProcessSpec&)> ready_line;
  // Runs after each start (the child "running"): may call Exit for it, start a thread, ...
  std::function<void(pid_t, const ProcessSpec&)> on_start;
  // How a live child answers a signal: its exit, or nullopt when it lives on. Default: SIGTERM and
  // SIGKILL kill it, anything else is ignored.
  std::function<std::optional<ChildExit>(pid_t, int)> on_signal;
  // When set, every start fails with this status.
  std::optional<Status> fail_starts;

  Result<pid_t> Start(const ProcessSpec& spec) override { return Begin(spec, -1); }

  Result<ReadyChild> StartAndAwaitReady(const ProcessSpec& spec, int ready_fd, std::chrono::milliseconds) override {
    int n = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      n = static_cast<int>(started_.size());
    }
    std::string line = ready_line ? ready_line(n, spec) : "ready";
    ASSIGN_OR_RETURN(pid_t pid, Begin(spec, ready_fd));
    return ReadyChild{pid, std::move(line)};
  }

  void Signal(pid_t pid, int signal) override {
    std::optional<ChildExit> dies;
    {
      std::lock_guard<std::mutex> lock(mu_);
      signals_.emplace_back(pid, signal);
      if (state_[pid] != kLive) return;
    }
    if (on_signal) dies = on_signal(pid, signal);
    else if (signal == SIGTERM || signal == SIGKILL) dies = KilledBy(signal);
    if (dies) Exit(pid, *dies);
    else Changed();
  }

  std::vector<ProcessExit> ReapExited() override {
    std::vector<ProcessExit> out;
    {
      std::lock_guard<std::mutex> lock(mu_);
      out.swap(ended_);
      for (const ProcessExit& e : out) state_[e.pid] = kReaped;
    }
    Changed();
    return out;
  }

  Reaped WaitExit(pid_t pid, std::chrono::milliseconds) override {
    Reaped r;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = std::find_if(ended_.begin(), ended_.end(), [&](const ProcessExit& e) { return e.pid == pid; });
      if (it != ended_.end()) {
        r.exit = it->exit;
        ended_.erase(it);
        state_[pid] = kReaped;
      } else {
        r.running = state_.count(pid) && state_[pid] == kLive;
        r.unknown = !r.running;
      }
    }
    Changed();
    return r;
  }

  // The child `pid` ends with `exit` (ignored unless it is live); it is reaped by the next
  // ReapExited or WaitExit. SIGCHLD is raised as the kernel would, so a launcher's poll loop
  // wakes for it.
  void Exit(pid_t pid, ChildExit exit) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (state_[pid] != kLive) return;
      state_[pid] = kEnded;
      ended_.push_back({pid, exit, 0});
    }
    ::kill(::getpid(), SIGCHLD);
    Changed();
  }

  // Waits (up to `timeout`) until `done` holds; `done` runs with the fake's lock held, so it reads
  // the fake through the *_locked accessors. False when the time ran out.
  bool Await(const std::function<bool()>& done, std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
    std::unique_lock<std::mutex> lock(mu_);
    return changed_.wait_for(lock, timeout, done);
  }

  std::vector<Started> started() const {
    std::lock_guard<std::mutex> lock(mu_);
    return started_;
  }
  std::vector<std::pair<pid_t, int>> signals() const {
    std::lock_guard<std::mutex> lock(mu_);
    return signals_;
  }
  std::size_t starts_locked() const { return started_.size(); }
  // Whether `pid` has ended and been reaped.
  bool reaped_locked(pid_t pid) const {
    auto it = state_.find(pid);
    return it != state_.end() && it->second == kReaped;
  }

 private:
  enum State { kUnknown, kLive, kEnded, kReaped };

  Result<pid_t> Begin(const ProcessSpec& spec, int ready_fd) {
    if (fail_starts) return *fail_starts;
    pid_t pid = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      const int n = static_cast<int>(started_.size());
      pid = pid_for ? pid_for(n) : 1000 + n;
      started_.push_back({pid, spec, ready_fd});
      state_[pid] = kLive;  // a pid used again is a new child, as after the kernel reuses one
    }
    if (on_start) on_start(pid, spec);
    Changed();
    return pid;
  }

  void Changed() {
    std::lock_guard<std::mutex> lock(mu_);
    changed_.notify_all();
  }

  mutable std::mutex mu_;
  std::condition_variable changed_;
  std::vector<Started> started_;
  std::vector<std::pair<pid_t, int>> signals_;
  std::vector<ProcessExit> ended_;
  std::map<pid_t, State> state_;
};

}  // namespace dfw::fakes
