// The OS seam for starting and stopping SDK processes (style.md: a narrow interface with a fake).
// The POSIX implementation forks and execs; tests of the supervisor use a fake that records calls.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "dfw/common/exit_code.h"
#include "dfw/common/status.h"

namespace dfw {

struct ProcessSpec {
  std::vector<std::string> argv;  // argv[0] is the executable path (exec'd as is, no PATH search)
  std::vector<std::string> env;   // "KEY=VALUE" entries that replace the launcher's (dfw/common/child_env.h)
  std::vector<std::string> env_defaults;  // entries used only where the launcher's environment has no such key
  std::string log_path;           // stdout and stderr are appended here; empty = inherit
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
  // Sends `signal` to a child started here (a child already gone is not an error).
  virtual void Signal(pid_t pid, int signal) = 0;
  // Children that have ended since the last call; never blocks.
  virtual std::vector<ProcessExit> ReapExited() = 0;
};

// Spawn (dfw/common/process.h). The child stays in the launcher's process group, gets PR_SET_PDEATHSIG(SIGKILL) so
// it dies with the launcher (and exits at once if the launcher is already gone), has SIGINT
// ignored (a terminal's Ctrl-C reaches the whole group; the launcher decides when children stop)
// and default dispositions otherwise. Reaping uses waitpid(pid, WNOHANG) on the children started
// here only, so other children of the process are left alone.
std::unique_ptr<ProcessLauncher> MakePosixProcessLauncher();

}  // namespace dfw
