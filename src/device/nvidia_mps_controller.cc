// The real MPS daemon, driven through nvidia-cuda-mps-control.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "dfw/common/file.h"
#include "dfw/common/logging.h"
#include "dfw/common/strings.h"
#include "dfw/device/mps_controller.h"
#include "process_info.h"
#include "subprocess.h"

namespace dfw::device {
namespace {

constexpr const char* kPidFile = "nvidia-cuda-mps-control.pid";

std::string SizeForMps(uint64_t bytes) {
  // The control commands take an integer with G or M; round down to whole MiB (at least 1M).
  return std::to_string(std::max<uint64_t>(1, bytes >> 20)) + "M";
}

class NvidiaMpsController final : public MpsController {
 public:
  NvidiaMpsController(MpsDaemonOptions o, std::string program)
      : options_(std::move(o)),
        program_(std::move(program)),
        owned_launcher_(options_.process_launcher ? nullptr : MakePosixProcessLauncher()),
        launcher_(options_.process_launcher ? *options_.process_launcher : *owned_launcher_) {}
  ~NvidiaMpsController() override { (void)Quit(); }

  std::string_view kind() const override { return "nvidia"; }
  pid_t daemon_pid() const override { return started_ ? ReadPid() : 0; }

  Status Start() override {
    if (started_) return FailedPrecondition("the MPS daemon is already running (pid " + std::to_string(ReadPid()) + ")");
    RETURN_IF_ERROR(PrepareMpsDirs(options_.dirs));
    RETURN_IF_ERROR(RecoverStalePipeDir());
    EnvOverrides env = DirEnv();
    if (options_.default_active_thread_percentage) {
      env.emplace_back(std::string(kThreadPercentageEnv), fmt::format("{}", *options_.default_active_thread_percentage));
    }
    ASSIGN_OR_RETURN(CommandResult r, RunCommand(launcher_, {program_, "-d"}, env, "", options_.timeout_ms));
    if (r.exit_code != 0) {
      return Unavailable("'" + program_ + " -d' failed with exit code " + std::to_string(r.exit_code) + ": " +
                         std::string(Trim(r.output)));
    }
    started_ = true;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.timeout_ms);
    while (ReadPid() == 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    Status healthy = ReadPid() != 0 ? HealthCheck()
                                    : Unavailable("the MPS daemon wrote no " + std::string(kPidFile) + " in '" +
                                                  options_.dirs.pipe_dir + "' within " +
                                                  std::to_string(options_.timeout_ms) + " ms");
    if (healthy.ok()) healthy = StartWatchdog();
    if (healthy.ok() && options_.default_pinned_mem_limit_bytes) {
      healthy = Control("set_default_device_pinned_mem_limit 0 " + SizeForMps(*options_.default_pinned_mem_limit_bytes)).status();
    }
    if (healthy.ok() && options_.default_active_thread_percentage) {
      healthy = Control("set_default_active_thread_percentage " + fmt::format("{}", *options_.default_active_thread_percentage)).status();
    }
    if (!healthy.ok()) {
      (void)Quit();
      return healthy;
    }
    spdlog::info("MPS control daemon started (pid {}), pipe dir {}", ReadPid(), options_.dirs.pipe_dir);
    return Status::OK();
  }

  Status HealthCheck() override {
    pid_t pid = ReadPid();
    if (!started_ || pid == 0) return Unavailable("the MPS daemon is not running");
    if (!ProcessAlive(pid, 0)) return Unavailable("the MPS daemon (pid " + std::to_string(pid) + ") is gone");
    return Control("get_server_list").status();
  }

  Result<std::vector<MpsClientInfo>> ListClients() override {
    ASSIGN_OR_RETURN(std::string out, Control("ps"));
    std::vector<MpsClientInfo> clients;
    for (const std::string& line : Split(out, '\n')) {
      std::vector<std::string> cols;
      for (const std::string& w : Split(line, ' ')) {
        if (!w.empty()) cols.push_back(w);
      }
      std::optional<int64_t> pid = cols.empty() ? std::nullopt : ParseInt64(cols[0]);
      if (!pid) continue;  // header or blank
      MpsClientInfo info;
      info.pid = static_cast<pid_t>(*pid);
      info.name = cols.size() >= 6 ? cols[5] : "";
      clients.push_back(std::move(info));
    }
    return clients;
  }

  Status Quit() override {
    if (!started_) return Status::OK();
    StopWatchdog();
    pid_t pid = ReadPid();
    Result<std::string> asked = Control("quit");
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.timeout_ms);
    while (pid != 0 && ProcessAlive(pid, 0) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    started_ = false;
    if (pid != 0 && ProcessAlive(pid, 0)) {
      ::kill(pid, SIGKILL);
      return Unavailable("the MPS daemon (pid " + std::to_string(pid) + ") ignored 'quit' for " +
                         std::to_string(options_.timeout_ms) + " ms and was killed" +
                         (asked.ok() ? "" : ": " + asked.status().message()));
    }
    return Status::OK();
  }

