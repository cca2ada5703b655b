#include "dfw/launcher/tenant_group.h"

#include <poll.h>
#include <signal.h>

#include <cerrno>

namespace dfw {

TenantGroupResult RunTenantGroup(const std::vector<TenantProcess>& tenants, ProcessLauncher& launcher,
                                 SignalWatcher& signals) {
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
  while (live > 0) {
    pollfd fd{signals.fd(), POLLIN, 0};
    // The timeout is a safety net only: SIGCHLD wakes the poll when a tenant ends.
    if (::poll(&fd, 1, 1000) < 0 && errno != EINTR) break;
    for (int sig : signals.Drain()) {
      if (sig != SIGINT && sig != SIGTERM) continue;
      if (result.signal == 0) result.signal = sig;
      const int send = forwarded++ == 0 ? sig : SIGKILL;
      for (const TenantExit& e : result.exits) {
        if (e.pid > 0 && e.start_error.empty() && !e.exit.exited && !e.exit.signaled) launcher.Signal(e.pid, send);
      }
    }
    for (const ProcessExit& x : launcher.ReapExited()) {
      for (TenantExit& e : result.exits) {
        if (e.pid != x.pid || e.exit.exited || e.exit.signaled) continue;
        e.exit = x.exit;
        --live;
      }
    }
  }
  return result;
}

}  // namespace dfw
