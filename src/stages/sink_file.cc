#include "sink_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include <fmt/format.h>

#include "dfw/stages/config.h"

namespace dfw {

std::string ShardNaming::ShardName(int64_t index, int64_t count) const {
  return fmt::format("{}-{:05d}-of-{:05d}{}", prefix, index, count, suffix);
}

Result<ShardNaming> SinkNaming(const StageConfig& config) {
  ShardNaming n;
  // Beam's file sinks take `path`; WriteToTFRecord keeps its Python name, `file_path_prefix`.
  const std::string key = ConfigHas(config, "file_path_prefix") && !ConfigHas(config, "path") ? "file_path_prefix" : "path";
  ASSIGN_OR_RETURN(n.prefix, ConfigString(config, key));
  if (n.prefix.empty()) return ConfigKeyError(config, key, "must not be empty");
  RETURN_IF_ERROR(CheckLocalPath(config, key, n.prefix));
  n.prefix = ResolveConfigPath(config, n.prefix);
  ASSIGN_OR_RETURN(n.suffix, ConfigString(config, "file_name_suffix", std::string()));
  return n;
}

std::string StagingTmpPath(const std::string& staging_dir, const std::string& transform, int64_t bundle_id) {
  return fmt::format("{}/{}/bundle-{}.tmp", staging_dir, transform, bundle_id);
}

std::string StagingDonePath(const std::string& staging_dir, const std::string& transform, int64_t bundle_id) {
  return fmt::format("{}/{}/bundle-{}.done", staging_dir, transform, bundle_id);
}

namespace stages_internal {

Status BundleFile::Open(const BundleContext& bundle, const std::string& transform) {
  tmp_ = StagingTmpPath(bundle.staging_dir, transform, bundle.bundle_id);
  done_ = StagingDonePath(bundle.staging_dir, transform, bundle.bundle_id);
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(tmp_).parent_path(), ec);
  if (ec) return IoError("cannot create staging directory for '" + tmp_ + "': " + ec.message());
  // Private (0600 whatever the umask) and never through a symlink: staging is the job's own.
  int fd = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return ErrnoError("open '" + tmp_ + "' for writing", errno);
  if (::fchmod(fd, 0600) != 0) {
    int err = errno;
    ::close(fd);
    return ErrnoError("chmod '" + tmp_ + "'", err);
  }
  written_ = 0;
  writeback_started_ = 0;
  writeback_refused_ = false;
  file_.reset(::fdopen(fd, "wb"));
  if (!file_) {
    int err = errno;
    ::close(fd);
    return ErrnoError("open '" + tmp_ + "' for writing", err);
  }
  return Status::OK();
}

Status BundleFile::Write(std::string_view bytes) {
  if (!file_) return Internal("write to '" + tmp_ + "' before Open");
  if (!bytes.empty() && std::fwrite(bytes.data(), 1, bytes.size(), file_.get()) != bytes.size()) {
    return ErrnoError("write '" + tmp_ + "'", errno);
  }
  written_ += static_cast<int64_t>(bytes.size());
  if (!writeback_refused_ && written_ - writeback_started_ >= kWritebackBytes) return StartWriteback();
  return Status::OK();
}

Status BundleFile::StartWriteback() {
#if defined(__linux__)
  // The whole chunks written so far reach the kernel (stdio may hold some), then their write-back
  // starts. A refusal (a file system without it, a pipe) only loses the overlap: Commit's fsync
  // still writes and reports everything, write-back errors included.
  if (std::fflush(file_.get()) != 0) return ErrnoError("flush '" + tmp_ + "'", errno);
  const int64_t upto = written_ / kWritebackBytes * kWritebackBytes;
  if (::sync_file_range(fileno(file_.get()), writeback_started_, upto - writeback_started_, SYNC_FILE_RANGE_WRITE) == 0) {
    writeback_started_ = upto;
  } else {
    writeback_refused_ = true;  // not asked again for this file
  }
#else
  writeback_refused_ = true;
#endif
  return Status::OK();
}

Status BundleFile::Commit() {
  if (!file_) return Internal("commit of '" + done_ + "' without an open file");
  if (std::fflush(file_.get()) != 0) return ErrnoError("flush '" + tmp_ + "'", errno);
  if (::fsync(fileno(file_.get())) != 0) return ErrnoError("fsync '" + tmp_ + "'", errno);
  if (std::fclose(file_.release()) != 0) return ErrnoError("close '" + tmp_ + "'", errno);
  if (std::rename(tmp_.c_str(), done_.c_str()) != 0) return ErrnoError("rename '" + tmp_ + "' to '" + done_ + "'", errno);
  return Status::OK();
}

}  // namespace stages_internal
}  // namespace dfw
