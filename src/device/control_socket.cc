#include "control_socket.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace dfw::device {

std::string ControlSocketPath(const std::string& pipe_dir) { return pipe_dir + "/dfw-mps-control.sock"; }

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
