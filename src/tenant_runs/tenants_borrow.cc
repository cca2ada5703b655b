#include "tenant_runs/tenants_borrow.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>

#include "dfw/common/logging.h"
#include "dfw/job/job_dir.h"

namespace dfw {

TenantBorrowing::TenantBorrowing(const Admission& admission, std::string root, bool enabled, int cpus)
    : root_(std::move(root)), enabled_(enabled), cpus_(std::max(1, cpus)) {
  for (const TenantLimits& l : admission.tenants) {
    Tenant t;
    t.share.name = l.name;
    t.share.weight = l.over_quota_weight;
    t.share.budget_bytes = l.budget_bytes;
    t.share.need_bytes = l.need_bytes;
    t.share.per_process_bytes = l.sdk_process_need_bytes;
    t.guaranteed = std::max(1, l.sdk_processes);
    tenants_.push_back(std::move(t));
  }
}

void TenantBorrowing::BeforeStart(const std::vector<TenantProcess>& starting) {
  for (Tenant& t : tenants_) {
    t.share.running = false;
    t.extra = 0;
    t.pid = 0;
    for (const TenantProcess& p : starting) t.share.running |= p.name == t.share.name;
    // processes.now of a launcher that is gone must not pass for a ready one (a signal to a
    // launcher still starting would end it).
    ::unlink((Dir(t.share.name) + "/processes.now").c_str());
  }
  Lend("", nullptr);
  for (Tenant& t : tenants_) {
    // A new tenant's job dir is made by its own launcher (which then starts with its guaranteed
    // processes: at a first start every tenant runs, so nobody borrows); a resumed one's exists, and
    // its processes.want is rewritten so that nothing asked by an earlier run is left.
    if (!t.share.running || ::access(Dir(t.share.name).c_str(), F_OK) != 0) continue;
    Status s = WriteFileAtomically(Dir(t.share.name) + "/processes.want", std::to_string(t.guaranteed + t.extra) + "\n",
                                   /*sync=*/false);
    if (!s.ok()) ReportLine("warning: borrowing: {}", s.message());
  }
}

void TenantBorrowing::OnEnd(std::size_t i, const std::vector<TenantExit>& exits, bool stopping, ProcessLauncher& launcher) {
  for (Tenant& t : tenants_) {
    for (const TenantExit& e : exits) {
      if (e.name != t.share.name) continue;
      t.pid = e.pid;
      t.share.running = e.pid > 0 && e.start_error.empty() && !e.exit.exited && !e.exit.signaled;
    }
  }
  if (stopping || i >= exits.size()) return;  // the run is being stopped: nobody grows now
  Lend(exits[i].name, &launcher);
}

void TenantBorrowing::Lend(const std::string& after, ProcessLauncher* launcher) {
  if (!enabled_) return;
  int freed = 0, running_guaranteed = 0;
  std::vector<BorrowTenant> shares;
  for (const Tenant& t : tenants_) {
    (t.share.running ? running_guaranteed : freed) += t.guaranteed;
    shares.push_back(t.share);
  }
  const std::vector<int> extra = ShareFreedSlots(shares, LendableSlots(freed, running_guaranteed, cpus_));
  for (std::size_t k = 0; k < tenants_.size(); ++k) {
    Tenant& t = tenants_[k];
    // A launcher never stops processes: a share that came out lower by rounding keeps what it has.
    if (!t.share.running || extra[k] <= t.extra) continue;
    const int before = t.guaranteed + t.extra;
    t.extra = extra[k];
    t.most_extra = std::max(t.most_extra, t.extra);
    const std::string why = after.empty() ? "tenant(s) not run now (finished earlier)" : "tenant '" + after + "' ended";
    events_.push_back({Now(), t.share.name, after.empty() ? "(finished earlier)" : after, before, t.guaranteed + t.extra});
    ReportLine("borrowing: {}; '{}' gets {} more SDK process slot(s) ({} -> {})", why, t.share.name,
               t.guaranteed + t.extra - before, before, t.guaranteed + t.extra);
    if (!launcher) continue;  // BeforeStart writes processes.want; the launcher reads it at its start
    const std::string dir = Dir(t.share.name);
    Status s = WriteFileAtomically(dir + "/processes.want", std::to_string(t.guaranteed + t.extra) + "\n", /*sync=*/false);
    if (!s.ok()) {
      ReportLine("warning: borrowing: {}", s.message());
      continue;
    }
    // Only a launcher that said it is ready (processes.now) is signalled; one still starting reads
    // processes.want itself once it is.
    if (t.pid > 0 && ::access((dir + "/processes.now").c_str(), F_OK) == 0) launcher->Signal(t.pid, SIGUSR1);
  }
}

nlohmann::json TenantBorrowing::EventsJson() const {
  nlohmann::json out = nlohmann::json::array();
  for (const Event& e : events_) {
    out.push_back({{"at_s", e.at_s}, {"tenant", e.tenant}, {"after", e.after}, {"processes_before", e.before},
                   {"processes_after", e.after_processes}});
  }
  return out;
}

nlohmann::json TenantBorrowing::TenantJson(const std::string& name) const {
  nlohmann::json j = nlohmann::json::object();
  for (const Tenant& t : tenants_) {
    if (t.share.name != name) continue;
    j["processes_guaranteed"] = t.guaranteed;
    j["processes_borrowed"] = t.most_extra;
    auto now = ReadWholeFile(Dir(name) + "/processes.now", 1 << 16);
    if (now.ok()) {
      auto parsed = nlohmann::json::parse(*now, nullptr, /*allow_exceptions=*/false);
      if (parsed.is_object() && parsed.contains("processes")) {
        j["processes_started"] = parsed["processes"];
        j["processes_added"] = parsed.value("added", nlohmann::json::array());
      }
    }
  }
  return j;
}

std::string TenantBorrowing::Lines() const {
  std::string out;
  for (const Event& e : events_) {
    out += FormatReportLine("borrowing at {:.1f} s: '{}' took {} slot(s) after '{}' ended ({} -> {} SDK processes)", e.at_s,
                            e.tenant, e.after_processes - e.before, e.after, e.before, e.after_processes);
  }
  return out;
}

}  // namespace dfw
