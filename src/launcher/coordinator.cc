#include "dfw/launcher/coordinator.h"

#include <algorithm>

#include "dfw/common/strings.h"

namespace dfw {
namespace {

int64_t Unread(const Lease& lease) { return lease.range->size() - std::max<int64_t>(lease.done, 0); }

}  // namespace

Result<Coordinator> Coordinator::Make(const CoordinatorOptions& options, const std::vector<std::string>& bundles,
                                      const std::set<std::string>& committed,
                                      const std::map<std::string, WorkRange>& ranges,
                                      const std::vector<SplitRecord>& splits) {
  if (options.max_attempts < 1) {
    return InvalidArgument("max_attempts must be at least 1, got " + std::to_string(options.max_attempts));
  }
  if (options.lease_timeout.count() <= 0) return InvalidArgument("lease_timeout must be positive");
  if (!(options.split_fraction > 0.0 && options.split_fraction < 1.0)) {
    return InvalidArgument("split_fraction must be in (0, 1)");
  }
  std::vector<std::string> all = bundles;
  for (const SplitRecord& split : splits) all.push_back(split.residual);
  Coordinator c(options, all);
  std::set<std::string> seen;
  for (const auto& b : bundles) {
    if (b.empty()) return InvalidArgument("bundle table has an empty bundle id");
    if (!seen.insert(b).second) return InvalidArgument("bundle table lists bundle '" + b + "' twice");
  }
  for (const SplitRecord& split : splits) {
    if (!seen.insert(split.residual).second) {
      return DataLoss("manifest split of bundle '" + split.parent + "' makes bundle '" + split.residual +
                      "', which already exists");
    }
  }
  if (!ranges.empty()) {
    for (const auto& b : bundles) {
      auto it = ranges.find(b);
      if (it == ranges.end()) return DataLoss("bundle '" + b + "' has no range in the job's bundle table");
      c.ranges_[b] = it->second;
    }
  }
  for (const SplitRecord& split : splits) {
    auto parent = c.ranges_.find(split.parent);
    if (parent == c.ranges_.end()) {
      return DataLoss("manifest splits bundle '" + split.parent + "', which has no range in this job");
    }
    std::string why = CheckSplit(parent->second, split.primary, split.residual_range);
    if (!why.empty()) return DataLoss("manifest split of bundle '" + split.parent + "': " + why);
    parent->second = split.primary;
    c.ranges_[split.residual] = split.residual_range;
    ++c.splits_;
  }
  for (const auto& b : all) {
    if (committed.count(b)) {
      c.committed_.insert(b);
    } else {
      c.pending_.push_back(b);
    }
    if (auto n = ParseInt64(b)) c.next_residual_ = std::max(c.next_residual_, *n + 1);
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
  lease.range = RangeOf(lease.bundle);
  leases_[lease.id] = lease;
  return lease;
}

void Coordinator::Heartbeat(int64_t process, SteadyTime now) {
  for (auto& [id, lease] : leases_) {
    if (lease.process == process) lease.last_heartbeat = now;
  }
}

CommitDecision Coordinator::Commit(int64_t lease_id, const std::optional<WorkRange>& read) {
  auto it = leases_.find(lease_id);
  if (it == leases_.end()) return CommitDecision::kStale;
  Lease lease = it->second;
  leases_.erase(it);
  if (committed_.count(lease.bundle)) return CommitDecision::kDuplicate;
  auto current = RangeOf(lease.bundle);
  // An executor without ranges reports none; once ranges exist, the range read must be the current
  // one (it differs after a split that the holder did not see, or a split it saw that we refused).
  if (current && read && *read != *current) {
    FailAttempt(lease, "the attempt read [" + std::to_string(read->begin) + ", " + std::to_string(read->end) +
                           ") but the bundle's range is [" + std::to_string(current->begin) + ", " +
                           std::to_string(current->end) + ")");
    return CommitDecision::kStale;
  }
  committed_.insert(lease.bundle);
  return CommitDecision::kAccepted;
}

bool Coordinator::Progress(int64_t process, int64_t lease_id, int64_t done, int64_t total) {
  auto it = leases_.find(lease_id);
  if (it == leases_.end() || it->second.process != process || !it->second.range) return false;
  if (done < 0 || done > total || total != it->second.range->size()) return false;
  it->second.done = done;
  it->second.total = total;
  return true;
}

std::vector<SplitRequest> Coordinator::PlanSplits(int idle_processes, SteadyTime now) {
  std::vector<SplitRequest> out;
  if (stopping_ || failed() || !pending_.empty() || idle_processes <= 0) return out;
  int asking = 0;
  std::vector<Lease*> candidates;
  for (auto& [id, lease] : leases_) {
    if (lease.split_requested) {
      if (now - lease.split_requested_at < options_.split_timeout) ++asking;
      continue;
    }
    // No progress report yet counts as nothing read: the holder cuts from where it really is.
    if (!lease.range || lease.done == lease.refused_at) continue;
    if (Unread(lease) < options_.min_split_units) continue;
    candidates.push_back(&lease);
  }
  std::sort(candidates.begin(), candidates.end(), [](const Lease* a, const Lease* b) {
    return Unread(*a) > Unread(*b) || (Unread(*a) == Unread(*b) && a->id < b->id);
  });
  for (Lease* lease : candidates) {
    if (asking >= idle_processes) break;
    lease->split_requested = true;
    lease->split_requested_at = now;
    ++asking;
    out.push_back(SplitRequest{lease->id, lease->process, lease->bundle, options_.split_fraction});
  }
  return out;
}

Result<SplitRecord> Coordinator::PrepareSplit(int64_t lease_id, const WorkRange& primary, const WorkRange& residual) {
  auto it = leases_.find(lease_id);
  if (it == leases_.end()) {
    return FailedPrecondition("lease " + std::to_string(lease_id) + " is no longer live (expired or its process died)");
  }
  Lease& lease = it->second;
  if (!lease.split_requested) return FailedPrecondition("no split was asked of lease " + std::to_string(lease_id));
  auto current = RangeOf(lease.bundle);
  if (!current) return FailedPrecondition("bundle '" + lease.bundle + "' has no range");
  std::string why = CheckSplit(*current, primary, residual);
  if (!why.empty()) return DataLoss("split of bundle '" + lease.bundle + "': " + why);
  while (ranges_.count(std::to_string(next_residual_))) ++next_residual_;
  return SplitRecord{lease.bundle, std::to_string(next_residual_++), primary, residual};
}

void Coordinator::ApplySplit(const SplitRecord& split) {
  ranges_[split.parent] = split.primary;
  ranges_[split.residual] = split.residual_range;
  bundles_.push_back(split.residual);
  pending_.push_back(split.residual);
  ++splits_;
  for (auto& [id, lease] : leases_) {
    if (lease.bundle != split.parent) continue;
    lease.split_requested = false;
    lease.range = split.primary;
    lease.total = split.primary.size();
    lease.done = std::min(lease.done, lease.total);
  }
}

void Coordinator::RefuseSplit(int64_t lease_id) {
  auto it = leases_.find(lease_id);
  if (it == leases_.end()) return;
  it->second.split_requested = false;
  it->second.refused_at = it->second.done;
}

std::optional<WorkRange> Coordinator::RangeOf(const std::string& bundle) const {
  auto it = ranges_.find(bundle);
  if (it == ranges_.end()) return std::nullopt;
  return it->second;
}

std::vector<std::string> Coordinator::OrderedBundles() const {
  std::vector<std::string> ids = bundles_;
  if (ranges_.size() == bundles_.size()) {
    std::stable_sort(ids.begin(), ids.end(), [this](const std::string& a, const std::string& b) {
      return DataOrderLess(ranges_.at(a), ranges_.at(b));
    });
  }
  return ids;
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
