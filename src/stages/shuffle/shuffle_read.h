// Reading a committed shuffle (the file format: combine.cc's header comment), shared by the
// reduce-stage sources of Combine (combine_merge.cc) and Join (join.cc): a file's validated
// index, the shuffle's list of committed bundles, the byte space over its partitions that the
// bundle planner cuts, and the cursor a reader claims partitions with (dynamic work rebalancing
// splits it at a partition boundary).
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dfw/common/status.h"
#include "dfw/stages/stage.h"

namespace dfw::stages_internal {

// Where each partition's sections are in one committed shuffle file.
struct ShuffleFile {
  std::string path;
  struct Section {
    uint64_t offset, length;
  };
  std::vector<std::vector<Section>> by_partition;
};

// Opens and validates one committed shuffle file's header, trailer and index. `partitions` and
// `arity` are what the reader expects the header to say (`arity_name` names the second, e.g.
// "aggregations"); a file written for other values is kDataLoss naming both.
Result<ShuffleFile> ReadShuffleFileIndex(const std::string& path, uint64_t partitions, uint64_t arity,
                                         std::string_view arity_name);

// The bundle ids a finished stage committed to the shuffle under `dir` (its shuffle.index);
// kFailedPrecondition when the stage that writes it has not finished.
Result<std::vector<int64_t>> ReadShuffleIndex(const std::string& dir);

// Every committed file of the shuffle under `dir` (<dir>/bundle-<id>.done), validated.
Result<std::vector<ShuffleFile>> ReadShuffleFiles(const std::string& dir, uint64_t partitions, uint64_t arity,
                                                  std::string_view arity_name);

// Calls `fn` with the bytes of each section of `partition` in `file`, in file order. The string is
// the callee's to keep (move it out) or to read as a view.
Status ForEachSection(const ShuffleFile& file, int64_t partition, const std::function<Status(std::string&)>& fn);

// The byte space over the first `partitions` partitions of `files`: partition p spans
// [start[p], start[p + 1]), its bytes summed over the files (partitions + 1 entries).
std::vector<uint64_t> PartitionStarts(const std::vector<const ShuffleFile*>& files, std::size_t partitions);

// Ranges of whole partitions of about `target_bytes` each (at least one partition per range),
// tiling [0, start.back()); each split's path is `dir`.
std::vector<SourceSplit> SplitPartitions(const std::string& dir, const std::vector<uint64_t>& start, int64_t target_bytes);

// The partitions [first, end) whose bytes start in the split's range; the last range also takes
// the empty partitions at the very end. kInvalidArgument for a range off partition boundaries.
Result<std::pair<int64_t, int64_t>> PartitionsOfSplit(const std::string& dir, const std::vector<uint64_t>& start,
                                                      const SourceSplit& split);

// The partitions of one split still to read, claimed one at a time (thread-safe: Claim runs on the
// reader's thread, Progress and TrySplit on the runner's).
class PartitionCursor {
 public:
  PartitionCursor(const std::vector<uint64_t>* start, std::string dir, int64_t first, int64_t end, int64_t range_begin,
                  int64_t range_end)
      : start_(start), dir_(std::move(dir)), next_(first), end_(end), range_begin_(range_begin), range_end_(range_end) {}

  // The next partition to read, or nullopt when none is left.
  std::optional<int64_t> Claim();
  bool Exhausted() const;
  // In shuffle bytes: the partitions claimed so far, of the range.
  std::optional<SplitProgress> Progress() const;
  // Gives away the unclaimed partitions from a partition boundary at or after `fraction` of them
  // (at least kMinSplitBytes of shuffle data; the partition being read stays here).
  std::optional<SourceSplit> TrySplit(double fraction);

 private:
  const std::vector<uint64_t>* start_;
  std::string dir_;
  mutable std::mutex mu_;
  int64_t next_, end_;               // partitions [next, end) still to read (guarded)
  int64_t range_begin_, range_end_;  // the split's bytes (range_end_ shrinks with TrySplit)
};

}  // namespace dfw::stages_internal
