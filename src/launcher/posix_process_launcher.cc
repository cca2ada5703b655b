#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <set>

#include "dfw/common/child_env.h"
#include "dfw/common/process.h"
#include "dfw/launcher/process_launcher.h"

namespace dfw {
namespace {

class PosixProcessLauncher final : public ProcessLauncher {
 public:
  Result<pid_t> Start(const ProcessSpec& spec) override {
    if (spec.argv.empty()) return InvalidArgument("process spec has an empty argv");
    SpawnSpec child;
    child.argv = spec.argv;
    child.env = ChildEnvironment(spec.env, spec.env_defaults);
    child.death_signal = SIGKILL;  // dies with the launcher
    child.ignore_sigint = true;
    child.exec_error = "dfworker: exec of the SDK harness failed\n";
    int log_fd = -1;
    if (!spec.log_path.empty()) {
      log_fd = ::open(spec.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
      if (log_fd < 0) return ErrnoError("open process log '" + spec.log_path + "'", errno);
      child.fds = {{log_fd, STDOUT_FILENO}, {log_fd, STDERR_FILENO}};
    } else {
      child.fds = {{STDOUT_FILENO, STDOUT_FILENO}, {STDERR_FILENO, STDERR_FILENO}};
    }
    child.fds.push_back({STDIN_FILENO, STDIN_FILENO});
    Result<pid_t> pid = Spawn(child);
    if (log_fd >= 0) ::close(log_fd);
    if (pid.ok()) children_.insert(*pid);
    return pid;
  }

  void Signal(pid_t pid, int signal) override {
    if (children_.count(pid)) ::kill(pid, signal);
  }

  std::vector<ProcessExit> ReapExited() override {
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

 private:
  std::set<pid_t> children_;
};

}  // namespace

std::unique_ptr<ProcessLauncher> MakePosixProcessLauncher() { return std::make_unique<PosixProcessLauncher>(); }

}  // namespace dfw
