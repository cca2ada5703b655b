#include "dfw/launcher/signal_watcher.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <memory>

namespace dfw {
namespace {

std::atomic<int> g_write_fd{-1};

void OnSignal(int sig) {
  int saved = errno;
  unsigned char b = static_cast<unsigned char>(sig);
  int fd = g_write_fd.load();
  if (fd >= 0) (void)!::write(fd, &b, 1);
  errno = saved;
}

}  // namespace

Result<std::unique_ptr<SignalWatcher>> SignalWatcher::Install() {
  if (g_write_fd.load() >= 0) return FailedPrecondition("a SignalWatcher is already installed");
  int fds[2];
  if (::pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0) return ErrnoError("create signal pipe", errno);
  std::unique_ptr<SignalWatcher> w(new SignalWatcher(fds[0], fds[1]));
  g_write_fd.store(fds[1]);
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  ::sigaction(SIGINT, &sa, &w->old_int_);
  ::sigaction(SIGTERM, &sa, &w->old_term_);
  ::sigaction(SIGUSR1, &sa, &w->old_usr1_);
  sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
  ::sigaction(SIGCHLD, &sa, &w->old_chld_);
  struct sigaction ign {};
  ign.sa_handler = SIG_IGN;
  ::sigaction(SIGPIPE, &ign, &w->old_pipe_);
  return w;
}

SignalWatcher::~SignalWatcher() {
  ::sigaction(SIGINT, &old_int_, nullptr);
  ::sigaction(SIGTERM, &old_term_, nullptr);
  ::sigaction(SIGUSR1, &old_usr1_, nullptr);
  ::sigaction(SIGCHLD, &old_chld_, nullptr);
  ::sigaction(SIGPIPE, &old_pipe_, nullptr);
  g_write_fd.store(-1);
  ::close(read_fd_);
  ::close(write_fd_);
}

std::vector<int> SignalWatcher::Drain() {
  std::vector<int> out;
  unsigned char buf[64];
  for (;;) {
    ssize_t n = ::read(read_fd_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    for (ssize_t i = 0; i < n; ++i) out.push_back(buf[i]);
  }
  return out;
}

}  // namespace dfw
