// Small float32 helpers the encoders' host-side code shares (heads, ModernBERT's layers): one
// activation value (GELU and its tanh form are the backend's dfw::Gelu and dfw::GeluTanh, the
// functions its kernels apply) and one LayerNorm row, each as transformers computes it.
#pragma once

#include <cmath>
#include <cstddef>

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

// y = (x - mean) / sqrt(var + eps) * g + b over one row of h values (b may be nullptr: no bias);
// y may be x.
inline void LayerNormRow(const float* x, const float* g, const float* b, float* y, std::size_t h, float eps) {
  double mean = 0, var = 0;
  for (std::size_t i = 0; i < h; ++i) mean += x[i];
  mean /= static_cast<double>(h);
  for (std::size_t i = 0; i < h; ++i) var += (x[i] - mean) * (x[i] - mean);
  var /= static_cast<double>(h);
  const double inv = 1.0 / std::sqrt(var + eps);
  for (std::size_t i = 0; i < h; ++i) y[i] = static_cast<float>((x[i] - mean) * inv) * g[i] + (b != nullptr ? b[i] : 0.f);
}

}  // namespace dfw::host_ops
