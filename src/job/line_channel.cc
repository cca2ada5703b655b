#include "dfw/job/line_channel.h"

#include <errno.h>
#include <string.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <unistd.h>

namespace dfw {

Status LineChannel::WriteLine(const std::string& line) {
  std::lock_guard<std::mutex> lock(write_mu_);
  std::string data = line + "\n";
  std::size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::send(fd(), data.data() + off, data.size() - off, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        // Non-blocking server socket with a full buffer: wait until writable.
        fd_set w;
        FD_ZERO(&w);
        FD_SET(fd(), &w);
        timeval tv{1, 0};
        ::select(fd() + 1, nullptr, &w, nullptr, &tv);
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
    ssize_t n = ::read(fd(), chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Unavailable("coordinator connection closed");
    buf_.append(chunk, static_cast<std::size_t>(n));
  }
}

bool LineChannel::ReadAvailable() {
  char chunk[65536];
  for (;;) {
    ssize_t n = ::recv(fd(), chunk, sizeof chunk, MSG_DONTWAIT);
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

}  // namespace dfw
