#include "dfw/job/job_dir.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <pwd.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

namespace dfw {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t kMaxSocketPath = 100;  // of sockaddr_un's 108, with room to spare

// A folder of the job dir: 0700 whatever the umask (mkdir applies the umask; a folder that exists
// is left as the job made it).
Status MakeDir(const std::string& path) {
  if (::mkdir(path.c_str(), kPrivateFolderMode) == 0) {
    if (::chmod(path.c_str(), kPrivateFolderMode) != 0) return ErrnoError("chmod 0700 '" + path + "'", errno);
    return Status::OK();
  }
  if (errno != EEXIST) return ErrnoError("create job dir folder '" + path + "'", errno);
  return Status::OK();
}

std::string UserName(uid_t uid) {
  struct passwd pw {};
  struct passwd* found = nullptr;
  char buf[4096];
  if (::getpwuid_r(uid, &pw, buf, sizeof buf, &found) == 0 && found != nullptr) {
    return std::string(found->pw_name) + " (uid " + std::to_string(uid) + ")";
  }
  return "uid " + std::to_string(uid);
}

// What a launcher stopped inside JobDir::Create (or before a staged job's stages.json was in
// place) can have left: its lock, the empty folders, and temporary files of its first rename.
bool IsLeftoverOfCreate(const fs::directory_entry& e) {
  const std::string name = e.path().filename().string();
  std::error_code ec;
  if (name == "lock") return e.is_regular_file(ec);
  if (name == "staging" || name == "committed") return e.is_directory(ec) && fs::is_empty(e.path(), ec) && !ec;
  if (name == "logs") return e.is_directory(ec);  // logs of processes that never saw a job
  return name.starts_with("job.json.tmp.") || name.starts_with("stages.json.tmp.") || name.starts_with("lock.tmp.");
}

}  // namespace

std::string JobDir::LeaseStagingDir(int64_t lease_id) const {
  return StagingDir() + "/lease-" + std::to_string(lease_id);
}

std::string JobDir::ProcessLogPath(int index) const { return LogsDir() + "/sdk-" + std::to_string(index) + ".log"; }

std::string JobDir::SocketPath() const { return IpcDir() + "/coordinator.sock"; }

Result<std::string> JobDir::MakePrivateIpcDir() const {
  RETURN_IF_ERROR(MakePrivateDir(IpcDir()));
  std::string path = SocketPath();
  if (path.size() < kMaxSocketPath) return IpcDir();
  // sockaddr_un holds 108 bytes: a deep job dir gets a fresh private folder, never a predictable name.
  std::error_code ec;
  std::string pattern = (fs::temp_directory_path(ec) / "dfw-ipc-XXXXXX").string();
  if (ec) pattern = "/tmp/dfw-ipc-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) return ErrnoError("create a private socket folder '" + pattern + "'", errno);
  return pattern;  // mkdtemp creates it 0700
}

Status MakePrivateDir(const std::string& path) {
  if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) return ErrnoError("create folder '" + path + "'", errno);
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return ErrnoError("stat '" + path + "'", errno);
  if (!S_ISDIR(st.st_mode)) return FailedPrecondition("'" + path + "' is not a folder (a symlink or file is in its place)");
  if (st.st_uid != ::geteuid()) return FailedPrecondition("'" + path + "' belongs to another user (uid " + std::to_string(st.st_uid) + ")");
  if (::chmod(path.c_str(), 0700) != 0) return ErrnoError("chmod 0700 '" + path + "'", errno);  // whatever the umask
  return Status::OK();
}

std::string JobInfoToJson(const JobInfo& info) {
  nlohmann::json j;
  j["job_id"] = info.job_id;
  j["bundles"] = info.bundles;
  j["executor"] = info.executor;
  j["params"] = info.params;
  j["heartbeat_ms"] = info.heartbeat_ms;
  return j.dump(2) + "\n";
}

