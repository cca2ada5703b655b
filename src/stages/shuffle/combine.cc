// Combine (group_by + combine:) as fused stages with a shuffle (dfw/stages/combine.h): the partial
// sink, the merge source, the shuffle file between them, and the user-facing type that the
// loader checks.
//
// Shuffle file of one bundle (<staging>/<combine name>/bundle-<id>.done, committed like any sink
// output):
//   "DFWSHUF1" varint(partitions) varint(aggregations)
//   sections: the records of one partition from one spill, each record
//             varint(key bytes) key (an encoded List of the group_by values)
//             varint(acc bytes) accs (an encoded List, one Value per aggregation)
//   index:    varint(sections) then per section varint(partition) varint(offset) varint(length)
//   trailer:  8 bytes little-endian offset of the index, "DFWSHUF1"
// A bundle spills its accumulators into a new set of sections whenever it holds kSpillKeys keys,
// so a bundle's memory is bounded whatever the number of distinct keys.
#include "dfw/common/file.h"
#include "dfw/stages/combine.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>

#include <fmt/format.h>

#include "combine_fns.h"
#include "dfw/common/test_hooks.h"
#include "dfw/record/value_codec.h"
#include "dfw/stages/config.h"
#include "dfw/stages/join.h"
#include "dfw/stages/sink.h"
#include "dfw/stages/stage.h"
#include "shuffle_format.h"
#include "unfused_stage.h"
#include "stages/sink_file.h"

namespace dfw {
namespace {

using stages_internal::Accumulators;
using stages_internal::CombineSpec;

using stages_internal::KeyTable;

constexpr std::size_t kSpillKeys = 1 << 18;

// The spill threshold; a test hook (DFW_TEST_COMBINE_SPILL_KEYS) lowers it so that tests spill.
std::size_t SpillKeys() {
  auto v = test_hooks::Get("COMBINE_SPILL_KEYS");
  long long x = v ? std::atoll(v->c_str()) : 0;
  return x > 0 ? static_cast<std::size_t>(x) : kSpillKeys;
}
constexpr const char* kIndexFile = stages_internal::kShuffleIndexFile;
constexpr std::string_view kIndexHeader = stages_internal::kShuffleIndexHeader;

std::string Location(const StageConfig& c) { return c.Where(); }

// Finds a field by name, first where it was in the last row (rows of one source keep their field
// order, so this is usually one compare).
class FieldFinder {
 public:
  explicit FieldFinder(std::string name) : name_(std::move(name)) {}
  const Value* Find(const Row& row) {
    const auto& fields = row.fields();
    if (last_ < fields.size() && fields[last_].name == name_) return &fields[last_].value;
    for (std::size_t i = 0; i < fields.size(); ++i) {
      if (fields[i].name == name_) {
        last_ = i;
        return &fields[i].value;
      }
    }
    return nullptr;
  }

 private:
  std::string name_;
  std::size_t last_ = 0;
};

// ---- Combine/partial: a sink writing one bundle's partial accumulators --------------------------

// What one Process call folds into: a key table and the scratch of reading a row. The sink runs
// Process calls concurrently (TBB may run each right after the reader's task, on the same thread),
// each on a Folder of its own; the same key in two Folders is two records of the shuffle, which
// the merge adds up.
struct Folder {
  KeyTable keys;
  std::vector<FieldFinder> key_fields;    // per group_by field
  std::vector<FieldFinder> input_fields;  // per input (used when it is a bare field)
  std::vector<Value> values;              // per input: an evaluated value of the row being folded
  std::vector<const Value*> inputs;       // per input: the row's value (a field, or in values)
  std::string encoded;                    // the row's encoded key
};

class CombinePartial final : public Stage {
 public:
  CombinePartial(StageConfig config, CombineSpec spec) : config_(std::move(config)), spec_(std::move(spec)) {
    if (config_.run.metrics != nullptr) {
      spills_ = config_.run.metrics->Counter(config_.name, "shuffle_spills");
      shuffle_bytes_ = config_.run.metrics->Counter(config_.name, "shuffle_bytes_written");
    }
  }

  Status StartBundle(const BundleContext& bundle) override {
    spill_keys_ = SpillKeys();
    for (auto& f : folders_) f->keys.clear();
    index_.clear();
    written_ = 0;
    RETURN_IF_ERROR(file_.Open(bundle, config_.name).WithContext(Location(config_)));
    return Write(stages_internal::ShuffleHeader(static_cast<uint64_t>(spec_.partitions), spec_.aggregations.size()));
  }

