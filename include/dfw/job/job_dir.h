// The job directory: everything a run needs to be finished later (`--resume JOB_DIR`) and the
// one place launcher and SDK processes meet. Layout (all under the job dir root):
//
//   job.json          JobInfo: job id, bundle table, executor kind and parameters
//   manifest.jsonl    append-only, fsync'd commit log (manifest.h)
//   coordinator.sock  the coordinator's UNIX socket (see SocketPath for long paths)
//   staging/lease-L/  output written by lease L, not yet committed
//   committed/<sink>/ bundle outputs promoted on commit (renamed from a lease's staging dir)
//   logs/sdk-I.log    per-process logs; logs/launcher.log
//   metrics.json      merged metrics, written at the end of a run
//   lock              flock'd by the launcher that owns the dir
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "dfw/common/status.h"

namespace dfw {

// What job.json holds. Written once when the job dir is created; read by --resume and by every
// SDK process, so a resumed job runs the same bundle table with the same executor.
struct JobInfo {
  std::string job_id;                         // printed at start, names the default job dir
  std::vector<std::string> bundles;           // stable bundle ids, in plan order
  std::string executor;                       // how SDK processes run a bundle: "pipeline" | "lines"
  std::map<std::string, std::string> params;  // executor parameters (e.g. pipeline file, input)
  int heartbeat_ms = 500;                     // how often SDK processes heartbeat
};

class JobDir {
 public:
  // Creates `root` (which must not exist or be empty), its subfolders and job.json. An existing,
  // non-empty dir is kFailedPrecondition (use --resume); an unwritable parent is kIoError naming it.
  // With `sync` false job.json is written and renamed into place but not fsync'd: the caller must
  // call SyncJobJson() before anything depends on it surviving a crash (the launcher does so while
  // its SDK processes start, instead of making them wait for the disk).
  static Result<JobDir> Create(const std::string& root, const JobInfo& info, bool sync = true);
  // Opens an existing job dir and reads its job.json (kNotFound / kDataLoss naming the file).
  static Result<JobDir> Open(const std::string& root);

  const std::string& root() const { return root_; }
  // fsyncs job.json and the job dir (kIoError naming the file).
  Status SyncJobJson() const;
  const JobInfo& info() const { return info_; }

  std::string JobJsonPath() const { return root_ + "/job.json"; }
  std::string ManifestPath() const { return root_ + "/manifest.jsonl"; }
  std::string StagingDir() const { return root_ + "/staging"; }
  std::string CommittedDir() const { return root_ + "/committed"; }
  std::string LogsDir() const { return root_ + "/logs"; }
  std::string MetricsPath() const { return root_ + "/metrics.json"; }
  std::string LockPath() const { return root_ + "/lock"; }
  std::string LeaseStagingDir(int64_t lease_id) const;
  std::string ProcessLogPath(int index) const;
  // `<root>/coordinator.sock`, or a short path under /tmp derived from the root when that would
  // not fit a sockaddr_un (108 bytes). Both sides compute it the same way.
  std::string SocketPath() const;

 private:
  JobDir(std::string root, JobInfo info) : root_(std::move(root)), info_(std::move(info)) {}
  std::string root_;
  JobInfo info_;
};

// Serialises / parses job.json. Parse errors are kDataLoss naming the field.
std::string JobInfoToJson(const JobInfo& info);
Result<JobInfo> JobInfoFromJson(const std::string& json);

// A fresh job id: "dfw-YYYYMMDD-HHMMSS-<6 hex>".
std::string NewJobId();

// Exclusive ownership of a job dir by one launcher (flock on <root>/lock), released on destruction.
class JobLock {
 public:
  // kFailedPrecondition when another launcher holds it.
  static Result<JobLock> Acquire(const JobDir& dir);
  JobLock(JobLock&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  JobLock& operator=(JobLock&&) = delete;
  ~JobLock();

 private:
  explicit JobLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

// Moves every file under `lease_dir/<sink>/` to `committed_dir/<sink>/` (rename, same file
// system), fsyncs the target folders and removes the lease dir. Returns the number of files moved.
// A failure leaves already-moved files in place; they are overwritten when the bundle is redone.
Result<int> PromoteStaged(const std::string& lease_dir, const std::string& committed_dir);

// Removes a folder tree (staging leftovers). Missing is fine.
Status RemoveTree(const std::string& path);

// Writes `contents` to `path` via a temporary file, fsync and rename (never half-written).
// `sync` false skips the fsync (the file is still never seen half-written, but may not survive a
// crash).
Status WriteFileAtomically(const std::string& path, const std::string& contents, bool sync = true);
Result<std::string> ReadWholeFile(const std::string& path);

}  // namespace dfw
