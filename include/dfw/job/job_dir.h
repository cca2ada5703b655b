// The job directory: everything a run needs to be finished later (`--resume JOB_DIR`) and the
// one place launcher and SDK processes meet. Layout (all under the job dir root):
//
//   job.json          JobInfo: job id, bundle table, executor kind and parameters
//   manifest.jsonl    append-only, fsync'd commit log (manifest.h)
//   ipc/              0700: the coordinator's UNIX socket (see MakePrivateIpcDir for long paths)
//   staging/lease-L/  output written by lease L, not yet committed
//   committed/<sink>/ bundle outputs promoted on commit (renamed from a lease's staging dir)
//   logs/sdk-I.log    per-process logs; logs/launcher.log
//   metrics.json      merged metrics, written at the end of a run
//   finalize.json     the journal of finalize's moves (journaled_moves.h), written before the first
//   FINISHED          written last, once every output is under its final name
//   lock              created (O_EXCL) by the run that made the dir; flock'd by the launcher that owns it
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dfw/common/file.h"  // ReadWholeFile, WriteFileAtomically (job files use them)
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

// Exclusive ownership of a job dir by one launcher (flock on <root>/lock), released on destruction.
class JobLock {
 public:
  // kFailedPrecondition when another launcher holds it; kNotFound when `root` is not a folder.
  static Result<JobLock> Acquire(const std::string& root);
  JobLock(JobLock&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  JobLock& operator=(JobLock&&) = delete;
  ~JobLock();

 private:
  friend class JobDir;  // Create takes the lock as it makes the dir
  explicit JobLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

// Limits on what is read into memory from a job dir (a corrupted or hostile job dir gets a message,
// not an allocation failure).
inline constexpr std::size_t kMaxJobJsonBytes = std::size_t{1} << 30;  // the pipeline text and bundle table
inline constexpr std::size_t kMaxManifestBytes = std::size_t{4} << 30;

class JobDir {
 public:
  // Creates `root` (which must not exist, or be an empty folder), its lock file, subfolders and
  // job.json, and holds the dir's lock (released when the last copy of the JobDir goes). Ownership
  // is atomic: of two runs racing on one root, exactly one gets here; the other gets
  // kFailedPrecondition ("already exists and is not empty" / "in use") before writing anything.
  // An unwritable parent is kIoError naming it. With `sync` false job.json is written and renamed
  // into place but not fsync'd: the caller must call SyncJobJson() before anything depends on it
  // surviving a crash (the launcher does so while its SDK processes start).
  static Result<JobDir> Create(const std::string& root, const JobInfo& info, bool sync = true);
  // The first step of Create alone, for a job's root that records no job.json of its own (a staged
  // job's root: its stages are job dirs below it): makes `root` under the same rules (it must not
  // exist, or be an empty folder, or one left unstarted, which is reclaimed; owned by this user;
  // 0700) and takes its lock the same atomic way, with the same errors. The caller holds the
  // returned lock for as long as it runs the job.
  static Result<JobLock> CreateRoot(const std::string& root);
  // Opens an existing job dir and reads its job.json (kNotFound / kDataLoss naming the file). A
  // launcher takes the lock first (JobLock::Acquire) and hands it over, so nothing is read from a
  // job dir another launcher is using.
  static Result<JobDir> Open(const std::string& root, std::optional<JobLock> lock = std::nullopt);

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
  std::string FinalizeJournalPath() const { return root_ + "/finalize.json"; }
  std::string FinishedPath() const { return root_ + "/FINISHED"; }
  std::string LeaseStagingDir(int64_t lease_id) const;
  std::string ProcessLogPath(int index) const;
  std::string IpcDir() const { return root_ + "/ipc"; }
  // `<root>/ipc/coordinator.sock`.
  std::string SocketPath() const;
  // Where this run's coordinator socket goes: `<root>/ipc` (created 0700 whatever the umask, owned
  // by us, not a symlink), or — when the socket path there would not fit a sockaddr_un — a fresh
  // mkdtemp folder (0700) under the temp directory, never a predictable name. The launcher passes
  // the socket path to its SDK processes (--coordinator_socket) and removes a mkdtemp folder at the end.
  Result<std::string> MakePrivateIpcDir() const;
  bool locked() const { return lock_ != nullptr; }

 private:
  JobDir(std::string root, JobInfo info) : root_(std::move(root)), info_(std::move(info)) {}
  std::string root_;
  JobInfo info_;
  std::shared_ptr<JobLock> lock_;  // held by the launcher's copies; SDK processes open without it
};

// kInvalidArgument (exit 2) unless `root` is a real folder (not a symlink, checked on the opened
// folder) owned by the user running this process; the message names the owner.
Status CheckJobDirOwner(const std::string& root);

// A job dir whose launcher was stopped before its job.json (or a staged job's stages.json) was in
// place: it holds nothing but what JobDir::Create makes first (the lock, empty staging/ and
// committed/, logs/) and temporary files of that first rename; nothing can have been committed.
// False for an empty folder and for any folder holding anything else.
Result<bool> IsUnstartedJobDir(const std::string& root);
// Empties such a dir for a fresh start (kFailedPrecondition when a live launcher holds its lock).
Status ReclaimUnstartedJobDir(const std::string& root);

// mkdir 0700 (EEXIST fine), then insists on a real folder owned by this user and chmods it 0700.
Status MakePrivateDir(const std::string& path);

// Serialises / parses job.json. Parse errors are kDataLoss naming the field.
std::string JobInfoToJson(const JobInfo& info);
Result<JobInfo> JobInfoFromJson(const std::string& json);

// A fresh job id: "dfw-YYYYMMDD-HHMMSS-<6 hex>".
std::string NewJobId();


// Moves every file under `lease_dir/<sink>/` (nested folders too) to `committed_dir/<sink>/` (rename, same file
// system), fsyncs the target folders and removes the lease dir. Returns the number of files moved.
// A failure leaves already-moved files in place; they are overwritten when the bundle is redone.
Result<int> PromoteStaged(const std::string& lease_dir, const std::string& committed_dir);

// Removes a folder tree (staging leftovers). Missing is fine.
Status RemoveTree(const std::string& path);

}  // namespace dfw
