// The Precompiled normalizer: SentencePiece's precompiled_charsmap (XLM-R, T5, mBART, …), base64 in
// tokenizer.json. The blob is a little-endian u32 trie size, a darts-clone double-array trie of that
// many bytes (u32 units) whose values index the blob after it: NUL-terminated normalized strings.
//
// Applied as tokenizers applies it: per extended grapheme cluster, the cluster (when under 6 bytes)
// is looked up, and the first (shortest) trie key that is a prefix of it names its replacement;
// otherwise each character of the cluster is looked up the same way. Replacements realign through
// tokenizers' changes, which is what the token offsets of these models follow.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <utf8proc.h>

#include "tokenizer_parts.h"

namespace dfw::tokenizers {
namespace {

std::optional<std::string> Base64Decode(std::string_view in) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  while (!in.empty() && in.back() == '=') in.remove_suffix(1);
  if (in.size() % 4 == 1) return std::nullopt;
  std::string out;
  out.reserve(in.size() * 3 / 4);
  uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    const int v = value(c);
    if (v < 0) return std::nullopt;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  return out;
}

class Precompiled final : public Normalizer {
 public:
  Precompiled(std::vector<uint32_t> units, std::string normalized) : units_(std::move(units)), normalized_(std::move(normalized)) {}

  void Normalize(NormalizedText& text) const override {
    std::vector<CharChange> changes;
    changes.reserve(text.size());
    bool modified = false;
    std::string chunk;
    // Appends `norm` in place of `old_count` characters, with the changes tokenizers gives them:
    // the new characters replace the old in order, extra new ones are inserted at the end, and
    // when there are fewer the last change written (the one before, for an empty replacement)
    // also removes the rest.
    auto replace = [&](std::string_view norm, int old_count) {
      const std::vector<int32_t> cps = utf8::CodePoints(norm);
      const int diff = static_cast<int>(cps.size()) - old_count;
      for (std::size_t i = 0; i < cps.size(); ++i) {
        changes.push_back({cps[i], diff > 0 && static_cast<int>(cps.size() - i) <= diff ? 1 : 0});
      }
      if (diff < 0 && !changes.empty()) changes.back().change += diff;
    };
    utf8proc_int32_t state = 0;
    for (std::size_t b = 0; b < text.size();) {
      std::size_t e = b + 1;
      while (e < text.size() && !utf8proc_grapheme_break_stateful(text[e - 1].cp, text[e].cp, &state)) ++e;
      chunk = ToUtf8(&text[b], e - b);
      if (chunk.size() < 6) {
        if (auto norm = Transform(chunk)) {
          modified = true;
          replace(*norm, static_cast<int>(e - b));
          b = e;
          continue;
        }
      }
      for (std::size_t i = b; i < e; ++i) {
        chunk = ToUtf8(&text[i], 1);
        if (auto norm = Transform(chunk)) {
          modified = true;
          replace(*norm, 1);
        } else {
          changes.push_back({text[i].cp, 0});
        }
      }
      b = e;
    }
    if (modified) TransformChars(text, changes);
  }

 private:
  // darts-clone unit fields.
  static bool HasLeaf(uint32_t u) { return ((u >> 8) & 1) == 1; }
  static uint32_t Value(uint32_t u) { return u & ((1u << 31) - 1); }
  static uint32_t Label(uint32_t u) { return u & ((1u << 31) | 0xFF); }
  static uint32_t Offset(uint32_t u) { return (u >> 10) << ((u & (1u << 9)) >> 6); }

  // The replacement of the shortest trie key that prefixes `key`; none when no key does (or the
  // trie points outside the blob, which a well-formed charsmap never does).
  std::optional<std::string_view> Transform(std::string_view key) const {
    if (units_.empty()) return std::nullopt;
    std::size_t pos = Offset(units_[0]);
    for (unsigned char c : key) {
      if (c == 0) break;
      pos ^= c;
      if (pos >= units_.size()) return std::nullopt;
      const uint32_t u = units_[pos];
      if (Label(u) != c) return std::nullopt;
      pos ^= Offset(u);
      if (HasLeaf(u)) {
        if (pos >= units_.size()) return std::nullopt;
        const std::size_t at = Value(units_[pos]);
        if (at > normalized_.size()) return std::nullopt;
        std::string_view rest = std::string_view(normalized_).substr(at);
        rest = rest.substr(0, rest.find('\0'));
        if (utf8::Lossy(rest) != rest) return std::nullopt;  // cut inside a character
        return rest;
      }
    }
    return std::nullopt;
  }

  std::vector<uint32_t> units_;
  std::string normalized_;
};

}  // namespace

Result<std::unique_ptr<Normalizer>> MakePrecompiled(const nlohmann::json& j, const std::string& origin) {
  const std::string what = "'" + origin + "': normalizer Precompiled: ";
  const nlohmann::json map = j.value("precompiled_charsmap", nlohmann::json());
  if (!map.is_string()) return InvalidArgument(what + "\"precompiled_charsmap\" must be a base64 string");
  const std::optional<std::string> blob = Base64Decode(map.get<std::string>());
  if (!blob) return InvalidArgument(what + "\"precompiled_charsmap\" is not base64");
  if (blob->size() < 4) return InvalidArgument(what + "the charsmap has " + std::to_string(blob->size()) + " bytes, less than its 4-byte header");
  const auto* p = reinterpret_cast<const unsigned char*>(blob->data());
  const uint64_t trie_size = p[0] | (p[1] << 8) | (p[2] << 16) | (static_cast<uint64_t>(p[3]) << 24);
  if (trie_size % 4 != 0 || trie_size > blob->size() - 4) {
    return InvalidArgument(what + "the charsmap's trie size " + std::to_string(trie_size) + " is not a multiple of 4 within its " +
                           std::to_string(blob->size() - 4) + " bytes");
  }
  std::vector<uint32_t> units(trie_size / 4);
  for (std::size_t i = 0; i < units.size(); ++i) {
    const unsigned char* u = p + 4 + 4 * i;
    units[i] = u[0] | (u[1] << 8) | (u[2] << 16) | (static_cast<uint32_t>(u[3]) << 24);
  }
  std::string normalized = blob->substr(4 + trie_size);
  if (utf8::Lossy(normalized) != normalized) return InvalidArgument(what + "the charsmap's normalized strings are not UTF-8");
  return std::unique_ptr<Normalizer>(std::make_unique<Precompiled>(std::move(units), std::move(normalized)));
}

}  // namespace dfw::tokenizers
