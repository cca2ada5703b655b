// BERT's basic tokenizer: clean, split on whitespace/punctuation/CJK, lower-case, strip accents.
#include <array>
#include <string>
#include <vector>

#include <utf8proc.h>

#include "dfw/inference/tokenizer.h"

namespace dfw {
namespace {

bool IsWhitespace(int32_t cp) {
  if (cp == ' ' || cp == '\t' || cp == '\n' || cp == '\r') return true;
  const utf8proc_category_t c = utf8proc_category(cp);
  // Zs plus the line/paragraph separators: Rust's and Python's split() treat them as whitespace.
  return c == UTF8PROC_CATEGORY_ZS || c == UTF8PROC_CATEGORY_ZL || c == UTF8PROC_CATEGORY_ZP;
}

bool IsControl(int32_t cp) {
  if (cp == '\t' || cp == '\n' || cp == '\r') return false;
  switch (utf8proc_category(cp)) {
    case UTF8PROC_CATEGORY_CN:  // unassigned
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO:
      return true;
    default:
      return false;
  }
}

bool IsPunctuation(int32_t cp) {
  if ((cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) || (cp >= 123 && cp <= 126)) {
    return true;  // BERT counts all ASCII non-alphanumerics ($, +, ^, `…) as punctuation
  }
  const utf8proc_category_t c = utf8proc_category(cp);
  return c >= UTF8PROC_CATEGORY_PC && c <= UTF8PROC_CATEGORY_PO;
}

// The "CJK Unified Ideographs" blocks BERT's vocabulary splits per character (not Hiragana,
// Katakana or Hangul, which are written with spaces or tokenized as words).
bool IsCjk(int32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) || (cp >= 0x20000 && cp <= 0x2A6DF) ||
         (cp >= 0x2A700 && cp <= 0x2B73F) || (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B820 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

void AppendUtf8(std::string& out, int32_t cp) {
  std::array<utf8proc_uint8_t, 4> buf{};
  const utf8proc_ssize_t n = utf8proc_encode_char(cp, buf.data());
  out.append(reinterpret_cast<const char*>(buf.data()), static_cast<std::size_t>(n));
}

class WordBuilder {
 public:
  WordBuilder(const TokenizerOptions& options, std::vector<std::string>& out) : options_(options), out_(out) {}

  // One code point of a whitespace-delimited word: normalised, then punctuation split off.
  void Add(int32_t cp) {
    const bool strip = options_.strip_accents.value_or(options_.do_lower_case);
    if (!strip) {
      AddNormalized(options_.do_lower_case ? utf8proc_tolower(cp) : cp);
      return;
    }
    std::array<utf8proc_int32_t, 32> parts{};
    utf8proc_ssize_t n =
        utf8proc_decompose_char(cp, parts.data(), static_cast<utf8proc_ssize_t>(parts.size()), UTF8PROC_DECOMPOSE, nullptr);
    if (n < 0 || n > static_cast<utf8proc_ssize_t>(parts.size())) {  // cannot happen for valid code points
      parts[0] = cp;
      n = 1;
    }
    for (utf8proc_ssize_t i = 0; i < n; ++i) {
      if (utf8proc_category(parts[i]) == UTF8PROC_CATEGORY_MN) continue;  // the accent itself
      AddNormalized(options_.do_lower_case ? utf8proc_tolower(parts[i]) : parts[i]);
    }
  }

  // A character that is a word by itself (CJK ideograph).
  void AddAlone(int32_t cp) {
    Flush();
    AppendUtf8(word_, cp);
    Flush();
  }

  void Flush() {
    if (!word_.empty()) out_.push_back(std::move(word_));
    word_.clear();
  }

 private:
  void AddNormalized(int32_t cp) {
    if (IsPunctuation(cp)) {
      AddAlone(cp);
    } else {
      AppendUtf8(word_, cp);
    }
  }

  const TokenizerOptions& options_;
  std::vector<std::string>& out_;
  std::string word_;
};

}  // namespace

Result<std::vector<std::string>> BasicTokenize(std::string_view text, const TokenizerOptions& options) {
  std::vector<std::string> words;
  WordBuilder builder(options, words);
  const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(text.data());
  const auto size = static_cast<utf8proc_ssize_t>(text.size());
  for (utf8proc_ssize_t pos = 0; pos < size;) {
    utf8proc_int32_t cp = 0;
    const utf8proc_ssize_t n = utf8proc_iterate(p + pos, size - pos, &cp);
    if (n <= 0 || cp < 0) {
      return InvalidArgument("text is not valid UTF-8 (bad byte 0x" +
                             std::string(1, "0123456789abcdef"[p[pos] >> 4]) +
                             std::string(1, "0123456789abcdef"[p[pos] & 15]) + " at offset " + std::to_string(pos) +
                             " of " + std::to_string(size) + ")");
    }
    pos += n;
    if (cp == 0 || cp == 0xFFFD || IsControl(cp)) continue;
    if (IsWhitespace(cp)) {
      builder.Flush();
    } else if (options.tokenize_chinese_chars && IsCjk(cp)) {
      builder.AddAlone(cp);
    } else {
      builder.Add(cp);
    }
  }
  builder.Flush();
  return words;
}

}  // namespace dfw
