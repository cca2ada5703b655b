// Kernels of the CUDA decoder step; decoder_kernels.h states what each computes. The formulas are
// DecoderModel's host ones (src/inference/decoders/decoder_model.cc); comments say where the order of a
// sum differs (a block reduction instead of a loop).
#include <cfloat>
#include <cmath>

#include "decoder_kernels.h"

namespace dfw::cuda {
namespace decoder_impl {
namespace {

constexpr int kNormThreads = 256;
constexpr int kAttnThreads = 128;  // threads per (row, head), and keys per tile

// The sum (or max) of v over a block of kThreads threads; every thread gets it. `shared` holds
// kThreads / 32 values; it may be reused by the next call (the leading barrier).
template <int kThreads, typename T, typename Op>
__device__ T Reduce(T v, T* shared, Op op) {
  for (int offset = 16; offset > 0; offset >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, offset));
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  T out = shared[0];
  for (int w = 1; w < kThreads / 32; ++w) out = op(out, shared[w]);
  return out;
}

struct Add {
  template <typename T>
  __device__ T operator()(T a, T b) const { return a + b; }
};
struct Max {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

__device__ __forceinline__ float* Block(const KvPoolView& pool, int id) {
  return pool.slabs[id / pool.slab_blocks] + static_cast<long long>(id % pool.slab_blocks) * pool.block_floats;
}

// The head_dim floats of K (kv = 0) or V (kv = 1) of `layer`, kv head g, at position pos of the
// sequence whose block table is `table`.
__device__ __forceinline__ float* KvAt(const KvPoolView& pool, const int* table, int layer, int kv, int g, int pos) {
  const long long per_head = static_cast<long long>(kKvBlockTokens) * pool.head_dim;
  const long long offset = ((static_cast<long long>(layer) * 2 + kv) * pool.kv_heads + g) * per_head +
                           static_cast<long long>(pos % kKvBlockTokens) * pool.head_dim;
  return Block(pool, table[pos / kKvBlockTokens]) + offset;
}

__global__ void EmbedKernel(const float* embed, const float* positions, StepRowsView rows, float scale, int hidden, float* x) {
  const int r = blockIdx.x;
  const float* e = embed + static_cast<long long>(rows.tokens[r]) * hidden;
  const float* p = positions != nullptr ? positions + static_cast<long long>(rows.positions[r]) * hidden : nullptr;
  float* xr = x + static_cast<long long>(r) * hidden;
  for (int i = threadIdx.x; i < hidden; i += blockDim.x) {
    float v = e[i] * scale;
    if (p != nullptr) v += p[i];
    xr[i] = v;
  }
}

// The host sums x² in double in order; here in double per thread, then across the block.
__global__ void RmsNormKernel(const float* x, const float* w, float* y, int n, float eps, bool plus_one) {
  __shared__ double shared[kNormThreads / 32];
  const float* xr = x + static_cast<long long>(blockIdx.x) * n;
  float* yr = y + static_cast<long long>(blockIdx.x) * n;
  double ss = 0;
  for (int i = threadIdx.x; i < n; i += kNormThreads) ss += static_cast<double>(xr[i]) * xr[i];
  ss = Reduce<kNormThreads>(ss, shared, Add{});
  const float inv = 1.0f / sqrtf(static_cast<float>(ss / n) + eps);
  // Every thread has read its x[i] above and writes only its own y[i]: y may alias x.
  for (int i = threadIdx.x; i < n; i += kNormThreads) yr[i] = (xr[i] * inv) * (plus_one ? 1.0f + w[i] : w[i]);
}

__global__ void LayerNormKernel(const float* x, const float* w, const float* b, float* y, int n, float eps) {
  __shared__ double shared[kNormThreads / 32];
  const float* xr = x + static_cast<long long>(blockIdx.x) * n;
  float* yr = y + static_cast<long long>(blockIdx.x) * n;
  double mean = 0;
  for (int i = threadIdx.x; i < n; i += kNormThreads) mean += xr[i];
  mean = Reduce<kNormThreads>(mean, shared, Add{}) / n;
  double var = 0;
  for (int i = threadIdx.x; i < n; i += kNormThreads) var += (xr[i] - mean) * (xr[i] - mean);
  var = Reduce<kNormThreads>(var, shared, Add{});
  const float inv = 1.0f / sqrtf(static_cast<float>(var / n) + eps);
  for (int i = threadIdx.x; i < n; i += kNormThreads) yr[i] = static_cast<float>(xr[i] - mean) * inv * w[i] + b[i];
}

// Block (row, head) over heads + 2 kv_heads: q heads rotate in place, k heads rotate and go to the
// pool, v heads go to the pool.
__global__ void RopeStoreKvKernel(float* qkv, StepRowsView rows, const float* inv_freq, int heads, int kv_heads, int head_dim,
                                  int layer, KvPoolView pool) {
  const int r = blockIdx.x, h = blockIdx.y;
  const int pos = rows.positions[r];
  float* v = qkv + static_cast<long long>(r) * (heads + 2 * kv_heads) * head_dim + static_cast<long long>(h) * head_dim;
  const int* table = rows.block_ids + rows.table_start[r];
  const bool is_k = h >= heads && h < heads + kv_heads, is_v = h >= heads + kv_heads;
  float* dst = nullptr;
  if (is_k) dst = KvAt(pool, table, layer, 0, h - heads, pos);
  if (is_v) dst = KvAt(pool, table, layer, 1, h - heads - kv_heads, pos);
  if (inv_freq != nullptr && !is_v) {
    const int half = head_dim / 2;
    for (int i = threadIdx.x; i < half; i += blockDim.x) {
      const float angle = inv_freq[i] * static_cast<float>(pos);
      const float c = cosf(angle), s = sinf(angle);
      const float a = v[i], b = v[i + half];
      const float ra = a * c - b * s, rb = b * c + a * s;
      v[i] = ra;
      v[i + half] = rb;
      if (dst != nullptr) {
        dst[i] = ra;
        dst[i + half] = rb;
      }
    }
  } else if (dst != nullptr) {
    for (int i = threadIdx.x; i < head_dim; i += blockDim.x) dst[i] = v[i];
  }
}

// Block (row, head). Keys in tiles of kAttnThreads, one key per thread, with a running maximum
// (online softmax): the host takes the maximum over every key first, then sums; the two agree up
// to rounding. Shared memory: q and the output accumulator (head_dim each), the tile's weights and
// the reduction scratch.
__global__ void PagedAttentionKernel(const float* qkv, StepRowsView rows, int heads, int kv_heads, int head_dim, int layer,
                                     KvPoolView pool, int window, float scale, float softcap, float* out) {
  extern __shared__ float smem[];
  float* q = smem;
  float* acc = q + head_dim;
  float* p = acc + head_dim;
  float* red = p + kAttnThreads;
  const int r = blockIdx.x, head = blockIdx.y, tid = threadIdx.x;
  const int pos = rows.positions[r];
  const int first = window > 0 ? max(0, pos - window + 1) : 0;
  const int g = head / (heads / kv_heads);
  const int* table = rows.block_ids + rows.table_start[r];
  const float* qsrc = qkv + static_cast<long long>(r) * (heads + 2 * kv_heads) * head_dim + static_cast<long long>(head) * head_dim;
  for (int d = tid; d < head_dim; d += kAttnThreads) {
    q[d] = qsrc[d];
    acc[d] = 0.0f;
  }
  __syncthreads();
  float running_max = -INFINITY, total = 0.0f;
  for (int t0 = first; t0 <= pos; t0 += kAttnThreads) {
    const int j = t0 + tid;
    float s = -INFINITY;
    if (j <= pos) {
      const float* k = KvAt(pool, table, layer, 0, g, j);
      float dot = 0.0f;
      for (int d = 0; d < head_dim; ++d) dot += q[d] * k[d];
      s = dot * scale;
      if (softcap > 0) s = softcap * tanhf(s / softcap);
    }
    const float tile_max = Reduce<kAttnThreads>(s, red, Max{});
    const float new_max = fmaxf(running_max, tile_max);  // finite: key t0 is always in range
    const float rescale = expf(running_max - new_max);   // 0 on the first tile
    const float e = j <= pos ? expf(s - new_max) : 0.0f;
    p[tid] = e;
    total = total * rescale + Reduce<kAttnThreads>(e, red, Add{});  // its barriers publish p
    const int count = min(kAttnThreads, pos - t0 + 1);
    for (int d = tid; d < head_dim; d += kAttnThreads) {
      float a = acc[d] * rescale;
      for (int i = 0; i < count; ++i) a += p[i] * KvAt(pool, table, layer, 1, g, t0 + i)[d];
      acc[d] = a;
    }
    running_max = new_max;
    __syncthreads();  // p is rewritten by the next tile
  }
  float* o = out + static_cast<long long>(r) * heads * head_dim + static_cast<long long>(head) * head_dim;
  for (int d = tid; d < head_dim; d += kAttnThreads) o[d] = acc[d] / total;
}

template <GateActivation kAct>
__device__ __forceinline__ float Act(float x) {
  if constexpr (kAct == GateActivation::kSilu) return x / (1.0f + expf(-x));
  if constexpr (kAct == GateActivation::kGeluTanh) {
    const float c = 0.7978845608028654f;  // sqrt(2 / pi)
    return 0.5f * x * (1.0f + tanhf(c * (x + 0.044715f * x * x * x)));
  }
  return 0.5f * x * (1.0f + erff(x * 0.7071067811865476f));
}

template <GateActivation kAct>
__global__ void GateKernel(const float* in, float* out, long long total, int inter, bool gated) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    if (gated) {
      const long long r = i / inter, c = i % inter;
      const float* gate = in + r * 2 * inter;
      out[i] = Act<kAct>(gate[c]) * gate[inter + c];
    } else {
      out[i] = Act<kAct>(in[i]);
    }
  }
}

__global__ void AddIntoKernel(float* x, const float* y, long long n) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    x[i] += y[i];
  }
}

