// CRC32C (Castagnoli), as TFRecord frames use it, computed by Intel ISA-L's crc32_iscsi.
#pragma once

#include <cstdint>
#include <string_view>

namespace dfw::stages_io {

// The standard CRC32C of `data` (crc32c("123456789") == 0xE3069283).
uint32_t Crc32c(std::string_view data);

// TFRecord's masked CRC: ((crc >> 15) | (crc << 17)) + 0xa282ead8, so that a CRC stored inside the
// data it covers does not checksum to a constant.
uint32_t MaskedCrc32c(std::string_view data);

}  // namespace dfw::stages_io
