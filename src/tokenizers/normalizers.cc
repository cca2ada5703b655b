// tokenizer.json normalizers: each rewrites code points and keeps every output character tied to
// the input character tokenizers ties it to (an expansion maps all its parts to the same input
// range; Precompiled is in precompiled.cc).
#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include <utf8proc.h>

#include "tokenizer_parts.h"
#include "unicode_class.h"

namespace dfw::tokenizers {
namespace {

// No character below U+0300 (the first combining mark) has a combining class: a shortcut for text
// that is mostly ASCII and Latin-1.
int CombiningClass(int32_t cp) { return cp < 0x300 ? 0 : utf8proc_get_property(cp)->combining_class; }

// The composition of `a` and `b` (NFC's primary composites, Hangul included), or -1.
int32_t ComposePair(int32_t a, int32_t b) {
  std::array<utf8proc_int32_t, 2> buf{a, b};
  return utf8proc_normalize_utf32(buf.data(), 2, UTF8PROC_COMPOSE) == 1 ? buf[0] : -1;
}

// Unicode normalisation as tokenizers applies it (NFD, NFKD, NFC, NFKC): each character is
// decomposed (its first part replaces it, the others are inserted), marks are put in canonical
// order, and with `compose` starters absorb the marks they compose with (the composite takes the
// starter's place and removes the mark). The changes then realign the text as tokenizers' does.
void UnicodeNormalize(NormalizedText& text, bool compat, bool compose) {
  std::vector<CharChange> seq;
  seq.reserve(text.size());
  std::array<utf8proc_int32_t, 32> parts{};
  const utf8proc_option_t opt = static_cast<utf8proc_option_t>(UTF8PROC_DECOMPOSE | (compat ? UTF8PROC_COMPAT : 0));
  bool changed = false;
  // Below U+00C0 no character has a canonical decomposition, below U+00A0 none has any.
  const int32_t plain_below = compat ? 0xA0 : 0xC0;
  for (const NChar& c : text) {
    if (c.cp < plain_below) {
      seq.push_back({c.cp, 0});
      continue;
    }
    const utf8proc_ssize_t n = utf8proc_decompose_char(c.cp, parts.data(), static_cast<utf8proc_ssize_t>(parts.size()), opt, nullptr);
    if (n <= 0 || n > static_cast<utf8proc_ssize_t>(parts.size())) {
      seq.push_back({c.cp, 0});
      continue;
    }
    changed |= n != 1 || parts[0] != c.cp;
    for (utf8proc_ssize_t i = 0; i < n; ++i) seq.push_back({parts[static_cast<std::size_t>(i)], i == 0 ? 0 : 1});
  }
  // Canonical ordering: each run of non-starters sorted (stably) by combining class.
  for (std::size_t i = 0; i < seq.size();) {
    if (CombiningClass(seq[i].cp) == 0) {
      ++i;
      continue;
    }
    std::size_t j = i;
    while (j < seq.size() && CombiningClass(seq[j].cp) != 0) ++j;
    if (j - i > 1) {
      std::stable_sort(seq.begin() + static_cast<std::ptrdiff_t>(i), seq.begin() + static_cast<std::ptrdiff_t>(j),
                       [](const CharChange& a, const CharChange& b) { return CombiningClass(a.cp) < CombiningClass(b.cp); });
      changed = true;
    }
    i = j;
  }
  if (compose) {
    std::vector<CharChange> out;
    out.reserve(seq.size());
    std::ptrdiff_t starter = -1;
    int last_ccc = 0;
    for (const CharChange& x : seq) {
      const int ccc = CombiningClass(x.cp);
      if (starter >= 0) {
        const bool adjacent = static_cast<std::ptrdiff_t>(out.size()) - 1 == starter;
        if (adjacent || (last_ccc != 0 && last_ccc < ccc)) {
          const int32_t composite = ComposePair(out[static_cast<std::size_t>(starter)].cp, x.cp);
          if (composite >= 0) {
            CharChange& s = out[static_cast<std::size_t>(starter)];
            s.cp = composite;
            s.change += x.change - 1;
            changed = true;
            continue;
          }
        }
      }
      if (ccc == 0) starter = static_cast<std::ptrdiff_t>(out.size());
      out.push_back(x);
      last_ccc = ccc;
    }
    seq.swap(out);
  }
  if (changed) TransformChars(text, seq);
}

void Decompose(NormalizedText& text, bool compat) { UnicodeNormalize(text, compat, false); }

// Rust's char::is_whitespace (the White_Space property).
bool IsWhiteSpace(int32_t cp) {
  if ((cp >= 9 && cp <= 13) || cp == ' ' || cp == 0x85) return true;
  const utf8proc_category_t c = utf8proc_category(cp);
  return c == UTF8PROC_CATEGORY_ZS || c == UTF8PROC_CATEGORY_ZL || c == UTF8PROC_CATEGORY_ZP;
}

void DropNonspacingMarks(NormalizedText& text) {
  std::erase_if(text, [](const NChar& c) { return utf8proc_category(c.cp) == UTF8PROC_CATEGORY_MN; });
}

void Lower(NormalizedText& text) {
  for (NChar& c : text) c.cp = utf8proc_tolower(c.cp);
}

class BertNorm final : public Normalizer {
 public:
  BertNorm(bool clean, bool cjk, bool strip, bool lower) : clean_(clean), cjk_(cjk), strip_(strip), lower_(lower) {}
  void Normalize(NormalizedText& text) const override {
    if (clean_) {
      std::erase_if(text, [](const NChar& c) { return c.cp == 0 || c.cp == 0xFFFD || unicode::IsControl(c.cp); });
      for (NChar& c : text) {
        if (unicode::IsWhitespace(c.cp)) c.cp = ' ';
      }
    }
    if (cjk_) {
      NormalizedText out;
      out.reserve(text.size());
      for (const NChar& c : text) {
        if (!unicode::IsCjk(c.cp)) {
          out.push_back(c);
          continue;
        }
        out.push_back({' ', c.begin, c.end});
        out.push_back(c);
        out.push_back({' ', c.begin, c.end});
      }
      text.swap(out);
    }
    if (strip_) {
      Decompose(text, false);
      DropNonspacingMarks(text);
    }
    if (lower_) Lower(text);
  }

