// Small string helpers shared by every module (did-you-mean, joining, quoting).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dfw {

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