Result<JobInfo> JobInfoFromJson(const std::string& text) {
  try {
    auto j = nlohmann::json::parse(text);
    JobInfo info;
    info.job_id = j.at("job_id").get<std::string>();
    info.bundles = j.at("bundles").get<std::vector<std::string>>();
    info.executor = j.at("executor").get<std::string>();
    info.params = j.at("params").get<std::map<std::string, std::string>>();
    info.heartbeat_ms = j.value("heartbeat_ms", 500);
    if (info.heartbeat_ms <= 0) return DataLoss("job.json: 'heartbeat_ms' must be positive, got " + std::to_string(info.heartbeat_ms));
    return info;
  } catch (...) {
    return DataLoss(FromCurrentException("job.json").message());
  }
}

std::string NewJobId() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", &tm);
  std::random_device rd;
  char hex[8];
  std::snprintf(hex, sizeof hex, "%06x", rd() & 0xffffffu);
  return std::string("dfw-") + buf + "-" + hex;
}

Result<JobLock> JobDir::CreateRoot(const std::string& root) {
  std::error_code ec;
  fs::path parent = fs::path(root).parent_path();
  if (!parent.empty() && !fs::exists(parent, ec)) {
    fs::create_directories(parent, ec);
    if (ec) return IoError("create parent of job dir '" + root + "': " + ec.message());
  }
  auto busy = [&] {
    return FailedPrecondition("job dir '" + root + "' already exists and is not empty; finish it with --resume '" + root +
                              "' or choose another --job_dir");
  };
  if (::mkdir(root.c_str(), kPrivateFolderMode) != 0) {
    if (errno != EEXIST) return ErrnoError("create job dir '" + root + "'", errno);
    RETURN_IF_ERROR(CheckJobDirOwner(root));
    auto unstarted = IsUnstartedJobDir(root);
    if (!unstarted.ok()) return unstarted.status();
    if (*unstarted) {
      RETURN_IF_ERROR(ReclaimUnstartedJobDir(root));
    } else if (!fs::is_directory(root, ec) || !fs::is_empty(root, ec)) {
      return busy();  // an empty folder the user made is fine
    }
  }
  RETURN_IF_ERROR(CheckJobDirOwner(root));
  if (::chmod(root.c_str(), kPrivateFolderMode) != 0) return ErrnoError("chmod 0700 job dir '" + root + "'", errno);
  // Ownership is decided by one atomic step: whoever links the lock file into place owns the dir.
  // The lock is made and flock'd under a temporary name first, so from the moment the name `lock`
  // exists its flock is held: a run that finds the dir unstarted (IsUnstartedJobDir) can never take
  // a live launcher's lock for a dead one's. A second run racing on the same (empty) dir loses
  // here, having written nothing.
  const std::string temp_lock = root + "/lock.tmp." + std::to_string(::getpid());
  ::unlink(temp_lock.c_str());  // a killed run's of the same pid (our own folder, checked above)
  int fd = ::open(temp_lock.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, kPrivateFileMode);
  if (fd < 0) return ErrnoError("create job dir lock '" + temp_lock + "'", errno);
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0 || ::fchmod(fd, kPrivateFileMode) != 0) {
    int err = errno;
    ::close(fd);
    ::unlink(temp_lock.c_str());
    return ErrnoError("lock '" + temp_lock + "'", err);
  }
  const int linked = ::link(temp_lock.c_str(), (root + "/lock").c_str());
  const int link_errno = errno;
  ::unlink(temp_lock.c_str());
  if (linked != 0) {
    ::close(fd);
    if (link_errno == EEXIST) return busy();
    return ErrnoError("create job dir lock '" + root + "/lock'", link_errno);
  }
  return JobLock(fd);
}

Result<JobDir> JobDir::Create(const std::string& root, const JobInfo& info, bool sync) {
  ASSIGN_OR_RETURN(JobLock lock, CreateRoot(root));
  JobDir dir(root, info);
  dir.lock_ = std::make_shared<JobLock>(std::move(lock));
  for (const auto& sub : {dir.StagingDir(), dir.CommittedDir(), dir.LogsDir()}) RETURN_IF_ERROR(MakeDir(sub));
  RETURN_IF_ERROR(WriteFileAtomically(dir.JobJsonPath(), JobInfoToJson(info), sync));
  return dir;
}