  Status Process(RowBatch& in, StageOutput& out) override {
    Folder* f = TakeFolder();
    Status s = FoldBatch(*f, in, out);
    GiveBack(f);
    return s;
  }

  Status FinishBundle(StageOutput&) override {
    for (auto& f : folders_) RETURN_IF_ERROR(Spill(*f));
    RETURN_IF_ERROR(Write(stages_internal::ShuffleFooter(index_, written_)));
    if (shuffle_bytes_ != nullptr) shuffle_bytes_->Inc(static_cast<int64_t>(written_));
    return file_.Commit().WithContext(Location(config_));
  }

 private:
  Folder* TakeFolder() {
    std::lock_guard<std::mutex> lock(folders_mu_);
    if (!idle_.empty()) {
      Folder* f = idle_.back();
      idle_.pop_back();
      return f;
    }
    auto f = std::make_unique<Folder>();
    for (const std::string& name : spec_.group_by) f->key_fields.emplace_back(name);
    for (const auto& input : spec_.inputs) f->input_fields.emplace_back(input.field);
    f->values.resize(spec_.inputs.size());
    f->inputs.resize(spec_.inputs.size());
    folders_.push_back(std::move(f));
    return folders_.back().get();
  }
  void GiveBack(Folder* f) {
    std::lock_guard<std::mutex> lock(folders_mu_);
    idle_.push_back(f);
  }

  Status FoldBatch(Folder& f, RowBatch& in, StageOutput& out) {
    for (Row& row : in) {
      if (spec_.window) {
        if (Status w = stages_internal::AssignWindow(*spec_.window, row); !w.ok()) {
          RETURN_IF_ERROR(out.Fail(row, w.message()));
          continue;
        }
      }
      if (Status key = EncodeKey(f, row); !key.ok()) {
        RETURN_IF_ERROR(out.Fail(row, key.message()));
        continue;
      }
      Accumulators* accs = f.keys.Find(f.encoded);
      Accumulators fresh;
      if (accs == nullptr) {
        fresh = stages_internal::NewAccumulators(spec_);
        accs = &fresh;
      }
      Status folded = Fold(f, row, *accs);
      if (!folded.ok()) {
        RETURN_IF_ERROR(out.Fail(row, folded.message()));
        continue;
      }
      if (accs == &fresh) {
        f.keys.Insert(f.encoded, std::move(fresh));
        if (f.keys.size() >= spill_keys_) RETURN_IF_ERROR(Spill(f));
      }
    }
    return Status::OK();
  }

  // The row's key, encoded into f.encoded (GroupKey's list, encoded, with cached field positions);
  // a row in a window other than the global one has the window as one more item, [start, end].
  Status EncodeKey(Folder& f, const Row& row) const {
    f.encoded.clear();
    const bool windowed = !row.in_global_window();
    AppendEncodedListHeader(f.encoded, f.key_fields.size() + (windowed ? 1 : 0));
    for (FieldFinder& field : f.key_fields) {
      const Value* v = field.Find(row);
      if (v == nullptr || v->is_list()) return stages_internal::GroupKey(spec_, row).status();  // the error, named
      AppendEncodedValue(f.encoded, *v);
    }
    if (windowed) stages_internal::AppendWindowItem(f.encoded, row.window_start_us(), row.window_end_us());
    return Status::OK();
  }

  // Each distinct value is read (a bare field) or evaluated once. A row that fails stops the
  // bundle (Combine takes no error_handling, as Beam's), so a half-folded row is never committed.
  Status Fold(Folder& f, const Row& row, Accumulators& accs) const {
    for (std::size_t i = 0; i < spec_.inputs.size(); ++i) {
      if (!spec_.inputs[i].field.empty()) {
        if ((f.inputs[i] = f.input_fields[i].Find(row)) != nullptr) continue;
      }
      Result<Value> v = spec_.inputs[i].expr->Evaluate(row);  // (also names a missing field)
      if (!v.ok()) return Status(v.status().code(), "combine value '" + spec_.inputs[i].expr->source() + "': " + v.status().message());
      f.values[i] = std::move(*v);
      f.inputs[i] = &f.values[i];
    }
    for (std::size_t i = 0; i < spec_.aggregations.size(); ++i) {
      const auto& a = spec_.aggregations[i];
      Status added = stages_internal::AddInput(a, accs[i], *f.inputs[static_cast<std::size_t>(a.input)]);
      if (!added.ok()) return Status(added.code(), "combine." + a.output + ": " + added.message());
    }
    return Status::OK();
  }

