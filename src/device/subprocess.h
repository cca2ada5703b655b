// Running a short external command (nvidia-cuda-mps-control) with extra environment, text on its
// stdin and a deadline (private to src/device).
//
// stdin and stdout/stderr go through unlinked temporary files, not pipes: `-d` daemonises, and a
// daemon that inherited a pipe would keep it open and make the caller wait for an EOF that never
// comes. The command is killed (SIGKILL) when the deadline passes, so a call never hangs.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "dfw/common/process_launcher.h"
#include "dfw/common/status.h"

namespace dfw::device {

struct CommandResult {
  int exit_code = -1;  // the exit status, or 128 + signal number
  std::string output;  // stdout and stderr interleaved
};

using EnvOverrides = std::vector<std::pair<std::string, std::string>>;

// Runs argv[0] (looked up on PATH when it has no '/') through `launcher` with the current
// environment plus `env`. kNotFound if the program cannot be executed, kUnavailable on timeout.
Result<CommandResult> RunCommand(ProcessLauncher& launcher, const std::vector<std::string>& argv,
                                 const EnvOverrides& env, const std::string& stdin_text, int timeout_ms);

// Searches PATH for an executable `name`; empty if absent. A name with '/' is checked as is.
std::string FindExecutable(const std::string& name);

}  // namespace dfw::device
