// tokenizer.json pre-tokenizers: split normalised text into words (and, for ByteLevel, map each
// UTF-8 byte to GPT-2's printable character), offsets carried along.
#include <memory>
#include <string>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <utf8proc.h>

#include "tokenizer_parts.h"
#include "unicode_class.h"

namespace dfw::tokenizers {
namespace {

bool IsLetter(int32_t cp) {
  const auto c = utf8proc_category(cp);
  return c >= UTF8PROC_CATEGORY_LU && c <= UTF8PROC_CATEGORY_LO;
}
bool IsNumber(int32_t cp) {
  const auto c = utf8proc_category(cp);
  return c >= UTF8PROC_CATEGORY_ND && c <= UTF8PROC_CATEGORY_NO;
}
bool IsMark(int32_t cp) {
  const auto c = utf8proc_category(cp);
  return c >= UTF8PROC_CATEGORY_MN && c <= UTF8PROC_CATEGORY_ME;
}
// Regex \s (Unicode White_Space).
bool IsSpace(int32_t cp) { return cp == 0x0B || cp == 0x0C || cp == 0x85 || unicode::IsWhitespace(cp); }
// Regex \w: letters, marks, numbers, connector punctuation.
bool IsWord(int32_t cp) { return IsLetter(cp) || IsMark(cp) || IsNumber(cp) || utf8proc_category(cp) == UTF8PROC_CATEGORY_PC; }

// Splits every word with `f`, which appends [begin, end) ranges of that word to keep.
template <typename F>
void SplitEach(std::vector<NormalizedText>& words, F f) {
  std::vector<NormalizedText> out;
  std::vector<std::pair<std::size_t, std::size_t>> ranges;
  for (const NormalizedText& w : words) {
    ranges.clear();
    f(w, ranges);
    for (auto [b, e] : ranges) {
      if (e > b) out.emplace_back(w.begin() + static_cast<std::ptrdiff_t>(b), w.begin() + static_cast<std::ptrdiff_t>(e));
    }
  }
  words.swap(out);
}

// Whitespace removed; each character for which `isolate` holds becomes its own word.
template <typename P>
void SplitSpaceIsolate(const NormalizedText& w, std::vector<std::pair<std::size_t, std::size_t>>& r, P isolate) {
  std::size_t start = 0;
  for (std::size_t i = 0; i < w.size(); ++i) {
    if (unicode::IsWhitespace(w[i].cp)) {
      r.emplace_back(start, i);
      start = i + 1;
    } else if (isolate(w[i].cp)) {
      r.emplace_back(start, i);
      r.emplace_back(i, i + 1);
      start = i + 1;
    }
  }
  r.emplace_back(start, w.size());
}

class PreBert final : public PreTokenizer {
 public:
  void Split(std::vector<NormalizedText>& words) const override {
    SplitEach(words, [](const NormalizedText& w, auto& r) { SplitSpaceIsolate(w, r, unicode::IsPunctuation); });
  }
};

class PreWhitespaceSplit final : public PreTokenizer {
 public:
  void Split(std::vector<NormalizedText>& words) const override {
    SplitEach(words, [](const NormalizedText& w, auto& r) { SplitSpaceIsolate(w, r, [](int32_t) { return false; }); });
  }
};

// \w+|[^\w\s]+
class PreWhitespace final : public PreTokenizer {
 public:
  void Split(std::vector<NormalizedText>& words) const override {
    SplitEach(words, [](const NormalizedText& w, auto& r) {
      for (std::size_t i = 0; i < w.size();) {
        if (IsSpace(w[i].cp)) {
          ++i;
          continue;
        }
        const bool word = IsWord(w[i].cp);
        std::size_t j = i + 1;
        while (j < w.size() && !IsSpace(w[j].cp) && IsWord(w[j].cp) == word) ++j;
        r.emplace_back(i, j);
        i = j;
      }
    });
  }
};

class PrePunctuation final : public PreTokenizer {
 public:
  void Split(std::vector<NormalizedText>& words) const override {
    SplitEach(words, [](const NormalizedText& w, auto& r) {
      std::size_t start = 0;
      for (std::size_t i = 0; i < w.size(); ++i) {
        if (!unicode::IsPunctuation(w[i].cp)) continue;
        r.emplace_back(start, i);
        r.emplace_back(i, i + 1);
        start = i + 1;
      }
      r.emplace_back(start, w.size());
    });
  }
};

// GPT-2's pattern: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
std::size_t Gpt2Match(const NormalizedText& w, std::size_t i) {
  const std::size_t n = w.size();
  auto at = [&](std::size_t k) { return k < n ? w[k].cp : -1; };
  if (at(i) == '\'') {
    for (const char* c : {"s", "t", "re", "ve", "m", "ll", "d"}) {
      std::size_t k = 0;
      while (c[k] != '\0' && at(i + 1 + k) == c[k]) ++k;
      if (c[k] == '\0') return i + 1 + k;
    }
  }
  const std::size_t s = at(i) == ' ' ? i + 1 : i;
  auto run = [&](auto pred) {
    std::size_t k = s;
    while (k < n && pred(w[k].cp)) ++k;
    return k;
  };
  if (s < n) {
    if (IsLetter(w[s].cp)) return run(IsLetter);
    if (IsNumber(w[s].cp)) return run(IsNumber);
    auto other = [](int32_t cp) { return !IsSpace(cp) && !IsLetter(cp) && !IsNumber(cp); };
    if (other(w[s].cp)) return run(other);
  }
  std::size_t j = i;
  while (j < n && IsSpace(w[j].cp)) ++j;
  if (j == n || j - i == 1) return j;  // to the end, or one space before a word (\s+ alone)
  return j - 1;                         // leave the last space to prefix the next word
}

class PreByteLevel final : public PreTokenizer {
 public:
  PreByteLevel(bool prefix, bool regex) : prefix_(prefix), regex_(regex) {}
  void Split(std::vector<NormalizedText>& words) const override {
    if (prefix_) {
      for (NormalizedText& w : words) {
        if (!w.empty() && w[0].cp != ' ') w.insert(w.begin(), NChar{' ', w[0].begin, w[0].begin});
      }
    }
    if (regex_) {
      SplitEach(words, [](const NormalizedText& w, auto& r) {
        for (std::size_t i = 0; i < w.size();) {
          const std::size_t j = Gpt2Match(w, i);
          r.emplace_back(i, j);
          i = j;
        }
      });
    }
    std::string encoded;
    for (NormalizedText& w : words) {
      NormalizedText bytes;
      bytes.reserve(w.size() * 2);
      for (const NChar& c : w) {
        encoded.clear();
        utf8::Append(encoded, c.cp);
        for (unsigned char b : encoded) bytes.push_back({ByteToChar(b), c.begin, c.end});
      }
      w.swap(bytes);
    }
  }

