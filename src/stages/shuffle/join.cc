// Join (dfw/stages/join.h): the partial sink that writes one input's rows to the shuffle, the merge
// source that reads every input's partition and joins each key group, and the user-facing type.
//
// Shuffle file of one bundle of one input (<staging>/<join name>/<tag>/bundle-<id>.done), the
// container of combine.cc's header comment with partitions = P + 1 and arity 1:
//   partitions 0 .. P-1: records varint(key bytes) key (AppendJoinKey) varint(row bytes) row (an
//                        encoded Row value), the rows of that partition in arrival order
//   partition P:         one record, an empty key and the encoded list of the field names the
//                        bundle's rows had (first-seen order): the input's schema, which gives a
//                        null-extended row its columns
// A bundle writes its buffered rows as sections whenever they pass kSpillBytes, so its memory is
// bounded whatever its size.
#include "dfw/stages/join.h"

#include <algorithm>
#include <cstdlib>
#include <deque>
#include <functional>
#include <string_view>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "dfw/common/test_hooks.h"
#include "dfw/record/value_codec.h"
#include "dfw/stages/combine.h"
#include "dfw/stages/config.h"
#include "dfw/stages/sink.h"
#include "dfw/stages/stage.h"
#include "join_spec.h"
#include "shuffle_format.h"
#include "unfused_stage.h"
#include "shuffle_read.h"
#include "stages/sink_file.h"

namespace dfw {

std::string JoinShuffleName(std::string_view join_name, std::string_view tag) {
  return std::string(join_name) + "/" + std::string(tag);
}

Result<std::string> JoinPartialShuffleName(const StageConfig& partial) {
  const int64_t input = partial.shuffle.join_input;
  if (input < 0 || input >= static_cast<int64_t>(partial.input_names.size())) {
    return partial.ConfigError(fmt::format("the Join's partial: input {} names no input of {}", input, partial.input_names.size()));
  }
  return JoinShuffleName(partial.name, partial.input_names[static_cast<std::size_t>(input)]);
}

namespace {

using stages_internal::JoinSpec;
using stages_internal::ShuffleFile;

constexpr std::size_t kSpillBytes = std::size_t{8} << 20;
constexpr uint64_t kArity = 1;  // one row per record
constexpr const char* kArityName = "values per record (a Join's rows)";

// The spill threshold; a test hook (DFW_TEST_JOIN_SPILL_BYTES) lowers it so that tests spill.
std::size_t SpillBytes() {
  auto v = test_hooks::Get("JOIN_SPILL_BYTES");
  long long x = v ? std::atoll(v->c_str()) : 0;
  return x > 0 ? static_cast<std::size_t>(x) : kSpillBytes;
}

// ---- Join/partial: a sink writing one bundle of one input's rows, by key partition -------------

class JoinPartial final : public Stage {
 public:
  JoinPartial(StageConfig config, JoinSpec spec, int input, std::string dir)
      : config_(std::move(config)), spec_(std::move(spec)), input_(input), dir_(std::move(dir)) {
    // An input named in `fields` (not starred) has its rows shuffled with those columns only: the
    // merge reads nothing else of them (the key travels on its own, the schema from the whole row).
    if (!spec_.star[static_cast<std::size_t>(input_)]) {
      keep_.emplace();
      for (const JoinSpec::Field& f : spec_.fields) {
        if (f.input == input_) keep_->push_back(f.column);
      }
    }
    if (config_.run.metrics != nullptr) {
      shuffle_bytes_ = config_.run.metrics->Counter(config_.name, "shuffle_bytes_written");
      null_keys_ = config_.run.metrics->Counter(config_.name, "join_null_keys");
    }
  }

  Status StartBundle(const BundleContext& bundle) override {
    spill_bytes_ = SpillBytes();
    buffers_.assign(static_cast<std::size_t>(spec_.partitions), std::string());
    buffered_ = 0;
    schema_.clear();
    seen_.clear();
    last_fields_.clear();
    keep_mask_.clear();
    index_.clear();
    written_ = 0;
    null_rows_ = 0;
    RETURN_IF_ERROR(file_.Open(bundle, dir_).WithContext(config_.Where()));
    return Write(stages_internal::ShuffleHeader(static_cast<uint64_t>(spec_.partitions) + 1, kArity));
  }

