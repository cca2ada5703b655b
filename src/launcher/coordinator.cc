#include "dfw/launcher/coordinator.h"

namespace dfw {

Result<Coordinator> Coordinator::Make(const CoordinatorOptions& options, const std::vector<std::string>& bundles,
                                      const std::set<std::string>& committed) {
  if (options.max_attempts < 1) {
    return InvalidArgument("max_attempts must be at least 1, got " + std::to_string(options.max_attempts));
  }
  if (options.lease_timeout.count() <= 0) return InvalidArgument("lease_timeout must be positive");
  Coordinator c(options, bundles);
  std::set<std::string> seen;
  for (const auto& b : bundles) {
    if (b.empty()) return InvalidArgument("bundle table has an empty bundle id");
    if (!seen.insert(b).second) return InvalidArgument("bundle table lists bundle '" + b + "' twice");
    if (committed.count(b)) {
      c.committed_.insert(b);
    } else {
      c.pending_.push_back(b);
    }
  }
  for (const auto& b : committed) {
    if (!seen.count(b)) return DataLoss("manifest commits bundle '" + b + "', which is not in the job's bundle table");
  }
  return c;
}

std::optional<Lease> Coordinator::Grant(int64_t process, SteadyTime now) {
  if (stopping_ || failed() || pending_.empty()) return std::nullopt;
  Lease lease;
  lease.id = next_lease_++;
  lease.bundle = pending_.front();
  pending_.pop_front();
  lease.attempt = attempts(lease.bundle) + 1;
  lease.process = process;
  lease.last_heartbeat = now;
  leases_[lease.id] = lease;
  return lease;
}

void Coordinator::Heartbeat(int64_t process, SteadyTime now) {
  for (auto& [id, lease] : leases_) {
    if (lease.process == process) lease.last_heartbeat = now;
  }
}

CommitDecision Coordinator::Commit(int64_t lease_id) {
  auto it = leases_.find(lease_id);
  if (it == leases_.end()) return CommitDecision::kStale;
  std::string bundle = it->second.bundle;
  leases_.erase(it);
  if (!committed_.insert(bundle).second) return CommitDecision::kDuplicate;
  return CommitDecision::kAccepted;
}

void Coordinator::Fail(int64_t lease_id, const std::string& error) {
  auto it = leases_.find(lease_id);
  if (it == leases_.end()) return;
  Lease lease = it->second;
  leases_.erase(it);
  FailAttempt(lease, error);
}

int Coordinator::ProcessEnded(int64_t process, const std::string& reason) {
  std::vector<Lease> lost;
  for (auto it = leases_.begin(); it != leases_.end();) {
    if (it->second.process == process) {
      lost.push_back(it->second);
      it = leases_.erase(it);
    } else {
      ++it;
    }
  }
  for (const auto& lease : lost) FailAttempt(lease, reason);
  return static_cast<int>(lost.size());
}

std::vector<int64_t> Coordinator::ExpireSilent(SteadyTime now) {
  std::vector<Lease> expired;
  for (auto it = leases_.begin(); it != leases_.end();) {
    if (now - it->second.last_heartbeat > options_.lease_timeout) {
      expired.push_back(it->second);
      it = leases_.erase(it);
    } else {
      ++it;
    }
  }
  std::vector<int64_t> processes;
  for (const auto& lease : expired) {
    FailAttempt(lease, "SDK process sent no heartbeat for " + std::to_string(options_.lease_timeout.count()) +
                           " ms (hung); it was killed");
    processes.push_back(lease.process);
  }
  return processes;
}

void Coordinator::FailJob(const std::string& reason) {
  if (failure_.empty()) failure_ = reason;
}

int Coordinator::attempts(const std::string& bundle) const {
  auto it = failures_.find(bundle);
  return it == failures_.end() ? 0 : it->second;
}

void Coordinator::FailAttempt(const Lease& lease, const std::string& error) {
  if (committed_.count(lease.bundle)) return;
  int n = ++failures_[lease.bundle];
  last_error_[lease.bundle] = error;
  if (n >= options_.max_attempts) {
    FailJob("bundle '" + lease.bundle + "' failed " + std::to_string(n) + " attempts (the limit is " +
            std::to_string(options_.max_attempts) + "); last error: " + error);
    return;
  }
  ++retries_;
  pending_.push_front(lease.bundle);  // retry soon, so a poison bundle fails the job early
}

}  // namespace dfw