 private:
  bool prefix_, regex_;
};

class PreMetaspace final : public PreTokenizer {
 public:
  PreMetaspace(int32_t replacement, bool prepend_first, bool prepend_always, bool split)
      : rep_(replacement), first_(prepend_first), always_(prepend_always), split_(split) {}
  void Split(std::vector<NormalizedText>& words) const override {
    for (NormalizedText& w : words) {
      for (NChar& c : w) {
        if (c.cp == ' ') c.cp = rep_;
      }
      // "first": only the split that starts the text (not one after an added token). The
      // prepended character takes the first character's range, as tokenizers' prepend does.
      if (!w.empty() && w[0].cp != rep_ && (always_ || (first_ && w[0].begin == 0))) {
        w.insert(w.begin(), NChar{rep_, w[0].begin, w[0].end});
      }
    }
    if (!split_) return;
    SplitEach(words, [this](const NormalizedText& w, auto& r) {
      std::size_t start = 0;
      for (std::size_t i = 1; i < w.size(); ++i) {
        if (w[i].cp != rep_) continue;
        r.emplace_back(start, i);
        start = i;
      }
      r.emplace_back(start, w.size());
    });
  }

 private:
  int32_t rep_;
  bool first_, always_, split_;
};

// Split: the `tokenizers` Split pre-tokenizer (Llama-3's and Qwen2's tokenizer.json put one before
// ByteLevel): the matches of a regex (PCRE2 with UTF and Unicode properties, the Oniguruma syntax
// these files use) or of a literal string are the delimiters, kept or dropped as `behavior` says;
// `invert` makes the matches the pieces instead.
class PreSplit final : public PreTokenizer {
 public:
  enum class Behavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };
  struct Code {
    void operator()(pcre2_code* c) const { pcre2_code_free(c); }
  };
  PreSplit(std::unique_ptr<pcre2_code, Code> re, std::string literal, Behavior b, bool invert)
      : re_(std::move(re)), literal_(std::move(literal)), behavior_(b), invert_(invert) {}

  void Split(std::vector<NormalizedText>& words) const override {
    SplitEach(words, [this](const NormalizedText& w, auto& r) { Pieces(w, r); });
  }