 private:
  bool clean_, cjk_, strip_, lower_;
};

class NormSimple final : public Normalizer {
 public:
  enum Kind { kLowercase, kStripAccents, kNfd, kNfkd, kNfc, kNfkc };
  explicit NormSimple(Kind k) : k_(k) {}
  void Normalize(NormalizedText& text) const override {
    switch (k_) {
      case kLowercase: Lower(text); break;
      case kStripAccents: DropNonspacingMarks(text); break;
      case kNfd: Decompose(text, false); break;
      case kNfkd: Decompose(text, true); break;
      case kNfc: UnicodeNormalize(text, false, true); break;
      case kNfkc: UnicodeNormalize(text, true, true); break;
    }
  }

 private:
  Kind k_;
};

// Replace: each leftmost match of the pattern (a string, or one character repeated min..max times,
// the regex forms tokenizer.json files use: " {2,}") becomes `to`. As tokenizers' replace, the
// new characters take the original range of the last character matched.
class NormReplace final : public Normalizer {
 public:
  NormReplace(std::vector<int32_t> from, std::vector<int32_t> to) : from_(std::move(from)), to_(std::move(to)) {}
  NormReplace(int32_t repeated, std::size_t min, std::size_t max, std::vector<int32_t> to)
      : from_{repeated}, to_(std::move(to)), repeat_(true), min_(min), max_(max) {}
  void Normalize(NormalizedText& text) const override {
    if (from_.empty()) return;
    NormalizedText out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size();) {
      const std::size_t len = MatchAt(text, i);
      if (len == 0) {
        out.push_back(text[i++]);
        continue;
      }
      const NChar& last = text[i + len - 1];
      for (int32_t cp : to_) out.push_back({cp, last.begin, last.end});
      i += len;
    }
    text.swap(out);
  }

 private:
  std::size_t MatchAt(const NormalizedText& text, std::size_t i) const {
    if (repeat_) {
      std::size_t n = 0;
      while (i + n < text.size() && n < max_ && text[i + n].cp == from_[0]) ++n;
      return n >= min_ ? n : 0;
    }
    if (i + from_.size() > text.size()) return 0;
    for (std::size_t k = 0; k < from_.size(); ++k) {
      if (text[i + k].cp != from_[k]) return 0;
    }
    return from_.size();
  }