  // Serial (registered so): one bundle's rows in arrival order, no lock.
  Status Process(RowBatch& in, StageOutput&) override {
    for (Row& row : in) {
      if (!SameFieldsAsLast(row)) {  // rows of one source mostly repeat their fields
        last_fields_.clear();
        keep_mask_.clear();
        for (const Field& f : row.fields()) {
          if (seen_.insert(f.name).second) schema_.push_back(f.name);
          last_fields_.push_back(f.name);
          if (keep_) keep_mask_.push_back(std::find(keep_->begin(), keep_->end(), f.name) != keep_->end() ? 1 : 0);
        }
      }
      key_.clear();
      stages_internal::AppendJoinKey(spec_, input_, row, key_);
      uint64_t partition;
      if (stages_internal::IsNullJoinKey(key_)) {
        partition = null_rows_++ % static_cast<uint64_t>(spec_.partitions);  // matches nothing: anywhere
        if (null_keys_ != nullptr) null_keys_->Inc();
      } else {
        partition = stages_internal::KeyHash(key_) % static_cast<uint64_t>(spec_.partitions);
      }
      std::string& buf = buffers_[partition];
      const std::size_t before = buf.size();
      AppendVarint(buf, key_.size());
      buf.append(key_);
      // The row is encoded straight into the buffer behind a one-byte length (a row under 128
      // bytes, nearly all); a longer row's length takes more varint bytes, and the row moves up
      // to make room. The bytes are those of the length's varint followed by the row.
      const std::size_t length_at = buf.size();
      buf.push_back('\0');
      if (keep_) {
        AppendEncodedRowFields(buf, row, keep_mask_);
      } else {
        AppendEncodedRow(buf, row);
      }
      const std::size_t row_bytes = buf.size() - length_at - 1;
      if (row_bytes < 0x80) {
        buf[length_at] = static_cast<char>(row_bytes);
      } else {
        std::string length;
        AppendVarint(length, row_bytes);
        buf.replace(length_at, 1, length);
      }
      buffered_ += buf.size() - before;
      if (buffered_ >= spill_bytes_) RETURN_IF_ERROR(Spill());
    }
    return Status::OK();
  }

  Status FinishBundle(StageOutput&) override {
    RETURN_IF_ERROR(Spill());
    std::string schema;
    AppendVarint(schema, 0);  // no key
    List names;
    for (const std::string& s : schema_) names.push_back(Value::String(s));
    std::string encoded;
    AppendEncodedValue(encoded, Value::FromList(std::move(names)));
    AppendVarint(schema, encoded.size());
    schema.append(encoded);
    RETURN_IF_ERROR(WriteSection(spec_.partitions, schema));
    RETURN_IF_ERROR(Write(stages_internal::ShuffleFooter(index_, written_)));
    if (shuffle_bytes_ != nullptr) shuffle_bytes_->Inc(static_cast<int64_t>(written_));
    return file_.Commit().WithContext(config_.Where());
  }

 private:
  bool SameFieldsAsLast(const Row& row) const {
    if (row.size() != last_fields_.size()) return false;
    for (std::size_t i = 0; i < last_fields_.size(); ++i) {
      if (!Row::SameFieldName(row.fields()[i].name, last_fields_[i])) return false;
    }
    return true;
  }

  Status Spill() {
    for (std::size_t p = 0; p < buffers_.size(); ++p) {
      if (buffers_[p].empty()) continue;
      RETURN_IF_ERROR(WriteSection(static_cast<int64_t>(p), buffers_[p]));
      buffers_[p].clear();
    }
    buffered_ = 0;
    return Status::OK();
  }
  Status WriteSection(int64_t partition, std::string_view bytes) {
    index_.push_back(stages_internal::ShuffleSection{partition, written_, bytes.size()});
    return Write(bytes);
  }
  Status Write(std::string_view bytes) {
    RETURN_IF_ERROR(file_.Write(bytes).WithContext(config_.Where()));
    written_ += bytes.size();
    return Status::OK();
  }