 private:
  // Delimiter matches of `w` as [begin, end) character indices.
  void Matches(const NormalizedText& w, std::vector<std::pair<std::size_t, std::size_t>>& m) const {
    std::string encoded;
    std::vector<std::size_t> char_at;  // byte offset -> character index (size: bytes + 1)
    for (std::size_t i = 0; i < w.size(); ++i) {
      const std::size_t before = encoded.size();
      utf8::Append(encoded, w[i].cp);
      char_at.resize(encoded.size(), i);
      (void)before;
    }
    char_at.push_back(w.size());
    if (re_ == nullptr) {
      for (std::size_t at = 0; !literal_.empty() && (at = encoded.find(literal_, at)) != std::string::npos; at += literal_.size()) {
        m.emplace_back(char_at[at], char_at[at + literal_.size()]);
      }
      return;
    }
    std::unique_ptr<pcre2_match_data, void (*)(pcre2_match_data*)> md(pcre2_match_data_create_from_pattern(re_.get(), nullptr),
                                                                      pcre2_match_data_free);
    // A match limit, so that a pathological pattern in an untrusted file cannot backtrack for ever:
    // past it the rest of the word is one piece (real tokenizer patterns stay far below it).
    thread_local std::unique_ptr<pcre2_match_context, void (*)(pcre2_match_context*)> ctx = [] {
      std::unique_ptr<pcre2_match_context, void (*)(pcre2_match_context*)> c(pcre2_match_context_create(nullptr),
                                                                             pcre2_match_context_free);
      pcre2_set_match_limit(c.get(), 1'000'000);
      pcre2_set_depth_limit(c.get(), 10'000);
      return c;
    }();
    PCRE2_SIZE start = 0;
    const auto* subject = reinterpret_cast<PCRE2_SPTR>(encoded.data());
    while (start <= encoded.size()) {
      const int rc = pcre2_match(re_.get(), subject, encoded.size(), start, PCRE2_NO_UTF_CHECK, md.get(), ctx.get());
      if (rc < 0) break;  // no more matches, or the match limit
      const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md.get());
      if (ov[1] == ov[0]) {  // an empty match delimits nothing; step one character on
        if (ov[0] >= encoded.size()) break;
        start = ov[0] + 1;
        while (start < encoded.size() && utf8::IsContinuation(encoded[start])) ++start;
        continue;
      }
      m.emplace_back(char_at[ov[0]], char_at[ov[1]]);
      start = ov[1];
    }
  }

  void Pieces(const NormalizedText& w, std::vector<std::pair<std::size_t, std::size_t>>& r) const {
    std::vector<std::pair<std::size_t, std::size_t>> m;
    Matches(w, m);
    // (range, is_match) in order, covering the word.
    std::vector<std::pair<std::pair<std::size_t, std::size_t>, bool>> parts;
    std::size_t at = 0;
    for (auto [b, e] : m) {
      if (b > at) parts.push_back({{at, b}, invert_});
      parts.push_back({{b, e}, !invert_});
      at = e;
    }
    if (at < w.size()) parts.push_back({{at, w.size()}, invert_});
    // parts' bool: true = delimiter.
    switch (behavior_) {
      case Behavior::kRemoved:
        for (const auto& [range, delim] : parts) {
          if (!delim) r.push_back(range);
        }
        break;
      case Behavior::kIsolated:
        for (const auto& [range, delim] : parts) r.push_back(range);
        break;
      case Behavior::kMergedWithPrevious:
        for (const auto& [range, delim] : parts) {
          if (delim && !r.empty() && r.back().second == range.first) {
            r.back().second = range.second;
          } else {
            r.push_back(range);
          }
        }
        break;
      case Behavior::kMergedWithNext: {
        bool pending = false;
        for (const auto& [range, delim] : parts) {
          if (pending) {
            r.back().second = range.second;
          } else {
            r.push_back(range);
          }
          pending = delim;
        }
        break;
      }
      case Behavior::kContiguous: {
        bool last_delim = false;
        for (const auto& [range, delim] : parts) {
          if (delim && last_delim && !r.empty()) {
            r.back().second = range.second;
          } else {
            r.push_back(range);
          }
          last_delim = delim;
        }
        break;
      }
    }
  }

