// Row kernels of the CPU backend (everything that is not a GEMM): bias + activation, scaled and
// masked softmax, residual + LayerNorm. A portable scalar implementation of each (the reference,
// double accumulators), an AVX2 + FMA one, and for softmax and LayerNorm an AVX-512 one, chosen at
// run time by what the CPU has (the binary itself targets baseline x86-64). All are exposed so
// tests can compare them; kAvx512 runs the AVX2 code where it has no kernel of its own.
#pragma once

#include <cstddef>

#include "dfw/backend/backend.h"

namespace dfw::cpu_kernels {

enum class Isa { kScalar, kAvx2, kAvx512 };

// The best implementation this CPU runs: kAvx512 with AVX-512F (and AVX2 + FMA), kAvx2 with AVX2
// and FMA, else kScalar. DFW_CPU_KERNELS=scalar or =avx2 caps it (for comparisons).
Isa BestIsa();
const char* IsaName(Isa isa);

// x[m x n] = act(x + bias) row by row; bias (n floats) may be nullptr.
void BiasActivation(Isa isa, float* x, int m, int n, const float* bias, Activation act);

// Each of `rows` rows of n floats: softmax(x * scale + mask), mask (n floats, additive) may be
// nullptr. A row whose every entry is -inf after masking becomes uniform rather than NaN.
void SoftmaxRows(Isa isa, float* x, std::size_t rows, int n, float scale, const float* mask);

// y[m x n] = LayerNorm(x + residual) * gamma + beta per row; residual may be nullptr; y may alias
// x (or residual): each element is read before it is written.
void LayerNormRows(Isa isa, const float* x, const float* residual, const float* gamma, const float* beta, float* y,
                   int m, int n, float eps);

}  // namespace dfw::cpu_kernels
