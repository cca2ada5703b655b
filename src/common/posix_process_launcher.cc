#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <mutex>
#include <set>

#include "dfw/common/child_env.h"
#include "dfw/common/process.h"
#include "dfw/common/process_launcher.h"

namespace dfw {
namespace {

// The SpawnSpec of a ProcessSpec; `*log_fd` is the opened log (-1: none), closed by the caller
// once the child is started.
Result<SpawnSpec> SpawnSpecFor(const ProcessSpec& spec, int* log_fd) {
  *log_fd = -1;
  if (spec.argv.empty() && !spec.child_main) return InvalidArgument("process spec has an empty argv");
  SpawnSpec child;
  child.argv = spec.argv;
  child.env = ChildEnvironment(spec.env, spec.env_defaults);
  child.death_signal = spec.death_signal;
  child.ignore_sigint = spec.ignore_sigint;
  child.blocked_signals = spec.blocked_signals;
  child.new_session = spec.new_session;
  child.child_main = spec.child_main;
  child.exec_error = !spec.exec_error.empty() ? spec.exec_error
                     : spec.argv.empty()      ? std::string()
                                              : "dfworker: cannot exec '" + spec.argv[0] + "'\n";
  int out = STDOUT_FILENO, err = STDERR_FILENO;
  if (!spec.log_path.empty()) {
    *log_fd = ::open(spec.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (*log_fd < 0) return ErrnoError("open process log '" + spec.log_path + "'", errno);
    err = *log_fd;
    if (spec.log_stdout) out = *log_fd;
  }
  child.fds = {{out, STDOUT_FILENO}, {err, STDERR_FILENO}, {STDIN_FILENO, STDIN_FILENO}};
  for (const auto& [from, to] : spec.fds) {
    bool replaced = false;
    for (auto& [f, t] : child.fds) {
      if (t == to) {
        f = from;
        replaced = true;
      }
    }
    if (!replaced) child.fds.push_back({from, to});
  }
  return child;
}

class PosixProcessLauncher final : public ProcessLauncher {
 public:
  Result<pid_t> Start(const ProcessSpec& spec) override {
    int log_fd = -1;
    ASSIGN_OR_RETURN(SpawnSpec child, SpawnSpecFor(spec, &log_fd));
    Result<pid_t> pid = Spawn(child);
    if (log_fd >= 0) ::close(log_fd);
    if (pid.ok()) Track(*pid);
    return pid;
  }

  Result<ReadyChild> StartAndAwaitReady(const ProcessSpec& spec, int ready_fd, std::chrono::milliseconds timeout) override {
    int log_fd = -1;
    ASSIGN_OR_RETURN(SpawnSpec child, SpawnSpecFor(spec, &log_fd));
    Result<ReadyChild> started = SpawnAndAwaitReady(std::move(child), ready_fd, timeout);
    if (log_fd >= 0) ::close(log_fd);
    if (started.ok()) Track(started->pid);
    return started;
  }

  void Signal(pid_t pid, int signal) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (children_.count(pid)) ::kill(pid, signal);
  }

  std::vector<ProcessExit> ReapExited() override {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<ProcessExit> out;
    for (auto it = children_.begin(); it != children_.end();) {
      Reaped r = TryReap(*it);
      if (r.running) {
        ++it;
        continue;
      }
      if (!r.unknown) out.push_back({*it, r.exit, r.max_rss_kib});
      it = children_.erase(it);
    }
    return out;
  }

  Reaped WaitExit(pid_t pid, std::chrono::milliseconds timeout) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!children_.count(pid)) {
        Reaped unknown;
        unknown.unknown = true;
        return unknown;
      }
    }
    // Not under the lock: other children may be started and reaped meanwhile.
    Reaped r = ReapWithin(pid, timeout);
    if (!r.running) {
      std::lock_guard<std::mutex> lock(mu_);
      children_.erase(pid);
    }
    return r;
  }

 private:
  void Track(pid_t pid) {
    std::lock_guard<std::mutex> lock(mu_);
    children_.insert(pid);
  }

  std::mutex mu_;
  std::set<pid_t> children_;
};

}  // namespace

ChildExit StopProcess(ProcessLauncher& launcher, pid_t pid, std::chrono::milliseconds grace) {
  Reaped r = launcher.WaitExit(pid, std::chrono::milliseconds(0));
  if (r.running) {
    launcher.Signal(pid, SIGTERM);
    r = launcher.WaitExit(pid, grace);
  }
  if (r.running) {
    launcher.Signal(pid, SIGKILL);
    r = launcher.WaitExit(pid, std::chrono::milliseconds(10000));
  }
  return r.exit;
}

std::unique_ptr<ProcessLauncher> MakePosixProcessLauncher() { return std::make_unique<PosixProcessLauncher>(); }

}  // namespace dfw
