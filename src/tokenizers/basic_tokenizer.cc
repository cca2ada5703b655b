// BERT's basic tokenizer: clean, split on whitespace/punctuation/CJK, lower-case, strip accents.
#include <array>
#include <string>
#include <vector>

#include <utf8proc.h>

#include "dfw/tokenizers/utf8.h"
#include "dfw/tokenizers/wordpiece_tokenizer.h"
#include "unicode_class.h"

namespace dfw {
namespace {

using unicode::IsCjk;
using unicode::IsControl;
using unicode::IsPunctuation;
using unicode::IsWhitespace;

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
    utf8::Append(word_, cp);
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
      utf8::Append(word_, cp);
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
  for (std::size_t pos = 0; pos < text.size();) {
    const auto [cp, n] = utf8::Decode(text, pos);
    if (n == 0) {
      const auto bad = static_cast<unsigned char>(text[pos]);
      return InvalidArgument("text is not valid UTF-8 (bad byte 0x" + std::string(1, "0123456789abcdef"[bad >> 4]) +
                             std::string(1, "0123456789abcdef"[bad & 15]) + " at offset " + std::to_string(pos) +
                             " of " + std::to_string(text.size()) + ")");
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