Status JobDir::SyncJobJson() const {
  for (const std::string& path : {JobJsonPath(), root_}) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return ErrnoError("open '" + path + "' to sync it", errno);
    int rc = ::fsync(fd);
    int err = errno;
    ::close(fd);
    if (rc != 0) return ErrnoError("fsync '" + path + "'", err);
  }
  return Status::OK();
}

Result<JobDir> JobDir::Open(const std::string& root, std::optional<JobLock> lock) {
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return NotFound("job dir '" + root + "' does not exist or is not a folder");
  RETURN_IF_ERROR(CheckJobDirOwner(root));
  auto text = ReadWholeFile(root + "/job.json", kMaxJobJsonBytes);
  if (!text.ok()) return NotFound("'" + root + "' is not a dfworker job dir: " + text.status().message());
  auto info = JobInfoFromJson(*text);
  if (!info.ok()) return info.status().WithContext("job dir '" + root + "'");
  JobDir dir(root, std::move(*info));
  if (lock) dir.lock_ = std::make_shared<JobLock>(std::move(*lock));
  for (const auto& sub : {dir.StagingDir(), dir.CommittedDir(), dir.LogsDir()}) RETURN_IF_ERROR(MakeDir(sub));
  return dir;
}

Result<JobLock> JobLock::Acquire(const std::string& root) {
  // No O_CREAT: every job dir has its lock file from Create, and a path that is not a job dir
  // must not grow one.
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return NotFound("job dir '" + root + "' does not exist or is not a folder");
  RETURN_IF_ERROR(CheckJobDirOwner(root));  // before anything in it is opened
  int fd = ::open((root + "/lock").c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0 && errno == ENOENT) {
    fd = ::open((root + "/lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, kPrivateFileMode);  // a job dir of an older dfworker
  }
  if (fd < 0) return ErrnoError("open lock file '" + root + "/lock'", errno);
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    return FailedPrecondition("job dir '" + root + "' is in use by another dfworker launcher");
  }
  return JobLock(fd);
}

JobLock::~JobLock() {
  if (fd_ >= 0) ::close(fd_);
}

Status CheckJobDirOwner(const std::string& root) {
  // Checked on the opened folder, not by path: O_NOFOLLOW refuses a symlink at the job dir's own
  // name, and fstat then describes exactly the folder that was opened.
  int fd = ::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    struct stat link {};
    // O_DIRECTORY | O_NOFOLLOW on a symlink fails with ENOTDIR or ELOOP: lstat tells them apart.
    if (errno == ELOOP || (errno == ENOTDIR && ::lstat(root.c_str(), &link) == 0 && S_ISLNK(link.st_mode))) {
      return InvalidArgument("job dir '" + root + "' is a symbolic link; a job dir must be a real folder of yours "
                             "(choose another --job_dir, or name the folder it points to)");
    }
    if (errno == ENOTDIR) return InvalidArgument("job dir '" + root + "' is not a folder");
    return ErrnoError("open job dir '" + root + "'", errno);
  }
  OwnedFd owned(fd);
  struct stat st {};
  if (::fstat(fd, &st) != 0) return ErrnoError("stat job dir '" + root + "'", errno);
  if (st.st_uid != ::geteuid()) {
    return InvalidArgument("job dir '" + root + "' belongs to " + UserName(st.st_uid) + ", not to " +
                           UserName(::geteuid()) + " who runs this job; a job dir must be your own folder "
                           "(choose another --job_dir)");
  }
  return Status::OK();
}

Result<bool> IsUnstartedJobDir(const std::string& root) {
  std::error_code ec;
  bool any = false;
  for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    if (!IsLeftoverOfCreate(*it)) return false;
    any = true;
  }
  if (ec) return ErrnoError("list job dir '" + root + "'", ec.value());
  return any;
}

