// The OS seam for every child dfworker starts (style.md: a narrow interface with a fake): SDK
// processes, model hosts, tenants' runs, the MPS daemon, its watchdog and the short MPS control
// commands. The POSIX implementation sits on the one fork+exec seam (dfw/common/process.h); tests
// of the job server, the model-host group and the supervisor use a fake that records calls and
// decides when its children end (tests/common/fake_process_launcher.h).
//
// An instance knows only the children it started, and ReapExited reaps all of them: each owner of
// children (the job server, the model-host group, an MPS controller) has its own instance, so no
// owner is handed another's exits.
//
// Threading: the POSIX implementation may be called from any thread.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "dfw/common/exit_code.h"
#include "dfw/common/process.h"
#include "dfw/common/status.h"

namespace dfw {

// What to start. The defaults are an SDK process's: it dies with the launcher and ignores a
// terminal's Ctrl-C (which reaches the whole process group; the launcher decides when children stop).
struct ProcessSpec {
  std::vector<std::string> argv;  // argv[0] is the executable path (exec'd as is, no PATH search)
  std::vector<std::string> env;   // "KEY=VALUE" entries that replace the launcher's (dfw/common/child_env.h)
  std::vector<std::string> env_defaults;  // entries used only where the launcher's environment has no such key
  std::string log_path;           // stdout and stderr are appended here; empty = inherit
  bool log_stdout = true;         // false: only stderr goes to log_path, stdout is inherited
  // {launcher fd, child fd} on top of the above: a pair for 0, 1 or 2 replaces what the child
  // would have there; -1 is /dev/null (SpawnSpec::fds).
  std::vector<std::pair<int, int>> fds;
  int death_signal = SIGKILL;        // PR_SET_PDEATHSIG; 0 = the child outlives the launcher
  bool ignore_sigint = true;
  std::vector<int> blocked_signals;  // the signal mask at exec (every thread of the child has it)
  bool new_session = false;          // setsid(): out of the launcher's group and session
  // Written where the child reports its start (its ready fd, else its stderr) when exec fails;
  // "" = "dfworker: cannot exec '<argv[0]>'".
  std::string exec_error;
  // Fork without exec (SpawnSpec::child_main): only for children that are this program itself.
  std::function<int()> child_main;
};

struct ProcessExit {
  pid_t pid = 0;
  ChildExit exit;  // decoded by DecodeWaitStatus, the one decoder
  // Peak resident set of the child or of the largest of its own reaped descendants (wait4's
  // ru_maxrss, KiB); 0 when unknown (fakes).
  int64_t max_rss_kib = 0;
};

class ProcessLauncher {
 public:
  virtual ~ProcessLauncher() = default;
  // Starts a child; kIoError/kInternal naming the executable when that fails.
  virtual Result<pid_t> Start(const ProcessSpec& spec) = 0;
  // Starts a child that says whether it came up with one line on fd `ready_fd` ("ready", or
  // "error: <why>"; an exec failure is written there too), and waits up to `timeout` for that
  // line (ReadyChild: "" when the child closed the fd or the time ran out). The child is left
  // running whatever the line says: the caller judges it and stops the child if it must.
  virtual Result<ReadyChild> StartAndAwaitReady(const ProcessSpec& spec, int ready_fd,
                                                std::chrono::milliseconds timeout) = 0;
  // Sends `signal` to a child started here (a child already gone is not an error).
  virtual void Signal(pid_t pid, int signal) = 0;
  // Children that have ended since the last call; never blocks.
  virtual std::vector<ProcessExit> ReapExited() = 0;
  // Waits up to `timeout` (0: only looks) for child `pid` to end and reaps it. running: it had not
  // ended by then; unknown: not a child started here, or reaped already.
  virtual Reaped WaitExit(pid_t pid, std::chrono::milliseconds timeout) = 0;
};

// SIGTERM, up to `grace` for the child to end, then SIGKILL and up to 10 s: reaped on return
// unless it outlives even that (then `exit` says "ended in an unknown way").
ChildExit StopProcess(ProcessLauncher& launcher, pid_t pid, std::chrono::milliseconds grace);

// Spawn (dfw/common/process.h) with the spec's fds, signals and environment (ChildEnvironment).
// Reaping uses wait4(pid, WNOHANG) on the children started here only, so other children of the
// process are left alone.
std::unique_ptr<ProcessLauncher> MakePosixProcessLauncher();

}  // namespace dfw
