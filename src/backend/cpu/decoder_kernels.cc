// The CPU decoder step's kernels (dfw/backend/decoder_kernels.h; cpu_decoder.cc runs them).
#include "dfw/backend/decoder_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>

namespace dfw::decoder_kernels {
namespace {

inline float MlpActivate(DecoderGateActivation a, float x) {
  switch (a) {
    case DecoderGateActivation::kSilu:
      return x / (1.0f + std::exp(-x));
    case DecoderGateActivation::kGeluTanh:
      return GeluTanh(x);  // the backend's (dfw/backend/backend.h), as every other layer computes it
    case DecoderGateActivation::kGelu:
      return Gelu(x);  // likewise
  }
  return x;
}

}  // namespace

void RmsNormRows(const float* x, const float* w, float* y, int m, int n, float eps, bool plus_one) {
  for (int r = 0; r < m; ++r) {
    const float* xr = x + static_cast<std::size_t>(r) * n;
    float* yr = y + static_cast<std::size_t>(r) * n;
    double ss = 0;
    for (int i = 0; i < n; ++i) ss += static_cast<double>(xr[i]) * xr[i];
    const float inv = 1.0f / std::sqrt(static_cast<float>(ss / n) + eps);
    for (int i = 0; i < n; ++i) yr[i] = (xr[i] * inv) * (plus_one ? 1.0f + w[i] : w[i]);
  }
}

void LayerNormRows(const float* x, const float* w, const float* b, float* y, int m, int n, float eps) {
  for (int r = 0; r < m; ++r) {
    const float* xr = x + static_cast<std::size_t>(r) * n;
    float* yr = y + static_cast<std::size_t>(r) * n;
    double mean = 0, var = 0;
    for (int i = 0; i < n; ++i) mean += xr[i];
    mean /= n;
    for (int i = 0; i < n; ++i) var += (xr[i] - mean) * (xr[i] - mean);
    const float inv = 1.0f / std::sqrt(static_cast<float>(var / n) + eps);
    for (int i = 0; i < n; ++i) yr[i] = static_cast<float>(xr[i] - mean) * inv * w[i] + b[i];
  }
}

void RopeRotateHalf(float* v, int head_dim, const float* inv_freq, int position) {
  const int half = head_dim / 2;
  for (int i = 0; i < half; ++i) {
    const float angle = inv_freq[i] * static_cast<float>(position);
    const float c = std::cos(angle), s = std::sin(angle);
    const float a = v[i], b = v[i + half];
    v[i] = a * c - b * s;
    v[i + half] = b * c + a * s;
  }
}

void MlpActivationRows(DecoderGateActivation act, bool gated, const float* in, int m, int inter, float* out) {
  for (int r = 0; r < m; ++r) {
    float* o = out + static_cast<std::size_t>(r) * inter;
    if (!gated) {
      const float* a = in + static_cast<std::size_t>(r) * inter;
      for (int i = 0; i < inter; ++i) o[i] = MlpActivate(act, a[i]);
    } else {
      const float* gate = in + static_cast<std::size_t>(r) * 2 * inter;
      const float* up = gate + inter;
      for (int i = 0; i < inter; ++i) o[i] = MlpActivate(act, gate[i]) * up[i];
    }
  }
}

void PagedAttentionRow(const float* q, float* out, int position, int first, std::span<const float* const> blocks, int layer,
                       int heads, int kv_heads, int head_dim, float query_scale, float softcap, std::vector<float>& scores) {
  constexpr int B = kDeviceKvBlockTokens;
  const int hd = head_dim, group = heads / kv_heads;
  const uint64_t per_head = static_cast<uint64_t>(B) * static_cast<uint64_t>(hd);
  // K (kv 0) or V (kv 1) of kv head g at position j.
  auto at = [&](int j, int kv, int g) {
    const uint64_t offset = ((static_cast<uint64_t>(layer) * 2 + static_cast<uint64_t>(kv)) * static_cast<uint64_t>(kv_heads) +
                             static_cast<uint64_t>(g)) * per_head;
    return blocks[static_cast<std::size_t>(j / B)] + offset + (j % B) * hd;
  };
  scores.resize(static_cast<std::size_t>(position - first + 1));
  for (int head = 0; head < heads; ++head) {
    const float* qh = q + head * hd;
    const int g = head / group;
    float best = -INFINITY;
    for (int j = first; j <= position; ++j) {
      const float* k = at(j, 0, g);
      float dot = 0;
      for (int d = 0; d < hd; ++d) dot += qh[d] * k[d];
      float s = dot * query_scale;
      if (softcap > 0) s = softcap * std::tanh(s / softcap);
      scores[static_cast<std::size_t>(j - first)] = s;
      best = std::max(best, s);
    }
    float sum = 0;
    for (float& s : scores) {
      s = std::exp(s - best);
      sum += s;
    }
    float* oh = out + head * hd;
    std::fill(oh, oh + hd, 0.0f);
    for (int j = first; j <= position; ++j) {
      const float p = scores[static_cast<std::size_t>(j - first)] / sum;
      const float* vv = at(j, 1, g);
      for (int d = 0; d < hd; ++d) oh[d] += p * vv[d];
    }
  }
}

}  // namespace dfw::decoder_kernels