  // Writes a Folder's accumulators as one section per partition and forgets them.
  Status Spill(Folder& f) {
    if (f.keys.size() == 0) return Status::OK();
    std::vector<std::vector<std::size_t>> by_partition(static_cast<std::size_t>(spec_.partitions));
    auto& entries = f.keys.entries();
    for (std::size_t i = 0; i < entries.size(); ++i) {
      by_partition[stages_internal::PartitionOf(entries[i].first, spec_.group_by.size(), spec_.partitions)].push_back(i);
    }
    std::string accs;
    std::vector<std::string> sections(by_partition.size());
    for (std::size_t p = 0; p < by_partition.size(); ++p) {
      std::string& buf = sections[p];
      for (std::size_t i : by_partition[p]) {
        auto& [key, acc] = entries[i];
        AppendVarint(buf, key.size());
        buf.append(key);
        List values;
        values.reserve(acc.size());
        for (std::size_t k = 0; k < acc.size(); ++k) values.push_back(stages_internal::ToValue(spec_.aggregations[k], acc[k]));
        accs.clear();
        AppendEncodedValue(accs, Value::FromList(std::move(values)));
        AppendVarint(buf, accs.size());
        buf.append(accs);
      }
    }
    f.keys.clear();
    std::lock_guard<std::mutex> lock(file_mu_);  // sections of one spill stay together in the file
    for (std::size_t p = 0; p < sections.size(); ++p) {
      if (sections[p].empty()) continue;
      index_.push_back(stages_internal::ShuffleSection{static_cast<int64_t>(p), written_, sections[p].size()});
      RETURN_IF_ERROR(Write(sections[p]));
    }
    if (spills_ != nullptr) spills_->Inc();
    return Status::OK();
  }

  // Callers hold file_mu_ (or run alone: StartBundle, FinishBundle).
  Status Write(std::string_view bytes) {
    RETURN_IF_ERROR(file_.Write(bytes).WithContext(Location(config_)));
    written_ += bytes.size();
    return Status::OK();
  }

  StageConfig config_;
  CombineSpec spec_;
  std::size_t spill_keys_ = kSpillKeys;
  std::mutex folders_mu_;
  std::vector<std::unique_ptr<Folder>> folders_;  // one per Process call that ever overlapped
  std::vector<Folder*> idle_;
  std::mutex file_mu_;
  stages_internal::BundleFile file_;
  std::vector<stages_internal::ShuffleSection> index_;
  uint64_t written_ = 0;
  CounterCell* spills_ = nullptr;         // spills (one per Folder per bundle, more when one held too many keys)
  CounterCell* shuffle_bytes_ = nullptr;  // bytes of the bundles' shuffle files
};

// ---- the user-facing type -------------------------------------------------------------------------

Result<std::unique_ptr<Stage>> MakeCombine(const StageConfig& c) {
  ASSIGN_OR_RETURN(CombineSpec spec, stages_internal::ParseCombineSpec(c));
  (void)spec;
  return std::unique_ptr<Stage>(new stages_internal::UnfusedShuffleStage("Combine"));
}

Result<std::unique_ptr<Stage>> MakePartial(const StageConfig& c) {
  ASSIGN_OR_RETURN(CombineSpec spec, stages_internal::ParseCombineSpec(c));
  return std::unique_ptr<Stage>(new CombinePartial(c, std::move(spec)));
}

}  // namespace

Status CommitShuffle(const std::string& shuffle_dir, const std::vector<int64_t>& bundle_ids) {
  std::error_code ec;
  std::filesystem::create_directories(shuffle_dir, ec);
  if (ec) return IoError("create the shuffle folder '" + shuffle_dir + "': " + ec.message());
  std::string text(kIndexHeader);
  for (int64_t id : bundle_ids) text += std::to_string(id) + "\n";
  return WriteFileAtomically(shuffle_dir + "/" + kIndexFile, text, /*sync=*/true);
}

void RegisterCombine(StageRegistry& r) {
  const std::vector<std::string> keys = {"language", "group_by", "combine"};
  (void)r.Register({kCombineType, MakeCombine, keys, {"group_by", "combine"}, StageTraits{}, CheckByMaking(MakeCombine)});
  StageTraits sink;
  sink.is_sink = true;  // not serial: Process calls fold into Folders of their own
  (void)r.Register({kCombinePartialType, MakePartial, keys, {}, sink, nullptr});
  StageTraits source;
  source.is_source = true;
  (void)r.Register({kCombineMergeType, stages_internal::MakeCombineMerge, keys, {}, source, nullptr});
}

bool IsInternalStageType(std::string_view type) {
  return type == kCombinePartialType || type == kCombineMergeType || type == kJoinPartialType || type == kJoinMergeType;
}

}  // namespace dfw
