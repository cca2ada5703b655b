// The CPU backend's kernels for the encoders' host-side layers (ModernBERT's forward pass, the
// classification and masked-LM heads), each as transformers computes it in float32: LayerNorm rows
// with double-precision mean and variance, RoPE (rotate-half) tables and their application to the
// query and key parts of packed [q | k | v] rows, and bidirectional attention with an optional
// sliding window. Plain loops (the reference the CUDA backend's kernels are held to); the GEMMs
// around them are InferenceBackend::Linear's.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "dfw/backend/backend.h"

namespace dfw::encoder_kernels {

// One activation value as the encoders' host-side layers apply it (the heads, ModernBERT's gated
// MLP): ReLU, or the backend's GELU and tanh GELU (dfw::Gelu, dfw::GeluTanh: what its row kernels
// apply); any other Activation is the identity.
inline float Activate(Activation a, float x) {
  switch (a) {
    case Activation::kRelu: return x > 0 ? x : 0;
    case Activation::kGelu: return Gelu(x);
    case Activation::kGeluTanh: return GeluTanh(x);
    default: return x;
  }
}

// y[r][i] = Activate(act, u[r][i]) * u[r][inner + i] for `rows` rows of u [rows x 2 inner] (the
// [input | gate] halves of ModernBERT's Wi projection), y [rows x inner].
void GatedActivationRows(Activation act, const float* u, float* y, int rows, int inner);

// x[i] += y[i] for i < n (a residual add).
void AddInPlace(float* x, const float* y, std::size_t n);

// y = (x - mean) / sqrt(var + eps) * g + b over one row of h values (b may be nullptr: no bias);
// y may be x. Mean and variance in double.
void LayerNormRow(const float* x, const float* g, const float* b, float* y, std::size_t h, float eps);
// The same over `rows` consecutive rows of h values.
void LayerNormRows(const float* x, const float* g, const float* b, float* y, int rows, int h, float eps);

// cos/sin of position p × inv_freq[i] for p < positions, i < head_dim / 2, into [positions x
// head_dim / 2] tables (inv_freq as torch computes it: 1 / theta^(2i / d) in float32).
void RopeTable(float theta, int head_dim, int positions, std::vector<float>& cos_t, std::vector<float>& sin_t);

// Rotate-half RoPE in place on the query and key thirds of every row of qkv[batch * seq x 3 *
// hidden] ([q | k | v], `heads` heads of hidden / heads values each), a row's position being its
// index t in its sequence: (x1, x2) -> (x1 cos - x2 sin, x2 cos + x1 sin) over the pairs (i, i + d/2),
// cos/sin from RopeTable with at least `seq` positions.
void RopeRotateHalfQk(float* qkv, int batch, int seq, int hidden, int heads, const float* cos_t, const float* sin_t);

// ctx[b * seq + i][head] = softmax_j(q_i · k_j / sqrt(d)) · v_j per head over the keys j that query i
// of sequence b may see: j < lengths[b], and |i - j| <= window when window >= 0 (ModernBERT's local
// layers; window < 0: every key). qkv as RopeRotateHalfQk takes it, already rotated; ctx[batch *
// seq x hidden]; a query with no key it may see (padding) gets zeros. `scores` is scratch (grown
// to seq floats).
void BidirectionalAttention(const float* qkv, std::span<const int> lengths, int seq, int hidden, int heads, int window,
                            float* ctx, std::vector<float>& scores);

}  // namespace dfw::encoder_kernels