  std::vector<int32_t> from_, to_;
  bool repeat_ = false;
  std::size_t min_ = 1, max_ = 1;
};

// The regex patterns Replace accepts: a literal string (no metacharacters; "\x" escapes x), or one
// (escaped) character followed by +, {n}, {n,} or {n,m}.
struct ReplacePattern {
  std::vector<int32_t> literal;  // the string, or the one repeated character
  bool repeat = false;
  std::size_t min = 1, max = 1;
};
std::optional<ReplacePattern> ParseRegex(const std::string& re) {
  static const std::string kMeta = "\\^$.|?*+()[]{}";
  const std::vector<int32_t> cps = utf8::CodePoints(re);
  ReplacePattern p;
  std::size_t i = 0;
  for (; i < cps.size(); ++i) {
    const int32_t c = cps[i];
    if (c == '\\') {
      if (i + 1 >= cps.size()) return std::nullopt;
      const int32_t e = cps[++i];
      if (e >= 128 || kMeta.find(static_cast<char>(e)) == std::string::npos) return std::nullopt;  // \s, \d, … are classes
      p.literal.push_back(e);
      continue;
    }
    if (c < 128 && kMeta.find(static_cast<char>(c)) != std::string::npos) break;
    p.literal.push_back(c);
  }
  if (i == cps.size()) return p.literal.empty() ? std::nullopt : std::optional<ReplacePattern>(p);
  if (p.literal.size() != 1) return std::nullopt;  // a quantifier applies to one character only
  p.repeat = true;
  if (cps[i] == '+' && i + 1 == cps.size()) {
    p.max = SIZE_MAX;
    return p;
  }
  if (cps[i] != '{' || cps.back() != '}') return std::nullopt;
  std::string body;
  for (std::size_t k = i + 1; k + 1 < cps.size(); ++k) utf8::Append(body, cps[k]);
  const std::size_t comma = body.find(',');
  auto number = [](const std::string& s, std::size_t& v) {
    if (s.empty() || s.size() > 6 || s.find_first_not_of("0123456789") != std::string::npos) return false;
    v = static_cast<std::size_t>(std::stoul(s));
    return true;
  };
  if (!number(body.substr(0, comma), p.min)) return std::nullopt;
  if (comma == std::string::npos) {
    p.max = p.min;
  } else if (comma + 1 == body.size()) {
    p.max = SIZE_MAX;
  } else if (!number(body.substr(comma + 1), p.max)) {
    return std::nullopt;
  }
  if (p.min == 0 || p.max < p.min) return std::nullopt;  // an empty match would replace between characters
  return p;
}

// Strip: whitespace removed from the left and/or right end.
class NormStrip final : public Normalizer {
 public:
  NormStrip(bool left, bool right) : left_(left), right_(right) {}
  void Normalize(NormalizedText& text) const override {
    std::size_t b = 0, e = text.size();
    if (left_) {
      while (b < e && IsWhiteSpace(text[b].cp)) ++b;
    }
    if (right_) {
      while (e > b && IsWhiteSpace(text[e - 1].cp)) --e;
    }
    text.erase(text.begin() + static_cast<std::ptrdiff_t>(e), text.end());
    text.erase(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(b));
  }

 private:
  bool left_, right_;
};

class NormPrepend final : public Normalizer {
 public:
  explicit NormPrepend(std::vector<int32_t> what) : what_(std::move(what)) {}
  void Normalize(NormalizedText& text) const override {
    if (text.empty()) return;
    NormalizedText out;
    out.reserve(text.size() + what_.size());
    for (int32_t cp : what_) out.push_back({cp, text[0].begin, text[0].end});
    out.insert(out.end(), text.begin(), text.end());
    text.swap(out);
  }

