#include <cfloat>
#include <cmath>

#include "kernels.h"

#include <cuda_bf16.h>

namespace dfw::cuda {
namespace {

constexpr int kBlock = 256;  // threads per block for row kernels (a multiple of the warp size)

template <Activation kAct>
__device__ __forceinline__ float Apply(float x) {
  if constexpr (kAct == Activation::kRelu) return x > 0.0f ? x : 0.0f;
  if constexpr (kAct == Activation::kGelu) return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
  if constexpr (kAct == Activation::kGeluTanh) {
    const float inner = 0.7978845608028654f * (x + 0.044715f * x * x * x);
    return 0.5f * x * (1.0f + tanhf(inner));
  }
  if constexpr (kAct == Activation::kTanh) return tanhf(x);
  if constexpr (kAct == Activation::kSigmoid) return 1.0f / (1.0f + expf(-x));
  return x;
}

template <Activation kAct>
__global__ void BiasActivationKernel(float* x, long long total, int n, const float* bias) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const float v = bias != nullptr ? x[i] + bias[i % n] : x[i];
    x[i] = Apply<kAct>(v);
  }
}

struct MaxOp {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};
struct SumOp {
  __device__ float operator()(float a, float b) const { return a + b; }
};

// Reduces v over the block; every thread gets the result. `shared` holds kBlock / 32 floats.
template <typename Op>
__device__ float BlockReduce(float v, float* shared, Op op) {
  for (int offset = 16; offset > 0; offset >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, offset));
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();  // shared may still be read by a previous reduction
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  v = shared[0];
  for (int w = 1; w < kBlock / 32; ++w) v = op(v, shared[w]);
  return v;
}

__global__ void SoftmaxRowsKernel(float* x, int n, float scale, const float* mask, long long rows_per_mask) {
  __shared__ float shared[kBlock / 32];
  float* row = x + blockIdx.x * static_cast<long long>(n);
  const float* m = mask != nullptr ? mask + (blockIdx.x / rows_per_mask) * static_cast<long long>(n) : nullptr;
  float local_max = -INFINITY;
  for (int j = threadIdx.x; j < n; j += kBlock) {
    const float v = row[j] * scale + (m != nullptr ? m[j] : 0.0f);
    row[j] = v;
    local_max = fmaxf(local_max, v);
  }
  const float row_max = BlockReduce(local_max, shared, MaxOp{});
  if (row_max == -INFINITY) {  // every position masked: uniform, as the CPU reference does
    for (int j = threadIdx.x; j < n; j += kBlock) row[j] = 1.0f / static_cast<float>(n);
    return;
  }
  float local_sum = 0.0f;
  for (int j = threadIdx.x; j < n; j += kBlock) {
    const float e = expf(row[j] - row_max);
    row[j] = e;
    local_sum += e;
  }
  const float inv = 1.0f / BlockReduce(local_sum, shared, SumOp{});
  for (int j = threadIdx.x; j < n; j += kBlock) row[j] *= inv;
}

__global__ void LayerNormKernel(const float* x, const float* residual, const float* gamma, const float* beta, float* y,
                                int n, float eps) {
  __shared__ float shared[kBlock / 32];
  const long long off = blockIdx.x * static_cast<long long>(n);
  // Each thread reads x[j] before writing y[j] for the same j, so y may alias x.
  float local_sum = 0.0f;
  for (int j = threadIdx.x; j < n; j += kBlock) {
    const float v = x[off + j] + (residual != nullptr ? residual[off + j] : 0.0f);
    y[off + j] = v;
    local_sum += v;
  }
  const float mean = BlockReduce(local_sum, shared, SumOp{}) / static_cast<float>(n);
  float local_var = 0.0f;
  for (int j = threadIdx.x; j < n; j += kBlock) {
    const float d = y[off + j] - mean;
    local_var += d * d;
  }
  const float inv_std = rsqrtf(BlockReduce(local_var, shared, SumOp{}) / static_cast<float>(n) + eps);
  for (int j = threadIdx.x; j < n; j += kBlock) y[off + j] = (y[off + j] - mean) * inv_std * gamma[j] + beta[j];
}

template <Activation kAct>
void LaunchBias(float* x, long long total, int n, const float* bias, cudaStream_t stream) {
  const long long blocks = (total + kBlock - 1) / kBlock;
  const unsigned grid = static_cast<unsigned>(blocks < 65535 ? blocks : 65535);  // grid-stride covers the rest
  BiasActivationKernel<kAct><<<grid, kBlock, 0, stream>>>(x, total, n, bias);
}

__global__ void ToBf16Kernel(const float* x, __nv_bfloat16* out, long long n) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    out[i] = __float2bfloat16_rn(x[i]);
  }
}

}  // namespace

cudaError_t LaunchToBf16(const float* x, void* out, long long n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  const long long blocks = (n + kBlock - 1) / kBlock;
  const unsigned grid = static_cast<unsigned>(blocks < 65535 ? blocks : 65535);  // grid-stride covers the rest
  ToBf16Kernel<<<grid, kBlock, 0, stream>>>(x, static_cast<__nv_bfloat16*>(out), n);
  return cudaGetLastError();
}

cudaError_t LaunchBiasActivation(float* x, int m, int n, const float* bias, Activation act, cudaStream_t stream) {
  const long long total = static_cast<long long>(m) * n;
  if (total == 0) return cudaSuccess;
  switch (act) {
    case Activation::kNone: LaunchBias<Activation::kNone>(x, total, n, bias, stream); break;
    case Activation::kRelu: LaunchBias<Activation::kRelu>(x, total, n, bias, stream); break;
    case Activation::kGelu: LaunchBias<Activation::kGelu>(x, total, n, bias, stream); break;
    case Activation::kGeluTanh: LaunchBias<Activation::kGeluTanh>(x, total, n, bias, stream); break;
    case Activation::kTanh: LaunchBias<Activation::kTanh>(x, total, n, bias, stream); break;
    case Activation::kSigmoid: LaunchBias<Activation::kSigmoid>(x, total, n, bias, stream); break;
  }
  return cudaGetLastError();
}

cudaError_t LaunchSoftmaxRows(float* x, long long rows, int n, float scale, const float* mask, long long rows_per_mask,
                              cudaStream_t stream) {
  if (rows == 0 || n == 0) return cudaSuccess;
  if (rows > 0x7fffffffLL) return cudaErrorInvalidValue;
  SoftmaxRowsKernel<<<static_cast<unsigned>(rows), kBlock, 0, stream>>>(x, n, scale, mask,
                                                                         rows_per_mask > 0 ? rows_per_mask : 1);
  return cudaGetLastError();
}

cudaError_t LaunchLayerNorm(const float* x, const float* residual, const float* gamma, const float* beta, float* y,
                            int m, int n, float eps, cudaStream_t stream) {
  if (m == 0 || n == 0) return cudaSuccess;
  LayerNormKernel<<<static_cast<unsigned>(m), kBlock, 0, stream>>>(x, residual, gamma, beta, y, n, eps);
  return cudaGetLastError();
}

}  // namespace dfw::cuda