__global__ void GatherRowsKernel(const float* src, const int* rows, int width, float* dst) {
  const float* s = src + static_cast<long long>(rows[blockIdx.x]) * width;
  float* d = dst + static_cast<long long>(blockIdx.x) * width;
  for (int i = threadIdx.x; i < width; i += blockDim.x) d[i] = s[i];
}

__global__ void SoftcapKernel(float* x, long long n, float cap) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    x[i] = cap * tanhf(x[i] / cap);
  }
}

unsigned GridFor(long long n, int threads) {
  const long long blocks = (n + threads - 1) / threads;
  return static_cast<unsigned>(blocks < 65535 ? blocks : 65535);  // grid-stride loops cover the rest
}

}  // namespace
}  // namespace decoder_impl

using namespace decoder_impl;

cudaError_t LaunchDecoderEmbed(const float* embed, const float* positions, const StepRowsView& rows, float scale, int hidden,
                               float* x, cudaStream_t stream) {
  if (rows.rows == 0) return cudaSuccess;
  EmbedKernel<<<static_cast<unsigned>(rows.rows), 256, 0, stream>>>(embed, positions, rows, scale, hidden, x);
  return cudaGetLastError();
}

cudaError_t LaunchDecoderRmsNorm(const float* x, const float* w, float* y, int m, int n, float eps, bool plus_one,
                                 cudaStream_t stream) {
  if (m == 0) return cudaSuccess;
  RmsNormKernel<<<static_cast<unsigned>(m), kNormThreads, 0, stream>>>(x, w, y, n, eps, plus_one);
  return cudaGetLastError();
}

