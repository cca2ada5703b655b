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
#include "dfw/stages/sink.h"
#include "dfw/stages/stage.h"
#include "sink_file.h"

namespace dfw {
namespace {

using stages_internal::Accumulators;
using stages_internal::CombineSpec;

constexpr std::string_view kMagic = "DFWSHUF1";
constexpr std::size_t kSpillKeys = 1 << 18;

// The spill threshold; a test hook (DFW_TEST_COMBINE_SPILL_KEYS) lowers it so that tests spill.
std::size_t SpillKeys() {
  auto v = test_hooks::Get("COMBINE_SPILL_KEYS");
  long long x = v ? std::atoll(v->c_str()) : 0;
  return x > 0 ? static_cast<std::size_t>(x) : kSpillKeys;
}
constexpr const char* kIndexFile = "shuffle.index";
constexpr std::string_view kIndexHeader = "dfworker shuffle v1\n";

void AppendFixed64(std::string& out, uint64_t x) {
  char b[8];
  for (int i = 0; i < 8; ++i) b[i] = static_cast<char>((x >> (8 * i)) & 0xff);
  out.append(b, 8);
}

// A key's slot hash: KeyHash (which picks the partition, h % partitions) mixed again (murmur3's
// finaliser). Every key of one partition shares h's low bits, so a table of one partition indexed
// by h's low bits would cluster into a few runs.
uint64_t SlotHash(std::string_view key) {
  uint64_t h = stages_internal::KeyHash(key);
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  return h ^ (h >> 33);
}

// An encoded key is a list: the group_by values, then (for a row in a window) [start, end] — a
// 20-byte item (list tag, count 2, two 9-byte ints). The group values' bytes pick the partition, so
// every window of a key (and so every session that may merge) meets in one partition.
constexpr std::size_t kWindowItemBytes = 20;

struct KeyParts {
  std::string_view values;  // the encoded group_by values
  bool windowed = false;
};

KeyParts SplitKey(std::string_view key, std::size_t group_by) {
  std::string_view rest = key.substr(std::min<std::size_t>(1, key.size()));  // the list tag
  auto count = DecodeVarint(rest);
  KeyParts parts;
  parts.windowed = count.ok() && *count == group_by + 1 && rest.size() >= kWindowItemBytes;
  parts.values = parts.windowed ? rest.substr(0, rest.size() - kWindowItemBytes) : rest;
  return parts;
}

uint64_t PartitionOf(std::string_view key, std::size_t group_by, int64_t partitions) {
  return stages_internal::KeyHash(SplitKey(key, group_by).values) % static_cast<uint64_t>(partitions);
}

void AppendWindowItem(std::string& out, int64_t start, int64_t end) {
  AppendEncodedListHeader(out, 2);
  AppendEncodedValue(out, Value::Int(start));
  AppendEncodedValue(out, Value::Int(end));
}

// Keys in first-seen order (so a bundle's output does not depend on hash-table iteration), found
// through an open-addressing table of (hash, entry) slots: one hash and usually one compare per
// row, no node per key (std::unordered_map cost a third of the fold).
class KeyTable {
 public:
  Accumulators* Find(const std::string& key) {
    if (slots_.empty()) return nullptr;
    const uint64_t h = SlotHash(key);
    for (std::size_t i = h & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.entry == 0) return nullptr;
      if (s.hash == h && entries_[s.entry - 1].first == key) return &entries_[s.entry - 1].second;
    }
  }
  // `key` must not be in the table.
  Accumulators& Insert(std::string key, Accumulators accs) {
    if (2 * (entries_.size() + 1) > slots_.size()) Grow();
    entries_.emplace_back(std::move(key), std::move(accs));
    Place(SlotHash(entries_.back().first), entries_.size());
    return entries_.back().second;
  }
  std::size_t size() const { return entries_.size(); }
  std::vector<std::pair<std::string, Accumulators>>& entries() { return entries_; }
  void clear() {
    slots_.clear();
    entries_.clear();
    mask_ = 0;
  }

