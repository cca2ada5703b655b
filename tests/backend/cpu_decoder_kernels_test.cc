// The CPU decoder step's kernels (dfw/backend/decoder_kernels.h) against double-precision loops
// written from the formulas: RMSNorm, and attention over a paged KV cache whose blocks are out of
// order in memory, with grouped heads, a sliding window and soft-capping.
#include "dfw/backend/decoder_kernels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace dfw::decoder_kernels {
namespace {

float WaveAt(std::size_t i, double step) { return static_cast<float>(std::sin(step * static_cast<double>(i) + 0.3)); }

TEST(DecoderKernels, RmsNormRowsScaleByTheRootMeanSquare) {
  const int m = 2, n = 19;
  std::vector<float> x(m * n), w(n), y(m * n);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = WaveAt(i, 0.7);
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = WaveAt(i, 0.2);
  for (bool plus_one : {false, true}) {
    RmsNormRows(x.data(), w.data(), y.data(), m, n, 1e-6f, plus_one);
    for (int r = 0; r < m; ++r) {
      double ss = 0;
      for (int i = 0; i < n; ++i) ss += static_cast<double>(x[r * n + i]) * x[r * n + i];
      for (int i = 0; i < n; ++i) {
        const double want = x[r * n + i] / std::sqrt(ss / n + 1e-6) * (plus_one ? 1.0 + w[i] : w[i]);
        EXPECT_NEAR(y[r * n + i], want, 1e-5) << r << "," << i << " plus_one " << plus_one;
      }
    }
  }
}

TEST(DecoderKernels, PagedAttentionRowMatchesTheReferenceOverScatteredBlocks) {
  constexpr int B = kDeviceKvBlockTokens;
  const int layers = 2, heads = 4, kv_heads = 2, hd = 8, position = 37;  // 3 blocks
  const std::size_t block_floats = static_cast<std::size_t>(layers) * 2 * kv_heads * B * hd;
  std::vector<float> pool(5 * block_floats);
  for (std::size_t i = 0; i < pool.size(); ++i) pool[i] = WaveAt(i, 0.61);
  const std::vector<const float*> blocks = {pool.data() + 3 * block_floats, pool.data(), pool.data() + 4 * block_floats};
  std::vector<float> q(heads * hd);
  for (std::size_t i = 0; i < q.size(); ++i) q[i] = WaveAt(i, 0.43);
  auto kv = [&](int layer, int j, int which, int g) {
    return blocks[j / B] + (((layer * 2 + which) * kv_heads + g) * B + j % B) * hd;
  };
  for (int layer : {0, 1}) {
    for (const auto& [first, cap] : {std::pair{0, 0.f}, std::pair{20, 0.f}, std::pair{0, 0.5f}}) {
      std::vector<float> out(heads * hd, -3.f), scores;
      PagedAttentionRow(q.data(), out.data(), position, first, blocks, layer, heads, kv_heads, hd, 0.35f, cap, scores);
      for (int head = 0; head < heads; ++head) {
        const int g = head / (heads / kv_heads);
        std::vector<double> p;
        double top = -1e300, sum = 0;
        for (int j = first; j <= position; ++j) {
          double dot = 0;
          for (int d = 0; d < hd; ++d) dot += static_cast<double>(q[head * hd + d]) * kv(layer, j, 0, g)[d];
          double s = dot * 0.35;
          if (cap > 0) s = cap * std::tanh(s / cap);
          p.push_back(s);
          top = std::max(top, s);
        }
        for (double& s : p) sum += (s = std::exp(s - top));
        for (int d = 0; d < hd; ++d) {
          double want = 0;
          for (int j = first; j <= position; ++j) want += p[static_cast<std::size_t>(j - first)] / sum * kv(layer, j, 1, g)[d];
          EXPECT_NEAR(out[head * hd + d], want, 1e-5) << "layer " << layer << " first " << first << " cap " << cap << " head " << head;
        }
      }
    }
  }
}

}  // namespace
}  // namespace dfw::decoder_kernels
