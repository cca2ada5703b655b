// One activation value as the encoders' host-side code applies it (heads, ModernBERT's GeGLU): GELU
// and its tanh form are the backend's dfw::Gelu and dfw::GeluTanh, the functions its kernels apply.
// The LayerNorm rows, RoPE and attention of that code are the backend's (dfw/backend/encoder_kernels.h).
#pragma once

#include "dfw/backend/backend.h"

namespace dfw::host_ops {

inline float Activate(Activation a, float x) {
  switch (a) {
    case Activation::kRelu: return x > 0 ? x : 0;
    case Activation::kGelu: return Gelu(x);  // the backend's, as the encoder layers compute it
    case Activation::kGeluTanh: return GeluTanh(x);  // the backend's too
    default: return x;
  }
}

}  // namespace dfw::host_ops
