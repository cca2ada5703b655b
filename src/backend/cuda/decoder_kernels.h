// The kernels of the CUDA decoder step (decoder_cuda.cc): each mirrors a piece of the CPU decoder's
// step (src/backend/cpu/cpu_decoder.cc) formula for formula, float32 values, the norms' sums in
// double as the CPU sums them. Each Launch* enqueues on `stream` and returns the launch
// error (cudaGetLastError) for DFW_CUDA_CHECK; sizes and pointers are validated by the caller.
#pragma once

#include <cuda_runtime.h>

namespace dfw::cuda {

// DecoderGateActivation's values (dfw/backend/device_decoder.h, which needs C++20 and so is not
// included in the .cu files, built as C++17).
enum class GateActivation : unsigned char { kSilu, kGeluTanh, kGelu };

// Tokens per pool block (kDeviceKvBlockTokens).
inline constexpr int kKvBlockTokens = 16;

// The KV pool: slabs of up to `slab_blocks` blocks; block id b lives in slab b / slab_blocks at
// block b % slab_blocks. A block is [layer][K|V][kv_head][kKvBlockTokens][head_dim] floats.
struct KvPoolView {
  float* const* slabs = nullptr;  // device array of slab base pointers
  int slab_blocks = 0;
  long long block_floats = 0;
  int kv_heads = 0;
  int head_dim = 0;
};

// A step's rows on the device: per row its token, position and the start of its block table in
// block_ids.
struct StepRowsView {
  const int* tokens = nullptr;
  const int* positions = nullptr;
  const int* table_start = nullptr;
  const int* block_ids = nullptr;
  int rows = 0;
};

// x[r] = embed[token r] · scale (+ positions[position r] when positions is not null).
cudaError_t LaunchDecoderEmbed(const float* embed, const float* positions, const StepRowsView& rows, float scale, int hidden,
                               float* x, cudaStream_t stream);

// y = x · rsqrt(mean(x²) + eps) · w (plus_one: · (1 + w)) per row of n; y may alias x.
cudaError_t LaunchDecoderRmsNorm(const float* x, const float* w, float* y, int m, int n, float eps, bool plus_one,
                                 cudaStream_t stream);

// y = (x - mean) · rsqrt(var + eps) · w + b per row of n (biased variance); y may alias x.
cudaError_t LaunchDecoderLayerNorm(const float* x, const float* w, const float* b, float* y, int m, int n, float eps,
                                   cudaStream_t stream);

// Over each row of qkv [(heads + 2 kv_heads) · head_dim]: rotate-half RoPE of the q and k heads at
// the row's position (inv_freq: head_dim / 2 floats; nullptr: no RoPE, GPT-2), then the row's k and
// v heads into the pool blocks of `layer` at its position.
cudaError_t LaunchDecoderRopeStoreKv(float* qkv, const StepRowsView& rows, const float* inv_freq, int heads, int kv_heads,
                                     int head_dim, int layer, const KvPoolView& pool, cudaStream_t stream);

// out[r][head] = softmax(q·k × scale, soft-capped when softcap > 0) · V over the keys of row r's
// sequence at positions [first, position], first = position - window + 1 (window 0: 0): grouped
// query heads (head h reads kv head h / (heads / kv_heads)). out: [rows x heads · head_dim].
cudaError_t LaunchDecoderPagedAttention(const float* qkv, const StepRowsView& rows, int heads, int kv_heads, int head_dim,
                                        int layer, const KvPoolView& pool, int window, float scale, float softcap, float* out,
                                        cudaStream_t stream);

// gated: out[r][i] = act(in[r][i]) · in[r][inter + i] (in: [m x 2 inter]); else out = act(in)
// (in: [m x inter]).
cudaError_t LaunchDecoderGate(const float* in, float* out, int m, int inter, bool gated, GateActivation act,
                              cudaStream_t stream);

// x[i] += y[i] for n floats.
cudaError_t LaunchDecoderAddInto(float* x, const float* y, long long n, cudaStream_t stream);

// dst[i] = src[rows[i]] for n rows of `width` floats.
cudaError_t LaunchDecoderGatherRows(const float* src, const int* rows, int n, int width, float* dst, cudaStream_t stream);

// x[i] = cap · tanh(x[i] / cap) for n floats.
cudaError_t LaunchDecoderSoftcap(float* x, long long n, float cap, cudaStream_t stream);

}  // namespace dfw::cuda
