// Conversion, quantisation and dequantisation passes; see lowp_kernels.h. The AVX2 and AVX-512
// functions carry a target attribute (this file builds for baseline x86-64) and run only where
// BestIsa() found the instructions.
#include "lowp_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#define DFW_LOWP_AVX2 __attribute__((target("avx2,fma")))
#endif

namespace dfw::cpu_lowp {
namespace {

uint16_t Bf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

// The row's weight scale: max |w| / top, raised where needed so that every same-signed pair
// (w[2i], w[2i+1]) comes to at most pair_top steps (pair_top 0: no pair bound). 1 for a row of zeros.
float WeightRowScale(const float* row, int k, float amax, float top, int pair_top) {
  float sc = amax > 0.f ? amax / top : 1.f;
  if (pair_top <= 0) return sc;
  float pm = 0.f;
  for (int p = 0; p + 1 < k; p += 2) {
    const float a = row[p], b = row[p + 1];
    if ((a > 0.f && b > 0.f) || (a < 0.f && b < 0.f)) pm = std::max(pm, std::fabs(a) + std::fabs(b));
  }
  return amax > 0.f ? std::max(sc, pm / static_cast<float>(pair_top)) : sc;
}

// Rounding can carry a same-signed pair one step past pair_top (both halves rounded up, when the
// scale's reciprocal is inexact): the larger half gives the step back. Returns the change to the
// row's sum.
int32_t BoundPairSums(int8_t* q, int k, int pair_top) {
  int32_t delta = 0;
  if (pair_top <= 0) return delta;
  for (int p = 0; p + 1 < k; p += 2) {
    int a = q[p], b = q[p + 1];
    if (!((a > 0 && b > 0) || (a < 0 && b < 0))) continue;
    const int excess = std::abs(a) + std::abs(b) - pair_top;
    if (excess <= 0) continue;
    const int step = a > 0 ? excess : -excess;
    if (std::abs(a) >= std::abs(b)) {
      a -= step;
    } else {
      b -= step;
    }
    delta += (a - q[p]) + (b - q[p + 1]);
    q[p] = static_cast<int8_t>(a);
    q[p + 1] = static_cast<int8_t>(b);
  }
  return delta;
}

// The row's quantisation parameters from its range, spread over 0..top.
void RowParams(float lo, float hi, int top, float& scale, int32_t& zp) {
  lo = std::min(lo, 0.f);
  hi = std::max(hi, 0.f);
  scale = (hi - lo) / static_cast<float>(top);
  if (!(scale > 0.f)) {
    scale = 1.f;
    zp = 0;
    return;
  }
  zp = static_cast<int32_t>(std::clamp(std::nearbyint(-lo / scale), 0.f, static_cast<float>(top)));
}

uint8_t Quantize(float x, float inv, int32_t zp, int top) {
  const int32_t q = static_cast<int32_t>(std::nearbyint(x * inv)) + zp;
  return static_cast<uint8_t>(std::clamp(q, 0, top));
}

#ifdef DFW_LOWP_AVX2
DFW_LOWP_AVX2 void ToBf16Avx2(const float* x, uint16_t* out, std::size_t n) {
  const __m256i one = _mm256_set1_epi32(1), round = _mm256_set1_epi32(0x7fff);
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m256i a = _mm256_castps_si256(_mm256_loadu_ps(x + i));
    __m256i b = _mm256_castps_si256(_mm256_loadu_ps(x + i + 8));
    a = _mm256_srli_epi32(_mm256_add_epi32(a, _mm256_add_epi32(round, _mm256_and_si256(_mm256_srli_epi32(a, 16), one))), 16);
    b = _mm256_srli_epi32(_mm256_add_epi32(b, _mm256_add_epi32(round, _mm256_and_si256(_mm256_srli_epi32(b, 16), one))), 16);
    // packus works per 128-bit lane: a0-3 b0-3 a4-7 b4-7, put back in order.
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(a, b), 0xd8);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), packed);
  }
  for (; i < n; ++i) out[i] = Bf16(x[i]);
}

// The AVX512-BF16 conversion (round to nearest even, as Bf16() for every finite float; it treats
// float denormals as zero, which a bf16 matmul input does not notice), 32 floats an instruction.
#define DFW_LOWP_AVX512BF16 __attribute__((target("avx512f,avx512bw,avx512bf16,avx2")))
bool HasAvx512Bf16() {
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16");
  }();
  return has;
}