  StageConfig config_;
  JoinSpec spec_;
  int input_;
  std::string dir_;  // under the staging dir: <join name>/<tag>
  std::size_t spill_bytes_ = kSpillBytes;
  std::vector<std::string> buffers_;  // per partition: records not yet written
  std::size_t buffered_ = 0;
  std::vector<std::string> schema_;
  std::unordered_set<std::string> seen_;
  std::vector<std::string> last_fields_;  // the previous row's field names (already in schema_)
  std::string key_;
  std::optional<std::vector<std::string>> keep_;  // the columns shuffled; unset: every field
  std::vector<uint8_t> keep_mask_;                // [i]: last_fields_[i] is one of keep_
  uint64_t null_rows_ = 0;
  stages_internal::BundleFile file_;
  std::vector<stages_internal::ShuffleSection> index_;
  uint64_t written_ = 0;
  CounterCell* shuffle_bytes_ = nullptr;
  CounterCell* null_keys_ = nullptr;
};

// ---- Join/merge: a source whose bundles are ranges of the shuffle's partitions -----------------

// Every input's committed shuffle, its schema, and the byte space over the partitions (summed
// over the inputs' files).
struct JoinLayout {
  std::vector<std::vector<ShuffleFile>> files;     // [input]
  std::vector<std::vector<std::string>> schemas;   // [input]: field names, first-seen over its bundles
  std::vector<JoinSpec::Field> columns;            // the output's
  std::vector<uint64_t> start;                     // partitions + 1 entries
};

// A damaged shuffle file: DataLoss naming it.
Status Corrupt(const ShuffleFile& file, const std::string& what) {
  return DataLoss("shuffle file '" + file.path + "' is corrupt: " + what);
}

Status ReadSchema(const ShuffleFile& file, int64_t partition, std::vector<std::string>& names,
                  std::unordered_set<std::string>& seen) {
  auto bad = [&](const std::string& what) { return Corrupt(file, what); };
  return stages_internal::ForEachSection(file, partition, [&](std::string_view d) -> Status {
    ASSIGN_OR_RETURN(uint64_t key_len, DecodeVarint(d));
    if (key_len != 0) return bad("its schema record has a key");
    ASSIGN_OR_RETURN(uint64_t len, DecodeVarint(d));
    if (len != d.size()) return bad("its schema record's length is wrong");
    auto list = DecodeWholeValue(d);
    if (!list.ok() || !list->is_list()) return bad("its schema is not a list");
    for (const Value& v : list->as_list()) {
      if (!v.is_string()) return bad("a schema name is not a string");
      if (seen.insert(v.as_string()).second) names.push_back(v.as_string());
    }
    return Status::OK();
  });
}

Result<JoinLayout> ReadJoinLayout(const StageConfig& c, const JoinSpec& spec, const std::vector<std::string>& dirs) {
  JoinLayout layout;
  const auto partitions = static_cast<uint64_t>(spec.partitions);
  std::vector<const ShuffleFile*> all;
  layout.files.resize(spec.inputs.size());
  layout.schemas.resize(spec.inputs.size());
  for (std::size_t i = 0; i < spec.inputs.size(); ++i) {
    ASSIGN_OR_RETURN(layout.files[i], stages_internal::ReadShuffleFiles(dirs[i], partitions + 1, kArity, kArityName));
    std::unordered_set<std::string> seen;
    for (const ShuffleFile& f : layout.files[i]) {
      RETURN_IF_ERROR(ReadSchema(f, spec.partitions, layout.schemas[i], seen));
      all.push_back(&f);
    }
  }
  ASSIGN_OR_RETURN(layout.columns, stages_internal::JoinOutputColumns(c, spec, layout.schemas));
  layout.start = stages_internal::PartitionStarts(all, static_cast<std::size_t>(spec.partitions));
  return layout;
}

// Hashes keys as strings or views alike (heterogeneous lookup).
struct KeyHasher {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

// Reads one partition at a time (memory: that partition's rows of every input), groups them by
// key in first-seen order, and emits each group's joined rows.
class JoinReader final : public SplitReader {
 public:
  JoinReader(const JoinSpec* spec, const JoinLayout* layout, std::string dir, int64_t first, int64_t end, int64_t range_begin,
             int64_t range_end)
      : spec_(spec), layout_(layout), dir_(dir), cursor_(&layout->start, std::move(dir), first, end, range_begin, range_end) {}

