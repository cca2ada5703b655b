// Beam's file matching for the file IOs of io/: which regular files a pattern names, with their
// size and modification time (Beam's FileMetadata).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dfw/common/status.h"

namespace dfw::stages_io {

struct MatchedFile {
  std::string path;
  int64_t size_in_bytes = 0;
  double last_updated_in_seconds = 0;  // mtime, seconds since the epoch with its fraction
};

// The regular files `pattern` names (glob(3): *, ?, [..]; a wildcard also matches a leading dot,
// as Beam's fnmatch-based matching does), sorted by path. Folders, FIFOs, sockets and devices are
// skipped, as Beam's matching lists files only — so "out*" next to a folder "out" matches only
// the files. No match is an empty list; a glob failure other than "no match" is kIoError.
Result<std::vector<MatchedFile>> MatchFiles(const std::string& pattern);

// True when the pattern has a glob wildcard (*, ? or [), Beam's "ALLOW_IF_WILDCARD" test.
bool HasWildcard(const std::string& pattern);

}  // namespace dfw::stages_io

#include "dfw/stages/stage.h"

namespace dfw::stages_io {

// The splits of a source that reads each file whole (formats whose files are not split here):
// one split per non-empty matched file (Beam's file sources skip empty files too). A pattern that
// matches no file is kNotFound naming the transform and the pattern.
Result<std::vector<SourceSplit>> WholeFileSplits(const StageConfig& c, const std::string& pattern);

}  // namespace dfw::stages_io