DFW_LOWP_AVX512BF16 void ToBf16Avx512Bf16(const float* x, uint16_t* out, std::size_t n) {
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m512bh v = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(x + i + 16), _mm512_loadu_ps(x + i));
    _mm512_storeu_si512(out + i, (__m512i)v);
  }
  for (; i < n; ++i) out[i] = Bf16(x[i]);
}

// Eight quantised values in 0..top, as int32 lanes.
DFW_LOWP_AVX2 inline __m256i Quant8(const float* x, __m256 inv, __m256i zp, __m256i top) {
  const __m256i v = _mm256_add_epi32(_mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x), inv)), zp);
  return _mm256_min_epi32(_mm256_max_epi32(v, _mm256_setzero_si256()), top);
}

DFW_LOWP_AVX2 void QuantizeRowsU8Avx2(const float* x, int m, int k, int top, uint8_t* q, float* scale, int32_t* zp) {
  const __m256i vtop = _mm256_set1_epi32(top);
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  for (int i = 0; i < m; ++i) {
    const float* row = x + static_cast<std::size_t>(i) * k;
    uint8_t* out = q + static_cast<std::size_t>(i) * k;
    __m256 lo = _mm256_setzero_ps(), hi = _mm256_setzero_ps();
    int j = 0;
    for (; j + 8 <= k; j += 8) {
      const __m256 v = _mm256_loadu_ps(row + j);
      lo = _mm256_min_ps(lo, v);
      hi = _mm256_max_ps(hi, v);
    }
    alignas(32) float l8[8], h8[8];
    _mm256_store_ps(l8, lo);
    _mm256_store_ps(h8, hi);
    float l = *std::min_element(l8, l8 + 8), h = *std::max_element(h8, h8 + 8);
    for (int t = j; t < k; ++t) {
      l = std::min(l, row[t]);
      h = std::max(h, row[t]);
    }
    RowParams(l, h, top, scale[i], zp[i]);
    const float inv = 1.f / scale[i];
    const __m256 vinv = _mm256_set1_ps(inv);
    const __m256i vzp = _mm256_set1_epi32(zp[i]);
    j = 0;
    for (; j + 32 <= k; j += 32) {
      const __m256i ab = _mm256_packs_epi32(Quant8(row + j, vinv, vzp, vtop), Quant8(row + j + 8, vinv, vzp, vtop));
      const __m256i cd = _mm256_packs_epi32(Quant8(row + j + 16, vinv, vzp, vtop), Quant8(row + j + 24, vinv, vzp, vtop));
      const __m256i bytes = _mm256_permutevar8x32_epi32(_mm256_packus_epi16(ab, cd), order);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + j), bytes);
    }
    for (; j < k; ++j) out[j] = Quantize(row[j], inv, zp[i], top);
  }
}

DFW_LOWP_AVX2 void DequantizeRowsAvx2(const int32_t* acc, int m, int n, const float* scale, const int32_t* zp,
                                      const float* col_scale, const int32_t* col_sum, const float* bias, float* y) {
  for (int i = 0; i < m; ++i) {
    const int32_t* a = acc + static_cast<std::size_t>(i) * n;
    float* out = y + static_cast<std::size_t>(i) * n;
    const __m256 s = _mm256_set1_ps(scale[i]);
    const __m256i z = _mm256_set1_epi32(zp[i]);
    int j = 0;
    for (; j + 8 <= n; j += 8) {
      const __m256i v = _mm256_sub_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + j)),
                                         _mm256_mullo_epi32(z, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(col_sum + j))));
      const __m256 f = _mm256_mul_ps(_mm256_cvtepi32_ps(v), _mm256_mul_ps(s, _mm256_loadu_ps(col_scale + j)));
      _mm256_storeu_ps(out + j, bias != nullptr ? _mm256_add_ps(f, _mm256_loadu_ps(bias + j)) : f);
    }
    for (; j < n; ++j) {
      const float f = static_cast<float>(a[j] - zp[i] * col_sum[j]) * (scale[i] * col_scale[j]);
      out[j] = bias != nullptr ? f + bias[j] : f;
    }
  }
}

// The same two passes 16 lanes wide (AVX-512F alone: vpmovusdb packs the bytes), bit-identical to
// the AVX2 and scalar ones (the same round-to-nearest-even conversions, no fused multiply-add).
#define DFW_LOWP_AVX512 __attribute__((target("avx512f,avx2,fma")))
// GCC 12 warns that the AVX-512 intrinsics' _mm512_undefined_* pass-through operands may be used
// uninitialized (they are masks' don't-care inputs, never read with a full mask).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

