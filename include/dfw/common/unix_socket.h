// UNIX stream sockets: the coordinator's (dfw/job/line_channel.h carries its lines) and the
// emulated MPS daemon's control socket (src/device). Every socket made here is close-on-exec and
// owned by the OwnedFd returned (dfw/common/file.h).
#pragma once

#include <string>
#include <string_view>

#include "dfw/common/file.h"
#include "dfw/common/status.h"

namespace dfw {

enum class SocketBlocking { kBlocking, kNonBlocking };

// A listening SOCK_STREAM socket bound at `path`, which must not exist: what an old socket file
// there means is the caller's call (the launcher removes its own; the MPS daemon first asks whether
// a daemon still answers there). kNonBlocking for a poll loop that accepts until EAGAIN. `what`
// names the socket in errors ("the coordinator socket"); a path too long for a socket address is
// kInvalidArgument.
Result<OwnedFd> ListenUnix(const std::string& path, SocketBlocking blocking, std::string_view what);

// A blocking socket connected to `path`; kUnavailable "cannot reach <peer> at '<path>': <why>"
// when nobody listens there.
Result<OwnedFd> ConnectUnix(const std::string& path, std::string_view peer);

}  // namespace dfw
