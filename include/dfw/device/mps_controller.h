// The MPS controller: starts, checks and stops one job's MPS control daemon.
//
// Two implementations behind one interface:
//   nvidia   drives `nvidia-cuda-mps-control -d` with private pipe/log dirs under the job dir, sets
//            the default limits through its control commands, and sends `quit` when stopped.
//   emulated a small daemon process (forked from the caller, or `dfworker mps daemon`) listening on
//            a UNIX socket in the pipe dir, with the same lifecycle, a client registry (register,
//            unregister, death detection), limits (clients per device, pinned memory, thread
//            percentage) and a control.log in NVIDIA's line format.
//
// Exit paths: Quit() is idempotent and the destructor calls it, so every normal and error path
// stops the daemon. If the owning process dies without running destructors (SIGKILL), the
// emulated daemon gets SIGTERM through PR_SET_PDEATHSIG and shuts down; the nvidia daemon is sent
// `quit` by a watchdog process that notices its parent's end. Start() recovers a stale pipe dir
// left by a killed run and refuses one whose daemon still answers.
//
// Threading: one controller is driven by one thread. PR_SET_PDEATHSIG fires when the *thread*
// that called Start() exits, so call Start() from the launcher's main thread.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dfw/common/process_launcher.h"
#include "dfw/common/status.h"
#include "dfw/device/mps_env.h"

namespace dfw::device {

// MPS client contexts per device: 48 for Volta and later servers, 16 before (reference §5).
int MpsClientLimitForComputeCapability(int major);

struct MpsDaemonOptions {
  // Private pipe and log dirs; created mode 0700 by Start() (MpsDirsForJob gives the job layout).
  MpsDirs dirs;
  // Client contexts the device takes (MpsClientLimitForComputeCapability).
  int max_clients_per_device = 48;
  // Default active thread percentage for clients, (0, 100]; nullopt = 100.
  std::optional<double> default_active_thread_percentage;
  // Default per-client pinned device memory on device 0; nullopt = no limit.
  std::optional<uint64_t> default_pinned_mem_limit_bytes;
  // nvidia only: the control program (a path, or a name looked up on PATH).
  std::string control_program = "nvidia-cuda-mps-control";
  // How long Start() waits for the daemon to be ready, and Quit() for it to exit.
  int timeout_ms = 5000;
  // emulated only: when non-empty, the daemon is exec'd as this command (e.g. {"/proc/self/exe",
  // "mps", "daemon"}; the controller appends --pipe_dir, --log_dir, the limits and --ready_fd 3)
  // instead of running in the forked child itself. Use it from multi-threaded processes (the
  // launcher), where a forked child should only exec.
  std::vector<std::string> daemon_command;
  // The process seam for the daemon, its watchdog and the control commands, used by this
  // controller only (it reaps every child it started); null = fork+exec (MakePosixProcessLauncher).
  // Must outlive the controller.
  ProcessLauncher* process_launcher = nullptr;
};

// One registered client as the daemon reports it.
struct MpsClientInfo {
  pid_t pid = 0;
  std::string name;                      // "sdk-3", "model-host-0" (nvidia: the command)
  double active_thread_percentage = 100; // effective value (a client may only lower the default)
  std::optional<uint64_t> pinned_mem_limit_bytes;  // effective value
  int priority = 0;                      // CUDA_MPS_CLIENT_PRIORITY: 0 normal, 1 below normal
};

class MpsController {
 public:
  virtual ~MpsController() = default;

  // "nvidia" or "emulated".
  virtual std::string_view kind() const = 0;
  // Creates the private dirs, recovers a stale pipe dir, starts the daemon and waits until it
  // answers. kFailedPrecondition if a live daemon already owns the pipe dir; kUnavailable if the
  // daemon does not come up within timeout_ms (nothing is left running then).
  virtual Status Start() = 0;
  // OK when the daemon runs and answers a control command; kUnavailable with the reason otherwise.
  virtual Status HealthCheck() = 0;
  // The clients the daemon knows.
  virtual Result<std::vector<MpsClientInfo>> ListClients() = 0;
  // Stops the daemon (`quit`), waits for it, and kills it if it does not go. OK when not running.
  virtual Status Quit() = 0;
  // The daemon's pid, or 0 when not running.
  virtual pid_t daemon_pid() const = 0;
  // The environment a client process needs (MpsClientEnv with this daemon's dirs).
  virtual std::vector<std::pair<std::string, std::string>> ClientEnv(const MpsClientLimits& limits) const = 0;
};

Result<std::unique_ptr<MpsController>> MakeEmulatedMpsController(const MpsDaemonOptions& options);
Result<std::unique_ptr<MpsController>> MakeNvidiaMpsController(const MpsDaemonOptions& options);

// "auto" | "nvidia" | "emulated". auto = nvidia when options.control_program is found on PATH.
// Unknown names are kInvalidArgument naming the allowed values.
Result<std::unique_ptr<MpsController>> MakeMpsController(std::string_view kind, const MpsDaemonOptions& options);

// Runs the emulated daemon in the calling process until `quit`, SIGTERM/SIGINT/SIGHUP, or (when
// started by a controller) the parent's death. Writes "ready\n" or "error: <why>\n" to ready_fd
// (-1: none). Returns the process exit code. Used by the emulated controller's forked child and by
// the hidden `dfworker mps daemon` subcommand.
int RunEmulatedMpsDaemon(const MpsDaemonOptions& options, int ready_fd);

// Creates pipe and log dirs with mode 0700 (and checks they are ours and private).
Status PrepareMpsDirs(const MpsDirs& dirs);

}  // namespace dfw::device