cudaError_t LaunchDecoderLayerNorm(const float* x, const float* w, const float* b, float* y, int m, int n, float eps,
                                   cudaStream_t stream) {
  if (m == 0) return cudaSuccess;
  LayerNormKernel<<<static_cast<unsigned>(m), kNormThreads, 0, stream>>>(x, w, b, y, n, eps);
  return cudaGetLastError();
}

cudaError_t LaunchDecoderRopeStoreKv(float* qkv, const StepRowsView& rows, const float* inv_freq, int heads, int kv_heads,
                                     int head_dim, int layer, const KvPoolView& pool, cudaStream_t stream) {
  if (rows.rows == 0) return cudaSuccess;
  const dim3 grid(static_cast<unsigned>(rows.rows), static_cast<unsigned>(heads + 2 * kv_heads));
  RopeStoreKvKernel<<<grid, 64, 0, stream>>>(qkv, rows, inv_freq, heads, kv_heads, head_dim, layer, pool);
  return cudaGetLastError();
}

cudaError_t LaunchDecoderPagedAttention(const float* qkv, const StepRowsView& rows, int heads, int kv_heads, int head_dim,
                                        int layer, const KvPoolView& pool, int window, float scale, float softcap, float* out,
                                        cudaStream_t stream) {
  if (rows.rows == 0) return cudaSuccess;
  const dim3 grid(static_cast<unsigned>(rows.rows), static_cast<unsigned>(heads));
  const std::size_t shared = (2 * static_cast<std::size_t>(head_dim) + kAttnThreads + kAttnThreads / 32) * sizeof(float);
  PagedAttentionKernel<<<grid, kAttnThreads, shared, stream>>>(qkv, rows, heads, kv_heads, head_dim, layer, pool, window, scale,
                                                               softcap, out);
  return cudaGetLastError();
}

cudaError_t LaunchDecoderGate(const float* in, float* out, int m, int inter, bool gated, GateActivation act,
                              cudaStream_t stream) {
  const long long total = static_cast<long long>(m) * inter;
  if (total == 0) return cudaSuccess;
  const unsigned grid = GridFor(total, 256);
  switch (act) {
    case GateActivation::kSilu: GateKernel<GateActivation::kSilu><<<grid, 256, 0, stream>>>(in, out, total, inter, gated); break;
    case GateActivation::kGeluTanh:
      GateKernel<GateActivation::kGeluTanh><<<grid, 256, 0, stream>>>(in, out, total, inter, gated);
      break;
    case GateActivation::kGelu: GateKernel<GateActivation::kGelu><<<grid, 256, 0, stream>>>(in, out, total, inter, gated); break;
  }
  return cudaGetLastError();
}

cudaError_t LaunchDecoderAddInto(float* x, const float* y, long long n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  AddIntoKernel<<<GridFor(n, 256), 256, 0, stream>>>(x, y, n);
  return cudaGetLastError();
}

cudaError_t LaunchDecoderGatherRows(const float* src, const int* rows, int n, int width, float* dst, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  GatherRowsKernel<<<static_cast<unsigned>(n), 256, 0, stream>>>(src, rows, width, dst);
  return cudaGetLastError();
}

cudaError_t LaunchDecoderSoftcap(float* x, long long n, float cap, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  SoftcapKernel<<<GridFor(n, 256), 256, 0, stream>>>(x, n, cap);
  return cudaGetLastError();
}

}  // namespace dfw::cuda
