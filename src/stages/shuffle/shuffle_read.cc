// Reading a committed shuffle (shuffle_read.h).
#include "shuffle_read.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>

#include "dfw/common/file.h"
#include "dfw/record/value_codec.h"
#include "shuffle_format.h"

namespace dfw::stages_internal {
namespace {

Result<std::string> ReadRange(int fd, const std::string& path, uint64_t offset, uint64_t length) {
  std::string buf(length, '\0');
  const int64_t got = ReadAllAt(fd, buf.data(), length, static_cast<int64_t>(offset));
  if (got < 0) return ErrnoError("read '" + path + "'", static_cast<int>(-got));
  if (static_cast<uint64_t>(got) < length) {
    return DataLoss(fmt::format("shuffle file '{}' is truncated (wanted {} bytes at {})", path, length, offset));
  }
  return buf;
}

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

Result<ShuffleFile> ReadShuffleFileIndex(const std::string& path, uint64_t expected_partitions, uint64_t expected_arity,
                                         std::string_view arity_name) {
  constexpr std::string_view kMagic = kShuffleMagic;
  Fd f;
  f.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (f.fd < 0) return ErrnoError("open the shuffle file '" + path + "'", errno);
  off_t size = ::lseek(f.fd, 0, SEEK_END);
  if (size < 0) return ErrnoError("size of '" + path + "'", errno);
  auto bad = [&](const std::string& what) { return DataLoss("shuffle file '" + path + "' is corrupt: " + what); };
  const auto total = static_cast<uint64_t>(size);
  if (total < 2 * kMagic.size() + 8) return bad("too short");
  ASSIGN_OR_RETURN(std::string head, ReadRange(f.fd, path, 0, kMagic.size()));
  ASSIGN_OR_RETURN(std::string tail, ReadRange(f.fd, path, total - 16, 16));
  if (head != kMagic || std::string_view(tail).substr(8) != kMagic) return bad("no DFWSHUF1 header or trailer");
  std::string_view trailer(tail);
  ASSIGN_OR_RETURN(uint64_t index_at, DecodeFixed64(trailer));
  if (index_at < kMagic.size() || index_at > total - 16) return bad("index offset out of range");
  ASSIGN_OR_RETURN(std::string header, ReadRange(f.fd, path, kMagic.size(), std::min<uint64_t>(20, index_at - kMagic.size())));
  std::string_view h(header);
  ASSIGN_OR_RETURN(uint64_t partitions, DecodeVarint(h));
  ASSIGN_OR_RETURN(uint64_t arity, DecodeVarint(h));
  if (partitions != expected_partitions || arity != expected_arity) {
    return bad(fmt::format("written for {} partitions and {} {}, read with {} and {}", partitions, arity, arity_name,
                           expected_partitions, expected_arity));
  }
  ASSIGN_OR_RETURN(std::string index, ReadRange(f.fd, path, index_at, total - 16 - index_at));
  std::string_view in(index);
  ASSIGN_OR_RETURN(uint64_t sections, DecodeVarint(in));
  if (sections > index.size()) return bad("more sections than index bytes");
  ShuffleFile file;
  file.path = path;
  file.by_partition.resize(static_cast<std::size_t>(partitions));
  for (uint64_t s = 0; s < sections; ++s) {
    ASSIGN_OR_RETURN(uint64_t p, DecodeVarint(in));
    ASSIGN_OR_RETURN(uint64_t offset, DecodeVarint(in));
    ASSIGN_OR_RETURN(uint64_t length, DecodeVarint(in));
    if (p >= partitions || offset < kMagic.size() || offset > index_at || length > index_at - offset) {
      return bad("a section lies outside the data");
    }
    file.by_partition[p].push_back(ShuffleFile::Section{offset, length});
  }
  return file;
}

Result<std::vector<int64_t>> ReadShuffleIndex(const std::string& dir) {
  const std::string path = dir + "/" + kShuffleIndexFile;
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    return FailedPrecondition("shuffle '" + dir + "' is not complete (no " + kShuffleIndexFile +
                              "): the stage that writes it has not finished");
  }
  std::string text;
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
  std::fclose(f);
  if (text.compare(0, kShuffleIndexHeader.size(), kShuffleIndexHeader) != 0) return DataLoss("'" + path + "' is not a shuffle index");
  std::vector<int64_t> ids;
  std::size_t pos = kShuffleIndexHeader.size();
  while (pos < text.size()) {
    std::size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) return DataLoss("'" + path + "' is truncated");
    std::string line = text.substr(pos, nl - pos);
    char* end = nullptr;
    errno = 0;
    long long id = std::strtoll(line.c_str(), &end, 10);
    if (line.empty() || errno != 0 || *end != '\0' || id < 0) return DataLoss("'" + path + "': bad bundle id '" + line + "'");
    ids.push_back(id);
    pos = nl + 1;
  }
  return ids;
}