  Result<bool> Next(StageOutput& out, std::size_t max_rows) override {
    std::size_t emitted = 0;
    while (emitted < max_rows) {
      if (next_combo_ < combos_.size()) {
        out.Emit(MakeRow(combos_.data() + next_combo_));
        next_combo_ += spec_->inputs.size();
        ++emitted;
        continue;
      }
      if (next_group_ < groups_used_) {
        next_combo_ = 0;
        stages_internal::JoinGroup(*spec_, groups_[next_group_].rows, combos_, scratch_);
        window_ = groups_[next_group_].window;
        ++next_group_;
        continue;
      }
      std::optional<int64_t> p = cursor_.Claim();
      if (!p) return false;
      RETURN_IF_ERROR(LoadPartition(*p));
    }
    return next_combo_ < combos_.size() || next_group_ < groups_used_ || !cursor_.Exhausted();
  }

  std::optional<SplitProgress> Progress() const override { return cursor_.Progress(); }
  std::optional<SourceSplit> TrySplit(double fraction) override { return cursor_.TrySplit(fraction); }

 private:
  struct Group {
    std::vector<std::vector<const Row*>> rows;  // [input]
    std::optional<std::pair<int64_t, int64_t>> window;
  };

  // Rows and groups are reused from partition to partition: a decoded row keeps its field vector
  // and a group its per-input vectors, so after the first partition a row costs no allocation
  // (they were ~6% of the stage's instructions, 200,000 x 20,000 rows).
  //
  // Two passes: the first reads the partition's records, finds each one's group and keeps its
  // encoded row (the sections stay alive); the second decodes the rows group by group (a counting
  // sort by group, stable: within a group, input by input in arrival order, as before). A group's
  // rows then lie next to each other, in the order the joined rows read them: decoded in arrival
  // order they were scattered over the partition, and reading them back for the output was the
  // stage's hottest stall (perf: most of JoinReader::Next's samples on the loads of a row's fields).
  Status LoadPartition(int64_t p) {
    groups_used_ = 0;
    next_group_ = 0;
    rows_used_ = 0;
    by_key_.clear();
    sections_.clear();
    records_.clear();
    const std::size_t n = spec_->inputs.size();
    const std::size_t key_items = spec_->key.front().size();
    for (std::size_t i = 0; i < n; ++i) {
      for (const ShuffleFile& file : layout_->files[i]) {
        auto bad = [&](const std::string& what) { return Corrupt(file, what); };
        RETURN_IF_ERROR(stages_internal::ForEachSection(file, p, [&](std::string& data) -> Status {
          std::string_view d = sections_.emplace_back(std::move(data));  // a deque: the bytes stay put
          while (!d.empty()) {
            ASSIGN_OR_RETURN(uint64_t key_len, DecodeVarint(d));
            if (key_len == 0 || key_len > d.size()) return bad("a key runs past its section");
            std::string_view key = d.substr(0, key_len);
            d.remove_prefix(key_len);
            ASSIGN_OR_RETURN(uint64_t row_len, DecodeVarint(d));
            if (row_len > d.size()) return bad("a row runs past its section");
            const std::string_view row = d.substr(0, row_len);
            d.remove_prefix(row_len);
            std::size_t g;
            auto found = stages_internal::IsNullJoinKey(key) ? by_key_.end() : by_key_.find(key);
            if (found != by_key_.end()) {
              g = found->second;
            } else {
              g = groups_used_;
              Group& group = NextGroup(n);
              ASSIGN_OR_RETURN(group.window, WindowOf(key, key_items, bad));
              if (!stages_internal::IsNullJoinKey(key)) by_key_.emplace(std::string(key), g);  // a null key matches nothing
            }
            records_.push_back(Record{static_cast<uint32_t>(g), static_cast<uint32_t>(i), &file, row});
          }
          return Status::OK();
        }));
      }
    }
    // Counting sort of the records by group.
    starts_.assign(groups_used_ + 1, 0);
    for (const Record& r : records_) ++starts_[r.group + 1];
    for (std::size_t g = 0; g < groups_used_; ++g) starts_[g + 1] += starts_[g];
    by_group_.resize(records_.size());
    for (std::size_t k = 0; k < records_.size(); ++k) by_group_[starts_[records_[k].group]++] = static_cast<uint32_t>(k);
    for (uint32_t k : by_group_) {
      const Record& r = records_[k];
      Row& row = NextRow();
      Status decoded = DecodeWholeRowInto(r.row, row);
      if (!decoded.ok()) return Corrupt(*r.file, decoded.message());
      groups_[r.group].rows[r.input].push_back(&row);
    }
    return Status::OK();
  }

