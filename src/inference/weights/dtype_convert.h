// 16-bit float weights widened to float32: IEEE half (F16) and bfloat16 (BF16), one value or a
// whole tensor's bytes. The one place the conversion is written (the MLP handler's and the
// decoder's weight loading, the shared copy's published file, the decoder's bfloat16 kernels).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "dfw/common/status.h"
#include "dfw/inference/safetensors.h"

namespace dfw {

// IEEE half to float (exact: every value is representable; subnormals, inf and NaN kept).
float HalfToFloat(uint16_t h);

// bfloat16 to float (exact: the top 16 bits of a float). Inline: the decoder's kernels call it per
// weight.
inline float BFloat16ToFloat(uint16_t b) {
  const uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// n values of `dtype` (F32, F16 or BF16, little-endian as safetensors stores them, at any alignment)
// from `src` into out[0, n) as float32. Another dtype is kInvalidArgument naming it.
Status WidenToFloat32(TensorDType dtype, const uint8_t* src, std::size_t n, float* out);

}  // namespace dfw
