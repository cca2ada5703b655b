#include "crc32c.h"

#include <isa-l/crc.h>

#include <climits>

namespace dfw::stages_io {

uint32_t Crc32c(std::string_view data) {
  // crc32_iscsi takes and returns the register without the final inversion: start from all ones
  // and invert at the end (checked against the standard check value in the tests). Its length is
  // an int, so longer inputs go in chunks, each continuing the previous register.
  unsigned int crc = 0xFFFFFFFFu;
  auto* p = reinterpret_cast<unsigned char*>(const_cast<char*>(data.data()));
  std::size_t left = data.size();
  while (left > 0) {
    const int n = left > static_cast<std::size_t>(INT_MAX / 2) ? INT_MAX / 2 : static_cast<int>(left);
    crc = crc32_iscsi(p, n, crc);
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  return ~crc;
}

uint32_t MaskedCrc32c(std::string_view data) {
  const uint32_t crc = Crc32c(data);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

}  // namespace dfw::stages_io
