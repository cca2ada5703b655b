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
// Dynamic work rebalancing (when the job's bundles have input ranges, dfw/job/work_range.h):
// - Live leases report their position (`Progress`). When processes are idle and no bundle is
//   pending, `PlanSplits` picks the leases with the most unread input and asks their holders to
//   split (one outstanding request per lease; a lease that refused is not asked again until it
//   has progressed).
// - A holder that accepts has already stopped its reader at the split point. `PrepareSplit`
//   checks the halves tile the bundle's current range and names the residual (a new bundle id);
//   the caller makes it durable in the manifest and then calls `ApplySplit`: the bundle keeps the
//   primary half, the residual is pending. A split answered for a lease that is no longer live is
//   refused: that attempt's commit will be stale, and the bundle is redone with its whole range.
// - A commit must name the range it read; one that is not the bundle's current range is a failed
//   attempt, never a commit (nothing read twice, nothing skipped).
// - Attempts count per bundle: the primary keeps its bundle's count, a residual starts at 0.
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
#include "dfw/job/manifest.h"
#include "dfw/job/work_range.h"

namespace dfw {

using SteadyTime = std::chrono::steady_clock::time_point;

struct CoordinatorOptions {
  int max_attempts = 4;  // failed attempts of one bundle that fail the job (Dataflow batch: 4)
  std::chrono::milliseconds lease_timeout{10000};  // silence after which a lease expires
  // Rebalancing: a lease with fewer unread units than this is not asked to split (the holder
  // refuses splits too small for its reader as well), and a split request not answered within
  // split_timeout no longer stops other leases from being asked.
  int64_t min_split_units = 2;
  std::chrono::milliseconds split_timeout{2000};
  double split_fraction = 0.5;  // of the unread part: the holder keeps about this much
};

struct Lease {
  int64_t id = 0;
  std::string bundle;
  int attempt = 1;  // 1-based
  int64_t process = 0;
  SteadyTime last_heartbeat;
  std::optional<WorkRange> range;  // the input it covers (nullopt: the job has no ranges)
  int64_t done = -1;               // progress reported in `range` (-1: none yet)
  int64_t total = -1;
  bool split_requested = false;
  SteadyTime split_requested_at;
  std::optional<int64_t> refused_at;  // `done` when the holder last refused a split
};

struct SplitRequest {
  int64_t lease = 0;
  int64_t process = 0;
  std::string bundle;
  double fraction = 0.5;
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
  // `ranges` (by bundle id, every bundle or none) enable rebalancing; `splits` come from the
  // manifest, in order, and are applied first (their residuals are bundles too).
  static Result<Coordinator> Make(const CoordinatorOptions& options, const std::vector<std::string>& bundles,
                                  const std::set<std::string>& committed,
                                  const std::map<std::string, WorkRange>& ranges = {},
                                  const std::vector<SplitRecord>& splits = {});

  // The next pending bundle for `process`, or nullopt when none is pending or leasing stopped.
  std::optional<Lease> Grant(int64_t process, SteadyTime now);
  // Refreshes every lease `process` holds.
  void Heartbeat(int64_t process, SteadyTime now);
  // `read` is the range the attempt covered (nullopt when the executor has no ranges); a range
  // other than the bundle's current one is a failed attempt (kStale returned, see class comment).
  CommitDecision Commit(int64_t lease_id, const std::optional<WorkRange>& read = std::nullopt);
  // The attempt failed with `error` (reported by the process). Unknown lease ids are ignored.
  void Fail(int64_t lease_id, const std::string& error);
  // `process` is gone: each lease it held fails with `reason`. Returns how many.
  int ProcessEnded(int64_t process, const std::string& reason);
  // Fails every lease silent for longer than lease_timeout and returns the processes holding them
  // (to be killed: a hung process must not keep running).
  std::vector<int64_t> ExpireSilent(SteadyTime now);
  // Rebalancing (see the class comment). Progress: false (and ignored) unless `lease` is live,
  // held by `process`, and 0 <= done <= total with `total` the size of the lease's range.
  bool Progress(int64_t process, int64_t lease_id, int64_t done, int64_t total);
  std::vector<SplitRequest> PlanSplits(int idle_processes, SteadyTime now);
  // kFailedPrecondition when the lease is not live or no split was asked of it; kDataLoss when the
  // halves do not tile its range. Changes nothing but the residual id counter.
  Result<SplitRecord> PrepareSplit(int64_t lease_id, const WorkRange& primary, const WorkRange& residual);
  void ApplySplit(const SplitRecord& split);
  void RefuseSplit(int64_t lease_id);
  int splits() const { return splits_; }
  // Every bundle id (residuals included) in data order: the order of output shards.
  std::vector<std::string> OrderedBundles() const;
  std::optional<WorkRange> RangeOf(const std::string& bundle) const;

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
  std::map<std::string, WorkRange> ranges_;
  int64_t next_lease_ = 1;
  int64_t next_residual_ = 0;
  int splits_ = 0;
  int retries_ = 0;
  bool stopping_ = false;
  std::string failure_;
};

}  // namespace dfw