 private:
  std::vector<int32_t> what_;
};

class NormSequence final : public Normalizer {
 public:
  explicit NormSequence(std::vector<std::unique_ptr<Normalizer>> parts) : parts_(std::move(parts)) {}
  void Normalize(NormalizedText& text) const override {
    for (const auto& p : parts_) p->Normalize(text);
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> parts_;
};


bool BoolOr(const nlohmann::json& j, const char* key, bool dflt) {
  auto it = j.find(key);
  return it != j.end() && it->is_boolean() ? it->get<bool>() : dflt;
}

}  // namespace

Result<std::unique_ptr<Normalizer>> MakeNormalizer(const nlohmann::json& j, const std::string& origin) {
  static const std::string kSupported =
      "BertNormalizer, Lowercase, StripAccents, NFD, NFKD, NFC, NFKC, Strip, Replace, Prepend, Precompiled, Sequence";
  const nlohmann::json type = j.value("type", nlohmann::json());
  const std::string t = type.is_string() ? type.get<std::string>() : "";
  if (t == "BertNormalizer") {
    const bool lower = BoolOr(j, "lowercase", true);
    const bool strip = BoolOr(j, "strip_accents", lower);  // null: follows lowercase
    return std::unique_ptr<Normalizer>(std::make_unique<BertNorm>(BoolOr(j, "clean_text", true),
                                                                        BoolOr(j, "handle_chinese_chars", true), strip, lower));
  }
  if (t == "Lowercase") return std::unique_ptr<Normalizer>(std::make_unique<NormSimple>(NormSimple::kLowercase));
  if (t == "StripAccents") return std::unique_ptr<Normalizer>(std::make_unique<NormSimple>(NormSimple::kStripAccents));
  if (t == "NFD") return std::unique_ptr<Normalizer>(std::make_unique<NormSimple>(NormSimple::kNfd));
  if (t == "NFKD") return std::unique_ptr<Normalizer>(std::make_unique<NormSimple>(NormSimple::kNfkd));
  if (t == "NFC") return std::unique_ptr<Normalizer>(std::make_unique<NormSimple>(NormSimple::kNfc));
  if (t == "NFKC") return std::unique_ptr<Normalizer>(std::make_unique<NormSimple>(NormSimple::kNfkc));
  if (t == "Strip") return std::unique_ptr<Normalizer>(std::make_unique<NormStrip>(BoolOr(j, "strip_left", true), BoolOr(j, "strip_right", true)));
  if (t == "Precompiled") return MakePrecompiled(j, origin);
  if (t == "Prepend" && j.value("prepend", nlohmann::json()).is_string()) {
    return std::unique_ptr<Normalizer>(std::make_unique<NormPrepend>(utf8::CodePoints(j["prepend"].get<std::string>())));
  }
  if (t == "Replace") {
    const nlohmann::json pat = j.value("pattern", nlohmann::json());
    const nlohmann::json content = j.value("content", nlohmann::json());
    if (!content.is_string()) return InvalidArgument("'" + origin + "': normalizer Replace needs a string \"content\"");
    std::vector<int32_t> to = utf8::CodePoints(content.get<std::string>());
    if (pat.is_object() && pat.contains("String") && pat["String"].is_string()) {
      return std::unique_ptr<Normalizer>(std::make_unique<NormReplace>(utf8::CodePoints(pat["String"].get<std::string>()), std::move(to)));
    }
    if (pat.is_object() && pat.contains("Regex") && pat["Regex"].is_string()) {
      if (auto p = ParseRegex(pat["Regex"].get<std::string>())) {
        if (!p->repeat) return std::unique_ptr<Normalizer>(std::make_unique<NormReplace>(std::move(p->literal), std::move(to)));
        return std::unique_ptr<Normalizer>(std::make_unique<NormReplace>(p->literal[0], p->min, p->max, std::move(to)));
      }
    }
    return Unsupported(origin, "normalizer Replace with pattern", pat,
                       "{\"String\": ...}, or a {\"Regex\": ...} that is a literal or one character repeated (\" {2,}\", \"x+\")");
  }
  if (t == "Sequence" && j.value("normalizers", nlohmann::json()).is_array()) {
    std::vector<std::unique_ptr<Normalizer>> parts;
    for (const auto& p : j["normalizers"]) {
      if (!p.is_object()) return InvalidArgument("'" + origin + "': a normalizer in a Sequence is not an object");
      ASSIGN_OR_RETURN(auto n, MakeNormalizer(p, origin));
      parts.push_back(std::move(n));
    }
    return std::unique_ptr<Normalizer>(std::make_unique<NormSequence>(std::move(parts)));
  }
  return Unsupported(origin, "normalizer", type, kSupported);
}

}  // namespace dfw::tokenizers
