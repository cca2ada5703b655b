#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <set>

#include "dfw/common/child_env.h"
#include "dfw/launcher/process_launcher.h"


namespace dfw {
namespace {

class PosixProcessLauncher final : public ProcessLauncher {
 public:
  Result<pid_t> Start(const ProcessSpec& spec) override {
    if (spec.argv.empty()) return InvalidArgument("process spec has an empty argv");
    // Everything the child needs is prepared before fork: after fork only async-signal-safe calls.
    std::vector<char*> argv;
    for (const auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    std::vector<std::string> env_strings = ChildEnvironment(spec.env, spec.env_defaults);
    std::vector<char*> envp;
    for (auto& e : env_strings) envp.push_back(e.data());
    envp.push_back(nullptr);
    int log_fd = -1;
    if (!spec.log_path.empty()) {
      log_fd = ::open(spec.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
      if (log_fd < 0) return ErrnoError("open process log '" + spec.log_path + "'", errno);
    }
    pid_t parent = ::getpid();
    pid_t pid = ::fork();
    if (pid < 0) {
      int err = errno;
      if (log_fd >= 0) ::close(log_fd);
      return ErrnoError("fork for '" + spec.argv[0] + "'", err);
    }
    if (pid == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(127);  // the launcher died before prctl took effect
      struct sigaction sa{};
      sa.sa_handler = SIG_DFL;
      for (int sig : {SIGTERM, SIGCHLD, SIGPIPE, SIGHUP}) ::sigaction(sig, &sa, nullptr);
      sa.sa_handler = SIG_IGN;
      ::sigaction(SIGINT, &sa, nullptr);
      sigset_t none;
      sigemptyset(&none);
      ::sigprocmask(SIG_SETMASK, &none, nullptr);
      if (log_fd >= 0) {
        ::dup2(log_fd, STDOUT_FILENO);
        ::dup2(log_fd, STDERR_FILENO);
      }
      ::execve(argv[0], argv.data(), envp.data());
      const char msg[] = "dfworker: exec of the SDK harness failed\n";
      (void)!::write(STDERR_FILENO, msg, sizeof msg - 1);
      ::_exit(127);
    }
    if (log_fd >= 0) ::close(log_fd);
    children_.insert(pid);
    return pid;
  }

  void Signal(pid_t pid, int signal) override {
    if (children_.count(pid)) ::kill(pid, signal);
  }

  std::vector<ProcessExit> ReapExited() override {
    std::vector<ProcessExit> out;
    for (auto it = children_.begin(); it != children_.end();) {
      int status = 0;
      struct rusage usage {};
      pid_t r = ::wait4(*it, &status, WNOHANG, &usage);  // waitpid + the child's resource use
      if (r == *it || (r < 0 && errno == ECHILD)) {
        if (r == *it) out.push_back({*it, DecodeWaitStatus(status), static_cast<int64_t>(usage.ru_maxrss)});
        it = children_.erase(it);
      } else {
        ++it;
      }
    }
    return out;
  }

 private:
  std::set<pid_t> children_;
};

}  // namespace

std::unique_ptr<ProcessLauncher> MakePosixProcessLauncher() { return std::make_unique<PosixProcessLauncher>(); }

}  // namespace dfw
