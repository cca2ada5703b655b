// Turns SIGINT, SIGTERM, SIGCHLD and SIGUSR1 into bytes on a pipe the launcher's poll loop watches (the
// self-pipe trick), so signal handling happens in ordinary code, not in a handler.
// One instance per process at a time; the previous dispositions come back on destruction.
// SIGUSR1 is a wake-up only (a tenants run's parent asks a tenant's launcher to re-read its
// processes control file, launcher.h); what it means is up to the caller.
#pragma once

#include <signal.h>

#include <memory>
#include <vector>

#include "dfw/common/status.h"

namespace dfw {

class SignalWatcher {
 public:
  static Result<std::unique_ptr<SignalWatcher>> Install();
  ~SignalWatcher();
  SignalWatcher(const SignalWatcher&) = delete;
  SignalWatcher& operator=(const SignalWatcher&) = delete;

  // Readable when a signal arrived.
  int fd() const { return read_fd_; }
  // Signals received since the last call, in order.
  std::vector<int> Drain();

 private:
  SignalWatcher(int read_fd, int write_fd) : read_fd_(read_fd), write_fd_(write_fd) {}
  int read_fd_ = -1;
  int write_fd_ = -1;
  struct sigaction old_int_ {}, old_term_{}, old_chld_{}, old_pipe_{}, old_usr1_{};
};

}  // namespace dfw
