// Runs several tenants' launcher processes at once (`dfworker run --tenants`): each tenant is its
// own `dfworker run` (its own job dir, coordinator and SDK processes), started through the one
// process seam, and this waits for all of them. One tenant's failure never stops another.
//
// Signals: the first SIGINT/SIGTERM is forwarded, as received, to every live tenant process (each
// then stops leasing and gives its bundles their grace, leaving its job dir resumable); a second
// one SIGKILLs them. The call returns once every started tenant process has ended.
//
// MPS fault domain: when `fault_fd` (a watch on the MPS daemon, dfw/device/mps_client.h MpsWatch)
// delivers a "fault" line, the server has a fatal GPU error that every client on the GPU must
// leave: every live tenant process is SIGKILLed (their SDK processes and model hosts die with them,
// PR_SET_PDEATHSIG), `faulted` is set, and the call returns once all have ended. Their job dirs are
// left resumable (committed bundles are kept).
//
// Threading: call from the main thread, with `signals` installed before the call (so that no
// SIGCHLD is lost) and no other SignalWatcher in the process.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "dfw/common/exit_code.h"
#include "dfw/common/process_launcher.h"
#include "dfw/launcher/signal_watcher.h"

namespace dfw {

struct TenantProcess {
  std::string name;  // the tenant
  ProcessSpec spec;  // its `dfworker run ...` command
};

struct TenantExit {
  std::string name;
  pid_t pid = 0;     // 0 when it could not be started
  ChildExit exit;    // how it ended (the one decoder)
  std::string start_error;  // why it could not be started ("" = it ran)
};

struct TenantGroupResult {
  std::vector<TenantExit> exits;  // one per tenant, in the order given
  int signal = 0;                 // the first SIGINT/SIGTERM received (0 = none)
  bool faulted = false;           // the MPS server faulted and every tenant was drained
};

// What the caller does while the tenants run (both optional, both called from this thread).
struct TenantGroupHooks {
  // Tenant `i`'s process has ended (`exits[i]` holds how); `stopping` when the group is being
  // stopped (a signal, an MPS fault) rather than the tenant having ended by itself. Borrowing
  // (tenants.md) lends its process slots to the tenants still running from here.
  std::function<void(std::size_t i, const std::vector<TenantExit>& exits, bool stopping)> on_end;
  // About every `tick` while tenants run, and once when the last has ended (the memory sampler).
  std::function<void()> on_tick;
  std::chrono::milliseconds tick{1000};
};

TenantGroupResult RunTenantGroup(const std::vector<TenantProcess>& tenants, ProcessLauncher& launcher,
                                 SignalWatcher& signals, int fault_fd = -1, const TenantGroupHooks& hooks = {});

}  // namespace dfw
