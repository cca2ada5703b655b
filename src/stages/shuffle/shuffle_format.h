// The shuffle's shared pieces (combine.cc and join.cc write it, combine_merge.cc and join.cc read
// it through shuffle_read.h): the file format's constants, header and footer, how an encoded key splits into its group values and window, the partition a
// key goes to, and the key table both halves fold into.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "combine_fns.h"
#include "dfw/common/status.h"
#include "dfw/common/strings.h"
#include "dfw/record/value_codec.h"
#include "dfw/stages/stage.h"

namespace dfw::stages_internal {

inline constexpr std::string_view kShuffleMagic = "DFWSHUF1";
inline constexpr const char* kShuffleIndexFile = "shuffle.index";
inline constexpr std::string_view kShuffleIndexHeader = "dfworker shuffle v1\n";

// The writer's side of a shuffle file (Combine's and Join's partial sinks write it,
// ReadShuffleFileIndex reads it): the header, the magic then varints `partitions` (the number of
// partition slots) and `arity` (what the records carry per key); then sections of records, each
// one partition's; then the footer, the section index (count, then partition, offset, length
// each), the bytes written before it (fixed64) and the magic again.
struct ShuffleSection {
  int64_t partition;
  uint64_t offset, length;
};
inline std::string ShuffleHeader(uint64_t partitions, uint64_t arity) {
  std::string header(kShuffleMagic);
  AppendVarint(header, partitions);
  AppendVarint(header, arity);
  return header;
}
inline std::string ShuffleFooter(const std::vector<ShuffleSection>& index, uint64_t written) {
  std::string footer;
  AppendVarint(footer, index.size());
  for (const ShuffleSection& s : index) {
    AppendVarint(footer, static_cast<uint64_t>(s.partition));
    AppendVarint(footer, s.offset);
    AppendVarint(footer, s.length);
  }
  AppendFixed64(footer, written);
  footer.append(kShuffleMagic);
  return footer;
}

// A key's slot in this process's KeyTable: a hash of the encoded key 8 bytes at a time (the last
// word overlapping the one before it; a key under 8 bytes in one word), each word mixed in with a
// multiply and a shift, then murmur3's finaliser. The table is the process's own and keeps its
// keys in first-seen order, so nothing depends on these values beyond the lookup. (It was KeyHash,
// FNV a byte at a time, mixed again: KeyHash stays what picks a key's partition, h % partitions.)
// callgrind, 300,000 rows over 1,000 keys, one SDK process: the fold (FoldBatch and KeyHash)
// 112.0M -> 79.2M Ir.
inline uint64_t SlotHash(std::string_view key) {
  const char* p = key.data();
  const std::size_t n = key.size();
  auto mix = [](uint64_t h, uint64_t w) {
    h = (h ^ w) * 0xbf58476d1ce4e5b9ull;
    return h ^ (h >> 31);
  };
  uint64_t h = 0x9e3779b97f4a7c15ull * (n + 1);
  if (n >= 8) {
    uint64_t w;
    for (std::size_t i = 0; i + 8 < n; i += 8) {
      std::memcpy(&w, p + i, 8);
      h = mix(h, w);
    }
    std::memcpy(&w, p + n - 8, 8);
    h = mix(h, w);
  } else {
    uint64_t w = 0;
    for (std::size_t i = 0; i < n; ++i) w |= uint64_t{static_cast<unsigned char>(p[i])} << (8 * i);
    h = mix(h, w);
  }
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

inline KeyParts SplitKey(std::string_view key, std::size_t group_by) {
  std::string_view rest = key.substr(std::min<std::size_t>(1, key.size()));  // the list tag
  auto count = DecodeVarint(rest);
  KeyParts parts;
  parts.windowed = count.ok() && *count == group_by + 1 && rest.size() >= kWindowItemBytes;
  parts.values = parts.windowed ? rest.substr(0, rest.size() - kWindowItemBytes) : rest;
  return parts;
}

inline uint64_t PartitionOf(std::string_view key, std::size_t group_by, int64_t partitions) {
  return KeyHash(SplitKey(key, group_by).values) % static_cast<uint64_t>(partitions);
}

inline void AppendWindowItem(std::string& out, int64_t start, int64_t end) {
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
      if (s.hash == h && SameString(entries_[s.entry - 1].first, key)) return &entries_[s.entry - 1].second;
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

// Combine/merge (combine_merge.cc): its folder and partitions from StageConfig::shuffle.
Result<std::unique_ptr<Stage>> MakeCombineMerge(const StageConfig& c);

}  // namespace dfw::stages_internal