  std::vector<std::pair<std::string, std::string>> ClientEnv(const MpsClientLimits& limits) const override {
    return MpsClientEnv(options_.dirs, limits);
  }

 private:
  EnvOverrides DirEnv() const {
    return {{std::string(kPipeDirEnv), options_.dirs.pipe_dir}, {std::string(kLogDirEnv), options_.dirs.log_dir}};
  }

  pid_t ReadPid() const {
    Result<std::string> text = ReadWholeFile(options_.dirs.pipe_dir + "/" + kPidFile, 4096);
    if (!text.ok()) return 0;
    const std::string_view digits = Trim(*text);
    const std::optional<int64_t> pid = ParseInt64(digits.substr(0, digits.find_first_of(" \t\n")));
    return pid && *pid > 0 ? static_cast<pid_t>(*pid) : 0;
  }

  Result<std::string> Control(const std::string& command) {
    ASSIGN_OR_RETURN(CommandResult r, RunCommand(launcher_, {program_}, DirEnv(), command + "\n", options_.timeout_ms));
    if (r.exit_code != 0) {
      return Unavailable("MPS control command '" + command + "' failed with exit code " + std::to_string(r.exit_code) +
                         ": " + std::string(Trim(r.output)));
    }
    return r.output;
  }

  // A daemon left running by a killed run of this job (the dirs are private, so it is ours) is
  // asked to quit; leftover files of a dead one are removed.
  Status RecoverStalePipeDir() {
    pid_t pid = ReadPid();
    if (pid != 0 && ProcessAlive(pid, 0)) {
      spdlog::warn("MPS daemon pid {} from an earlier run still owns {}; stopping it", pid, options_.dirs.pipe_dir);
      started_ = true;
      RETURN_IF_ERROR(Quit());
    }
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(options_.dirs.pipe_dir, ec)) {
      std::filesystem::remove_all(entry.path(), ec);
    }
    return Status::OK();
  }

  // A separate session's `sh` that blocks reading a pipe only this process writes to. When this
  // process ends by any path, even SIGKILL, the pipe closes and the watchdog sends `quit`.
  Status StartWatchdog() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return ErrnoError("pipe", errno);
    ProcessSpec child;
    child.argv = {"/bin/sh", "-c", "read -r _; echo quit | \"$0\" >/dev/null 2>&1", program_};
    for (const auto& [k, v] : DirEnv()) child.env.push_back(k + "=" + v);
    child.fds = {{fds[0], STDIN_FILENO}, {-1, STDOUT_FILENO}, {-1, STDERR_FILENO}};
    child.new_session = true;  // outlives this process on purpose: it sends the quit
    child.death_signal = 0;
    child.ignore_sigint = false;
    Result<pid_t> spawned = launcher_.Start(child);
    if (!spawned.ok()) {
      ::close(fds[0]);
      ::close(fds[1]);
      return spawned.status().WithContext("start the MPS watchdog");
    }
    const pid_t pid = *spawned;
    ::close(fds[0]);
    watchdog_pid_ = pid;
    watchdog_fd_ = fds[1];
    return Status::OK();
  }

  void StopWatchdog() {
    if (watchdog_pid_ != 0) {
      launcher_.Signal(watchdog_pid_, SIGKILL);
      (void)launcher_.WaitExit(watchdog_pid_, std::chrono::milliseconds(10000));
      watchdog_pid_ = 0;
    }
    if (watchdog_fd_ >= 0) ::close(watchdog_fd_);
    watchdog_fd_ = -1;
  }

  MpsDaemonOptions options_;
  std::string program_;
  std::unique_ptr<ProcessLauncher> owned_launcher_;  // when options_ named none
  ProcessLauncher& launcher_;
  bool started_ = false;
  pid_t watchdog_pid_ = 0;
  int watchdog_fd_ = -1;
};

}  // namespace

Result<std::unique_ptr<MpsController>> MakeNvidiaMpsController(const MpsDaemonOptions& options) {
  std::string program = FindExecutable(options.control_program);
  if (program.empty()) {
    return NotFound("'" + options.control_program +
                    "' not found on PATH: install the NVIDIA driver's MPS tools, or use the emulated MPS daemon");
  }
  if (options.dirs.pipe_dir.empty() || options.dirs.log_dir.empty()) return InvalidArgument("MPS dirs must be set");
  return std::unique_ptr<MpsController>(new NvidiaMpsController(options, program));
}

}  // namespace dfw::device