DFW_LOWP_AVX512 void QuantizeRowsU8Avx512(const float* x, int m, int k, int top, uint8_t* q, float* scale, int32_t* zp) {
  const __m512i vtop = _mm512_set1_epi32(top);
  for (int i = 0; i < m; ++i) {
    const float* row = x + static_cast<std::size_t>(i) * k;
    uint8_t* out = q + static_cast<std::size_t>(i) * k;
    __m512 lo = _mm512_setzero_ps(), hi = _mm512_setzero_ps();
    int j = 0;
    for (; j + 16 <= k; j += 16) {
      const __m512 v = _mm512_loadu_ps(row + j);
      lo = _mm512_min_ps(lo, v);
      hi = _mm512_max_ps(hi, v);
    }
    float l = _mm512_reduce_min_ps(lo), h = _mm512_reduce_max_ps(hi);
    for (int t = j; t < k; ++t) {
      l = std::min(l, row[t]);
      h = std::max(h, row[t]);
    }
    RowParams(l, h, top, scale[i], zp[i]);
    const float inv = 1.f / scale[i];
    const __m512 vinv = _mm512_set1_ps(inv);
    const __m512i vzp = _mm512_set1_epi32(zp[i]);
    j = 0;
    for (; j + 16 <= k; j += 16) {
      const __m512i v = _mm512_add_epi32(_mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(row + j), vinv)), vzp);
      // Clamped to 0..top (<= 255), then packed to bytes.
      const __m512i c = _mm512_min_epi32(_mm512_max_epi32(v, _mm512_setzero_si512()), vtop);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + j), _mm512_cvtusepi32_epi8(c));
    }
    for (; j < k; ++j) out[j] = Quantize(row[j], inv, zp[i], top);
  }
}

DFW_LOWP_AVX512 void QuantizeWeightRowsAvx512(const float* w, int n, int k, float top, int pair_top, int8_t* q,
                                              float* scale, int32_t* sum) {
  const __m512 vtop = _mm512_set1_ps(top), vneg = _mm512_set1_ps(-top);
  for (int j = 0; j < n; ++j) {
    const float* row = w + static_cast<std::size_t>(j) * k;
    int8_t* out = q + static_cast<std::size_t>(j) * k;
    __m512 amax = _mm512_setzero_ps();
    for (int p = 0; p < k; p += 16) {
      const __mmask16 m = p + 16 <= k ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << (k - p)) - 1u);
      amax = _mm512_max_ps(amax, _mm512_abs_ps(_mm512_maskz_loadu_ps(m, row + p)));
    }
    const float sc = WeightRowScale(row, k, _mm512_reduce_max_ps(amax), top, pair_top), inv = 1.f / sc;
    const __m512 vinv = _mm512_set1_ps(inv);
    __m512i total = _mm512_setzero_si512();
    for (int p = 0; p < k; p += 16) {
      const __mmask16 m = p + 16 <= k ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << (k - p)) - 1u);
      const __m512 v = _mm512_min_ps(_mm512_max_ps(_mm512_mul_ps(_mm512_maskz_loadu_ps(m, row + p), vinv), vneg), vtop);
      const __m512i r = _mm512_cvtps_epi32(v);  // the current rounding mode: to nearest even
      total = _mm512_add_epi32(total, r);  // masked-off lanes are 0
      _mm512_mask_cvtsepi32_storeu_epi8(out + p, m, r);
    }
    scale[j] = sc;
    sum[j] = _mm512_reduce_add_epi32(total) + BoundPairSums(out, k, pair_top);
  }
}

DFW_LOWP_AVX512 void DequantizeRowsAvx512(const int32_t* acc, int m, int n, const float* scale, const int32_t* zp,
                                          const float* col_scale, const int32_t* col_sum, const float* bias, float* y) {
  for (int i = 0; i < m; ++i) {
    const int32_t* a = acc + static_cast<std::size_t>(i) * n;
    float* out = y + static_cast<std::size_t>(i) * n;
    const __m512 s = _mm512_set1_ps(scale[i]);
    const __m512i z = _mm512_set1_epi32(zp[i]);
    int j = 0;
    for (; j + 16 <= n; j += 16) {
      const __m512i v = _mm512_sub_epi32(_mm512_loadu_si512(a + j), _mm512_mullo_epi32(z, _mm512_loadu_si512(col_sum + j)));
      const __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(v), _mm512_mul_ps(s, _mm512_loadu_ps(col_scale + j)));
      _mm512_storeu_ps(out + j, bias != nullptr ? _mm512_add_ps(f, _mm512_loadu_ps(bias + j)) : f);
    }
    for (; j < n; ++j) {
      const float f = static_cast<float>(a[j] - zp[i] * col_sum[j]) * (scale[i] * col_scale[j]);
      out[j] = bias != nullptr ? f + bias[j] : f;
    }
  }
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#endif

}  // namespace

