#include "dfw/tenant_runs/tenant_group.h"

#include <poll.h>
#include <signal.h>

#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace dfw {

namespace {

bool Live(const TenantExit& e) { return e.pid > 0 && e.start_error.empty() && !e.exit.exited && !e.exit.signaled; }

}  // namespace

TenantGroupResult RunTenantGroup(const std::vector<TenantProcess>& tenants, ProcessLauncher& launcher,
                                 SignalWatcher& signals, int fault_fd, const TenantGroupHooks& hooks) {
  TenantGroupResult result;
  int live = 0;
  for (const TenantProcess& t : tenants) {
    TenantExit e;
    e.name = t.name;
    Result<pid_t> pid = launcher.Start(t.spec);
    if (pid.ok()) {
      e.pid = *pid;
      ++live;
    } else {
      e.start_error = pid.status().message();
    }
    result.exits.push_back(std::move(e));
  }
  int forwarded = 0;
  std::string fault_buffer;
  using Clock = std::chrono::steady_clock;
  const auto tick = std::max(std::chrono::milliseconds(1), hooks.tick);
  auto next_tick = Clock::now();
  while (live > 0) {
    if (hooks.on_tick && Clock::now() >= next_tick) {
      hooks.on_tick();
      next_tick = Clock::now() + tick;
    }
    pollfd fds[2] = {{signals.fd(), POLLIN, 0}, {fault_fd, POLLIN, 0}};
    // Without a tick the timeout is a safety net only: SIGCHLD wakes the poll when a tenant ends.
    const auto wait = hooks.on_tick ? std::chrono::duration_cast<std::chrono::milliseconds>(next_tick - Clock::now())
                                    : std::chrono::milliseconds(1000);
    const int timeout_ms = static_cast<int>(std::clamp<int64_t>(wait.count(), 0, 1000));
    if (::poll(fds, fault_fd >= 0 ? 2 : 1, timeout_ms) < 0 && errno != EINTR) break;
    if (fault_fd >= 0 && fds[1].revents != 0) {
      char buf[256];
      ssize_t n = ::read(fault_fd, buf, sizeof buf);
      if (n <= 0) {
        fault_fd = -1;  // the daemon went away: nothing more to watch
      } else {
        fault_buffer.append(buf, static_cast<std::size_t>(n));
        if (!result.faulted && fault_buffer.find("fault\n") != std::string::npos) {
          result.faulted = true;
          for (const TenantExit& e : result.exits) {
            if (Live(e)) launcher.Signal(e.pid, SIGKILL);
          }
        }
      }
    }
    for (int sig : signals.Drain()) {
      if (sig != SIGINT && sig != SIGTERM) continue;
      if (result.signal == 0) result.signal = sig;
      const int send = forwarded++ == 0 ? sig : SIGKILL;
      for (const TenantExit& e : result.exits) {
        if (Live(e)) launcher.Signal(e.pid, send);
      }
    }
    for (const ProcessExit& x : launcher.ReapExited()) {
      for (std::size_t i = 0; i < result.exits.size(); ++i) {
        TenantExit& e = result.exits[i];
        if (e.pid != x.pid || e.exit.exited || e.exit.signaled) continue;
        e.exit = x.exit;
        --live;
        if (hooks.on_end) hooks.on_end(i, result.exits, result.faulted || result.signal != 0);
      }
    }
  }
  if (hooks.on_tick) hooks.on_tick();
  return result;
}

}  // namespace dfw
