#include "unix_socket.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace dfw::device {
namespace {

Result<sockaddr_un> Address(const std::string& path) {
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

std::string ControlSocketPath(const std::string& pipe_dir) { return pipe_dir + "/dfw-mps-control.sock"; }

Result<int> ListenUnix(const std::string& path) {
  ASSIGN_OR_RETURN(sockaddr_un addr, Address(path));
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return ErrnoError("socket", errno);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd, 64) != 0) {
    int err = errno;
    ::close(fd);
    return ErrnoError("listen on '" + path + "'", err);
  }
  return fd;
}

Result<int> ConnectUnix(const std::string& path) {
  ASSIGN_OR_RETURN(sockaddr_un addr, Address(path));
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return ErrnoError("socket", errno);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    int err = errno;
    ::close(fd);
    return Unavailable("cannot connect to the MPS daemon at '" + path + "': " + std::strerror(err));
  }
  return fd;
}

Status SendAll(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::send(fd, text.data() + done, text.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Unavailable(std::string("MPS daemon connection lost while sending: ") + std::strerror(errno));
    done += static_cast<std::size_t>(n);
  }
  return Status::OK();
}

Status ReadLine(int fd, std::string& buffer, std::string& line, int timeout_ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    std::size_t nl = buffer.find('\n');
    if (nl != std::string::npos) {
      line = buffer.substr(0, nl);
      buffer.erase(0, nl + 1);
      return Status::OK();
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return Unavailable("MPS daemon did not answer within " + std::to_string(timeout_ms) + " ms");
    pollfd p{fd, POLLIN, 0};
    int r = ::poll(&p, 1, static_cast<int>(left.count()));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return ErrnoError("poll MPS daemon connection", errno);
    if (r == 0) continue;
    char buf[4096];
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Unavailable("MPS daemon closed the connection");
    buffer.append(buf, static_cast<std::size_t>(n));
  }
}

}  // namespace dfw::device
