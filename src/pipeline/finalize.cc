// Finalize of a stage (dfw/pipeline/finalize.h): thresholds, shuffle commit, the journaled moves of
// committed outputs to their shard names.
#include "dfw/pipeline/finalize.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "dfw/common/file.h"
#include "dfw/common/logging.h"
#include "dfw/job/journaled_moves.h"
#include "dfw/pipeline/accounting.h"
#include "dfw/pipeline/assertions.h"
#include "dfw/stages/combine.h"
#include "dfw/stages/config.h"
#include "dfw/stages/join.h"
#include "dfw/stages/sink.h"

namespace dfw {
namespace fs = std::filesystem;
namespace {

// File sinks are the sinks with a `path` (a test-only collector has none).
bool IsFileSink(const TransformSpec& t) {
  return t.traits.is_sink && (ConfigHas(t.config, "path") || ConfigHas(t.config, "file_path_prefix"));
}

// The output folder: made (kOutputFolderMode, whatever the umask) when missing, refused when every
// user may write to it without a sticky bit, and probed with a file of an unpredictable name
// created exclusively (never a name another user planted).
Status PrepareSinkDirectory(const TransformSpec& t) {
  ASSIGN_OR_RETURN(ShardNaming naming, SinkNaming(t.config));
  const std::string parent = fs::path(naming.prefix).parent_path().string();
  if (Status made = MakeFolders(parent, kOutputFolderMode); !made.ok()) {
    return IoError(fmt::format("{}: cannot create output directory '{}': {}", t.config.Where(), parent, made.message()));
  }
  auto dir = OpenFolder(parent);
  if (!dir.ok()) return dir.status().WithContext(t.config.Where());
  RETURN_IF_ERROR(CheckFolderNotOpenToAll(dir->get(), parent.empty() ? "." : parent).WithContext(t.config.Where()));
  std::string probe;
  auto fd = CreateUniqueFileAt(dir->get(), "." + fs::path(naming.prefix).filename().string() + ".dfworker-probe",
                               kPrivateFileMode, &probe);
  if (!fd.ok()) {
    return IoError(fmt::format("{}: output path '{}' is not writable: {}", t.config.Where(), naming.prefix, fd.status().message()));
  }
  ::unlinkat(dir->get(), probe.c_str(), 0);
  return Status::OK();
}

// A sink that got no bundle still has its one (empty) shard, made like every other: a new file in
// the folder, renamed onto the shard name. Redoing it changes nothing.
Status WriteEmptyShard(const std::string& shard) {
  const std::string parent = fs::path(shard).parent_path().string();
  ASSIGN_OR_RETURN(OwnedFd dir, OpenFolder(parent));
  const std::string name = fs::path(shard).filename().string();
  std::string tmp;
  ASSIGN_OR_RETURN(OwnedFd fd, CreateUniqueFileAt(dir.get(), "." + name + ".dfworker-empty", kOutputFileMode, &tmp));
  if (::fsync(fd.get()) != 0 || ::renameat(dir.get(), tmp.c_str(), dir.get(), name.c_str()) != 0) {
    int err = errno;
    ::unlinkat(dir.get(), tmp.c_str(), 0);
    return ErrnoError("create '" + shard + "'", err);
  }
  return FsyncPath(parent);
}

}  // namespace

Status CheckSinksWritable(const PipelineSpec& spec) {
  for (const TransformSpec& t : spec.transforms) {
    if (IsFileSink(t)) RETURN_IF_ERROR(PrepareSinkDirectory(t));
  }
  return Status::OK();
}

Status FinalizeOutputs(const PipelineSpec& spec, const std::string& staging_dir, const std::vector<int64_t>& bundle_ids,
                       const std::string& journal_path) {
  std::vector<FileMove> moves;
  std::vector<std::string> told;
  const bool resuming = !journal_path.empty() && fs::exists(journal_path);
  for (const TransformSpec& t : spec.transforms) {
    if (!IsFileSink(t)) continue;
    RETURN_IF_ERROR(PrepareSinkDirectory(t));
    ASSIGN_OR_RETURN(ShardNaming naming, SinkNaming(t.config));
    if (bundle_ids.empty()) {
      RETURN_IF_ERROR(WriteEmptyShard(naming.ShardName(0, 1)));
      continue;
    }
    auto count = static_cast<int64_t>(bundle_ids.size());
    for (int64_t k = 0; k < count; ++k) {
      std::string done = StagingDonePath(staging_dir, t.config.name, bundle_ids[k]);
      // Before the journal exists every committed output must be there; after, a missing one may
      // already be under its shard name (RunJournaledMoves tells the two apart).
      if (!resuming && !fs::exists(done)) {
        return FailedPrecondition(fmt::format("{}: bundle {} has no committed output ('{}' is missing)", t.config.Where(),
                                              bundle_ids[k], done));
      }
      moves.push_back(FileMove{done, naming.ShardName(k, count)});
    }
    // Tell the user where the output went (the first shard names the whole set).
    told.push_back(FormatReportLine("output of {}: {} ({} shard{})", t.config.name, naming.ShardName(0, count),
                                    count, count == 1 ? "" : "s"));
  }
  if (journal_path.empty()) {
    for (const FileMove& m : moves) RETURN_IF_ERROR(MoveDurably(m));
  } else {
    RETURN_IF_ERROR(RunJournaledMoves(journal_path, moves));
  }
  for (const std::string& line : told) WriteStderr(line);
  return Status::OK();
}

Status FinalizeStage(const PipelineSpec& stage, const MetricsSnapshot& total, const std::string& committed_dir,
                     const std::vector<int64_t>& bundle_ids, const std::string& journal_path) {
  RETURN_IF_ERROR(CheckErrorThresholds(stage, total));
  RETURN_IF_ERROR(CheckAssertions(stage, committed_dir, bundle_ids));  // AssertEqual over every bundle's rows
  // A Combine's shuffle is complete (the next stage may read it) once every bundle has committed.
  RETURN_IF_ERROR(CommitShuffles(stage, committed_dir, bundle_ids));
  return FinalizeOutputs(stage, committed_dir, bundle_ids, journal_path);
}

Status CommitShuffles(const PipelineSpec& stage, const std::string& committed_dir, const std::vector<int64_t>& bundle_ids) {
  for (const TransformSpec& t : stage.transforms) {
    if (t.config.type == kCombinePartialType) RETURN_IF_ERROR(CommitShuffle(committed_dir + "/" + t.config.name, bundle_ids));
    if (t.config.type == kJoinPartialType) {
      ASSIGN_OR_RETURN(std::string name, JoinPartialShuffleName(t.config));
      RETURN_IF_ERROR(CommitShuffle(committed_dir + "/" + name, bundle_ids));
    }
  }
  return Status::OK();
}

}  // namespace dfw