  // The next row of the partition: a reused one (cleared, its capacity kept) or a new one.
  Row& NextRow() {
    if (rows_used_ == rows_.size()) rows_.emplace_back();
    return rows_[rows_used_++];
  }
  // The next group: a reused one (its per-input vectors emptied, their capacity kept) or a new one.
  Group& NextGroup(std::size_t inputs) {
    if (groups_used_ == groups_.size()) groups_.push_back(Group{std::vector<std::vector<const Row*>>(inputs), std::nullopt});
    Group& g = groups_[groups_used_++];
    for (std::vector<const Row*>& r : g.rows) r.clear();
    g.window.reset();
    return g;
  }

  // The window a key carries (its last item, [start, end]), if any.
  template <typename Bad>
  static Result<std::optional<std::pair<int64_t, int64_t>>> WindowOf(std::string_view key, std::size_t key_items, Bad bad) {
    std::optional<std::pair<int64_t, int64_t>> none;
    Value w;
    if (stages_internal::IsNullJoinKey(key)) {
      std::string_view rest = key.substr(1);
      if (rest.empty()) return none;
      auto v = DecodeWholeValue(rest);
      if (!v.ok()) return bad(v.status().message());
      w = std::move(*v);
    } else {
      auto v = DecodeWholeValue(key);
      if (!v.ok() || !v->is_list()) return bad("a key is not a list");
      if (v->as_list().size() == key_items) return none;
      if (v->as_list().size() != key_items + 1) return bad("a key of the wrong shape");
      w = v->as_list().back();
    }
    if (!w.is_list() || w.as_list().size() != 2 || !w.as_list()[0].is_int() || !w.as_list()[1].is_int() ||
        w.as_list()[0].as_int() >= w.as_list()[1].as_int()) {
      return bad("a key's window is malformed");
    }
    return std::make_optional(std::make_pair(w.as_list()[0].as_int(), w.as_list()[1].as_int()));
  }

  // `combo`: one row (or nullptr) per input.
  Row MakeRow(const Row* const* combo) const {
    Row row;
    row.Reserve(layout_->columns.size());
    for (const JoinSpec::Field& f : layout_->columns) {
      const Row* from = combo[static_cast<std::size_t>(f.input)];
      const Value* v = from == nullptr ? nullptr : from->Find(f.column);
      Value& out = row.AppendNull(f.alias);  // built in place: no temporary field to move in
      if (v != nullptr) out = *v;
    }
    if (window_) {  // a windowed group's output lives in that window, at its end (as Combine's)
      row.set_window(window_->first, window_->second);
      row.set_timestamp_us(window_->second - 1);
    }
    return row;
  }

  const JoinSpec* spec_;
  const JoinLayout* layout_;
  std::string dir_;
  stages_internal::PartitionCursor cursor_;
  std::deque<Row> rows_;  // the partition's rows are the first rows_used_ (a deque: stable addresses as it grows)
  std::size_t rows_used_ = 0;
  std::vector<Group> groups_;  // the partition's groups are the first groups_used_
  std::size_t groups_used_ = 0;
  std::unordered_map<std::string, std::size_t, KeyHasher, std::equal_to<>> by_key_;  // looked up by view: no copy per row
  // LoadPartition's first pass: each record's group, input, file and encoded row (a view into
  // sections_, the partition's bytes as read); then their indices in group order.
  struct Record {
    uint32_t group;
    uint32_t input;
    const ShuffleFile* file;
    std::string_view row;
  };
  std::deque<std::string> sections_;
  std::vector<Record> records_;
  std::vector<uint32_t> starts_;
  std::vector<uint32_t> by_group_;
  std::size_t next_group_ = 0;
  std::vector<const Row*> combos_;   // the group being emitted, one row per input a combination
  std::vector<const Row*> scratch_;  // JoinGroup's working room
  std::size_t next_combo_ = 0;       // index into combos_ of the next combination
  std::optional<std::pair<int64_t, int64_t>> window_;
};

class JoinMerge final : public Stage {
 public:
  JoinMerge(StageConfig config, JoinSpec spec, std::vector<std::string> dirs)
      : config_(std::move(config)), spec_(std::move(spec)), dirs_(std::move(dirs)), dir_(dirs_.front()) {}

