// The passes around the CPU backend's reduced-precision matmuls (dnnl_lowp.h): float32 → bfloat16
// activations, per-row uint8 quantisation, and the int32 → float32 dequantisation with the bias.
// A scalar reference and an AVX2 path each (cpu_kernels::Isa picks, as for the row kernels); the
// two give bit-identical results (same rounding: to nearest even).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels.h"

namespace dfw::cpu_lowp {

// out[i] = bfloat16(x[i]), rounded to nearest even (inputs are finite).
void ToBf16(cpu_kernels::Isa isa, const float* x, uint16_t* out, std::size_t n);

// Row i of x[m x k] → q[i][*] = clamp(round(x / scale[i]) + zp[i], 0, top), with the row's range
// (widened to hold 0) spread over 0..top: scale = (max - min) / top, zp = round(-min / scale).
// top is 255 (8 bits) or 127 (7 bits: what a layer with 8-bit weights takes where the CPU's u8·s8
// pair sums saturate at int16, see dnnl_lowp.cc); clamped to 1..255. A row of zeros gets scale 1,
// zero point 0.
void QuantizeRowsU8(cpu_kernels::Isa isa, const float* x, int m, int k, uint8_t* q, float* scale, int32_t* zp,
                    int top = 255);

// y[i][j] = (acc[i][j] - zp[i] * col_sum[j]) * scale[i] * col_scale[j] + bias[j] (bias may be
// nullptr): the u8·s8 product of QuantizeRowsU8's rows with weights q_w[j][*] = w / col_scale[j]
// (col_sum[j] = Σ q_w[j][*]), back in float32.
void DequantizeRows(cpu_kernels::Isa isa, const int32_t* acc, int m, int n, const float* scale, const int32_t* zp,
                    const float* col_scale, const int32_t* col_sum, const float* bias, float* y);

// Row j of w[n x k] → q[j][*] = clamp(round(w[j][*] / scale[j]), -top, top) (symmetric, rounded
// to nearest even), scale[j] = max |w[j][*]| / top (1 for a row of zeros), sum[j] = Σ q[j][*]: a
// Linear layer's int8 weights per output channel, made once at load. top in 1..127; w finite. A
// scalar reference and an AVX-512 path (no AVX2 one: it runs once per model), bit-identical.
// pair_top > 0 bounds every same-signed pair (q[j][2i], q[j][2i+1]) to |sum| <= pair_top steps:
// scale[j] is raised to max over such pairs of (|w[2i]| + |w[2i+1]|) / pair_top where that is
// larger, and a pair that rounding still carries one step past the bound gives the step back from
// its larger half. (128 keeps u8·s8 pair sums within int16 where the CPU sums them there: 255 x 128
// = 32,640; a pair of opposite signs stays within 255 x 127 without a bound. dnnl_lowp.cc.)
void QuantizeWeightRows(cpu_kernels::Isa isa, const float* w, int n, int k, float top, int8_t* q, float* scale,
                        int32_t* sum, int pair_top = 0);

}  // namespace dfw::cpu_lowp
