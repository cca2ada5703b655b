// tokenizer.json normalizers: each rewrites code points and keeps every output character tied to
// the input character it came from (an expansion maps all its parts to the same input range).
#include <array>
#include <string>

#include <utf8proc.h>

#include "hf_tokenizer_parts.h"
#include "unicode_class.h"

namespace dfw::hf {
namespace {

// Canonical (NFD) or compatibility (NFKD) decomposition of each character, in place.
void Decompose(NormalizedText& text, bool compat) {
  NormalizedText out;
  out.reserve(text.size());
  std::array<utf8proc_int32_t, 32> parts{};
  const utf8proc_option_t opt = static_cast<utf8proc_option_t>(UTF8PROC_DECOMPOSE | (compat ? UTF8PROC_COMPAT : 0));
  for (const NChar& c : text) {
    utf8proc_ssize_t n = utf8proc_decompose_char(c.cp, parts.data(), static_cast<utf8proc_ssize_t>(parts.size()), opt, nullptr);
    if (n <= 0 || n > static_cast<utf8proc_ssize_t>(parts.size())) {
      out.push_back(c);
      continue;
    }
    for (utf8proc_ssize_t i = 0; i < n; ++i) out.push_back({parts[static_cast<std::size_t>(i)], c.begin, c.end});
  }
  text.swap(out);
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
  enum Kind { kLowercase, kStripAccents, kNfd, kNfkd };
  explicit NormSimple(Kind k) : k_(k) {}
  void Normalize(NormalizedText& text) const override {
    switch (k_) {
      case kLowercase: Lower(text); break;
      case kStripAccents: DropNonspacingMarks(text); break;
      case kNfd: Decompose(text, false); break;
      case kNfkd: Decompose(text, true); break;
    }
  }

 private:
  Kind k_;
};

// NormReplace with a plain-string pattern; Prepend. Both insert characters that map to a neighbour.
class NormReplace final : public Normalizer {
 public:
  NormReplace(std::vector<int32_t> from, std::vector<int32_t> to) : from_(std::move(from)), to_(std::move(to)) {}
  void Normalize(NormalizedText& text) const override {
    if (from_.empty()) return;
    NormalizedText out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size();) {
      bool match = i + from_.size() <= text.size();
      for (std::size_t k = 0; match && k < from_.size(); ++k) match = text[i + k].cp == from_[k];
      if (!match) {
        out.push_back(text[i++]);
        continue;
      }
      const uint32_t b = text[i].begin, e = text[i + from_.size() - 1].end;
      for (int32_t cp : to_) out.push_back({cp, b, e});
      i += from_.size();
    }
    text.swap(out);
  }

 private:
  std::vector<int32_t> from_, to_;
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

std::vector<int32_t> CodePoints(const std::string& s) {
  std::vector<int32_t> out;
  const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(s.data());
  for (utf8proc_ssize_t pos = 0; pos < static_cast<utf8proc_ssize_t>(s.size());) {
    utf8proc_int32_t cp = 0;
    const utf8proc_ssize_t n = utf8proc_iterate(p + pos, static_cast<utf8proc_ssize_t>(s.size()) - pos, &cp);
    if (n <= 0) break;
    out.push_back(cp);
    pos += n;
  }
  return out;
}

Result<std::unique_ptr<Normalizer>> MakeNormalizer(const nlohmann::json& j, const std::string& origin) {
  static const std::string kSupported = "BertNormalizer, Lowercase, StripAccents, NFD, NFKD, Replace (string pattern), Prepend, Sequence";
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
  if (t == "Prepend" && j.value("prepend", nlohmann::json()).is_string()) {
    return std::unique_ptr<Normalizer>(std::make_unique<NormPrepend>(CodePoints(j["prepend"].get<std::string>())));
  }
  if (t == "Replace") {
    const nlohmann::json pat = j.value("pattern", nlohmann::json());
    if (pat.is_object() && pat.contains("String") && pat["String"].is_string() && j.value("content", nlohmann::json()).is_string()) {
      return std::unique_ptr<Normalizer>(std::make_unique<NormReplace>(CodePoints(pat["String"].get<std::string>()),
                                                                   CodePoints(j["content"].get<std::string>())));
    }
    return Unsupported(origin, "normalizer Replace with pattern", pat, "a {\"String\": ...} pattern");
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

}  // namespace dfw::hf