  std::unique_ptr<pcre2_code, Code> re_;
  std::string literal_;
  Behavior behavior_;
  bool invert_;
};

Result<std::unique_ptr<PreTokenizer>> MakeSplit(const nlohmann::json& j, const std::string& origin) {
  const nlohmann::json pattern = j.value("pattern", nlohmann::json());
  const nlohmann::json behavior = j.value("behavior", nlohmann::json());
  static const char* kBehaviors[] = {"Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous"};
  PreSplit::Behavior b = PreSplit::Behavior::kIsolated;
  bool known = false;
  for (int i = 0; i < 5; ++i) {
    if (behavior == kBehaviors[i]) {
      b = static_cast<PreSplit::Behavior>(i);
      known = true;
    }
  }
  if (!known) return Unsupported(origin, "Split behavior", behavior, "Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous");
  const auto inv = j.find("invert");
  const bool invert = inv != j.end() && inv->is_boolean() && inv->get<bool>();
  if (pattern.is_object() && pattern.contains("String") && pattern["String"].is_string()) {
    return std::unique_ptr<PreTokenizer>(std::make_unique<PreSplit>(nullptr, pattern["String"].get<std::string>(), b, invert));
  }
  if (!pattern.is_object() || !pattern.contains("Regex") || !pattern["Regex"].is_string()) {
    return InvalidArgument("'" + origin + "': Split needs \"pattern\": {\"Regex\": …} or {\"String\": …}, got " + pattern.dump());
  }
  const std::string re = pattern["Regex"].get<std::string>();
  int err = 0;
  PCRE2_SIZE at = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(re.data()), re.size(), PCRE2_UTF | PCRE2_UCP, &err, &at, nullptr);
  if (code == nullptr) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof msg);
    return InvalidArgument("'" + origin + "': Split regex " + nlohmann::json(re).dump() + " does not compile at offset " +
                           std::to_string(at) + ": " + reinterpret_cast<const char*>(msg));
  }
  (void)pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // faster where the JIT exists; the interpreter otherwise
  return std::unique_ptr<PreTokenizer>(std::make_unique<PreSplit>(std::unique_ptr<pcre2_code, PreSplit::Code>(code), "", b, invert));
}

class PreSequence final : public PreTokenizer {
 public:
  explicit PreSequence(std::vector<std::unique_ptr<PreTokenizer>> parts) : parts_(std::move(parts)) {}
  void Split(std::vector<NormalizedText>& words) const override {
    for (const auto& p : parts_) p->Split(words);
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> parts_;
};

}  // namespace

Result<std::unique_ptr<PreTokenizer>> MakePreTokenizer(const nlohmann::json& j, const std::string& origin) {
  static const std::string kSupported =
      "BertPreTokenizer, Whitespace, WhitespaceSplit, Punctuation, ByteLevel, Metaspace, Split, Sequence";
  const nlohmann::json type = j.value("type", nlohmann::json());
  const std::string t = type.is_string() ? type.get<std::string>() : "";
  auto flag = [&](const char* key, bool dflt) {
    auto it = j.find(key);
    return it != j.end() && it->is_boolean() ? it->get<bool>() : dflt;
  };
  if (t == "BertPreTokenizer") return std::unique_ptr<PreTokenizer>(std::make_unique<PreBert>());
  if (t == "Whitespace") return std::unique_ptr<PreTokenizer>(std::make_unique<PreWhitespace>());
  if (t == "WhitespaceSplit") return std::unique_ptr<PreTokenizer>(std::make_unique<PreWhitespaceSplit>());
  if (t == "Split") return MakeSplit(j, origin);
  if (t == "Punctuation") {
    const std::string behavior = j.value("behavior", std::string("Isolated"));
    if (behavior != "Isolated") return Unsupported(origin, "Punctuation behavior", behavior, "Isolated");
    return std::unique_ptr<PreTokenizer>(std::make_unique<PrePunctuation>());
  }
  if (t == "ByteLevel") {
    return std::unique_ptr<PreTokenizer>(std::make_unique<PreByteLevel>(flag("add_prefix_space", true), flag("use_regex", true)));
  }
  if (t == "Metaspace") {
    const std::string rep = j.value("replacement", std::string("\xE2\x96\x81"));
    const auto [cp, size] = utf8::Decode(rep, 0);
    if (rep.empty() || size != rep.size()) {
      return InvalidArgument("'" + origin + "': Metaspace replacement must be one character");
    }
    std::string scheme = j.value("prepend_scheme", std::string());
    if (scheme.empty()) scheme = flag("add_prefix_space", true) ? "always" : "never";
    if (scheme != "always" && scheme != "first" && scheme != "never") {
      return Unsupported(origin, "Metaspace prepend_scheme", scheme, "always, first, never");
    }
    return std::unique_ptr<PreTokenizer>(
        std::make_unique<PreMetaspace>(cp, scheme == "first", scheme == "always", flag("split", true)));
  }
  if (t == "Sequence" && j.value("pretokenizers", nlohmann::json()).is_array()) {
    std::vector<std::unique_ptr<PreTokenizer>> parts;
    for (const auto& p : j["pretokenizers"]) {
      if (!p.is_object()) return InvalidArgument("'" + origin + "': a pre-tokenizer in a Sequence is not an object");
      ASSIGN_OR_RETURN(auto n, MakePreTokenizer(p, origin));
      parts.push_back(std::move(n));
    }
    return std::unique_ptr<PreTokenizer>(std::make_unique<PreSequence>(std::move(parts)));
  }
  return Unsupported(origin, "pre_tokenizer", type, kSupported);
}

}  // namespace dfw::tokenizers
