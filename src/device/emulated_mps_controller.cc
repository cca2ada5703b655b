#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <system_error>

#include <fmt/format.h>

#include "dfw/common/strings.h"
#include "dfw/device/mps_client.h"
#include "dfw/device/mps_controller.h"
#include "subprocess.h"

namespace dfw::device {
namespace {

Status MakePrivateDir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return IoError("create MPS directory '" + dir + "': " + ec.message());
  if (::chmod(dir.c_str(), 0700) != 0) return ErrnoError("chmod 0700 '" + dir + "'", errno);
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) return ErrnoError("stat '" + dir + "'", errno);
  if (st.st_uid != ::getuid()) {
    return FailedPrecondition("MPS directory '" + dir + "' belongs to uid " + std::to_string(st.st_uid) +
                              ", not to this user (uid " + std::to_string(::getuid()) + ")");
  }
  return Status::OK();
}

// The daemon runs in a forked child of the launcher; PR_SET_PDEATHSIG ties it to its parent.
class EmulatedMpsController final : public MpsController {
 public:
  explicit EmulatedMpsController(MpsDaemonOptions o)
      : options_(std::move(o)),
        owned_launcher_(options_.process_launcher ? nullptr : MakePosixProcessLauncher()),
        launcher_(options_.process_launcher ? *options_.process_launcher : *owned_launcher_) {}
  ~EmulatedMpsController() override { (void)Quit(); }

  std::string_view kind() const override { return "emulated"; }
  pid_t daemon_pid() const override { return pid_; }

  Status Start() override {
    if (pid_ != 0) return FailedPrecondition("the emulated MPS daemon is already running (pid " + std::to_string(pid_) + ")");
    std::vector<std::string> argv = DaemonArgv();
    ProcessSpec child;
    child.argv = argv;
    child.blocked_signals = {SIGTERM, SIGINT, SIGHUP};  // delivered through the daemon's signalfd
    child.ignore_sigint = false;                         // an ignored SIGINT would never reach it
    child.death_signal = SIGTERM;                        // the daemon stops if this process dies
    child.exec_error = "error: cannot exec the MPS daemon command '" + (argv.empty() ? std::string() : argv[0]) + "'\n";
    if (argv.empty()) child.child_main = [this] { return RunEmulatedMpsDaemon(options_, kReadyFd); };
    Result<ReadyChild> started =
        launcher_.StartAndAwaitReady(child, kReadyFd, std::chrono::milliseconds(options_.timeout_ms));
    if (!started.ok()) return started.status().WithContext("start the emulated MPS daemon");
    pid_ = started->pid;
    const std::string& answer = started->line;
    if (answer.rfind("ready", 0) == 0) return Status::OK();
    (void)Stop(0);
    if (answer.rfind("error: ", 0) == 0) {
      return Unavailable("the emulated MPS daemon did not start: " + std::string(Trim(answer.substr(7))));
    }
    return Unavailable("the emulated MPS daemon did not become ready within " + std::to_string(options_.timeout_ms) +
                       " ms (see " + options_.dirs.log_dir + "/control.log)");
  }

  Status HealthCheck() override {
    if (pid_ == 0) return Unavailable("the emulated MPS daemon is not running");
    if (Reaped r = launcher_.WaitExit(pid_, std::chrono::milliseconds(0)); !r.running) {
      pid_ = 0;
      return Unavailable("the emulated MPS daemon " + (r.unknown ? std::string("is gone") : r.exit.Describe()));
    }
    return MpsControlCommand(options_.dirs.pipe_dir, "ping", options_.timeout_ms).status();
  }

  Result<std::vector<MpsClientInfo>> ListClients() override {
    ASSIGN_OR_RETURN(std::string reply, MpsControlCommand(options_.dirs.pipe_dir, "ps", options_.timeout_ms));
    std::vector<MpsClientInfo> clients;
    for (const std::string& line : Split(reply, '\n')) {
      if (line.rfind("client ", 0) != 0) continue;
      MpsClientInfo info;
      for (const std::string& w : Split(line.substr(7), ' ')) {
        std::size_t eq = w.find('=');
        std::string key = w.substr(0, eq), value = eq == std::string::npos ? "" : w.substr(eq + 1);
        if (key == "pid") info.pid = static_cast<pid_t>(ParseInt64(value).value_or(0));
        if (key == "name") info.name = value;
        if (key == "threads") info.active_thread_percentage = ParseDouble(value).value_or(100);
        if (key == "priority") info.priority = static_cast<int>(ParseInt64(value).value_or(0));
        if (key == "pinned" && value != "-") info.pinned_mem_limit_bytes = static_cast<uint64_t>(ParseInt64(value).value_or(0));
      }
      clients.push_back(std::move(info));
    }
    return clients;
  }

