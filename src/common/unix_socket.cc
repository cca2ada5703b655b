#include "dfw/common/unix_socket.h"

#include <errno.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cstring>

namespace dfw {
namespace {

Result<sockaddr_un> UnixSocketAddress(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) {
    return InvalidArgument("socket path '" + path + "' is longer than " + std::to_string(sizeof addr.sun_path - 1) +
                           " bytes; use a shorter job dir");
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  return addr;
}

}  // namespace

Result<OwnedFd> ListenUnix(const std::string& path, SocketBlocking blocking, std::string_view what) {
  ASSIGN_OR_RETURN(sockaddr_un addr, UnixSocketAddress(path));
  const int flags = SOCK_STREAM | SOCK_CLOEXEC | (blocking == SocketBlocking::kNonBlocking ? SOCK_NONBLOCK : 0);
  OwnedFd fd(::socket(AF_UNIX, flags, 0));
  if (!fd.valid()) return ErrnoError("create " + std::string(what), errno);
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd.get(), 128) != 0) {
    return ErrnoError("listen on " + std::string(what) + " '" + path + "'", errno);
  }
  return fd;
}

Result<OwnedFd> ConnectUnix(const std::string& path, std::string_view peer) {
  ASSIGN_OR_RETURN(sockaddr_un addr, UnixSocketAddress(path));
  OwnedFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return ErrnoError("create a socket to reach " + std::string(peer), errno);
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    return Unavailable("cannot reach " + std::string(peer) + " at '" + path + "': " + std::strerror(errno));
  }
  return fd;
}

}  // namespace dfw
