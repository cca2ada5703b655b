// The one fork+exec seam: every child process of dfworker (SDK processes, model hosts, the MPS
// daemon and its watchdog, short commands such as nvidia-cuda-mps-control) starts in Spawn, and
// every wait for one goes through TryReap/ReapWithin and the one status decoder
// (DecodeWaitStatus, dfw/common/exit_code.h).
//
// What a caller states, and nothing else happens implicitly:
// - the child's whole environment (build it with ChildEnvironment, dfw/common/child_env.h, so
//   every child gets the same precedence rule);
// - which of the parent's fds the child has, at which numbers (everything else is closed on exec:
//   dfworker opens every fd O_CLOEXEC);
// - the signal mask at exec (every thread of the child inherits it) and whether SIGINT is ignored;
//   every other signal disposition is reset to the default;
// - whether the child dies with this process (PR_SET_PDEATHSIG) and whether it gets its own session.
//
// Threading: Spawn may be called from any thread. After fork the child calls only
// async-signal-safe functions (everything exec needs is built before the fork).
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dfw/common/exit_code.h"
#include "dfw/common/status.h"

namespace dfw {

struct SpawnSpec {
  std::vector<std::string> argv;  // argv[0] is exec'd as is (no PATH search)
  std::vector<std::string> env;   // the child's complete environment, "KEY=VALUE" entries
  // {parent fd, child fd}: the child has the parent's fd at that number (close-on-exec cleared).
  // A parent fd of -1 puts /dev/null there. The pairs may overlap in any way.
  std::vector<std::pair<int, int>> fds;
  int death_signal = 0;              // PR_SET_PDEATHSIG; 0 = the child outlives this process
  std::vector<int> blocked_signals;  // the mask at exec; every other signal is unblocked
  bool ignore_sigint = false;        // a terminal's Ctrl-C reaches the whole group; the parent decides
  bool new_session = false;          // setsid(): not in this process's group or session
  // Written to child fd `exec_error_fd` when exec fails (the child then exits 127); "" = nothing.
  std::string exec_error;
  int exec_error_fd = STDERR_FILENO;
  // Fork without exec: the child runs this and _exits with its result (argv is then unused).
  // Only for children that are this program itself and call nothing unsafe after a fork.
  std::function<int()> child_main;
};

// Starts the child. kInvalidArgument for an empty argv (without child_main); errno errors naming
// argv[0] when fork fails. With death_signal set, a child whose parent is already gone exits 127
// before exec.
Result<pid_t> Spawn(const SpawnSpec& spec);

// A child started by SpawnAndAwaitReady, and the first line it wrote on its ready fd.
struct ReadyChild {
  pid_t pid = 0;
  std::string line;  // trimmed, without the '\n'; "" when it closed the fd first or the time ran out
};

// Spawn with a fresh pipe's write end at child fd `ready_fd` (where exec_error goes too), then up
// to `timeout` for the child's first line on it. The child runs on whatever the line says: the
// caller judges the line and stops the child if it must.
Result<ReadyChild> SpawnAndAwaitReady(SpawnSpec spec, int ready_fd, std::chrono::milliseconds timeout);

// This process's executable (the target of /proc/self/exe), to start children of the same binary;
// "/proc/self/exe" itself when the link cannot be read (it still execs this binary).
std::string SelfExecutable();

struct Reaped {
  bool running = false;  // still running (nothing reaped)
  bool unknown = false;  // not a child of this process (or already reaped elsewhere)
  ChildExit exit;        // valid when neither
  // Peak resident set of the child or of the largest of its own reaped descendants (wait4's
  // ru_maxrss, KiB); valid with `exit`.
  int64_t max_rss_kib = 0;
};

// wait4(pid, WNOHANG), decoded.
Reaped TryReap(pid_t pid);
// Waits up to `timeout` (polling every few ms); running = true if it did not end by then.
Reaped ReapWithin(pid_t pid, std::chrono::milliseconds timeout);
// SIGTERM, up to `grace` for it to end, then SIGKILL and a wait: the child is reaped on return.
ChildExit StopChild(pid_t pid, std::chrono::milliseconds grace);

}  // namespace dfw
