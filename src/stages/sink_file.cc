#include "sink_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
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
  fd_ = OwnedFd();
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(tmp_).parent_path(), ec);
  if (ec) return IoError("cannot create staging directory for '" + tmp_ + "': " + ec.message());
  // Private (0600 whatever the umask) and never through a symlink: staging is the job's own.
  OwnedFd fd(::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd.valid()) return ErrnoError("open '" + tmp_ + "' for writing", errno);
  if (::fchmod(fd.get(), 0600) != 0) return ErrnoError("chmod '" + tmp_ + "'", errno);
  fd_ = std::move(fd);
  pending_.clear();
  pending_.reserve(kBufferBytes);
  written_ = 0;
  writeback_started_ = 0;
  writeback_refused_ = false;
  return Status::OK();
}

Status BundleFile::Write(std::string_view bytes) {
  if (!fd_.valid()) return Internal("write to '" + tmp_ + "' before Open");
  if (pending_.size() + bytes.size() < kBufferBytes) {
    pending_.append(bytes);
    return Status::OK();
  }
  // A full buffer goes out in one write(2) with what fills it; a piece at least a buffer long
  // goes out as it is, straight from the caller's bytes.
  const std::size_t fill = std::min(bytes.size(), kBufferBytes - pending_.size());
  pending_.append(bytes.substr(0, fill));
  RETURN_IF_ERROR(Flush());
  bytes.remove_prefix(fill);
  if (bytes.size() >= kBufferBytes) {
    RETURN_IF_ERROR(WriteOut(bytes));
  } else {
    pending_.append(bytes);
  }
  if (!writeback_refused_ && written_ - writeback_started_ >= kWritebackBytes) StartWriteback();
  return Status::OK();
}

Status BundleFile::Flush() {
  Status s = WriteOut(pending_);
  pending_.clear();
  return s;
}

Status BundleFile::WriteOut(std::string_view bytes) {
  if (int err = WriteAll(fd_.get(), bytes.data(), bytes.size()); err != 0) return ErrnoError("write '" + tmp_ + "'", err);
  written_ += static_cast<int64_t>(bytes.size());
  return Status::OK();
}

void BundleFile::StartWriteback() {
#if defined(__linux__)
  // The whole chunks in the file so far start their write-back. A refusal (a file system without
  // it) only loses the overlap: Commit's fsync still writes and reports everything, write-back
  // errors included.
  const int64_t upto = written_ / kWritebackBytes * kWritebackBytes;
  if (::sync_file_range(fd_.get(), writeback_started_, upto - writeback_started_, SYNC_FILE_RANGE_WRITE) == 0) {
    writeback_started_ = upto;
    return;
  }
#endif
  writeback_refused_ = true;  // not asked again for this file
}

Status BundleFile::Commit() {
  if (!fd_.valid()) return Internal("commit of '" + done_ + "' without an open file");
  RETURN_IF_ERROR(Flush());
  if (::fsync(fd_.get()) != 0) return ErrnoError("fsync '" + tmp_ + "'", errno);
  if (::close(fd_.release()) != 0) return ErrnoError("close '" + tmp_ + "'", errno);
  if (std::rename(tmp_.c_str(), done_.c_str()) != 0) return ErrnoError("rename '" + tmp_ + "' to '" + done_ + "'", errno);
  return Status::OK();
}

}  // namespace stages_internal
}  // namespace dfw