Status ReclaimUnstartedJobDir(const std::string& root) {
  // The lock is flock'd from before its name exists (Create): one we cannot take belongs to a
  // live launcher, and its dir is not ours to clean. Holding it, we check that it is still the
  // file named `lock` (not one unlinked by another reclaimer) and that the dir is still unstarted.
  const std::string lock_path = root + "/lock";
  std::optional<OwnedFd> lock;
  int fd = ::open(lock_path.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC);
  if (fd >= 0) {
    lock.emplace(fd);
    struct stat held {}, named {};
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0 || ::fstat(fd, &held) != 0 || ::stat(lock_path.c_str(), &named) != 0 ||
        held.st_ino != named.st_ino || held.st_dev != named.st_dev) {
      return FailedPrecondition("job dir '" + root + "' is in use by another dfworker launcher");
    }
    ASSIGN_OR_RETURN(bool still, IsUnstartedJobDir(root));
    if (!still) return FailedPrecondition("job dir '" + root + "' is in use by another dfworker launcher");
  } else if (errno != ENOENT) {
    return ErrnoError("open '" + lock_path + "'", errno);
  }
  std::error_code ec;
  for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name == "lock") continue;
    // Without a lock to hold (a staged job's root made before it had one) only a staged job's first
    // rename's temporary file goes: anything else may be a racing run's that has just taken the dir.
    if (!lock && !name.starts_with("stages.json.tmp.")) continue;
    fs::remove_all(it->path(), ec);
    if (ec) return IoError("clear '" + it->path().string() + "' of a job dir that was never started: " + ec.message());
  }
  if (ec) return IoError("list job dir '" + root + "': " + ec.message());
  // The lock goes last, while still held: a racing run then either failed on our flock above or
  // finds the dir empty and decides ownership by linking its own lock into place as usual.
  if (lock && ::unlink(lock_path.c_str()) != 0 && errno != ENOENT) return ErrnoError("remove '" + lock_path + "'", errno);
  return Status::OK();
}

namespace {

// Moves every file under `from` to the same place under `to` (a Join's sink folders nest:
// <join>/<input tag>), making folders as needed; each target folder is fsynced once filled.
Status PromoteTree(const fs::path& from, const std::string& to, int& moved) {
  RETURN_IF_ERROR(MakeDir(to));
  std::error_code ec;
  for (fs::directory_iterator files(from, ec), end; !ec && files != end; files.increment(ec)) {
    std::string target = to + "/" + files->path().filename().string();
    if (files->is_directory()) {
      RETURN_IF_ERROR(PromoteTree(files->path(), target, moved));
      continue;
    }
    if (::rename(files->path().c_str(), target.c_str()) != 0) {
      return ErrnoError("commit: rename '" + files->path().string() + "' to '" + target + "'", errno);
    }
    ++moved;
  }
  if (ec) return IoError("commit: list '" + from.string() + "': " + ec.message());
  return FsyncPath(to);
}

}  // namespace

Result<int> PromoteStaged(const std::string& lease_dir, const std::string& committed_dir) {
  int moved = 0;
  std::error_code ec;
  // A bundle of a pipeline without sinks (or whose sinks wrote nothing yet) stages nothing: there
  // is no lease dir, and nothing to move.
  if (!fs::exists(lease_dir, ec) && !ec) return 0;
  for (fs::directory_iterator sinks(lease_dir, ec), end; !ec && sinks != end; sinks.increment(ec)) {
    if (!sinks->is_directory()) continue;
    RETURN_IF_ERROR(PromoteTree(sinks->path(), committed_dir + "/" + sinks->path().filename().string(), moved));
  }
  if (ec) return IoError("commit: list '" + lease_dir + "': " + ec.message());
  RETURN_IF_ERROR(RemoveTree(lease_dir));
  return moved;
}

Status RemoveTree(const std::string& path) {
  std::error_code ec;
  fs::remove_all(path, ec);
  if (ec) return IoError("remove '" + path + "': " + ec.message());
  return Status::OK();
}

}  // namespace dfw
