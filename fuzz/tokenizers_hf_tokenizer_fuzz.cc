// Fuzzes the tokenizer.json loader and the pipeline it builds: any bytes give a tokenizer or a
// Status (never an exception or a crash); an accepted tokenizer encodes a few texts with every
// offset inside its text and every id a vocabulary id, and decodes them and ids taken from the
// input (sequences that end inside a character, stray byte tokens).
// The first byte picks what the rest is:
//   'C'  a raw SentencePiece precompiled_charsmap, behind a Precompiled normalizer and a Unigram model
//   'U'  Unigram pieces, one a line (score: minus the line's length), byte_fallback on
//   'S'  a Split pre-tokenizer: the second byte picks its behavior and invert, the rest (up to a
//        newline) is its regex, in front of Metaspace and a small Unigram model
//   else the whole input is tokenizer.json text
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "dfw/tokenizers/tokenizer.h"

namespace {

std::string Base64(std::string_view in) {
  static const char* kDigits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (std::size_t i = 0; i < in.size(); i += 3) {
    uint32_t n = static_cast<uint8_t>(in[i]) << 16;
    if (i + 1 < in.size()) n |= static_cast<uint8_t>(in[i + 1]) << 8;
    if (i + 2 < in.size()) n |= static_cast<uint8_t>(in[i + 2]);
    for (std::size_t k = 0; k < 4; ++k) out.push_back(k <= in.size() - i ? kDigits[(n >> (18 - 6 * k)) & 63] : '=');
  }
  return out;
}

nlohmann::json UnigramModel(std::string_view lines) {
  nlohmann::json vocab = nlohmann::json::array({nlohmann::json::array({"<unk>", 0.0})});
  for (int b = 0; b < 256; b += 37) {
    char hex[8];
    std::snprintf(hex, sizeof hex, "<0x%02X>", b);
    vocab.push_back(nlohmann::json::array({hex, -8.0}));
  }
  for (std::size_t pos = 0; pos <= lines.size();) {
    std::size_t end = lines.find('\n', pos);
    if (end == std::string_view::npos) end = lines.size();
    vocab.push_back(nlohmann::json::array({std::string(lines.substr(pos, end - pos)), -static_cast<double>(end - pos)}));
    pos = end + 1;
  }
  for (const char* p : {"a", "b", "ab", "\xE2\x96\x81", "\xE2\x96\x81" "a", "\xC3\xA9"}) vocab.push_back(nlohmann::json::array({p, -2.0}));
  return {{"type", "Unigram"}, {"unk_id", 0}, {"byte_fallback", true}, {"vocab", vocab}};
}

std::string Build(std::string_view bytes) {
  if (bytes.empty() || (bytes[0] != 'C' && bytes[0] != 'U' && bytes[0] != 'S')) return std::string(bytes);
  nlohmann::json j;
  j["pre_tokenizer"] = {{"type", "Metaspace"}, {"replacement", "\xE2\x96\x81"}, {"prepend_scheme", "always"}, {"split", true}};
  j["decoder"] = {{"type", "Sequence"},
                  {"decoders", nlohmann::json::array({{{"type", "Metaspace"}, {"replacement", "\xE2\x96\x81"}, {"prepend_scheme", "always"}},
                                                      {{"type", "ByteFallback"}}, {{"type", "Fuse"}}})}};
  if (bytes[0] == 'S' && bytes.size() >= 2) {
    static const char* kBehaviors[] = {"Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous"};
    const std::string_view rest = bytes.substr(2);
    const std::string regex(rest.substr(0, rest.find('\n')));
    j["pre_tokenizer"] = {{"type", "Sequence"},
                          {"pretokenizers", nlohmann::json::array({{{"type", "Split"}, {"pattern", {{"Regex", regex}}},
                                                                    {"behavior", kBehaviors[static_cast<uint8_t>(bytes[1]) % 5]},
                                                                    {"invert", (static_cast<uint8_t>(bytes[1]) & 8) != 0}},
                                                                   j["pre_tokenizer"]})}};
    j["model"] = UnigramModel("");
  } else if (bytes[0] == 'C') {
    j["model"] = UnigramModel("");
    j["normalizer"] = {{"type", "Sequence"},
                       {"normalizers", nlohmann::json::array({{{"type", "Precompiled"}, {"precompiled_charsmap", Base64(bytes.substr(1))}},
                                                              {{"type", "NFKC"}}})}};
  } else {
    j["model"] = UnigramModel(bytes.substr(1));
  }
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto tok = dfw::HfTokenizer::Parse(Build(bytes), "fuzz.json");
  if (!tok.ok()) return 0;
  dfw::TokenEncoding e;
  for (std::string_view text : {std::string_view("Hello [MASK] wörld 😀 東京 ﬁ ½ e\xCC\x81 ＡＢ"), std::string_view(""),
                                std::string_view("  a\tb\nc  "), bytes.substr(0, 64), bytes.substr(bytes.size() > 64 ? bytes.size() - 64 : 0)}) {
    if (!(*tok)->Encode(text, std::string_view("x y"), 16, e).ok()) continue;
    if (e.ids.size() > 16 || e.type_ids.size() != e.ids.size() || e.offsets.size() != e.ids.size()) std::abort();
    for (std::size_t i = 0; i < e.size(); ++i) {
      const std::size_t limit = e.sequence[i] == 1 ? 3 : text.size();
      if (e.offsets[i].first > e.offsets[i].second || e.offsets[i].second > limit) std::abort();
      if (e.ids[i] < 0) std::abort();
    }
    (void)(*tok)->Decode(e.ids, true);
    for (std::size_t k = 1; k < e.ids.size(); ++k) (void)(*tok)->Decode(std::span<const int32_t>(e.ids.data(), k), false);
  }
  // Ids from the input bytes: any sequence decodes.
  const std::size_t vocab = (*tok)->vocab_size();
  if (vocab > 0) {
    std::vector<int32_t> ids;
    for (std::size_t i = 0; i < size && ids.size() < 32; ++i) ids.push_back(static_cast<int32_t>(data[i] % vocab));
    (void)(*tok)->Decode(ids, false);
  }
  return 0;
}