  Status Process(RowBatch&, StageOutput&) override { return Internal("Join/merge has no input"); }

  Result<std::vector<SourceSplit>> Split(int64_t target_bytes) override {
    ASSIGN_OR_RETURN(const JoinLayout* layout, Layout());
    return stages_internal::SplitPartitions(dir_, layout->start, target_bytes);
  }

  Result<std::unique_ptr<SplitReader>> OpenSplit(const SourceSplit& split) override {
    ASSIGN_OR_RETURN(const JoinLayout* layout, Layout());
    ASSIGN_OR_RETURN(auto range, stages_internal::PartitionsOfSplit(dir_, layout->start, split));
    return std::unique_ptr<SplitReader>(new JoinReader(&spec_, layout, dir_, range.first, range.second, split.begin, split.end));
  }

 private:
  // Read once per process: a committed shuffle never changes.
  Result<const JoinLayout*> Layout() {
    std::lock_guard<std::mutex> lock(mu_);
    if (!layout_) {
      ASSIGN_OR_RETURN(JoinLayout layout, ReadJoinLayout(config_, spec_, dirs_));
      layout_ = std::make_unique<JoinLayout>(std::move(layout));
    }
    return layout_.get();
  }

  StageConfig config_;
  JoinSpec spec_;
  std::vector<std::string> dirs_;  // [input]: its committed shuffle
  std::string dir_;                // the splits' path (the first input's shuffle: a name, for messages)
  std::mutex mu_;
  std::unique_ptr<JoinLayout> layout_;
};

// ---- the user-facing type -------------------------------------------------------------------------

Result<std::unique_ptr<Stage>> MakeJoin(const StageConfig& c) {
  ASSIGN_OR_RETURN(JoinSpec spec, stages_internal::ParseJoinSpec(c));
  (void)spec;
  return std::unique_ptr<Stage>(new stages_internal::UnfusedShuffleStage("Join"));
}

Result<std::unique_ptr<Stage>> MakeJoinPartial(const StageConfig& c) {
  ASSIGN_OR_RETURN(JoinSpec spec, stages_internal::ParseJoinSpec(c));
  ASSIGN_OR_RETURN(std::string dir, JoinPartialShuffleName(c));
  return std::unique_ptr<Stage>(new JoinPartial(c, std::move(spec), c.shuffle.join_input, std::move(dir)));
}

Result<std::unique_ptr<Stage>> MakeJoinMerge(const StageConfig& c) {
  ASSIGN_OR_RETURN(JoinSpec spec, stages_internal::ParseJoinSpec(c));
  const std::vector<std::string>& dirs = c.shuffle.join_dirs;
  if (dirs.size() != spec.inputs.size() || std::find(dirs.begin(), dirs.end(), "") != dirs.end()) {
    return c.ConfigError(fmt::format("the Join's merge needs {} shuffle folders, one per input (the fused-stage plan sets them)",
                                     spec.inputs.size()));
  }
  return std::unique_ptr<Stage>(new JoinMerge(c, std::move(spec), dirs));
}

}  // namespace

void RegisterJoin(StageRegistry& r) {
  const std::vector<std::string> keys = {"type", "equalities", "fields"};
  StageTraits join;
  join.named_inputs = true;
  (void)r.Register({kJoinType, MakeJoin, keys, {"type", "equalities"}, join, CheckByMaking(MakeJoin)});
  StageTraits sink;
  sink.is_sink = true;
  sink.serial = true;  // one bundle's rows buffered by partition, in order
  (void)r.Register({kJoinPartialType, MakeJoinPartial, keys, {}, sink, nullptr});
  StageTraits source;
  source.is_source = true;
  (void)r.Register({kJoinMergeType, MakeJoinMerge, keys, {}, source, nullptr});
}

}  // namespace dfw
