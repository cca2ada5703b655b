// The commit manifest: an append-only, fsync'd log with one line per committed bundle,
//   {"bundle":"<id>","attempt":<n>,"lease":<L>,"metrics":{MetricsSnapshot JSON}}
// and one line per split that dynamic work rebalancing made of a running bundle,
//   {"split":"<parent id>","residual":"<new id>","primary":"<range>","residual_range":"<range>"}
// (ranges in dfw/job/work_range.h's text form). A split is real exactly when its line is durable:
// written before the residual is leased, so a resumed job knows both halves and redoes only the
// ones not committed.
// The bundle's metrics travel with its commit, so a resumed job's totals cover every bundle once.
// A bundle is committed exactly when its line is durably in this file. A torn last line (the
// launcher died mid-write) is not a commit: Open() drops it and truncates the file back to the
// last complete line, so the bundle is redone by --resume.
//
// Threading: not thread-safe; owned by the coordinator's single event loop.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "dfw/common/status.h"
#include "dfw/job/work_range.h"

namespace dfw {

struct SplitRecord {
  std::string parent;    // the bundle that was split; it keeps `primary`
  std::string residual;  // the new bundle made of the rest
  WorkRange primary;
  WorkRange residual_range;
};

class Manifest {
 public:
  // Opens (creating when missing) and reads the manifest at `path`. A complete line that is not a
  // manifest entry is kDataLoss naming the line number.
  static Result<Manifest> Open(const std::string& path);
  Manifest(Manifest&& o) noexcept;
  Manifest& operator=(Manifest&&) = delete;
  ~Manifest();

  const std::set<std::string>& committed() const { return committed_; }
  bool IsCommitted(const std::string& bundle) const { return committed_.count(bundle) > 0; }
  // The metrics JSON recorded with each commit ("" when none was recorded).
  const std::map<std::string, std::string>& metrics() const { return metrics_; }

  // Splits in the order they were made.
  const std::vector<SplitRecord>& splits() const { return splits_; }

  // Appends a split and fdatasyncs (same error rules as Append). A residual id that is already a
  // bundle's (committed or split) is kFailedPrecondition.
  Status AppendSplit(const SplitRecord& split);

  // Appends the commit of `bundle` and fdatasyncs. Committing a bundle twice is kFailedPrecondition
  // (the coordinator never does). On a write error (e.g. out of disk) the file is truncated back
  // so no torn entry remains, and the error is returned.
  Status Append(const std::string& bundle, int attempt, int64_t lease_id, const std::string& metrics_json = "");

 private:
  Manifest(std::string path, int fd, int64_t size) : path_(std::move(path)), fd_(fd), size_(size) {}
  std::string path_;
  int fd_ = -1;
  int64_t size_ = 0;  // bytes of complete lines
  std::set<std::string> committed_;
  std::map<std::string, std::string> metrics_;
  std::vector<SplitRecord> splits_;
  std::set<std::string> residuals_;

  Status AppendLine(const std::string& line, const std::string& what);
};

}  // namespace dfw
