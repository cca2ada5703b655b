#include "inference/weights/dtype_convert.h"

#include <string>

namespace dfw {

float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while ((mant & 0x400) == 0);
      bits = sign | static_cast<uint32_t>(127 - 15 - e) << 23 | (mant & 0x3ff) << 13;
    }
  } else if (exp == 0x1f) {
    bits = sign | 0x7f800000u | mant << 13;  // inf / NaN
  } else {
    bits = sign | (exp + 127 - 15) << 23 | mant << 13;
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

Status WidenToFloat32(TensorDType dtype, const uint8_t* src, std::size_t n, float* out) {
  switch (dtype) {
    case TensorDType::kF32:
      if (n > 0) std::memcpy(out, src, n * sizeof(float));
      return Status::OK();
    case TensorDType::kF16:
      for (std::size_t i = 0; i < n; ++i) {
        uint16_t v;
        std::memcpy(&v, src + 2 * i, 2);
        out[i] = HalfToFloat(v);
      }
      return Status::OK();
    case TensorDType::kBF16:
      for (std::size_t i = 0; i < n; ++i) {
        uint16_t v;
        std::memcpy(&v, src + 2 * i, 2);
        out[i] = BFloat16ToFloat(v);
      }
      return Status::OK();
    default:
      return InvalidArgument("cannot widen " + std::string(TensorDTypeName(dtype)) + " to F32; supported: F32, F16, BF16");
  }
}

}  // namespace dfw
