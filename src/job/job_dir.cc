#include "dfw/job/job_dir.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
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

Status MakeDir(const std::string& path) {
  if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) return ErrnoError("create job dir folder '" + path + "'", errno);
  return Status::OK();
}

Status FsyncPath(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoError("open '" + path + "' for fsync", errno);
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  if (rc != 0) return ErrnoError("fsync '" + path + "'", err);
  return Status::OK();
}

}  // namespace

std::string JobDir::LeaseStagingDir(int64_t lease_id) const {
  return StagingDir() + "/lease-" + std::to_string(lease_id);
}

std::string JobDir::ProcessLogPath(int index) const { return LogsDir() + "/sdk-" + std::to_string(index) + ".log"; }

std::string JobDir::SocketPath() const {
  std::string p = root_ + "/coordinator.sock";
  if (p.size() < 100) return p;
  // sockaddr_un holds 108 bytes; a deep job dir gets a stable short name instead.
  std::ostringstream s;
  s << "/tmp/dfw-" << std::hex << std::hash<std::string>{}(root_) << ".sock";
  return s.str();
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

Result<JobDir> JobDir::Create(const std::string& root, const JobInfo& info, bool sync) {
  std::error_code ec;
  if (fs::exists(root, ec) && !fs::is_empty(root, ec)) {
    return FailedPrecondition("job dir '" + root + "' already exists and is not empty; finish it with --resume '" +
                              root + "' or choose another --job_dir");
  }
  fs::path parent = fs::path(root).parent_path();
  if (!parent.empty() && !fs::exists(parent, ec)) {
    fs::create_directories(parent, ec);
    if (ec) return IoError("create parent of job dir '" + root + "': " + ec.message());
  }
  if (::mkdir(root.c_str(), 0755) != 0 && errno != EEXIST) return ErrnoError("create job dir '" + root + "'", errno);
  JobDir dir(root, info);
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

Result<JobDir> JobDir::Open(const std::string& root) {
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return NotFound("job dir '" + root + "' does not exist or is not a folder");
  auto text = ReadWholeFile(root + "/job.json");
  if (!text.ok()) return NotFound("'" + root + "' is not a dfworker job dir: " + text.status().message());
  auto info = JobInfoFromJson(*text);
  if (!info.ok()) return info.status().WithContext("job dir '" + root + "'");
  JobDir dir(root, std::move(*info));
  for (const auto& sub : {dir.StagingDir(), dir.CommittedDir(), dir.LogsDir()}) RETURN_IF_ERROR(MakeDir(sub));
  return dir;
}

Result<JobLock> JobLock::Acquire(const JobDir& dir) {
  int fd = ::open(dir.LockPath().c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoError("open lock file '" + dir.LockPath() + "'", errno);
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    return FailedPrecondition("job dir '" + dir.root() + "' is in use by another dfworker launcher");
  }
  return JobLock(fd);
}

JobLock::~JobLock() {
  if (fd_ >= 0) ::close(fd_);
}

Result<int> PromoteStaged(const std::string& lease_dir, const std::string& committed_dir) {
  int moved = 0;
  std::error_code ec;
  for (fs::directory_iterator sinks(lease_dir, ec), end; !ec && sinks != end; sinks.increment(ec)) {
    if (!sinks->is_directory()) continue;
    std::string target = committed_dir + "/" + sinks->path().filename().string();
    RETURN_IF_ERROR(MakeDir(target));
    for (fs::directory_iterator files(sinks->path(), ec); !ec && files != end; files.increment(ec)) {
      std::string to = target + "/" + files->path().filename().string();
      if (::rename(files->path().c_str(), to.c_str()) != 0) {
        return ErrnoError("commit: rename '" + files->path().string() + "' to '" + to + "'", errno);
      }
      ++moved;
    }
    if (ec) break;
    RETURN_IF_ERROR(FsyncPath(target));
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

Status WriteFileAtomically(const std::string& path, const std::string& contents, bool sync) {
  std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoError("create '" + tmp + "'", errno);
  std::size_t off = 0;
  while (off < contents.size()) {
    ssize_t n = ::write(fd, contents.data() + off, contents.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      return ErrnoError("write '" + tmp + "'", err);
    }
    off += static_cast<std::size_t>(n);
  }
  if (sync && ::fsync(fd) != 0) {
    int err = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    return ErrnoError("fsync '" + tmp + "'", err);
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return ErrnoError("rename '" + tmp + "' to '" + path + "'", err);
  }
  return Status::OK();
}

Result<std::string> ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("cannot read '" + path + "'");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace dfw
