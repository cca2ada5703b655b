// The UTF-8 helpers (dfw/tokenizers/utf8.h) and the two that work on the pipeline's NormalizedText
// (tokenizer_parts.h): every UTF-8 walk of the tokenizers is here.
#include "dfw/tokenizers/utf8.h"

#include <array>

#include <utf8proc.h>

#include "tokenizer_parts.h"

namespace dfw {
namespace utf8 {

CodePoint Decode(std::string_view s, std::size_t pos) {
  if (pos >= s.size()) return {};
  utf8proc_int32_t cp = 0;
  const utf8proc_ssize_t n = utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(s.data()) + pos,
                                              static_cast<utf8proc_ssize_t>(s.size() - pos), &cp);
  if (n <= 0 || cp < 0) return {};
  return {cp, static_cast<std::size_t>(n)};
}

void Append(std::string& out, int32_t cp) {
  std::array<utf8proc_uint8_t, 4> buf{};
  const utf8proc_ssize_t n = utf8proc_encode_char(cp, buf.data());
  out.append(reinterpret_cast<const char*>(buf.data()), static_cast<std::size_t>(n));
}

std::vector<int32_t> CodePoints(std::string_view s) {
  std::vector<int32_t> out;
  for (std::size_t pos = 0; pos < s.size();) {
    const CodePoint c = Decode(s, pos);
    if (c.size == 0) break;
    out.push_back(c.cp);
    pos += c.size;
  }
  return out;
}

std::string Lossy(std::string_view b) {
  std::string out;
  const std::size_t n = b.size();
  for (std::size_t i = 0; i < n;) {
    const unsigned char c = static_cast<unsigned char>(b[i]);
    std::size_t len = 0;
    unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
    if (c < 0x80) len = 1;
    else if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c >= 0xE0 && c <= 0xEF) len = 3, lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
    else if (c >= 0xF0 && c <= 0xF4) len = 4, lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
    if (len == 0) {
      Append(out, 0xFFFD);
      ++i;
      continue;
    }
    std::size_t k = 1;
    for (; k < len && i + k < n; ++k) {
      const unsigned char d = static_cast<unsigned char>(b[i + k]);
      if (k == 1 ? (d < lo || d > hi) : (d < 0x80 || d > 0xBF)) break;
    }
    if (k == len) {
      out.append(b, i, len);
    } else {
      Append(out, 0xFFFD);
    }
    i += k;
  }
  return out;
}

std::optional<std::size_t> FirstInvalid(std::string_view s) {
  for (std::size_t pos = 0; pos < s.size();) {
    const CodePoint c = Decode(s, pos);
    if (c.size == 0) return pos;
    pos += c.size;
  }
  return std::nullopt;
}

Status Check(std::string_view s) {
  if (const auto bad = FirstInvalid(s)) {
    static const char kHex[] = "0123456789abcdef";
    const auto b = static_cast<unsigned char>(s[*bad]);
    return InvalidArgument(std::string("text is not valid UTF-8 (bad byte 0x") + kHex[b >> 4] + kHex[b & 15] + " at offset " +
                           std::to_string(*bad) + " of " + std::to_string(s.size()) + ")");
  }
  return Status::OK();
}

std::size_t CountCodePoints(std::string_view s) {
  std::size_t n = 0;
  for (char c : s) n += !IsContinuation(c);
  return n;
}

}  // namespace utf8

namespace tokenizers {

std::string ToUtf8(const NChar* chars, std::size_t n) {
  std::string s;
  s.reserve(n);
  for (std::size_t i = 0; i < n; ++i) utf8::Append(s, chars[i].cp);
  return s;
}

Status DecodeUtf8(std::string_view text, uint32_t base, NormalizedText& out) {
  for (std::size_t pos = 0; pos < text.size();) {
    const utf8::CodePoint c = utf8::Decode(text, pos);
    if (c.size == 0) return utf8::Check(text);  // names the offset of the bad byte
    out.push_back({c.cp, base + static_cast<uint32_t>(pos), base + static_cast<uint32_t>(pos + c.size)});
    pos += c.size;
  }
  return Status::OK();
}

}  // namespace tokenizers
}  // namespace dfw
