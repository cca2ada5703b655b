// Combine/merge: the reduce stage's source over a committed shuffle (format: combine.cc's header
// comment), its byte-range bundles over the partitions, the session merge, and the rows it emits.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <optional>

#include <fmt/format.h>

#include "dfw/stages/combine.h"
#include "dfw/stages/config.h"
#include "shuffle_format.h"

namespace dfw {
namespace stages_internal {
namespace {

constexpr std::string_view kMagic = kShuffleMagic;
constexpr const char* kIndexFile = kShuffleIndexFile;
constexpr std::string_view kIndexHeader = kShuffleIndexHeader;

// ---- reading a shuffle ----------------------------------------------------------------------------

Result<std::string> ReadRange(int fd, const std::string& path, uint64_t offset, uint64_t length) {
  std::string buf(length, '\0');
  uint64_t got = 0;
  while (got < length) {
    ssize_t n = ::pread(fd, buf.data() + got, length - got, static_cast<off_t>(offset + got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoError("read '" + path + "'", errno);
    if (n == 0) return DataLoss(fmt::format("shuffle file '{}' is truncated (wanted {} bytes at {})", path, length, offset));
    got += static_cast<uint64_t>(n);
  }
  return buf;
}

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// Where each partition's sections are in one committed shuffle file (its validated index).
struct ShuffleFile {
  std::string path;
  struct Section {
    uint64_t offset, length;
  };
  std::vector<std::vector<Section>> by_partition;
};

Result<ShuffleFile> ReadShuffleFileIndex(const std::string& path, const CombineSpec& spec) {
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
  ASSIGN_OR_RETURN(uint64_t aggregations, DecodeVarint(h));
  if (partitions != static_cast<uint64_t>(spec.partitions) || aggregations != spec.aggregations.size()) {
    return bad(fmt::format("written for {} partitions and {} aggregations, read with {} and {}", partitions, aggregations,
                           spec.partitions, spec.aggregations.size()));
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

// Merges partition `partition` of one committed shuffle file into `keys`.
Status MergeFile(const ShuffleFile& file, const CombineSpec& spec, int64_t partition, KeyTable& keys) {
  const auto& sections = file.by_partition[static_cast<std::size_t>(partition)];
  if (sections.empty()) return Status::OK();
  const std::string& path = file.path;
  Fd f;
  f.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (f.fd < 0) return ErrnoError("open the shuffle file '" + path + "'", errno);
  auto bad = [&](const std::string& what) { return DataLoss("shuffle file '" + path + "' is corrupt: " + what); };
  for (const ShuffleFile::Section& section : sections) {
    ASSIGN_OR_RETURN(std::string data, ReadRange(f.fd, path, section.offset, section.length));
    std::string_view d(data);
    while (!d.empty()) {
      ASSIGN_OR_RETURN(uint64_t key_len, DecodeVarint(d));
      if (key_len > d.size()) return bad("a key runs past its section");
      std::string key(d.substr(0, key_len));
      d.remove_prefix(key_len);
      ASSIGN_OR_RETURN(uint64_t acc_len, DecodeVarint(d));
      if (acc_len > d.size()) return bad("accumulators run past their section");
      auto decoded = DecodeWholeValue(d.substr(0, acc_len));
      d.remove_prefix(acc_len);
      if (!decoded.ok()) return bad(decoded.status().message());
      if (!decoded->is_list() || decoded->as_list().size() != spec.aggregations.size()) return bad("accumulators of the wrong arity");
      Accumulators accs(spec.aggregations.size());
      for (std::size_t i = 0; i < accs.size(); ++i) {
        auto acc = stages_internal::FromValue(spec.aggregations[i], decoded->as_list()[i]);
        if (!acc.ok()) return bad(acc.status().message());
        accs[i] = std::move(*acc);
      }
      Accumulators* into = keys.Find(key);
      if (into == nullptr) {
        keys.Insert(std::move(key), std::move(accs));
        continue;
      }
      for (std::size_t i = 0; i < accs.size(); ++i) {
        RETURN_IF_ERROR(stages_internal::MergeAccumulator(spec.aggregations[i], (*into)[i], std::move(accs[i])));
      }
    }
  }
  return Status::OK();
}

Result<std::vector<int64_t>> ReadShuffleIndex(const std::string& dir) {
  const std::string path = dir + "/" + kIndexFile;
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    return FailedPrecondition("shuffle '" + dir + "' is not complete (no " + kIndexFile +
                              "): the stage that writes it has not finished");
  }
  std::string text;
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
  std::fclose(f);
  if (text.compare(0, kIndexHeader.size(), kIndexHeader) != 0) return DataLoss("'" + path + "' is not a shuffle index");
  std::vector<int64_t> ids;
  std::size_t pos = kIndexHeader.size();
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

// ---- Combine/merge: a source whose bundles are ranges of the shuffle's partitions ---------------

// A committed shuffle as the reduce stage sees it: every file's index, and a byte space over the
// partitions (partition p spans [start[p], start[p + 1]), its bytes summed over the files), so the
// bundle planner cuts the shuffle into bundles of about the target size, at partition boundaries.
struct ShuffleLayout {
  std::vector<ShuffleFile> files;
  std::vector<uint64_t> start;  // partitions + 1 entries
};

Result<ShuffleLayout> ReadShuffleLayout(const std::string& dir, const CombineSpec& spec) {
  ASSIGN_OR_RETURN(std::vector<int64_t> ids, ReadShuffleIndex(dir));
  ShuffleLayout layout;
  std::vector<uint64_t> bytes(static_cast<std::size_t>(spec.partitions), 0);
  for (int64_t id : ids) {
    ASSIGN_OR_RETURN(ShuffleFile file, ReadShuffleFileIndex(fmt::format("{}/bundle-{}.done", dir, id), spec));
    for (std::size_t p = 0; p < bytes.size(); ++p) {
      for (const auto& section : file.by_partition[p]) bytes[p] += section.length;
    }
    layout.files.push_back(std::move(file));
  }
  layout.start.assign(bytes.size() + 1, 0);
  for (std::size_t p = 0; p < bytes.size(); ++p) layout.start[p + 1] = layout.start[p] + bytes[p];
  return layout;
}

// Merges one partition at a time (memory: the keys of one partition) and emits its rows.
class MergeReader final : public SplitReader {
 public:
  // Partitions [first, end) of the layout, the byte range [range_begin, range_end) of the split.
  MergeReader(const CombineSpec* spec, const ShuffleLayout* layout, std::string dir, int64_t first, int64_t end,
              int64_t range_begin, int64_t range_end)
      : spec_(spec), layout_(layout), dir_(std::move(dir)), next_partition_(first), end_partition_(end),
        range_begin_(range_begin), range_end_(range_end) {}

  Result<bool> Next(StageOutput& out, std::size_t max_rows) override {
    std::size_t emitted = 0;
    while (emitted < max_rows) {
      if (next_row_ >= keys_.size()) {
        int64_t p;
        {
          std::lock_guard<std::mutex> lock(mu_);  // a partition is claimed before it is merged
          if (next_partition_ >= end_partition_) return false;
          p = next_partition_++;
        }
        keys_.clear();
        next_row_ = 0;
        for (const ShuffleFile& file : layout_->files) RETURN_IF_ERROR(MergeFile(file, *spec_, p, keys_));
        if (spec_->window && spec_->window->kind == stages_internal::WindowFn::Kind::kSessions) RETURN_IF_ERROR(MergeSessions());
        continue;
      }
      RETURN_IF_ERROR(Emit(keys_.entries()[next_row_++], out));
      ++emitted;
    }
    std::lock_guard<std::mutex> lock(mu_);
    return next_row_ < keys_.size() || next_partition_ < end_partition_;
  }

  // In shuffle bytes: the partitions claimed so far, of the range.
  std::optional<SplitProgress> Progress() const override {
    std::lock_guard<std::mutex> lock(mu_);
    const auto done = static_cast<int64_t>(layout_->start[static_cast<std::size_t>(next_partition_)]) - range_begin_;
    return SplitProgress{std::max<int64_t>(0, done), range_end_ - range_begin_};
  }

  // Dynamic work rebalancing: gives away the unclaimed partitions from a partition boundary at or
  // after `fraction` of them (at least kMinSplitBytes of shuffle data; the partition being merged
  // stays here).
  std::optional<SourceSplit> TrySplit(double fraction) override {
    std::lock_guard<std::mutex> lock(mu_);
    const int64_t left = end_partition_ - next_partition_;
    if (left < 1) return std::nullopt;
    fraction = std::clamp(fraction, 0.0, 1.0);
    int64_t cut = next_partition_ + static_cast<int64_t>(fraction * static_cast<double>(left));
    cut = std::min(std::max(cut, next_partition_), end_partition_ - 1);
    const auto cut_bytes = static_cast<int64_t>(layout_->start[static_cast<std::size_t>(cut)]);
    if (range_end_ - cut_bytes < kMinSplitBytes) return std::nullopt;
    SourceSplit residual{dir_, cut_bytes, range_end_, 1};
    end_partition_ = cut;
    range_end_ = cut_bytes;
    return residual;
  }

 private:
  // Sessions: a key's windows that overlap become one ([min start, max end)) with their
  // accumulators merged; Beam merges on intersection, so windows that only touch stay apart.
  Status MergeSessions() {
    struct Item {
      std::string_view values;
      int64_t start, end;
      std::size_t entry;
    };
    auto& entries = keys_.entries();
    std::vector<Item> items;
    items.reserve(entries.size());
    for (std::size_t i = 0; i < entries.size(); ++i) {
      const std::string& key = entries[i].first;
      KeyParts parts = SplitKey(key, spec_->group_by.size());
      if (!parts.windowed) return DataLoss("shuffle '" + dir_ + "': a sessions Combine's key has no window");
      std::string_view w = std::string_view(key).substr(key.size() - kWindowItemBytes);
      auto window = DecodeWholeValue(w);
      if (!window.ok() || !window->is_list() || window->as_list().size() != 2 || !window->as_list()[0].is_int() ||
          !window->as_list()[1].is_int()) {
        return DataLoss("shuffle '" + dir_ + "': a key's window is malformed");
      }
      items.push_back(Item{parts.values, window->as_list()[0].as_int(), window->as_list()[1].as_int(), i});
    }
    std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
      return a.values != b.values ? a.values < b.values : a.start < b.start;
    });
    std::vector<std::pair<std::string, Accumulators>> merged;
    std::string header;
    AppendEncodedListHeader(header, spec_->group_by.size() + 1);
    for (std::size_t i = 0; i < items.size();) {
      Item session = items[i];
      Accumulators accs = std::move(entries[session.entry].second);
      std::size_t j = i + 1;
      for (; j < items.size() && items[j].values == session.values && items[j].start < session.end; ++j) {
        session.end = std::max(session.end, items[j].end);
        for (std::size_t k = 0; k < accs.size(); ++k) {
          RETURN_IF_ERROR(stages_internal::MergeAccumulator(spec_->aggregations[k], accs[k],
                                                            std::move(entries[items[j].entry].second[k])));
        }
      }
      std::string key = header;
      key.append(session.values);
      AppendWindowItem(key, session.start, session.end);
      merged.emplace_back(std::move(key), std::move(accs));
      i = j;
    }
    keys_.clear();
    for (auto& [key, accs] : merged) keys_.Insert(std::move(key), std::move(accs));
    return Status::OK();
  }

  Status Emit(std::pair<std::string, Accumulators>& entry, StageOutput& out) {
    auto& [key_bytes, accs] = entry;
    auto key = DecodeWholeValue(key_bytes);
    const std::size_t keys = spec_->group_by.size();
    if (!key.ok() || !key->is_list() || key->as_list().size() < keys || key->as_list().size() > keys + 1) {
      return DataLoss("shuffle '" + dir_ + "': a key of the wrong shape");
    }
    Row row;
    if (key->as_list().size() == keys + 1) {  // a windowed group: its output lives in that window
      const Value& w = key->as_list()[keys];
      if (!w.is_list() || w.as_list().size() != 2 || !w.as_list()[0].is_int() || !w.as_list()[1].is_int() ||
          w.as_list()[0].as_int() >= w.as_list()[1].as_int()) {
        return DataLoss("shuffle '" + dir_ + "': a key's window is malformed");
      }
      row.set_window(w.as_list()[0].as_int(), w.as_list()[1].as_int());
      row.set_timestamp_us(w.as_list()[1].as_int() - 1);  // Beam: the window's end of time
    }
    row.Reserve(keys + accs.size());
    for (std::size_t i = 0; i < keys; ++i) row.Append(spec_->group_by[i], key->as_list()[i]);
    for (std::size_t i = 0; i < accs.size(); ++i) {
      row.Append(spec_->aggregations[i].output, stages_internal::ExtractOutput(spec_->aggregations[i], std::move(accs[i])));
    }
    out.Emit(std::move(row));
    return Status::OK();
  }

  const CombineSpec* spec_;
  const ShuffleLayout* layout_;
  std::string dir_;
  mutable std::mutex mu_;                   // Next against Progress/TrySplit (another thread)
  int64_t next_partition_, end_partition_;  // partitions [next, end) still to merge (guarded)
  int64_t range_begin_, range_end_;         // the split's bytes (range_end_ shrinks with TrySplit)
  KeyTable keys_;                           // the partition being emitted
  std::size_t next_row_ = 0;
};

class CombineMerge final : public Stage {
 public:
  CombineMerge(CombineSpec spec, std::string dir) : spec_(std::move(spec)), dir_(std::move(dir)) {}

  Status Process(RowBatch&, StageOutput&) override { return Internal("Combine/merge has no input"); }

  // Ranges of whole partitions of about `target_bytes` of shuffle data each (at least one
  // partition per range), tiling [0, total bytes).
  Result<std::vector<SourceSplit>> Split(int64_t target_bytes) override {
    ASSIGN_OR_RETURN(const ShuffleLayout* layout, Layout());
    const auto& start = layout->start;
    std::vector<SourceSplit> splits;
    const auto target = static_cast<uint64_t>(std::max<int64_t>(1, target_bytes));
    std::size_t p = 0;
    const std::size_t partitions = start.size() - 1;
    while (p < partitions) {
      std::size_t q = p + 1;
      while (q < partitions && start[q] - start[p] < target) ++q;
      splits.push_back(SourceSplit{dir_, static_cast<int64_t>(start[p]), static_cast<int64_t>(start[q]), 1});
      p = q;
    }
    return splits;
  }

  // The partitions whose bytes start in [begin, end); the last range also takes the empty
  // partitions at the very end.
  Result<std::unique_ptr<SplitReader>> OpenSplit(const SourceSplit& split) override {
    ASSIGN_OR_RETURN(const ShuffleLayout* layout, Layout());
    const auto& start = layout->start;
    const auto total = static_cast<int64_t>(start.back());
    if (split.begin < 0 || split.end < split.begin || split.end > total) {
      return InvalidArgument(fmt::format("shuffle '{}': no byte range [{}, {}) in a shuffle of {} bytes", dir_, split.begin,
                                         split.end, total));
    }
    const auto partitions = static_cast<int64_t>(start.size() - 1);
    auto first = static_cast<int64_t>(std::lower_bound(start.begin(), start.end() - 1, static_cast<uint64_t>(split.begin)) - start.begin());
    auto end = split.end == total ? partitions
                                  : static_cast<int64_t>(std::lower_bound(start.begin(), start.end() - 1,
                                                                          static_cast<uint64_t>(split.end)) - start.begin());
    if (split.begin != static_cast<int64_t>(start[static_cast<std::size_t>(first)]) ||
        (split.end != total && split.end != static_cast<int64_t>(start[static_cast<std::size_t>(end)]))) {
      return InvalidArgument(fmt::format("shuffle '{}': [{}, {}) does not fall on partition boundaries", dir_, split.begin, split.end));
    }
    return std::unique_ptr<SplitReader>(new MergeReader(&spec_, layout, dir_, first, end, split.begin, split.end));
  }

 private:
  // Read once per process: a committed shuffle never changes.
  Result<const ShuffleLayout*> Layout() {
    std::lock_guard<std::mutex> lock(mu_);
    if (!layout_) {
      ASSIGN_OR_RETURN(ShuffleLayout layout, ReadShuffleLayout(dir_, spec_));
      layout_ = std::make_unique<ShuffleLayout>(std::move(layout));
    }
    return layout_.get();
  }

  CombineSpec spec_;
  std::string dir_;
  std::mutex mu_;
  std::unique_ptr<ShuffleLayout> layout_;
};

}  // namespace

Result<std::unique_ptr<Stage>> MakeCombineMerge(const StageConfig& c) {
  ASSIGN_OR_RETURN(CombineSpec spec, stages_internal::ParseCombineSpec(c));
  ASSIGN_OR_RETURN(std::string dir, ConfigString(c, kShuffleDirKey));
  if (dir.empty()) return ConfigKeyError(c, kShuffleDirKey, "must not be empty");
  return std::unique_ptr<Stage>(new CombineMerge(std::move(spec), std::move(dir)));
}

}  // namespace stages_internal
}  // namespace dfw
