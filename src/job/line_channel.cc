#include "dfw/job/line_channel.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>

namespace dfw {
namespace {

Result<sockaddr_un> Address(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) {
    return InvalidArgument("socket path '" + path + "' is longer than " + std::to_string(sizeof(addr.sun_path) - 1) + " bytes");
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  return addr;
}

}  // namespace

LineChannel::~LineChannel() {
  if (fd_ >= 0) ::close(fd_);
}

Status LineChannel::WriteLine(const std::string& line) {
  std::lock_guard<std::mutex> lock(write_mu_);
  std::string data = line + "\n";
  std::size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::send(fd_, data.data() + off, data.size() - off, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        // Non-blocking server socket with a full buffer: wait until writable.
        fd_set w;
        FD_ZERO(&w);
        FD_SET(fd_, &w);
        timeval tv{1, 0};
        ::select(fd_ + 1, nullptr, &w, nullptr, &tv);
        continue;
      }
      return Unavailable(std::string("coordinator connection lost: ") + strerror(errno));
    }
    off += static_cast<std::size_t>(n);
  }
  return Status::OK();
}

Result<std::string> LineChannel::ReadLine() {
  for (;;) {
    if (auto line = PopLine()) return *line;
    if (overflowed_) return DataLoss("coordinator message longer than " + std::to_string(kMaxLine) + " bytes");
    char chunk[4096];
    ssize_t n = ::read(fd_, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Unavailable("coordinator connection closed");
    buf_.append(chunk, static_cast<std::size_t>(n));
  }
}

bool LineChannel::ReadAvailable() {
  char chunk[65536];
  for (;;) {
    ssize_t n = ::recv(fd_, chunk, sizeof chunk, MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    if (n <= 0) return false;
    buf_.append(chunk, static_cast<std::size_t>(n));
    if (buf_.size() > kMaxLine && buf_.find('\n') == std::string::npos) {
      overflowed_ = true;
      return false;
    }
    if (static_cast<std::size_t>(n) < sizeof chunk) return true;
  }
}

std::optional<std::string> LineChannel::PopLine() {
  std::size_t nl = buf_.find('\n');
  if (nl == std::string::npos) return std::nullopt;
  std::string line = buf_.substr(0, nl);
  buf_.erase(0, nl + 1);
  return line;
}

Result<int> ListenUnix(const std::string& path) {
  ASSIGN_OR_RETURN(sockaddr_un addr, Address(path));
  // Non-blocking: the launcher's poll loop accepts until EAGAIN.
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return ErrnoError("create coordinator socket", errno);
  ::unlink(path.c_str());
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd, 128) != 0) {
    int err = errno;
    ::close(fd);
    return ErrnoError("listen on coordinator socket '" + path + "'", err);
  }
  return fd;
}

Result<int> ConnectUnix(const std::string& path) {
  ASSIGN_OR_RETURN(sockaddr_un addr, Address(path));
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return ErrnoError("create socket", errno);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    int err = errno;
    ::close(fd);
    return Unavailable("cannot reach the coordinator at '" + path + "': " + strerror(err));
  }
  return fd;
}

}  // namespace dfw
