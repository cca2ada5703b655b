// Fuzzes the tokenizer.json loader and the pipeline it builds: any bytes give a tokenizer or a
// Status (never an exception or a crash); an accepted tokenizer encodes a few texts with every
// offset inside its text and every id a vocabulary id, and decodes them.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "dfw/inference/hf_tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto tok = dfw::HfTokenizer::Parse(bytes, "fuzz.json");
  if (!tok.ok()) return 0;
  dfw::TokenEncoding e;
  for (std::string_view text : {std::string_view("Hello [MASK] wörld 😀 東京"), std::string_view(""),
                                std::string_view("  a\tb\nc  "), bytes.substr(0, 64)}) {
    if (!(*tok)->Encode(text, std::string_view("x y"), 16, e).ok()) continue;
    if (e.ids.size() > 16 || e.type_ids.size() != e.ids.size() || e.offsets.size() != e.ids.size()) std::abort();
    for (std::size_t i = 0; i < e.size(); ++i) {
      const std::size_t limit = e.sequence[i] == 1 ? 3 : text.size();
      if (e.offsets[i].first > e.offsets[i].second || e.offsets[i].second > limit) std::abort();
      if (e.ids[i] < 0) std::abort();
    }
    (void)(*tok)->Decode(e.ids, true);
  }
  return 0;
}
