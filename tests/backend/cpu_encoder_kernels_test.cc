// The encoders' host-side kernels (dfw/backend/encoder_kernels.h) against double-precision loops
// written from the formulas: LayerNorm rows, RoPE, windowed bidirectional attention.
#include "dfw/backend/encoder_kernels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace dfw::encoder_kernels {
namespace {

std::vector<float> Wave(std::size_t n, double step) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<float>(std::sin(step * static_cast<double>(i) + 0.3));
  return v;
}

TEST(EncoderKernels, LayerNormRowsNormaliseEachRowThenScaleAndShift) {
  const int rows = 3, h = 37;
  std::vector<float> x = Wave(static_cast<std::size_t>(rows) * h, 0.71), g = Wave(h, 0.13), b = Wave(h, 0.29), y(x.size());
  LayerNormRows(x.data(), g.data(), b.data(), y.data(), rows, h, 1e-5f);
  for (int r = 0; r < rows; ++r) {
    const float* xr = x.data() + r * h;
    double mean = 0, var = 0;
    for (int i = 0; i < h; ++i) mean += xr[i];
    mean /= h;
    for (int i = 0; i < h; ++i) var += (xr[i] - mean) * (xr[i] - mean);
    var /= h;
    for (int i = 0; i < h; ++i) {
      EXPECT_NEAR(y[r * h + i], (xr[i] - mean) / std::sqrt(var + 1e-5) * g[i] + b[i], 1e-5) << r << "," << i;
    }
  }
  LayerNormRows(x.data(), g.data(), nullptr, y.data(), 1, h, 1e-5f);  // no bias
  LayerNormRows(x.data(), g.data(), g.data(), x.data(), 1, h, 1e-5f);  // in place
  for (int i = 0; i < h; ++i) EXPECT_FLOAT_EQ(x[i], y[i] + g[i]);
}

TEST(EncoderKernels, RopeRotatesQueryAndKeyPairsByPositionAndLeavesValues) {
  const int batch = 2, seq = 5, hidden = 8, heads = 2, dh = hidden / heads, half = dh / 2;
  std::vector<float> cos_t, sin_t;
  RopeTable(10000.f, dh, seq, cos_t, sin_t);
  ASSERT_EQ(cos_t.size(), static_cast<std::size_t>(seq * half));
  const std::vector<float> before = Wave(static_cast<std::size_t>(batch) * seq * 3 * hidden, 0.37);
  std::vector<float> qkv = before;
  RopeRotateHalfQk(qkv.data(), batch, seq, hidden, heads, cos_t.data(), sin_t.data());
  for (int b = 0; b < batch; ++b) {
    for (int t = 0; t < seq; ++t) {
      const std::size_t row = (static_cast<std::size_t>(b) * seq + t) * 3 * hidden;
      for (int part = 0; part < 3; ++part) {
        for (int head = 0; head < heads; ++head) {
          for (int i = 0; i < half; ++i) {
            const std::size_t at = row + part * hidden + head * dh + i;
            const double angle = t / std::pow(10000.0, 2.0 * i / dh);
            const double x1 = before[at], x2 = before[at + half];
            const double want1 = part == 2 ? x1 : x1 * std::cos(angle) - x2 * std::sin(angle);
            const double want2 = part == 2 ? x2 : x2 * std::cos(angle) + x1 * std::sin(angle);
            EXPECT_NEAR(qkv[at], want1, 1e-5) << b << "," << t << "," << part << "," << head << "," << i;
            EXPECT_NEAR(qkv[at + half], want2, 1e-5);
          }
        }
      }
    }
  }
}

// Sequence 0 is full length, sequence 1 has two padding rows; window 1 lets query i see keys i-1..i+1.
TEST(EncoderKernels, AttentionSeesOnlyTheKeysOfItsSequenceAndWindow) {
  const int seq = 6, hidden = 8, heads = 2, dh = hidden / heads;
  const std::vector<int> lengths = {6, 4};
  const std::vector<float> qkv = Wave(lengths.size() * seq * 3 * hidden, 0.53);
  for (int window : {-1, 1}) {
    std::vector<float> ctx(lengths.size() * seq * hidden, -7.f), scores;
    BidirectionalAttention(qkv.data(), lengths, seq, hidden, heads, window, ctx.data(), scores);
    for (std::size_t b = 0; b < lengths.size(); ++b) {
      for (int i = 0; i < seq; ++i) {
        for (int head = 0; head < heads; ++head) {
          const int lo = window < 0 ? 0 : std::max(0, i - window);
          const int hi = window < 0 ? lengths[b] : std::min(lengths[b], i + window + 1);
          auto at = [&](int t, int part) { return (b * seq + t) * 3 * hidden + part * hidden + head * dh; };
          std::vector<double> p;
          double top = -1e300, sum = 0;
          for (int j = lo; j < hi; ++j) {
            double dot = 0;
            for (int d = 0; d < dh; ++d) dot += static_cast<double>(qkv[at(i, 0) + d]) * qkv[at(j, 1) + d];
            p.push_back(dot / std::sqrt(static_cast<double>(dh)));
            top = std::max(top, p.back());
          }
          for (double& s : p) sum += (s = std::exp(s - top));
          for (int d = 0; d < dh; ++d) {
            double want = 0;
            for (int j = lo; j < hi; ++j) want += p[static_cast<std::size_t>(j - lo)] / sum * qkv[at(j, 2) + d];
            EXPECT_NEAR(ctx[(b * seq + i) * hidden + head * dh + d], want, 1e-5)
                << "window " << window << " seq " << b << " query " << i << " head " << head;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace dfw::encoder_kernels
