// Process exit codes (design.md "Exit codes") and the one place that turns a child's end into one.
#pragma once

#include <string>

#include "dfw/common/status.h"

namespace dfw {

enum class ExitCode : int {
  kSuccess = 0,          // the job (or dry run) succeeded
  kRunFailed = 1,        // failed at run time: bundle failed 4 times, error threshold, device OOM
  kInvalidInvocation = 2,// flags, options, pipeline file or model file are wrong
  kInterrupted = 130,    // SIGINT (128 + 2); job dir left resumable
  kTerminated = 143,     // SIGTERM (128 + 15); job dir left resumable
};

// The process exit status of a bad invocation, for code that returns an int exit status.
inline constexpr int kInvalidInvocationExit = static_cast<int>(ExitCode::kInvalidInvocation);

// Exit code for a failed Status: invalid input (kInvalidArgument, kNotFound, kUnimplemented)
// is 2, kAborted is 1 unless a signal handler chose 130/143, everything else is 1.
ExitCode ExitCodeFor(const Status& status);

// How a child process ended, decoded from a waitpid() status word.
struct ChildExit {
  bool exited = false;    // exited normally (exit_code is valid)
  int exit_code = 0;
  bool signaled = false;  // killed by a signal (signal is valid)
  int signal = 0;
  bool core_dumped = false;

  bool success() const { return exited && exit_code == 0; }
  // "exited with code 1", "killed by signal 9 (SIGKILL)".
  std::string Describe() const;
};

// The single waitpid status decoder (style.md: one decoder for every child).
ChildExit DecodeWaitStatus(int wait_status);

}  // namespace dfw
