// The coordinator's state machine: which bundle is pending, leased (to which process, since when,
// last heartbeat), committed or failed. No I/O and no clock of its own — every call takes `now` —
// so leases, expiry, retries and duplicate commits are tested with a fake clock (tests/launcher).
//
// Rules (design.md "Process model"):
// - A lease is one attempt. It ends in a commit, or in a failure: the process reported an error,
//   died (ProcessEnded), or was silent for longer than `lease_timeout` (ExpireSilent).
// - A failed attempt puts the bundle back in the queue; the `max_attempts`-th failure fails the
//   job, naming the bundle, its attempts and the last error.
// - A bundle is committed once. A commit for a lease that is no longer live (expired, or its
//   process was declared dead) is stale and ignored, even if the bundle is not committed yet:
//   a fresh lease of it may already be running.
//
// Threading: not thread-safe; owned by the launcher's single event loop.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "dfw/common/status.h"

namespace dfw {

using SteadyTime = std::chrono::steady_clock::time_point;

struct CoordinatorOptions {
  int max_attempts = 4;  // failed attempts of one bundle that fail the job (Dataflow batch: 4)
  std::chrono::milliseconds lease_timeout{10000};  // silence after which a lease expires
};

struct Lease {
  int64_t id = 0;
  std::string bundle;
  int attempt = 1;  // 1-based
  int64_t process = 0;
  SteadyTime last_heartbeat;
};

enum class CommitDecision {
  kAccepted,   // first commit of the bundle by its live lease: promote output, write manifest
  kDuplicate,  // the bundle is already committed: drop this output
  kStale,      // the lease is not live (expired or its process was declared dead): drop it
};

class Coordinator {
 public:
  // `bundles` in plan order (ids must be unique and non-empty); `committed` come from the manifest
  // (--resume) and are never leased. Unknown ids in `committed` are kDataLoss.
  static Result<Coordinator> Make(const CoordinatorOptions& options, const std::vector<std::string>& bundles,
                                  const std::set<std::string>& committed);

  // The next pending bundle for `process`, or nullopt when none is pending or leasing stopped.
  std::optional<Lease> Grant(int64_t process, SteadyTime now);
  // Refreshes every lease `process` holds.
  void Heartbeat(int64_t process, SteadyTime now);
  CommitDecision Commit(int64_t lease_id);
  // The attempt failed with `error` (reported by the process). Unknown lease ids are ignored.
  void Fail(int64_t lease_id, const std::string& error);
  // `process` is gone: each lease it held fails with `reason`. Returns how many.
  int ProcessEnded(int64_t process, const std::string& reason);
  // Fails every lease silent for longer than lease_timeout and returns the processes holding them
  // (to be killed: a hung process must not keep running).
  std::vector<int64_t> ExpireSilent(SteadyTime now);
  // Fails the job for a reason outside any bundle (a commit could not be written, ...).
  void FailJob(const std::string& reason);
  // No new leases (shutdown); live leases may still commit.
  void StopLeasing() { stopping_ = true; }

  bool stopping() const { return stopping_; }
  bool finished() const { return committed_.size() == bundles_.size(); }
  bool failed() const { return !failure_.empty(); }
  const std::string& failure() const { return failure_; }
  // Whether a lease request should wait for a bundle to come back (some are leased, none pending).
  bool ShouldWait() const { return !stopping_ && !failed() && pending_.empty() && !leases_.empty(); }

  std::size_t total() const { return bundles_.size(); }
  std::size_t committed_count() const { return committed_.size(); }
  std::size_t live_leases() const { return leases_.size(); }
  int retries() const { return retries_; }
  const std::map<int64_t, Lease>& leases() const { return leases_; }
  int attempts(const std::string& bundle) const;

 private:
  Coordinator(CoordinatorOptions options, std::vector<std::string> bundles) : options_(options), bundles_(std::move(bundles)) {}
  void FailAttempt(const Lease& lease, const std::string& error);

  CoordinatorOptions options_;
  std::vector<std::string> bundles_;
  std::deque<std::string> pending_;
  std::set<std::string> committed_;
  std::map<int64_t, Lease> leases_;
  std::map<std::string, int> failures_;  // failed attempts per bundle
  std::map<std::string, std::string> last_error_;
  int64_t next_lease_ = 1;
  int retries_ = 0;
  bool stopping_ = false;
  std::string failure_;
};

}  // namespace dfw
