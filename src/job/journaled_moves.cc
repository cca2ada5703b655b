#include "dfw/job/journaled_moves.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "dfw/common/file.h"
#include "dfw/common/test_hooks.h"
#include "dfw/job/job_dir.h"

namespace dfw {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t kMaxJournalBytes = 256u << 20;  // a million moves of long paths

bool Exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

std::string Parent(const std::string& path) { return fs::path(path).parent_path().string(); }

}  // namespace

Status MoveDurably(const FileMove& m) {
  // The output's mode is set on the committed file, in the private job dir, before it is moved
  // (never by path once it is in a folder others may write to).
  if (::chmod(m.from.c_str(), kOutputFileMode) != 0) return ErrnoError("chmod '" + m.from + "'", errno);
  ASSIGN_OR_RETURN(OwnedFd to_dir, OpenFolder(Parent(m.to)));
  RETURN_IF_ERROR(CheckFolderNotOpenToAll(to_dir.get(), Parent(m.to).empty() ? "." : Parent(m.to)));
  const std::string to_name = fs::path(m.to).filename().string();
  if (::renameat(AT_FDCWD, m.from.c_str(), to_dir.get(), to_name.c_str()) == 0) return Status::OK();
  if (errno != EXDEV) return ErrnoError("rename '" + m.from + "' to '" + m.to + "'", errno);
  // Another file system: a copy under a fresh exclusive name in the target folder, renamed onto
  // the shard name (a name another user planted there, file or symlink, is never written through).
  RETURN_IF_ERROR(CopyFileInto(m.from, to_dir.get(), to_name, m.to, kOutputFileMode));
  if (::unlink(m.from.c_str()) != 0 && errno != ENOENT) return ErrnoError("remove '" + m.from + "'", errno);
  return Status::OK();
}

namespace {

std::string ToJson(const std::vector<FileMove>& moves) {
  nlohmann::json j;
  j["version"] = 1;
  j["moves"] = nlohmann::json::array();
  for (const FileMove& m : moves) j["moves"].push_back({{"from", m.from}, {"to", m.to}});
  return j.dump(1) + "\n";
}

Result<std::vector<FileMove>> FromJson(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return ErrnoError("stat '" + path + "'", errno);
  if (!S_ISREG(st.st_mode)) return DataLoss("finalize journal '" + path + "' is not a regular file");
  if (static_cast<std::size_t>(st.st_size) > kMaxJournalBytes) {
    return DataLoss("finalize journal '" + path + "' is " + std::to_string(st.st_size) + " bytes, over the " +
                    std::to_string(kMaxJournalBytes) + "-byte limit");
  }
  ASSIGN_OR_RETURN(std::string text, ReadWholeFile(path));
  try {
    auto j = nlohmann::json::parse(text);
    if (j.at("version").get<int>() != 1) return DataLoss("finalize journal '" + path + "': unknown version");
    std::vector<FileMove> moves;
    for (const auto& m : j.at("moves")) moves.push_back({m.at("from").get<std::string>(), m.at("to").get<std::string>()});
    return moves;
  } catch (...) {
    return DataLoss(FromCurrentException("finalize journal '" + path + "'").message());
  }
}

}  // namespace

Status RunJournaledMoves(const std::string& journal_path, const std::vector<FileMove>& moves) {
  if (Exists(journal_path)) {
    ASSIGN_OR_RETURN(std::vector<FileMove> journaled, FromJson(journal_path));
    if (journaled != moves) {
      return FailedPrecondition("finalize journal '" + journal_path + "' lists " + std::to_string(journaled.size()) +
                                " moves that differ from this job's " + std::to_string(moves.size()) +
                                " (did the job dir change?)");
    }
  } else {
    RETURN_IF_ERROR(WriteFileAtomically(journal_path, ToJson(moves), /*sync=*/true));
    RETURN_IF_ERROR(FsyncPath(Parent(journal_path)));
  }
  std::set<std::string> dirs;
  for (std::size_t i = 0; i < moves.size(); ++i) {
    const FileMove& m = moves[i];
    const std::string point = "finalize-move-" + std::to_string(i);
    test_hooks::KillPoint(point);
    RETURN_IF_ERROR(test_hooks::FailPoint(point));
    if (Exists(m.from)) {
      RETURN_IF_ERROR(MoveDurably(m));
    } else if (!Exists(m.to)) {
      return DataLoss("finalize: neither the committed output '" + m.from + "' nor its shard '" + m.to +
                      "' exists (was the output removed?)");
    }
    dirs.insert(Parent(m.to));
    dirs.insert(Parent(m.from));
  }
  for (const std::string& d : dirs) RETURN_IF_ERROR(FsyncPath(d));
  return Status::OK();
}

}  // namespace dfw