  Status Quit() override {
    if (pid_ == 0) return Status::OK();
    // A daemon that cannot be asked (already dead, or wedged) is killed at once.
    Status asked = MpsControlCommand(options_.dirs.pipe_dir, "quit", options_.timeout_ms).status();
    return Stop(asked.ok() ? options_.timeout_ms : 0);
  }

  std::vector<std::pair<std::string, std::string>> ClientEnv(const MpsClientLimits& limits) const override {
    return MpsClientEnv(options_.dirs, limits);
  }

 private:
  // Waits `grace_ms` for the daemon to exit, then kills it. Always reaps.
  Status Stop(int grace_ms) {
    if (pid_ == 0) return Status::OK();
    bool exited = grace_ms > 0 && !launcher_.WaitExit(pid_, std::chrono::milliseconds(grace_ms)).running;
    if (!exited) {
      launcher_.Signal(pid_, SIGKILL);
      (void)launcher_.WaitExit(pid_, std::chrono::milliseconds(10000));
    }
    pid_t was = pid_;
    pid_ = 0;
    if (!exited && grace_ms > 0) {
      return Unavailable("the emulated MPS daemon (pid " + std::to_string(was) + ") did not exit within " +
                         std::to_string(grace_ms) + " ms of quit; killed");
    }
    return Status::OK();
  }

  static constexpr int kReadyFd = 3;

  // The exec'd daemon's argv (empty: run in the forked child).
  std::vector<std::string> DaemonArgv() const {
    std::vector<std::string> argv = options_.daemon_command;
    if (argv.empty()) return argv;
    argv.insert(argv.end(), {"--pipe_dir", options_.dirs.pipe_dir, "--log_dir", options_.dirs.log_dir,
                             "--max_clients", std::to_string(options_.max_clients_per_device)});
    if (options_.default_active_thread_percentage) {
      argv.insert(argv.end(), {"--thread_percentage", fmt::format("{}", *options_.default_active_thread_percentage)});
    }
    if (options_.default_pinned_mem_limit_bytes) {
      argv.insert(argv.end(), {"--pinned_mem_limit", std::to_string(*options_.default_pinned_mem_limit_bytes)});
    }
    argv.insert(argv.end(), {"--ready_fd", std::to_string(kReadyFd)});
    return argv;
  }

  MpsDaemonOptions options_;
  std::unique_ptr<ProcessLauncher> owned_launcher_;  // when options_ named none
  ProcessLauncher& launcher_;
  pid_t pid_ = 0;
};

}  // namespace

int MpsClientLimitForComputeCapability(int major) { return major >= 7 ? 48 : 16; }

Status PrepareMpsDirs(const MpsDirs& dirs) {
  if (dirs.pipe_dir.empty() || dirs.log_dir.empty()) {
    return InvalidArgument("MPS pipe and log directories must both be set (got pipe '" + dirs.pipe_dir + "', log '" +
                           dirs.log_dir + "')");
  }
  RETURN_IF_ERROR(MakePrivateDir(dirs.pipe_dir));
  return MakePrivateDir(dirs.log_dir);
}

Result<std::unique_ptr<MpsController>> MakeEmulatedMpsController(const MpsDaemonOptions& options) {
  if (options.max_clients_per_device <= 0) {
    return InvalidArgument("MPS max clients per device must be > 0, got " + std::to_string(options.max_clients_per_device));
  }
  if (options.default_active_thread_percentage &&
      !(*options.default_active_thread_percentage > 0 && *options.default_active_thread_percentage <= 100)) {
    return InvalidArgument("MPS default active thread percentage must be in (0, 100]");
  }
  if (options.dirs.pipe_dir.empty() || options.dirs.log_dir.empty()) return InvalidArgument("MPS dirs must be set");
  return std::unique_ptr<MpsController>(new EmulatedMpsController(options));
}

Result<std::unique_ptr<MpsController>> MakeMpsController(std::string_view kind, const MpsDaemonOptions& options) {
  if (kind == "emulated") return MakeEmulatedMpsController(options);
  if (kind == "nvidia") return MakeNvidiaMpsController(options);
  if (kind == "auto") {
    if (!FindExecutable(options.control_program).empty()) return MakeNvidiaMpsController(options);
    return MakeEmulatedMpsController(options);
  }
  return InvalidArgument("MPS controller '" + std::string(kind) + "' is unknown; allowed: auto, nvidia, emulated" +
                         DidYouMeanSuffix(kind, {"auto", "nvidia", "emulated"}));
}

}  // namespace dfw::device
