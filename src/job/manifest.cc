#include "dfw/job/manifest.h"

#include "dfw/job/job_dir.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

namespace dfw {

Result<Manifest> Manifest::Open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoError("open manifest '" + path + "'", errno);
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || static_cast<uint64_t>(st.st_size) > kMaxManifestBytes) {
    ::close(fd);
    return DataLoss("manifest '" + path + "' is not a regular file of at most " + std::to_string(kMaxManifestBytes) +
                    " bytes (a device, FIFO or link to one in its place?)");
  }
  std::string text;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      return ErrnoError("read manifest '" + path + "'", err);
    }
    if (n == 0) break;
    text.append(buf, static_cast<std::size_t>(n));
  }
  Manifest m(path, fd, 0);
  std::size_t pos = 0;
  int line_no = 0;
  while (pos < text.size()) {
    std::size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) break;  // torn tail: not a commit
    ++line_no;
    std::string line = text.substr(pos, nl - pos);
    try {
      auto j = nlohmann::json::parse(line);
      if (j.contains("split")) {
        SplitRecord split;
        split.parent = j.at("split").get<std::string>();
        split.residual = j.at("residual").get<std::string>();
        auto primary = DecodeWorkRange(j.at("primary").get<std::string>());
        auto residual = DecodeWorkRange(j.at("residual_range").get<std::string>());
        if (!primary.ok() || !residual.ok() || split.parent.empty() || split.residual.empty() ||
            !m.residuals_.insert(split.residual).second) {
          throw std::runtime_error("bad split");
        }
        split.primary = std::move(*primary);
        split.residual_range = std::move(*residual);
        m.splits_.push_back(std::move(split));
      } else {
        std::string bundle = j.at("bundle").get<std::string>();
        m.committed_.insert(bundle);
        m.metrics_[bundle] = j.contains("metrics") ? j["metrics"].dump() : "";
      }
    } catch (...) {
      return DataLoss("manifest '" + path + "' line " + std::to_string(line_no) + " is not a commit or split entry: '" + line + "'");
    }
    pos = nl + 1;
  }
  m.size_ = static_cast<int64_t>(pos);
  if (pos != text.size()) {
    if (::ftruncate(fd, m.size_) != 0) return ErrnoError("truncate torn manifest '" + path + "'", errno);
    if (::fdatasync(fd) != 0) return ErrnoError("fsync manifest '" + path + "'", errno);
  }
  if (::lseek(fd, m.size_, SEEK_SET) < 0) return ErrnoError("seek manifest '" + path + "'", errno);
  return m;
}

Manifest::Manifest(Manifest&& o) noexcept
    : path_(std::move(o.path_)), fd_(o.fd_), size_(o.size_), committed_(std::move(o.committed_)),
      metrics_(std::move(o.metrics_)), splits_(std::move(o.splits_)), residuals_(std::move(o.residuals_)) {
  o.fd_ = -1;
}

Manifest::~Manifest() {
  if (fd_ >= 0) ::close(fd_);
}

Status Manifest::Append(const std::string& bundle, int attempt, int64_t lease_id, const std::string& metrics_json) {
  if (IsCommitted(bundle)) return FailedPrecondition("bundle '" + bundle + "' is already in the manifest");
  nlohmann::json j;
  j["bundle"] = bundle;
  j["attempt"] = attempt;
  j["lease"] = lease_id;
  if (!metrics_json.empty()) {
    auto parsed = nlohmann::json::parse(metrics_json, nullptr, false);
    if (parsed.is_discarded()) return DataLoss("metrics of bundle '" + bundle + "' are not JSON");
    j["metrics"] = std::move(parsed);
  }
  RETURN_IF_ERROR(AppendLine(j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n",
                             "commit of bundle '" + bundle + "'"));
  committed_.insert(bundle);
  metrics_[bundle] = metrics_json;
  return Status::OK();
}

Status Manifest::AppendSplit(const SplitRecord& split) {
  if (residuals_.count(split.residual) || IsCommitted(split.residual)) {
    return FailedPrecondition("split residual '" + split.residual + "' is already a bundle of the manifest");
  }
  auto primary = EncodeWorkRange(split.primary);
  auto residual = EncodeWorkRange(split.residual_range);
  if (!primary || !residual) return InvalidArgument("split of bundle '" + split.parent + "': a path has a newline");
  nlohmann::json j;
  j["split"] = split.parent;
  j["residual"] = split.residual;
  j["primary"] = *primary;
  j["residual_range"] = *residual;
  RETURN_IF_ERROR(AppendLine(j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n",
                             "split of bundle '" + split.parent + "'"));
  residuals_.insert(split.residual);
  splits_.push_back(split);
  return Status::OK();
}

Status Manifest::AppendLine(const std::string& line, const std::string& what) {
  std::size_t off = 0;
  int err = 0;
  while (off < line.size()) {
    ssize_t n = ::pwrite(fd_, line.data() + off, line.size() - off, size_ + static_cast<int64_t>(off));
    if (n < 0) {
      if (errno == EINTR) continue;
      err = errno;
      break;
    }
    off += static_cast<std::size_t>(n);
  }
  if (err == 0 && ::fdatasync(fd_) != 0) err = errno;
  if (err != 0) {
    (void)::ftruncate(fd_, size_);  // no torn entry survives a failed append
    return ErrnoError("append " + what + " to manifest '" + path_ + "'", err);
  }
  size_ += static_cast<int64_t>(line.size());
  return Status::OK();
}

}  // namespace dfw
