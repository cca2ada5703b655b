// The decode step's products: y[m x n] = x[m x k] · Wᵀ (+ bias) for a few rows m (one per active
// sequence), where the time is reading W from memory, not multiplying. A GEMM library tiles for
// reuse that is not there at m = 1 and pays its threading set-up per call; these kernels stream
// each weight row once per group of up to kSkinnyGroup rows of x, with float32 accumulation, split
// over output rows across the backend's thread count. W is float32 or bfloat16 (half the bytes to
// stream, widened in registers), row-major [n x k] as nn.Linear stores it.
//
// AVX-512 and AVX2+FMA versions are chosen at run time (the binary targets baseline x86-64) by the
// CPU backend's one choice of instruction set (src/backend/cpu/kernels.h BestIsa, which
// DFW_CPU_KERNELS=scalar or =avx2 caps); the scalar one is the reference and the fallback.
// The CPU decoder engine (src/backend/cpu/cpu_decoder.cc) runs its decode products here.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

namespace dfw::skinny_kernels {

inline constexpr int kSkinnyGroup = 8;

struct SkinnyWeights {
  const float* f32 = nullptr;      // [n x k], or
  std::vector<uint16_t> bf16;      // [n x k] bfloat16 (round to nearest even), when non-empty
  int n = 0, k = 0;
  uint64_t bytes() const { return static_cast<uint64_t>(n) * static_cast<uint64_t>(k) * (bf16.empty() ? 4 : 2); }
};

// W (float32) into `w`, converted to bfloat16 when `to_bf16`.
void MakeSkinnyWeights(const float* w, int n, int k, bool to_bf16, SkinnyWeights& out);

// y[m x n] = x[m x k] · Wᵀ + bias (bias n floats or nullptr), on `threads` threads (>= 1).
void SkinnyLinear(const float* x, int m, const SkinnyWeights& w, const float* bias, float* y, int threads);

// fn(begin, end) over [0, n) in contiguous parts on `threads` threads (the same arena as
// SkinnyLinear); runs inline when threads <= 1 or n <= 1.
void ParallelFor(int n, int threads, const std::function<void(int, int)>& fn);

// Which implementation runs: "avx512", "avx2" or "scalar", the backend's BestIsa (the CPU's widest,
// or what DFW_CPU_KERNELS caps it to).
const char* SkinnyIsa();

}  // namespace dfw::skinny_kernels
