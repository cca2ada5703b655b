// Element-wise and row kernels of the CUDA backend. Each Launch* enqueues on `stream` and returns
// the launch error (cudaGetLastError); callers pass it through DFW_CUDA_CHECK. Sizes are assumed
// validated by the caller (non-negative, pointers non-null when the size is non-zero).
// Numerics mirror the CPU reference (src/backend/cpu/cpu_backend.cc): same activation formulas,
// a fully masked softmax row becomes uniform, LayerNorm uses the biased variance.
#pragma once

#include <cuda_runtime.h>

#include "dfw/backend/backend.h"

namespace dfw::cuda {

// x[m x n] = act(x + bias), bias may be nullptr.
cudaError_t LaunchBiasActivation(float* x, int m, int n, const float* bias, Activation act, cudaStream_t stream);

// For each of `rows` rows of n floats: row = softmax(scale * row + mask[row / rows_per_mask]),
// mask rows of n floats, mask may be nullptr (rows_per_mask is then ignored).
cudaError_t LaunchSoftmaxRows(float* x, long long rows, int n, float scale, const float* mask, long long rows_per_mask,
                              cudaStream_t stream);

// y = LayerNorm(x + residual) * gamma + beta per row; residual may be nullptr; y may alias x.
cudaError_t LaunchLayerNorm(const float* x, const float* residual, const float* gamma, const float* beta, float* y,
                            int m, int n, float eps, cudaStream_t stream);

// out[i] = bfloat16(x[i]) for n floats, round to nearest even (__float2bfloat16_rn); out holds n
// 16-bit values (__nv_bfloat16, kept opaque here so this header needs no cuda_bf16.h).
cudaError_t LaunchToBf16(const float* x, void* out, long long n, cudaStream_t stream);

}  // namespace dfw::cuda
