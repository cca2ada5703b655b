// Bytes as tokens: GPT-2's byte ↔ printable-character table (the ByteLevel pre-tokenizer,
// post-processor and decoder) and SentencePiece's "<0xNN>" byte pieces (byte_fallback in the BPE
// and Unigram models, the ByteFallback decoder).
#include <array>
#include <string_view>

#include "tokenizer_parts.h"

namespace dfw::tokenizers {
namespace {

// GPT-2's table: printable Latin-1 bytes map to themselves, the rest to U+0100 upwards in order.
struct ByteTable {
  std::array<int32_t, 256> to_char{};
  ByteTable() {
    int32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      to_char[static_cast<std::size_t>(b)] = printable ? b : next++;
    }
  }
};
const ByteTable& Bytes() {
  static const ByteTable t;
  return t;
}

}  // namespace

int32_t ByteToChar(uint8_t b) { return Bytes().to_char[b]; }

int ByteFromChar(int32_t cp) {
  if (cp < 256) {
    const int32_t mapped = Bytes().to_char[static_cast<std::size_t>(cp)];
    if (mapped == cp) return cp;
  }
  for (int b = 0; b < 256; ++b) {
    if (Bytes().to_char[static_cast<std::size_t>(b)] == cp) return b;
  }
  return -1;
}

int ByteToken(std::string_view t) {
  // tokenizers: six bytes "<0x" HH ">", HH read by u8::from_str_radix (a leading '+' is accepted).
  if (t.size() != 6 || t.substr(0, 3) != "<0x" || t[5] != '>') return -1;
  auto hex = [](char c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1; };
  if (t[3] == '+') return hex(t[4]);
  const int hi = hex(t[3]), lo = hex(t[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

}  // namespace dfw::tokenizers
