// Fuzzes the safetensors header parser: any byte string must give a header or a Status, and an
// accepted header must describe tensors that lie inside the file.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "dfw/inference/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto header = dfw::ParseSafetensorsHeader(bytes, size);
  if (!header.ok()) return 0;
  uint64_t covered = 0;
  for (const dfw::TensorInfo& t : header->tensors) {
    if (t.begin != covered || t.end > header->data_bytes ||
        t.num_elements() * dfw::TensorDTypeSize(t.dtype) != t.num_bytes()) {
      std::abort();  // the parser accepted an inconsistent header
    }
    covered = t.end;
  }
  if (covered != header->data_bytes || 8 + header->header_bytes + header->data_bytes != size) std::abort();
  return 0;
}