void ToBf16(cpu_kernels::Isa isa, const float* x, uint16_t* out, std::size_t n) {
#ifdef DFW_LOWP_AVX2
  if (isa == cpu_kernels::Isa::kAvx512 && HasAvx512Bf16()) return ToBf16Avx512Bf16(x, out, n);
  if (isa != cpu_kernels::Isa::kScalar) return ToBf16Avx2(x, out, n);
#endif
  (void)isa;
  for (std::size_t i = 0; i < n; ++i) out[i] = Bf16(x[i]);
}

void QuantizeRowsU8(cpu_kernels::Isa isa, const float* x, int m, int k, uint8_t* q, float* scale, int32_t* zp,
                    int top) {
  top = std::clamp(top, 1, 255);
#ifdef DFW_LOWP_AVX2
  if (isa == cpu_kernels::Isa::kAvx512 && cpu_kernels::BestIsa() == cpu_kernels::Isa::kAvx512) {
    return QuantizeRowsU8Avx512(x, m, k, top, q, scale, zp);
  }
  if (isa != cpu_kernels::Isa::kScalar) return QuantizeRowsU8Avx2(x, m, k, top, q, scale, zp);
#endif
  (void)isa;
  for (int i = 0; i < m; ++i) {
    const float* row = x + static_cast<std::size_t>(i) * k;
    float lo = 0.f, hi = 0.f;
    for (int j = 0; j < k; ++j) {
      lo = std::min(lo, row[j]);
      hi = std::max(hi, row[j]);
    }
    RowParams(lo, hi, top, scale[i], zp[i]);
    const float inv = 1.f / scale[i];
    for (int j = 0; j < k; ++j) q[static_cast<std::size_t>(i) * k + j] = Quantize(row[j], inv, zp[i], top);
  }
}

void QuantizeWeightRows(cpu_kernels::Isa isa, const float* w, int n, int k, float top, int8_t* q, float* scale,
                        int32_t* sum, int pair_top) {
#ifdef DFW_LOWP_AVX2
  if (isa == cpu_kernels::Isa::kAvx512 && cpu_kernels::BestIsa() == cpu_kernels::Isa::kAvx512) {
    return QuantizeWeightRowsAvx512(w, n, k, top, pair_top, q, scale, sum);
  }
#endif
  (void)isa;
  for (int j = 0; j < n; ++j) {
    const float* row = w + static_cast<std::size_t>(j) * k;
    int8_t* out = q + static_cast<std::size_t>(j) * k;
    float amax = 0.f;
    for (int p = 0; p < k; ++p) amax = std::max(amax, std::fabs(row[p]));
    const float sc = WeightRowScale(row, k, amax, top, pair_top), inv = 1.f / sc;
    int32_t total = 0;
    for (int p = 0; p < k; ++p) {
      out[p] = static_cast<int8_t>(std::nearbyint(std::clamp(row[p] * inv, -top, top)));
      total += out[p];
    }
    scale[j] = sc;
    sum[j] = total + BoundPairSums(out, k, pair_top);
  }
}

void DequantizeRows(cpu_kernels::Isa isa, const int32_t* acc, int m, int n, const float* scale, const int32_t* zp,
                    const float* col_scale, const int32_t* col_sum, const float* bias, float* y) {
#ifdef DFW_LOWP_AVX2
  if (isa == cpu_kernels::Isa::kAvx512 && cpu_kernels::BestIsa() == cpu_kernels::Isa::kAvx512) {
    return DequantizeRowsAvx512(acc, m, n, scale, zp, col_scale, col_sum, bias, y);
  }
  if (isa != cpu_kernels::Isa::kScalar) return DequantizeRowsAvx2(acc, m, n, scale, zp, col_scale, col_sum, bias, y);
#endif
  (void)isa;
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      const std::size_t at = static_cast<std::size_t>(i) * n + j;
      const float f = static_cast<float>(acc[at] - zp[i] * col_sum[j]) * (scale[i] * col_scale[j]);
      y[at] = bias != nullptr ? f + bias[j] : f;
    }
  }
}

}  // namespace dfw::cpu_lowp