Result<std::vector<ShuffleFile>> ReadShuffleFiles(const std::string& dir, uint64_t partitions, uint64_t arity,
                                                  std::string_view arity_name) {
  ASSIGN_OR_RETURN(std::vector<int64_t> ids, ReadShuffleIndex(dir));
  std::vector<ShuffleFile> files;
  files.reserve(ids.size());
  for (int64_t id : ids) {
    ASSIGN_OR_RETURN(ShuffleFile file, ReadShuffleFileIndex(fmt::format("{}/bundle-{}.done", dir, id), partitions, arity, arity_name));
    files.push_back(std::move(file));
  }
  return files;
}

Status ForEachSection(const ShuffleFile& file, int64_t partition, const std::function<Status(std::string&)>& fn) {
  const auto& sections = file.by_partition[static_cast<std::size_t>(partition)];
  if (sections.empty()) return Status::OK();
  Fd f;
  f.fd = ::open(file.path.c_str(), O_RDONLY | O_CLOEXEC);
  if (f.fd < 0) return ErrnoError("open the shuffle file '" + file.path + "'", errno);
  for (const ShuffleFile::Section& section : sections) {
    ASSIGN_OR_RETURN(std::string data, ReadRange(f.fd, file.path, section.offset, section.length));
    RETURN_IF_ERROR(fn(data));
  }
  return Status::OK();
}

std::vector<uint64_t> PartitionStarts(const std::vector<const ShuffleFile*>& files, std::size_t partitions) {
  std::vector<uint64_t> bytes(partitions, 0);
  for (const ShuffleFile* file : files) {
    for (std::size_t p = 0; p < partitions && p < file->by_partition.size(); ++p) {
      for (const auto& section : file->by_partition[p]) bytes[p] += section.length;
    }
  }
  std::vector<uint64_t> start(partitions + 1, 0);
  for (std::size_t p = 0; p < partitions; ++p) start[p + 1] = start[p] + bytes[p];
  return start;
}

std::vector<SourceSplit> SplitPartitions(const std::string& dir, const std::vector<uint64_t>& start, int64_t target_bytes) {
  std::vector<SourceSplit> splits;
  const auto target = static_cast<uint64_t>(std::max<int64_t>(1, target_bytes));
  std::size_t p = 0;
  const std::size_t partitions = start.size() - 1;
  while (p < partitions) {
    std::size_t q = p + 1;
    while (q < partitions && start[q] - start[p] < target) ++q;
    splits.push_back(SourceSplit{dir, static_cast<int64_t>(start[p]), static_cast<int64_t>(start[q]), 1});
    p = q;
  }
  return splits;
}

Result<std::pair<int64_t, int64_t>> PartitionsOfSplit(const std::string& dir, const std::vector<uint64_t>& start,
                                                      const SourceSplit& split) {
  const auto total = static_cast<int64_t>(start.back());
  if (split.begin < 0 || split.end < split.begin || split.end > total) {
    return InvalidArgument(fmt::format("shuffle '{}': no byte range [{}, {}) in a shuffle of {} bytes", dir, split.begin,
                                       split.end, total));
  }
  const auto partitions = static_cast<int64_t>(start.size() - 1);
  auto first = static_cast<int64_t>(std::lower_bound(start.begin(), start.end() - 1, static_cast<uint64_t>(split.begin)) - start.begin());
  auto end = split.end == total ? partitions
                                : static_cast<int64_t>(std::lower_bound(start.begin(), start.end() - 1,
                                                                        static_cast<uint64_t>(split.end)) - start.begin());
  if (split.begin != static_cast<int64_t>(start[static_cast<std::size_t>(first)]) ||
      (split.end != total && split.end != static_cast<int64_t>(start[static_cast<std::size_t>(end)]))) {
    return InvalidArgument(fmt::format("shuffle '{}': [{}, {}) does not fall on partition boundaries", dir, split.begin, split.end));
  }
  return std::make_pair(first, end);
}

std::optional<int64_t> PartitionCursor::Claim() {
  std::lock_guard<std::mutex> lock(mu_);
  if (next_ >= end_) return std::nullopt;
  return next_++;
}

bool PartitionCursor::Exhausted() const {
  std::lock_guard<std::mutex> lock(mu_);
  return next_ >= end_;
}

std::optional<SplitProgress> PartitionCursor::Progress() const {
  std::lock_guard<std::mutex> lock(mu_);
  const auto done = static_cast<int64_t>((*start_)[static_cast<std::size_t>(next_)]) - range_begin_;
  return SplitProgress{std::max<int64_t>(0, done), range_end_ - range_begin_};
}

std::optional<SourceSplit> PartitionCursor::TrySplit(double fraction) {
  std::lock_guard<std::mutex> lock(mu_);
  const int64_t left = end_ - next_;
  if (left < 1) return std::nullopt;
  fraction = std::clamp(fraction, 0.0, 1.0);
  int64_t cut = next_ + static_cast<int64_t>(fraction * static_cast<double>(left));
  cut = std::min(std::max(cut, next_), end_ - 1);
  const auto cut_bytes = static_cast<int64_t>((*start_)[static_cast<std::size_t>(cut)]);
  if (range_end_ - cut_bytes < kMinSplitBytes) return std::nullopt;
  SourceSplit residual{dir_, cut_bytes, range_end_, 1};
  end_ = cut;
  range_end_ = cut_bytes;
  return residual;
}

}  // namespace dfw::stages_internal
