// UTF-8 helpers: the one place that decodes and encodes UTF-8 for the tokenizers and for the
// inference code that checks texts before they reach a tokenizer.
//
// Validity is utf8proc's (utf8proc_iterate): overlong forms, surrogates and code points past
// U+10FFFF are invalid, so a text these helpers accept is one every tokenizer here accepts.
// Functions are pure and may be called concurrently.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dfw/common/status.h"

namespace dfw::utf8 {

// One code point read from UTF-8: its value and its length in bytes. size is 0 when the bytes at
// the position are not a valid sequence (or the position is at the end).
struct CodePoint {
  int32_t cp = 0;
  std::size_t size = 0;
};
CodePoint Decode(std::string_view s, std::size_t pos);

// Appends the UTF-8 of `cp` (a valid code point) to `out`.
void Append(std::string& out, int32_t cp);

// The code points of `s`, up to its first invalid sequence.
std::vector<int32_t> CodePoints(std::string_view s);

// `s` with each maximal invalid subpart replaced by one U+FFFD (Rust's String::from_utf8_lossy,
// Python's errors="replace").
std::string Lossy(std::string_view s);

// The byte offset of the first invalid sequence of `s`; none when `s` is valid UTF-8.
std::optional<std::size_t> FirstInvalid(std::string_view s);

// OK for valid UTF-8, else InvalidArgument "text is not valid UTF-8 (bad byte 0xHH at offset P of N)".
Status Check(std::string_view s);

// Whether byte `c` continues a character (10xxxxxx) rather than starting one.
inline bool IsContinuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

// The code points of valid UTF-8 `s` (its bytes that start a character).
std::size_t CountCodePoints(std::string_view s);

}  // namespace dfw::utf8
