// The emulated MPS daemon's control socket (private to src/device): where it is in a pipe dir,
// and its line-at-a-time exchange. Every blocking call has a deadline, so a wedged peer produces
// a Status, never a hang. Listening and connecting: dfw/common/unix_socket.h.
#pragma once

#include <string>
#include <string_view>

#include "dfw/common/status.h"

namespace dfw::device {

// Who listens on it, as connection errors name it (ConnectUnix).
inline constexpr std::string_view kMpsDaemonPeer = "the MPS daemon";

// Path of the emulated daemon's control socket inside a pipe dir.
std::string ControlSocketPath(const std::string& pipe_dir);

// Writes all of `text`. MSG_NOSIGNAL: a vanished peer is an error, not SIGPIPE.
Status SendAll(int fd, const std::string& text);
// Reads one '\n'-terminated line (without the '\n') into `line`, buffering extra bytes in `buffer`.
// kUnavailable on EOF or when `timeout_ms` passes.
Status ReadLine(int fd, std::string& buffer, std::string& line, int timeout_ms);

}  // namespace dfw::device
