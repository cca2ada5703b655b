// The encoders' host-side kernels (dfw/backend/encoder_kernels.h): the gated activation, residual
// adds, LayerNorm rows, RoPE, attention.
#include "dfw/backend/encoder_kernels.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace dfw::encoder_kernels {

void LayerNormRow(const float* x, const float* g, const float* b, float* y, std::size_t h, float eps) {
  double mean = 0, var = 0;
  for (std::size_t i = 0; i < h; ++i) mean += x[i];
  mean /= static_cast<double>(h);
  for (std::size_t i = 0; i < h; ++i) var += (x[i] - mean) * (x[i] - mean);
  var /= static_cast<double>(h);
  const double inv = 1.0 / std::sqrt(var + eps);
  for (std::size_t i = 0; i < h; ++i) y[i] = static_cast<float>((x[i] - mean) * inv) * g[i] + (b != nullptr ? b[i] : 0.f);
}

void GatedActivationRows(Activation act, const float* u, float* y, int rows, int inner) {
  for (int r = 0; r < rows; ++r) {
    const float* ur = u + static_cast<std::size_t>(r) * 2 * inner;
    float* yr = y + static_cast<std::size_t>(r) * inner;
    for (int i = 0; i < inner; ++i) yr[i] = Activate(act, ur[i]) * ur[inner + i];
  }
}

void AddInPlace(float* x, const float* y, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) x[i] += y[i];
}

void LayerNormRows(const float* x, const float* g, const float* b, float* y, int rows, int h, float eps) {
  for (int r = 0; r < rows; ++r) {
    const std::size_t at = static_cast<std::size_t>(r) * h;
    LayerNormRow(x + at, g, b, y + at, static_cast<std::size_t>(h), eps);
  }
}

void RopeTable(float theta, int head_dim, int positions, std::vector<float>& cos_t, std::vector<float>& sin_t) {
  const int half = head_dim / 2;
  cos_t.resize(static_cast<std::size_t>(positions) * half);
  sin_t.resize(cos_t.size());
  for (int i = 0; i < half; ++i) {
    const float inv = 1.f / std::pow(theta, static_cast<float>(2 * i) / static_cast<float>(head_dim));
    for (int p = 0; p < positions; ++p) {
      const float angle = static_cast<float>(p) * inv;
      cos_t[static_cast<std::size_t>(p) * half + i] = std::cos(angle);
      sin_t[static_cast<std::size_t>(p) * half + i] = std::sin(angle);
    }
  }
}

void RopeRotateHalfQk(float* qkv, int batch, int seq, int hidden, int heads, const float* cos_t, const float* sin_t) {
  const int dh = hidden / heads, half = dh / 2;
  for (int b = 0; b < batch; ++b) {
    for (int t = 0; t < seq; ++t) {
      float* row = qkv + (static_cast<std::size_t>(b) * seq + t) * 3 * hidden;
      const float* cp = cos_t + static_cast<std::size_t>(t) * half;
      const float* sp = sin_t + static_cast<std::size_t>(t) * half;
      for (int part = 0; part < 2; ++part) {  // q, then k
        for (int head = 0; head < heads; ++head) {
          float* v = row + part * hidden + head * dh;
          for (int i = 0; i < half; ++i) {
            const float x1 = v[i], x2 = v[i + half];
            v[i] = x1 * cp[i] - x2 * sp[i];
            v[i + half] = x2 * cp[i] + x1 * sp[i];
          }
        }
      }
    }
  }
}

void BidirectionalAttention(const float* qkv, std::span<const int> lengths, int seq, int hidden, int heads, int window,
                            float* ctx, std::vector<float>& scores) {
  const int h = hidden, dh = h / heads, h3 = 3 * h;
  const bool sliding = window >= 0;
  const float scale = 1.f / std::sqrt(static_cast<float>(dh));
  scores.resize(static_cast<std::size_t>(seq));
  for (std::size_t b = 0; b < lengths.size(); ++b) {
    const int len = lengths[b];
    const float* base = qkv + b * static_cast<std::size_t>(seq) * h3;
    for (int head = 0; head < heads; ++head) {
      for (int i = 0; i < seq; ++i) {
        const float* q = base + static_cast<std::size_t>(i) * h3 + head * dh;
        const int lo = sliding ? std::max(0, i - window) : 0;
        const int hi = sliding ? std::min(len, i + window + 1) : len;
        float* out = ctx + (b * static_cast<std::size_t>(seq) + i) * h + head * dh;
        std::fill(out, out + dh, 0.f);
        if (lo >= hi) continue;  // a padding query past every key it may see (its row is unused)
        float top = -std::numeric_limits<float>::infinity();
        for (int j = lo; j < hi; ++j) {
          const float* k = base + static_cast<std::size_t>(j) * h3 + h + head * dh;
          float dot = 0.f;
          for (int d = 0; d < dh; ++d) dot += q[d] * k[d];
          scores[static_cast<std::size_t>(j)] = dot * scale;
          top = std::max(top, scores[static_cast<std::size_t>(j)]);
        }
        double sum = 0;
        for (int j = lo; j < hi; ++j) {
          const float e = std::exp(scores[static_cast<std::size_t>(j)] - top);
          scores[static_cast<std::size_t>(j)] = e;
          sum += e;
        }
        const float inv = static_cast<float>(1.0 / sum);
        for (int j = lo; j < hi; ++j) {
          const float p = scores[static_cast<std::size_t>(j)] * inv;
          const float* v = base + static_cast<std::size_t>(j) * h3 + 2 * h + head * dh;
          for (int d = 0; d < dh; ++d) out[d] += p * v[d];
        }
      }
    }
  }
}

}  // namespace dfw::encoder_kernels
