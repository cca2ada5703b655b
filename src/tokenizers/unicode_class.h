// Character classes the Hugging Face tokenizers use (BertNormalizer and BertPreTokenizer, which
// are also BERT's basic tokenizer; the Whitespace pre-tokenizer). UTF-8 itself is
// dfw/tokenizers/utf8.h.
#pragma once

#include <cstdint>

#include <utf8proc.h>

namespace dfw::unicode {

inline bool IsWhitespace(int32_t cp) {
  if (cp == ' ' || cp == '\t' || cp == '\n' || cp == '\r') return true;
  const utf8proc_category_t c = utf8proc_category(cp);
  // Zs plus the line/paragraph separators: Rust's and Python's split() treat them as whitespace.
  return c == UTF8PROC_CATEGORY_ZS || c == UTF8PROC_CATEGORY_ZL || c == UTF8PROC_CATEGORY_ZP;
}

inline bool IsControl(int32_t cp) {
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

inline bool IsPunctuation(int32_t cp) {
  if ((cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) || (cp >= 123 && cp <= 126)) {
    return true;  // BERT counts all ASCII non-alphanumerics ($, +, ^, `…) as punctuation
  }
  const utf8proc_category_t c = utf8proc_category(cp);
  return c >= UTF8PROC_CATEGORY_PC && c <= UTF8PROC_CATEGORY_PO;
}

// The "CJK Unified Ideographs" blocks BERT's vocabulary splits per character (not Hiragana,
// Katakana or Hangul, which are written with spaces or tokenized as words).
inline bool IsCjk(int32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) || (cp >= 0x20000 && cp <= 0x2A6DF) ||
         (cp >= 0x2A700 && cp <= 0x2B73F) || (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B820 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

}  // namespace dfw::unicode