 private:
  struct Slot {
    uint64_t hash = 0;
    std::size_t entry = 0;  // 1-based index into entries_; 0 = empty
  };
  void Place(uint64_t h, std::size_t entry) {
    std::size_t i = h & mask_;
    while (slots_[i].entry != 0) i = (i + 1) & mask_;
    slots_[i] = Slot{h, entry};
  }
  void Grow() {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(old.empty() ? 64 : 2 * old.size(), Slot{});
    mask_ = slots_.size() - 1;
    for (const Slot& s : old) {
      if (s.entry != 0) Place(s.hash, s.entry);
    }
  }
  std::vector<Slot> slots_;
  std::size_t mask_ = 0;
  std::vector<std::pair<std::string, Accumulators>> entries_;
};

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
    if (config_.metrics != nullptr) {
      spills_ = config_.metrics->Counter(config_.name, "shuffle_spills");
      shuffle_bytes_ = config_.metrics->Counter(config_.name, "shuffle_bytes_written");
    }
  }

  Status StartBundle(const BundleContext& bundle) override {
    spill_keys_ = SpillKeys();
    for (auto& f : folders_) f->keys.clear();
    index_.clear();
    written_ = 0;
    RETURN_IF_ERROR(file_.Open(bundle, config_.name).WithContext(Location(config_)));
    std::string header(kMagic);
    AppendVarint(header, static_cast<uint64_t>(spec_.partitions));
    AppendVarint(header, spec_.aggregations.size());
    return Write(header);
  }

  Status Process(RowBatch& in, StageOutput& out) override {
    Folder* f = TakeFolder();
    Status s = FoldBatch(*f, in, out);
    GiveBack(f);
    return s;
  }

  Status FinishBundle(StageOutput&) override {
    for (auto& f : folders_) RETURN_IF_ERROR(Spill(*f));
    std::string footer;
    AppendVarint(footer, index_.size());
    for (const Section& s : index_) {
      AppendVarint(footer, static_cast<uint64_t>(s.partition));
      AppendVarint(footer, s.offset);
      AppendVarint(footer, s.length);
    }
    AppendFixed64(footer, written_);
    footer.append(kMagic);
    RETURN_IF_ERROR(Write(footer));
    if (shuffle_bytes_ != nullptr) shuffle_bytes_->Inc(static_cast<int64_t>(written_));
    return file_.Commit().WithContext(Location(config_));
  }

 private:
  struct Section {
    int64_t partition;
    uint64_t offset, length;
  };

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

  // The row's key, encoded into f.encoded (AppendEncodedKey's bytes, with cached field positions);
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
    if (windowed) AppendWindowItem(f.encoded, row.window_start_us(), row.window_end_us());
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
      by_partition[PartitionOf(entries[i].first, spec_.group_by.size(), spec_.partitions)].push_back(i);
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
      index_.push_back(Section{static_cast<int64_t>(p), written_, sections[p].size()});
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
  std::vector<Section> index_;
  uint64_t written_ = 0;
  CounterCell* spills_ = nullptr;         // spills (one per Folder per bundle, more when one held too many keys)
  CounterCell* shuffle_bytes_ = nullptr;  // bytes of the bundles' shuffle files
};

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
  uint64_t index_at = 0;
  for (int i = 0; i < 8; ++i) index_at |= static_cast<uint64_t>(static_cast<unsigned char>(tail[i])) << (8 * i);
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

// ---- the user-facing type -------------------------------------------------------------------------

class UnfusedCombine final : public Stage {
 public:
  Status Process(RowBatch&, StageOutput&) override {
    return Internal("Combine runs as fused stages (pipeline/fused_stages.h); this runner was given the unfused pipeline");
  }
};

Result<std::unique_ptr<Stage>> MakeCombine(const StageConfig& c) {
  ASSIGN_OR_RETURN(CombineSpec spec, stages_internal::ParseCombineSpec(c));
  (void)spec;
  return std::unique_ptr<Stage>(new UnfusedCombine());
}

Result<std::unique_ptr<Stage>> MakePartial(const StageConfig& c) {
  ASSIGN_OR_RETURN(CombineSpec spec, stages_internal::ParseCombineSpec(c));
  return std::unique_ptr<Stage>(new CombinePartial(c, std::move(spec)));
}

Result<std::unique_ptr<Stage>> MakeMerge(const StageConfig& c) {
  ASSIGN_OR_RETURN(CombineSpec spec, stages_internal::ParseCombineSpec(c));
  ASSIGN_OR_RETURN(std::string dir, ConfigString(c, kShuffleDirKey));
  if (dir.empty()) return ConfigKeyError(c, kShuffleDirKey, "must not be empty");
  return std::unique_ptr<Stage>(new CombineMerge(std::move(spec), std::move(dir)));
}

}  // namespace

Status CommitShuffle(const std::string& shuffle_dir, const std::vector<int64_t>& bundle_ids) {
  std::error_code ec;
  std::filesystem::create_directories(shuffle_dir, ec);
  if (ec) return IoError("create the shuffle folder '" + shuffle_dir + "': " + ec.message());
  std::string text(kIndexHeader);
  for (int64_t id : bundle_ids) text += std::to_string(id) + "\n";
  const std::string path = shuffle_dir + "/" + kIndexFile;
  const std::string tmp = path + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) return ErrnoError("create '" + tmp + "'", errno);
  bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size() && std::fflush(f) == 0 && ::fsync(fileno(f)) == 0;
  int err = errno;
  if (std::fclose(f) != 0 && ok) {
    ok = false;
    err = errno;
  }
  if (!ok) return ErrnoError("write '" + tmp + "'", err);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) return ErrnoError("rename '" + tmp + "'", errno);
  return Status::OK();
}

void RegisterCombine(StageRegistry& r) {
  const std::vector<std::string> keys = {"language", "group_by", "combine"};
  (void)r.Register({kCombineType, MakeCombine, keys, {"group_by", "combine"}, StageTraits{}, CheckByMaking(MakeCombine)});
  StageTraits sink;
  sink.is_sink = true;  // not serial: Process calls fold into Folders of their own
  (void)r.Register({kCombinePartialType, MakePartial, keys, {}, sink, nullptr});
  StageTraits source;
  source.is_source = true;
  (void)r.Register({kCombineMergeType, MakeMerge, keys, {}, source, nullptr});
}

bool IsInternalStageType(std::string_view type) { return type == kCombinePartialType || type == kCombineMergeType; }

}  // namespace dfw
