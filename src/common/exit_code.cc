#include "dfw/common/exit_code.h"

#include <signal.h>
#include <string.h>
#include <sys/wait.h>

#include <string>

namespace dfw {

ExitCode ExitCodeFor(const Status& status) {
  switch (status.code()) {
    case StatusCode::kOk: return ExitCode::kSuccess;
    case StatusCode::kInvalidArgument:
    case StatusCode::kNotFound:
    case StatusCode::kUnimplemented: return ExitCode::kInvalidInvocation;
    default: return ExitCode::kRunFailed;
  }
}

ChildExit DecodeWaitStatus(int wait_status) {
  ChildExit e;
  if (WIFEXITED(wait_status)) {
    e.exited = true;
    e.exit_code = WEXITSTATUS(wait_status);
  } else if (WIFSIGNALED(wait_status)) {
    e.signaled = true;
    e.signal = WTERMSIG(wait_status);
#ifdef WCOREDUMP
    e.core_dumped = WCOREDUMP(wait_status);
#endif
  }
  return e;
}

std::string ChildExit::Describe() const {
  if (exited) return "exited with code " + std::to_string(exit_code);
  if (signaled) {
    const char* abbrev = sigabbrev_np(signal);
    std::string s = "killed by signal " + std::to_string(signal);
    if (abbrev) s += std::string(" (SIG") + abbrev + ")";
    if (core_dumped) s += ", core dumped";
    return s;
  }
  return "ended in an unknown way";
}

}  // namespace dfw
