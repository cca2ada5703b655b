// Combine/merge: the reduce stage's source over a committed shuffle (format: combine.cc's header
// comment), its byte-range bundles over the partitions, the session merge, and the rows it emits.
#include <algorithm>
#include <mutex>
#include <optional>

#include <fmt/format.h>

#include "dfw/stages/combine.h"
#include "dfw/stages/config.h"
#include "shuffle_format.h"
#include "shuffle_read.h"

namespace dfw {
namespace stages_internal {
namespace {

// Merges partition `partition` of one committed shuffle file into `keys`.
Status MergeFile(const ShuffleFile& file, const CombineSpec& spec, int64_t partition, KeyTable& keys) {
  const std::string& path = file.path;
  auto bad = [&](const std::string& what) { return DataLoss("shuffle file '" + path + "' is corrupt: " + what); };
  return ForEachSection(file, partition, [&](std::string_view d) -> Status {
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
    return Status::OK();
  });
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
  ShuffleLayout layout;
  ASSIGN_OR_RETURN(layout.files, ReadShuffleFiles(dir, static_cast<uint64_t>(spec.partitions), spec.aggregations.size(),
                                                  "aggregations"));
  std::vector<const ShuffleFile*> files;
  for (const ShuffleFile& f : layout.files) files.push_back(&f);
  layout.start = PartitionStarts(files, static_cast<std::size_t>(spec.partitions));
  return layout;
}

// Merges one partition at a time (memory: the keys of one partition) and emits its rows.
class MergeReader final : public SplitReader {
 public:
  // Partitions [first, end) of the layout, the byte range [range_begin, range_end) of the split.
  MergeReader(const CombineSpec* spec, const ShuffleLayout* layout, std::string dir, int64_t first, int64_t end,
              int64_t range_begin, int64_t range_end)
      : spec_(spec), layout_(layout), dir_(dir), cursor_(&layout->start, std::move(dir), first, end, range_begin, range_end) {}

  Result<bool> Next(StageOutput& out, std::size_t max_rows) override {
    std::size_t emitted = 0;
    while (emitted < max_rows) {
      if (next_row_ >= keys_.size()) {
        std::optional<int64_t> p = cursor_.Claim();  // a partition is claimed before it is merged
        if (!p) return false;
        keys_.clear();
        next_row_ = 0;
        for (const ShuffleFile& file : layout_->files) RETURN_IF_ERROR(MergeFile(file, *spec_, *p, keys_));
        if (spec_->window && spec_->window->kind == stages_internal::WindowFn::Kind::kSessions) RETURN_IF_ERROR(MergeSessions());
        continue;
      }
      RETURN_IF_ERROR(Emit(keys_.entries()[next_row_++], out));
      ++emitted;
    }
    return next_row_ < keys_.size() || !cursor_.Exhausted();
  }

  std::optional<SplitProgress> Progress() const override { return cursor_.Progress(); }
  std::optional<SourceSplit> TrySplit(double fraction) override { return cursor_.TrySplit(fraction); }

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
  PartitionCursor cursor_;
  KeyTable keys_;  // the partition being emitted
  std::size_t next_row_ = 0;
};

class CombineMerge final : public Stage {
 public:
  CombineMerge(CombineSpec spec, std::string dir) : spec_(std::move(spec)), dir_(std::move(dir)) {}

  Status Process(RowBatch&, StageOutput&) override { return Internal("Combine/merge has no input"); }

  // Ranges of whole partitions of about `target_bytes` of shuffle data each.
  Result<std::vector<SourceSplit>> Split(int64_t target_bytes) override {
    ASSIGN_OR_RETURN(const ShuffleLayout* layout, Layout());
    return SplitPartitions(dir_, layout->start, target_bytes);
  }

  Result<std::unique_ptr<SplitReader>> OpenSplit(const SourceSplit& split) override {
    ASSIGN_OR_RETURN(const ShuffleLayout* layout, Layout());
    ASSIGN_OR_RETURN(auto range, PartitionsOfSplit(dir_, layout->start, split));
    return std::unique_ptr<SplitReader>(new MergeReader(&spec_, layout, dir_, range.first, range.second, split.begin, split.end));
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
  if (c.shuffle.dir.empty()) return c.ConfigError("a Combine's merge needs its shuffle's folder (the fused-stage plan sets it)");
  return std::unique_ptr<Stage>(new CombineMerge(std::move(spec), c.shuffle.dir));
}

}  // namespace stages_internal
}  // namespace dfw
