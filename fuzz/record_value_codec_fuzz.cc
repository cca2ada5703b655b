// Decodes arbitrary bytes as an encoded Value (the Combine and Join shuffles' encoding), and as a Row. Must never crash or
// read out of bounds; whatever decodes must encode back to exactly the same bytes (the encoding is
// canonical, and a shuffle round trip must be exact).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "dfw/record/value_codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  auto v = dfw::DecodeWholeValue(in);
  // A row decoded straight into a Row (the Join shuffle's records) agrees with the Value decoder.
  auto r = dfw::DecodeWholeRow(in);
  if (r.ok() != (v.ok() && v->is_row())) std::abort();
  if (r.ok()) {
    std::string row_bytes;
    dfw::AppendEncodedRow(row_bytes, *r);
    if (row_bytes != dfw::EncodeValue(*v)) std::abort();
  }
  if (!v.ok()) return 0;
  // Varints have several spellings (0x80 0x00 is 0); only the shortest one is canonical.
  std::string again = dfw::EncodeValue(*v);
  auto w = dfw::DecodeWholeValue(again);
  if (!w.ok() || dfw::EncodeValue(*w) != again) std::abort();
  return 0;
}
