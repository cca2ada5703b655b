// Line-oriented UNIX-socket helpers for the emulated MPS daemon and its clients (private).
// Every blocking call has a deadline, so a wedged peer produces a Status, never a hang.
#pragma once

#include <string>

#include "dfw/common/status.h"

namespace dfw::device {

// Path of the emulated daemon's control socket inside a pipe dir.
std::string ControlSocketPath(const std::string& pipe_dir);

// Listening SOCK_STREAM socket bound at `path` (which must not exist). Close-on-exec.
Result<int> ListenUnix(const std::string& path);
// Connected socket; kUnavailable if nobody listens. Close-on-exec.
Result<int> ConnectUnix(const std::string& path);

// Writes all of `text`. MSG_NOSIGNAL: a vanished peer is an error, not SIGPIPE.
Status SendAll(int fd, const std::string& text);
// Reads one '\n'-terminated line (without the '\n') into `line`, buffering extra bytes in `buffer`.
// kUnavailable on EOF or when `timeout_ms` passes.
Status ReadLine(int fd, std::string& buffer, std::string& line, int timeout_ms);

}  // namespace dfw::device
