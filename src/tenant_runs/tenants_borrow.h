// Borrowing in a tenants run (tenants.md "Borrowing"): when a tenant ends, its guaranteed SDK
// process slots go to the tenants still running, by over_quota_weight within each one's GPU-memory
// budget (dfw/tenants/borrowing.h does the arithmetic); this tells each borrower's launcher through
// its job dir (processes.want, written atomically, then SIGUSR1 once processes.now shows the
// launcher is ready; dfw/launcher/launcher.h processes_control_dir) and keeps the record for the
// report.
//
// Threading: used from the tenants run's main thread (the tenant group's hooks).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dfw/common/process_launcher.h"
#include "dfw/tenant_runs/tenant_group.h"
#include "dfw/tenants/admission.h"
#include "dfw/tenants/borrowing.h"

namespace dfw {

class TenantBorrowing {
 public:
  // Tenants in the admission's (file) order; their job dirs are <root>/tenants/<name>. `enabled`
  // false (the file's `borrowing: false`): nothing is lent, every processes.want says the guaranteed.
  // Lending stops where the running tenants' processes would pass `cpus` (LendableSlots).
  TenantBorrowing(const Admission& admission, std::string root, bool enabled, int cpus);

  // Before a tenant group starts `starting` (the others have finished or are not run): lends the
  // slots of the tenants not starting and writes every starting tenant's processes.want (its
  // launcher reads it at its start); clears processes.now left by an earlier run.
  void BeforeStart(const std::vector<TenantProcess>& starting);
  // The tenant group's on_end hook: `exits` are the group's tenants (the `starting` of BeforeStart).
  void OnEnd(std::size_t i, const std::vector<TenantExit>& exits, bool stopping, ProcessLauncher& launcher);

  // {"borrowing": [{"at_s", "tenant", "after", "processes_before", "processes_after"}], per tenant
  // via TenantJson}. Events in the order they happened.
  nlohmann::json EventsJson() const;
  // {"processes_guaranteed", "processes_borrowed" (the most extra slots it was lent),
  //  "processes_started" (its launcher's count, processes.now; absent when unknown)}
  nlohmann::json TenantJson(const std::string& name) const;
  // One line per event, for the end of the run ("" when nobody borrowed).
  std::string Lines() const;

 private:
  struct Tenant {
    BorrowTenant share;
    int guaranteed = 1;
    int extra = 0;      // slots lent to it now
    int most_extra = 0;
    pid_t pid = 0;      // its launcher while it runs
  };
  struct Event {
    double at_s = 0;
    std::string tenant, after;
    int before = 0, after_processes = 0;
  };
  std::string Dir(const std::string& name) const { return root_ + "/tenants/" + name; }
  // Shares the free slots again among the running tenants; tells each one that gets more.
  void Lend(const std::string& after, ProcessLauncher* launcher);
  double Now() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }

  std::string root_;
  bool enabled_ = true;
  int cpus_ = 1;
  std::vector<Tenant> tenants_;
  std::vector<Event> events_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

}  // namespace dfw
