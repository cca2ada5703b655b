// Finalize as one journaled, redoable step: the moves of committed bundle outputs to their final
// shard names are written durably to a journal before the first rename, each move can be redone
// or recognised as done, and the target folders are fsync'd before it returns. A launcher killed
// (or a disk that filled up) at any point of finalize leaves a job that `--resume` finishes with
// every record exactly once: nothing committed is removed before its shard exists.
#pragma once

#include <string>
#include <vector>

#include "dfw/common/status.h"

namespace dfw {

struct FileMove {
  std::string from;  // a committed bundle output
  std::string to;    // its final name
  bool operator==(const FileMove&) const = default;
};

// One move. The committed file is made kOutputFileMode (0644, whatever the umask) first; the
// target folder is opened once and refused (kInvalidArgument) when every user can write to it and
// it has no sticky bit. Then renameat(2) into that folder; across file systems a copy into a new
// file under an unpredictable name created exclusively in the folder (O_EXCL | O_NOFOLLOW: never a
// name another user planted), fsync'd and renamed onto the shard name (and the folder fsync'd)
// before the source is removed. kIoError naming both paths, with the errno's text.
Status MoveDurably(const FileMove& move);

// Runs `moves` in order, journaled at `journal_path` (its folder must exist):
// - no journal yet: writes it (fsync'd, atomically), then moves;
// - a journal from an interrupted run: it must list the same moves (kFailedPrecondition
//   otherwise: the job's plan changed under it); moves already done are recognised and skipped.
// A move is done when `from` is gone and `to` exists; `from` and `to` both missing is kDataLoss
// naming both. Moves across file systems copy to a temporary name, fsync, rename, then unlink.
// Test hooks (dfw/common/test_hooks.h): kill point and fail point "finalize-move-<i>" before move i.
Status RunJournaledMoves(const std::string& journal_path, const std::vector<FileMove>& moves);

}  // namespace dfw
