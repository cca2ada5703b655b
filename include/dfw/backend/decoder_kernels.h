// The CPU backend's kernels for a decoder-only model's step on the CPU (the CPU decoder engine,
// src/backend/cpu/cpu_decoder.cc, behind DecoderModel): RMSNorm and GPT-2's LayerNorm rows, rotate-half RoPE, the MLP's activation, and
// causal attention of one row against a paged KV cache. Float32 as transformers computes them (the
// numerics dfw/backend/device_decoder.h states for every decoder step). The products are the
// backend's Linear and skinny_kernels.h's.
#pragma once

#include <span>
#include <vector>

#include "dfw/backend/device_decoder.h"

namespace dfw::decoder_kernels {

// y = x · rsqrt(mean(x²) + eps) · w over each row of x[m x n] (plus_one: · (1 + w), gemma); the
// sum of squares in double. y may be x.
void RmsNormRows(const float* x, const float* w, float* y, int m, int n, float eps, bool plus_one);

// GPT-2's LayerNorm over each row of x[m x n]: mean and variance in double, 1 / sqrt(var + eps) in
// float. y may be x.
void LayerNormRows(const float* x, const float* w, const float* b, float* y, int m, int n, float eps);

// Rotates one head's vector in place at `position` (rotate-half: pairs (i, i + head_dim / 2),
// angle inv_freq[i] · position).
void RopeRotateHalf(float* v, int head_dim, const float* inv_freq, int position);

// The MLP's activation over m rows: gated (the up projection's row is [gate | up], 2 · inter
// floats): out = act(gate) · up; else (GPT-2) out = act(in), inter floats a row. out[m x inter].
void MlpActivationRows(DecoderGateActivation act, bool gated, const float* in, int m, int inter, float* out);

// One query row's attention against a paged KV cache: for each of `heads` query heads (grouped onto
// kv_heads), scores q·k × query_scale (soft-capped as cap · tanh(s / cap) when softcap > 0) over
// the positions [first, position], softmax, then the weighted sum of V into out[heads x head_dim].
// blocks[i] is the cache block holding positions [16 i, 16 i + 16), laid out [layer][K|V][kv_head]
// [kDeviceKvBlockTokens][head_dim]. `scores` is scratch.
void PagedAttentionRow(const float* q, float* out, int position, int first, std::span<const float* const> blocks, int layer,
                       int heads, int kv_heads, int head_dim, float query_scale, float softcap, std::vector<float>& scores);

}  // namespace dfw::decoder_kernels
