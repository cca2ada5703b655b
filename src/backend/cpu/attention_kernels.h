// Attention's two batched products on one thread with AVX-512, for the CPU backend's
// GemmHeadsBatched when every matrix is small (a head is 32 or 64 wide): oneDNN 2.6 runs these
// 4-D strided products on its generic jit gemm (gemm:jit, 11-70 GFLOP/s on one Sapphire Rapids
// core for 32 sequences x 12 heads of 75 x 75 x 32), which made them ~40% of a bfloat16 encoder.
//   ScoresQkT: C[i][j] = alpha · Σ_d A[i][d] · B[j][d]  (A·Bᵀ, k <= 64; B is transposed once per
//              matrix into a zero-padded scratch, then 4 rows x 64 columns per micro-step);
//   ContextPv: C[i][:] = alpha · Σ_j A[i][j] · B[j][:]  (A·B, n <= 64).
// beta is 0 (C is overwritten). Matrices (b, h) start at base + b*stride + h*head_stride, row
// strides as given, all in floats. Callable only where the CPU has AVX-512F (CpuIsa::avx512f).
#pragma once

#include <cstdint>
#include <vector>

namespace dfw::cpu_attention {

struct Batched {
  int m, n, k;
  float alpha;
  const float* a;
  int lda;
  int64_t stride_a, head_stride_a;
  const float* b;
  int ldb;
  int64_t stride_b, head_stride_b;
  float* c;
  int ldc;
  int64_t stride_c, head_stride_c;
  int batch, heads;
};

constexpr int kMaxHeadDim = 64;

// Whether these kernels take the call (shapes and flags as GemmHeadsBatched passes them).
bool ScoresFit(bool trans_a, bool trans_b, int k, float beta);
bool ContextFit(bool trans_a, bool trans_b, int n, float beta);

// `scratch` is reused between calls (the packed Kᵀ or V of one matrix).
void ScoresQkT(const Batched& p, std::vector<float>& scratch);
void ContextPv(const Batched& p, std::vector<float>& scratch);

}  // namespace dfw::cpu_attention
