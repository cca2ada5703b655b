// Small string helpers shared by every module (did-you-mean, joining, quoting).
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace dfw {

// a == b for two std::strings, for the hot paths that compare short ones (field names, encoded
// group keys). Strings of up to 16 bytes (nearly all) are compared with one 16-byte load of each,
// the bytes past the size masked out: a libstdc++ string's buffer always has 16 readable bytes
// (the in-object buffer holds up to 15 characters and the NUL; a heap buffer exists only for a
// capacity above 15, plus the NUL).
[[gnu::always_inline]] inline bool SameString(const std::string& a, const std::string& b) {
  const std::size_t n = b.size();
  if (a.size() != n) return false;
#if defined(__SSE2__)
  if (n <= 16) {
    const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a.data()));
    const __m128i y = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.data()));
    const unsigned differ = ~static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(x, y))) & 0xFFFFu;
    const unsigned in_string = n == 16 ? 0xFFFFu : (1u << n) - 1;
    return (differ & in_string) == 0;
  }
#endif
  return std::memcmp(a.data(), b.data(), n) == 0;
}

// Damerau-free Levenshtein distance (insert/delete/substitute), ASCII case-sensitive.
std::size_t EditDistance(std::string_view a, std::string_view b);

// The candidate closest to `word` when close enough to be a plausible typo
// (distance <= max(1, len/3)), else nullopt.
std::optional<std::string> ClosestMatch(std::string_view word, const std::vector<std::string>& candidates);

// " (did you mean 'x'?)" or "" when nothing is close.
std::string DidYouMeanSuffix(std::string_view word, const std::vector<std::string>& candidates);

// "a, b, c"
std::string Join(const std::vector<std::string>& parts, std::string_view sep = ", ");

// Splits on `sep`; keeps empty pieces.
std::vector<std::string> Split(std::string_view s, char sep);

std::string_view Trim(std::string_view s);

// Strict decimal parsing of a whole string (no sign for unsigned, no trailing junk).
std::optional<int64_t> ParseInt64(std::string_view s);
std::optional<double> ParseDouble(std::string_view s);

// A size for messages, to one decimal. Binary units for sizes people plan in ("1.5 GiB", "512 MiB",
// "12 KiB", "17 B"); decimal units for a measured size, as `ls -lh --si` or a disk vendor says it
// ("3.2 GB", "1.5 KB", "17 bytes").
enum class ByteUnits { kBinary, kDecimal };
std::string HumanBytes(uint64_t bytes, ByteUnits units = ByteUnits::kBinary);

// Lower-case hex of every byte ("\x01\xab" -> "01ab"), and back: nullopt for an odd length or a
// character that is not a hex digit (either case).
std::string HexEncode(std::string_view bytes);

// "LINE:COL" (1-based) of byte `byte` of `text`, counted as nlohmann's parse errors count it (its
// parse_error::byte is 1-based): for `file:line:col` messages about a JSON file.
std::string JsonLineColumn(std::string_view text, std::size_t byte);
std::optional<std::string> HexDecode(std::string_view hex);

}  // namespace dfw
