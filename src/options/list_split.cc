#include "dfw/options/list_split.h"

namespace dfw {
namespace {

// Appends value[begin, end) stripped of Python whitespace; records it as empty when nothing is left.
void AddStripped(std::string_view value, std::size_t begin, std::size_t end, ListSplitResult& out) {
  std::size_t first = begin;
  while (first < end) {
    std::size_t n = PythonSpaceAt(value, first);
    if (n == 0 || first + n > end) break;
    first += n;
  }
  // Trailing whitespace: walk forward so multi-byte characters are seen from their first byte.
  std::size_t last = first;
  for (std::size_t at = first; at < end;) {
    std::size_t n = PythonSpaceAt(value, at);
    if (n > 0 && at + n <= end) {
      at += n;
    } else {
      last = ++at;
    }
  }
  if (last == first) {
    out.empty_items.push_back(begin);
    return;
  }
  out.items.push_back({first, last - first});
}

ListSplitResult SplitBeamPython(std::string_view value) {
  // Mirrors _smart_split: the '=' counter decides whether a comma separates; it restarts with
  // each item. Leading spaces before an item are skipped there and stripped here (same result).
  ListSplitResult out;
  std::size_t begin = 0;
  int equals = 0;
  for (std::size_t i = 0; i < value.size(); ++i) {
    char c = value[i];
    if (c == '=') {
      ++equals;
    } else if (c == ',') {
      if (equals <= 1) {
        AddStripped(value, begin, i, out);
        begin = i + 1;
        equals = 0;
      } else {
        out.commas_kept = true;
      }
    }
  }
  AddStripped(value, begin, value.size(), out);
  return out;
}

ListSplitResult SplitJava(std::string_view value) {
  ListSplitResult out;
  std::size_t begin = 0;
  while (true) {
    std::size_t comma = value.find(',', begin);
    std::size_t end = comma == std::string_view::npos ? value.size() : comma;
    out.items.push_back({begin, end - begin});
    if (comma == std::string_view::npos) break;
    begin = comma + 1;
  }
  return out;
}

}  // namespace

std::size_t PythonSpaceAt(std::string_view value, std::size_t at) {
  if (at >= value.size()) return 0;
  auto byte = [&](std::size_t i) { return at + i < value.size() ? static_cast<unsigned char>(value[at + i]) : 0u; };
  unsigned char c = byte(0);
  if (c == ' ' || (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x1f)) return 1;
  if (c == 0xc2 && (byte(1) == 0x85 || byte(1) == 0xa0)) return 2;                  // U+0085, U+00A0
  if (c == 0xe1 && byte(1) == 0x9a && byte(2) == 0x80) return 3;                     // U+1680
  if (c == 0xe2 && byte(1) == 0x80) {
    unsigned char d = byte(2);
    if ((d >= 0x80 && d <= 0x8a) || d == 0xa8 || d == 0xa9 || d == 0xaf) return 3;  // U+2000-200A, 2028, 2029, 202F
  }
  if (c == 0xe2 && byte(1) == 0x81 && byte(2) == 0x9f) return 3;                     // U+205F
  if (c == 0xe3 && byte(1) == 0x80 && byte(2) == 0x80) return 3;                     // U+3000
  return 0;
}

ListSplitResult SplitListValue(std::string_view value, ListSplit how) {
  switch (how) {
    case ListSplit::kBeamPython: return SplitBeamPython(value);
    case ListSplit::kJava: return SplitJava(value);
    case ListSplit::kNone: break;
  }
  ListSplitResult out;
  out.items.push_back({0, value.size()});
  return out;
}

std::vector<std::string_view> ListItemTexts(std::string_view value, const ListSplitResult& result) {
  std::vector<std::string_view> out;
  for (const ListItem& item : result.items) out.push_back(value.substr(item.offset, item.length));
  return out;
}

}  // namespace dfw
