// The Combine shuffle's shared pieces (combine.cc writes it, combine_merge.cc reads it): the file
// format's constants, how an encoded key splits into its group values and window, the partition a
// key goes to, and the key table both halves fold into.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "combine_fns.h"
#include "dfw/common/status.h"
#include "dfw/record/value_codec.h"
#include "dfw/stages/stage.h"

namespace dfw::stages_internal {

inline constexpr std::string_view kShuffleMagic = "DFWSHUF1";
inline constexpr const char* kShuffleIndexFile = "shuffle.index";
inline constexpr std::string_view kShuffleIndexHeader = "dfworker shuffle v1\n";

// A key's slot hash: KeyHash (which picks the partition, h % partitions) mixed again (murmur3's
// finaliser). Every key of one partition shares h's low bits, so a table of one partition indexed
// by h's low bits would cluster into a few runs.
inline uint64_t SlotHash(std::string_view key) {
  uint64_t h = KeyHash(key);
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

// Combine/merge (combine_merge.cc): its folder and partitions from StageConfig::shuffle.
Result<std::unique_ptr<Stage>> MakeCombineMerge(const StageConfig& c);

}  // namespace dfw::stages_internal
