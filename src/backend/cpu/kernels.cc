// Row kernels of the CPU backend: a scalar reference and an AVX2 + FMA path (see kernels.h).
// The AVX2 functions carry a target attribute, so this file compiles for baseline x86-64 and the
// wide path runs only where BestIsa() found the instructions. The AVX2 exp and erf evaluate the
// same polynomials as fast_math.h, lane by lane; sums that normalise (softmax, LayerNorm) are kept
// in double in both paths.
#include "kernels.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iterator>

#include "fast_math.h"

#if defined(__x86_64__)
#include <immintrin.h>
#define DFW_HAVE_AVX2_PATH 1
#define DFW_AVX2 __attribute__((target("avx2,fma")))
#endif

namespace dfw {

float Gelu(float x) { return 0.5f * x * (1.0f + cpu_math::FastErf(x * 0.70710678118654752f)); }

float GeluTanh(float x) {
  const float inner = 0.7978845608028654f * (x + 0.044715f * x * x * x);  // sqrt(2 / pi)
  return 0.5f * x * (1.0f + std::tanh(inner));
}

}  // namespace dfw

namespace dfw::cpu_kernels {
namespace {

// ---- scalar reference --------------------------------------------------------------------------

inline float Apply(Activation act, float x) {
  switch (act) {
    case Activation::kNone:
      return x;
    case Activation::kRelu:
      return x > 0.0f ? x : 0.0f;
    case Activation::kGelu:
      return Gelu(x);
    case Activation::kGeluTanh:
      return GeluTanh(x);
    case Activation::kTanh:
      return std::tanh(x);
    case Activation::kSigmoid:
      return 1.0f / (1.0f + std::exp(-x));
  }
  return x;
}

template <Activation kAct>
void BiasActRowsScalar(float* x, int m, int n, const float* bias) {
  for (int i = 0; i < m; ++i) {
    float* row = x + static_cast<std::size_t>(i) * n;
    if (bias != nullptr) {
      for (int j = 0; j < n; ++j) row[j] = Apply(kAct, row[j] + bias[j]);
    } else {
      for (int j = 0; j < n; ++j) row[j] = Apply(kAct, row[j]);
    }
  }
}

void BiasActivationScalar(float* x, int m, int n, const float* bias, Activation act) {
  switch (act) {
    case Activation::kNone: BiasActRowsScalar<Activation::kNone>(x, m, n, bias); break;
    case Activation::kRelu: BiasActRowsScalar<Activation::kRelu>(x, m, n, bias); break;
    case Activation::kGelu: BiasActRowsScalar<Activation::kGelu>(x, m, n, bias); break;
    case Activation::kGeluTanh: BiasActRowsScalar<Activation::kGeluTanh>(x, m, n, bias); break;
    case Activation::kTanh: BiasActRowsScalar<Activation::kTanh>(x, m, n, bias); break;
    case Activation::kSigmoid: BiasActRowsScalar<Activation::kSigmoid>(x, m, n, bias); break;
  }
}

void SoftmaxRowScalar(float* row, int n, float scale, const float* mask) {
  float max_v = -INFINITY;
  for (int j = 0; j < n; ++j) {
    row[j] = row[j] * scale + (mask != nullptr ? mask[j] : 0.0f);
    max_v = std::max(max_v, row[j]);
  }
  if (max_v == -INFINITY) {  // everything masked: a uniform row rather than NaNs
    for (int j = 0; j < n; ++j) row[j] = 1.0f / static_cast<float>(n);
    return;
  }
  for (int j = 0; j < n; ++j) row[j] = cpu_math::FastExp(row[j] - max_v);
  double sum = 0.0;
  for (int j = 0; j < n; ++j) sum += row[j];
  const float inv = static_cast<float>(1.0 / sum);
  for (int j = 0; j < n; ++j) row[j] *= inv;
}

void LayerNormRowScalar(const float* x, const float* residual, const float* gamma, const float* beta, float* y,
                        int n, float eps) {
  double sum = 0.0;
  for (int j = 0; j < n; ++j) {
    const float v = x[j] + (residual != nullptr ? residual[j] : 0.0f);
    y[j] = v;
    sum += v;
  }
  const double mean = sum / n;
  double var = 0.0;
  for (int j = 0; j < n; ++j) var += (y[j] - mean) * (y[j] - mean);
  const float inv_std = static_cast<float>(1.0 / std::sqrt(var / n + eps));
  const float mean_f = static_cast<float>(mean);
  for (int j = 0; j < n; ++j) y[j] = (y[j] - mean_f) * inv_std * gamma[j] + beta[j];
}

// ---- AVX2 + FMA --------------------------------------------------------------------------------
#if DFW_HAVE_AVX2_PATH

DFW_AVX2 inline __m256 Exp8(__m256 x) {
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.3f)), _mm256_set1_ps(88.3f));
  const __m256 shift = _mm256_set1_ps(12582912.0f);
  const __m256 t = _mm256_fmadd_ps(x, _mm256_set1_ps(1.44269504088896341f), shift);
  const __m256 n = _mm256_sub_ps(t, shift);
  const __m256i ni = _mm256_sub_epi32(_mm256_castps_si256(t), _mm256_castps_si256(shift));
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693145751953125f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(1.428606765330187e-06f), r);
  __m256 p = _mm256_set1_ps(1.f / 5040.f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.f / 720.f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.f / 120.f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.f / 24.f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.f / 6.f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.f));
  const __m256 scale = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(ni, _mm256_set1_epi32(127)), 23));
  return _mm256_mul_ps(p, scale);
}

// erf's rational approximation on [-4, 4] (the AVX2 and AVX-512 passes share it, term by term):
// x · P(x²) / Q(x²), coefficients from the highest power down.
constexpr float kErfNum[] = {-2.72614225801306e-10f, 2.77068142495902e-08f, -2.10102402082508e-06f,
                             -5.69250639462346e-05f, -7.34990630326855e-04f, -2.95459980854025e-03f,
                             -1.60960333262415e-02f};
constexpr float kErfDen[] = {-1.45660718464996e-05f, -2.13374055278905e-04f, -1.68282697438203e-03f,
                             -7.37332916720468e-03f, -1.42647390514189e-02f};

DFW_AVX2 inline __m256 Erf8(__m256 x) {
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-4.f)), _mm256_set1_ps(4.f));
  const __m256 x2 = _mm256_mul_ps(x, x);
  __m256 p = _mm256_set1_ps(kErfNum[0]), q = _mm256_set1_ps(kErfDen[0]);
  for (std::size_t i = 1; i < std::size(kErfNum); ++i) p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(kErfNum[i]));
  for (std::size_t i = 1; i < std::size(kErfDen); ++i) q = _mm256_fmadd_ps(q, x2, _mm256_set1_ps(kErfDen[i]));
  return _mm256_div_ps(_mm256_mul_ps(x, p), q);
}

DFW_AVX2 inline float HorizontalMax(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
  return _mm_cvtss_f32(m);
}

DFW_AVX2 inline double HorizontalSum(__m256d v) {
  __m128d s = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
  s = _mm_add_sd(s, _mm_unpackhi_pd(s, s));
  return _mm_cvtsd_f64(s);
}

// Adds the 8 floats of v to a pair of double accumulators.
DFW_AVX2 inline void AccumulateDouble(__m256 v, __m256d& lo, __m256d& hi) {
  lo = _mm256_add_pd(lo, _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
  hi = _mm256_add_pd(hi, _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
}

template <Activation kAct>
DFW_AVX2 inline __m256 Act8(__m256 v) {
  if constexpr (kAct == Activation::kRelu) return _mm256_max_ps(v, _mm256_setzero_ps());
  if constexpr (kAct == Activation::kGelu) {
    const __m256 e = Erf8(_mm256_mul_ps(v, _mm256_set1_ps(0.70710678118654752f)));
    return _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.5f), v), _mm256_add_ps(_mm256_set1_ps(1.f), e));
  }
  return v;
}

template <Activation kAct>
DFW_AVX2 void BiasActRowsAvx2(float* x, int m, int n, const float* bias) {
  for (int i = 0; i < m; ++i) {
    float* row = x + static_cast<std::size_t>(i) * n;
    int j = 0;
    for (; j + 8 <= n; j += 8) {
      __m256 v = _mm256_loadu_ps(row + j);
      if (bias != nullptr) v = _mm256_add_ps(v, _mm256_loadu_ps(bias + j));
      _mm256_storeu_ps(row + j, Act8<kAct>(v));
    }
    for (; j < n; ++j) row[j] = Apply(kAct, bias != nullptr ? row[j] + bias[j] : row[j]);
  }
}

DFW_AVX2 void SoftmaxRowAvx2(float* row, int n, float scale, const float* mask) {
  const __m256 vscale = _mm256_set1_ps(scale);
  __m256 vmax = _mm256_set1_ps(-INFINITY);
  int j = 0;
  for (; j + 8 <= n; j += 8) {
    __m256 v = _mm256_mul_ps(_mm256_loadu_ps(row + j), vscale);
    if (mask != nullptr) v = _mm256_add_ps(v, _mm256_loadu_ps(mask + j));
    _mm256_storeu_ps(row + j, v);
    vmax = _mm256_max_ps(vmax, v);
  }
  float max_v = HorizontalMax(vmax);
  for (; j < n; ++j) {
    row[j] = row[j] * scale + (mask != nullptr ? mask[j] : 0.0f);
    max_v = std::max(max_v, row[j]);
  }
  if (max_v == -INFINITY) {
    for (j = 0; j < n; ++j) row[j] = 1.0f / static_cast<float>(n);
    return;
  }
  const __m256 vm = _mm256_set1_ps(max_v);
  __m256d lo = _mm256_setzero_pd(), hi = _mm256_setzero_pd();
  for (j = 0; j + 8 <= n; j += 8) {
    const __m256 e = Exp8(_mm256_sub_ps(_mm256_loadu_ps(row + j), vm));
    _mm256_storeu_ps(row + j, e);
    AccumulateDouble(e, lo, hi);
  }
  double sum = HorizontalSum(_mm256_add_pd(lo, hi));
  for (; j < n; ++j) sum += row[j] = cpu_math::FastExp(row[j] - max_v);
  const float inv = static_cast<float>(1.0 / sum);
  const __m256 vinv = _mm256_set1_ps(inv);
  for (j = 0; j + 8 <= n; j += 8) _mm256_storeu_ps(row + j, _mm256_mul_ps(_mm256_loadu_ps(row + j), vinv));
  for (; j < n; ++j) row[j] *= inv;
}

DFW_AVX2 void LayerNormRowAvx2(const float* x, const float* residual, const float* gamma, const float* beta, float* y,
                               int n, float eps) {
  __m256d lo = _mm256_setzero_pd(), hi = _mm256_setzero_pd();
  int j = 0;
  for (; j + 8 <= n; j += 8) {
    __m256 v = _mm256_loadu_ps(x + j);
    if (residual != nullptr) v = _mm256_add_ps(v, _mm256_loadu_ps(residual + j));
    _mm256_storeu_ps(y + j, v);
    AccumulateDouble(v, lo, hi);
  }
  double sum = HorizontalSum(_mm256_add_pd(lo, hi));
  for (; j < n; ++j) {
    const float v = x[j] + (residual != nullptr ? residual[j] : 0.0f);
    y[j] = v;
    sum += v;
  }
  const double mean = sum / n;
  const __m256d vmean = _mm256_set1_pd(mean);
  lo = _mm256_setzero_pd();
  hi = _mm256_setzero_pd();
  for (j = 0; j + 8 <= n; j += 8) {
    const __m256 v = _mm256_loadu_ps(y + j);
    const __m256d dl = _mm256_sub_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(v)), vmean);
    const __m256d dh = _mm256_sub_pd(_mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)), vmean);
    lo = _mm256_fmadd_pd(dl, dl, lo);
    hi = _mm256_fmadd_pd(dh, dh, hi);
  }
  double var = HorizontalSum(_mm256_add_pd(lo, hi));
  for (; j < n; ++j) var += (y[j] - mean) * (y[j] - mean);
  const float inv_std = static_cast<float>(1.0 / std::sqrt(var / n + eps));
  const float mean_f = static_cast<float>(mean);
  const __m256 vmf = _mm256_set1_ps(mean_f), vinv = _mm256_set1_ps(inv_std);
  for (j = 0; j + 8 <= n; j += 8) {
    const __m256 d = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(y + j), vmf), vinv);
    _mm256_storeu_ps(y + j, _mm256_fmadd_ps(d, _mm256_loadu_ps(gamma + j), _mm256_loadu_ps(beta + j)));
  }
  for (; j < n; ++j) y[j] = (y[j] - mean_f) * inv_std * gamma[j] + beta[j];
}

// ---- AVX-512 (F) -------------------------------------------------------------------------------
// Softmax and LayerNorm 16 lanes wide, tails under a lane mask; the same polynomial exp and the
// same double accumulators as the AVX2 path (so the two agree to float rounding). GCC 12 reports
// the unmasked AVX-512 intrinsics' unset pass-through operand (_mm512_undefined_*) as
// (maybe-)uninitialized once they are inlined; that operand is never read, so the warnings are off
// for this section.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#define DFW_AVX512 __attribute__((target("avx512f,avx2,fma")))

DFW_AVX512 inline __m512 Exp16(__m512 x) {
  x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-87.3f)), _mm512_set1_ps(88.3f));
  const __m512 shift = _mm512_set1_ps(12582912.0f);
  const __m512 t = _mm512_fmadd_ps(x, _mm512_set1_ps(1.44269504088896341f), shift);
  const __m512 n = _mm512_sub_ps(t, shift);
  const __m512i ni = _mm512_sub_epi32(_mm512_castps_si512(t), _mm512_castps_si512(shift));
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145751953125f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.428606765330187e-06f), r);
  __m512 p = _mm512_set1_ps(1.f / 5040.f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f / 720.f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f / 120.f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f / 24.f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f / 6.f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f));
  const __m512 scale = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(ni, _mm512_set1_epi32(127)), 23));
  return _mm512_mul_ps(p, scale);
}

// Adds the 16 floats of v (lanes outside `keep` as 0) to a pair of double accumulators.
DFW_AVX512 inline void AccumulateDouble16(__m512 v, __m512d& lo, __m512d& hi) {
  lo = _mm512_add_pd(lo, _mm512_cvtps_pd(_mm512_castps512_ps256(v)));
  hi = _mm512_add_pd(hi, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1))));
}

DFW_AVX512 inline __mmask16 TailMask(int left) {
  return left >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << left) - 1u);
}

// Erf8 and Act8 of the AVX2 path sixteen lanes at a time: the same operations per lane, so the
// two paths give the same bits.
DFW_AVX512 inline __m512 Erf16(__m512 x) {
  x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-4.f)), _mm512_set1_ps(4.f));
  const __m512 x2 = _mm512_mul_ps(x, x);
  __m512 p = _mm512_set1_ps(kErfNum[0]), q = _mm512_set1_ps(kErfDen[0]);
  for (std::size_t i = 1; i < std::size(kErfNum); ++i) p = _mm512_fmadd_ps(p, x2, _mm512_set1_ps(kErfNum[i]));
  for (std::size_t i = 1; i < std::size(kErfDen); ++i) q = _mm512_fmadd_ps(q, x2, _mm512_set1_ps(kErfDen[i]));
  return _mm512_div_ps(_mm512_mul_ps(x, p), q);
}

template <Activation kAct>
DFW_AVX512 inline __m512 Act16(__m512 v) {
  if constexpr (kAct == Activation::kRelu) return _mm512_max_ps(v, _mm512_setzero_ps());
  if constexpr (kAct == Activation::kGelu) {
    const __m512 e = Erf16(_mm512_mul_ps(v, _mm512_set1_ps(0.70710678118654752f)));
    return _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(0.5f), v), _mm512_add_ps(_mm512_set1_ps(1.f), e));
  }
  return v;
}

template <Activation kAct>
DFW_AVX512 void BiasActRowsAvx512(float* x, int m, int n, const float* bias) {
  for (int i = 0; i < m; ++i) {
    float* row = x + static_cast<std::size_t>(i) * n;
    for (int j = 0; j < n; j += 16) {
      const __mmask16 k = TailMask(n - j);
      __m512 v = _mm512_maskz_loadu_ps(k, row + j);
      if (bias != nullptr) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(k, bias + j));
      _mm512_mask_storeu_ps(row + j, k, Act16<kAct>(v));
    }
  }
}

DFW_AVX512 void SoftmaxRowAvx512(float* row, int n, float scale, const float* mask) {
  const __m512 vscale = _mm512_set1_ps(scale);
  __m512 vmax = _mm512_set1_ps(-INFINITY);
  for (int j = 0; j < n; j += 16) {
    const __mmask16 k = TailMask(n - j);
    __m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(k, row + j), vscale);
    if (mask != nullptr) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(k, mask + j));
    _mm512_mask_storeu_ps(row + j, k, v);
    vmax = _mm512_mask_max_ps(vmax, k, vmax, v);
  }
  const float max_v = _mm512_reduce_max_ps(vmax);
  if (max_v == -INFINITY) {
    for (int j = 0; j < n; ++j) row[j] = 1.0f / static_cast<float>(n);
    return;
  }
  const __m512 vm = _mm512_set1_ps(max_v);
  __m512d lo = _mm512_setzero_pd(), hi = _mm512_setzero_pd();
  for (int j = 0; j < n; j += 16) {
    const __mmask16 k = TailMask(n - j);
    const __m512 e = _mm512_maskz_mov_ps(k, Exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, row + j), vm)));
    _mm512_mask_storeu_ps(row + j, k, e);
    AccumulateDouble16(e, lo, hi);
  }
  const double sum = _mm512_reduce_add_pd(_mm512_add_pd(lo, hi));
  const __m512 vinv = _mm512_set1_ps(static_cast<float>(1.0 / sum));
  for (int j = 0; j < n; j += 16) {
    const __mmask16 k = TailMask(n - j);
    _mm512_mask_storeu_ps(row + j, k, _mm512_mul_ps(_mm512_maskz_loadu_ps(k, row + j), vinv));
  }
}

DFW_AVX512 void LayerNormRowAvx512(const float* x, const float* residual, const float* gamma, const float* beta,
                                   float* y, int n, float eps) {
  __m512d lo = _mm512_setzero_pd(), hi = _mm512_setzero_pd();
  for (int j = 0; j < n; j += 16) {
    const __mmask16 k = TailMask(n - j);
    __m512 v = _mm512_maskz_loadu_ps(k, x + j);
    if (residual != nullptr) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(k, residual + j));
    _mm512_mask_storeu_ps(y + j, k, v);
    AccumulateDouble16(v, lo, hi);
  }
  const double mean = _mm512_reduce_add_pd(_mm512_add_pd(lo, hi)) / n;
  const __m512d vmean = _mm512_set1_pd(mean);
  lo = _mm512_setzero_pd();
  hi = _mm512_setzero_pd();
  for (int j = 0; j < n; j += 16) {
    const __mmask16 k = TailMask(n - j);
    const __m512 v = _mm512_maskz_loadu_ps(k, y + j);
    // Masked-off lanes would add mean² each: zero their differences.
    const __m512d dl = _mm512_maskz_sub_pd(static_cast<__mmask8>(k & 0xff), _mm512_cvtps_pd(_mm512_castps512_ps256(v)), vmean);
    const __m512d dh = _mm512_maskz_sub_pd(static_cast<__mmask8>(k >> 8),
        _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1))), vmean);
    lo = _mm512_fmadd_pd(dl, dl, lo);
    hi = _mm512_fmadd_pd(dh, dh, hi);
  }
  const double var = _mm512_reduce_add_pd(_mm512_add_pd(lo, hi));
  const __m512 vmf = _mm512_set1_ps(static_cast<float>(mean));
  const __m512 vinv = _mm512_set1_ps(static_cast<float>(1.0 / std::sqrt(var / n + eps)));
  for (int j = 0; j < n; j += 16) {
    const __mmask16 k = TailMask(n - j);
    const __m512 d = _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, y + j), vmf), vinv);
    _mm512_mask_storeu_ps(y + j, k, _mm512_fmadd_ps(d, _mm512_maskz_loadu_ps(k, gamma + j), _mm512_maskz_loadu_ps(k, beta + j)));
  }
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#endif  // DFW_HAVE_AVX2_PATH

Isa DetectIsa() {
  const char* forced = std::getenv("DFW_CPU_KERNELS");
  if (forced != nullptr && std::strcmp(forced, "scalar") == 0) return Isa::kScalar;
#if DFW_HAVE_AVX2_PATH
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    // (The OS's AVX-512 state is part of what the compiler's check reads: cpuid and XGETBV.)
    const bool avx2_forced = forced != nullptr && std::strcmp(forced, "avx2") == 0;
    if (!avx2_forced && __builtin_cpu_supports("avx512f")) return Isa::kAvx512;
    return Isa::kAvx2;
  }
#endif
  return Isa::kScalar;
}

// A wide path requested where it was not compiled or the CPU lacks it: the next one down.
bool UseAvx2(Isa isa) { return isa != Isa::kScalar && BestIsa() != Isa::kScalar; }
bool UseAvx512(Isa isa) { return isa == Isa::kAvx512 && BestIsa() == Isa::kAvx512; }

}  // namespace

Isa BestIsa() {
  static const Isa best = DetectIsa();
  return best;
}

const char* IsaName(Isa isa) {
  switch (isa) {
    case Isa::kAvx512: return "avx512";
    case Isa::kAvx2: return "avx2+fma";
    case Isa::kScalar: break;
  }
  return "scalar";
}

void BiasActivation(Isa isa, float* x, int m, int n, const float* bias, Activation act) {
#if DFW_HAVE_AVX2_PATH
  if (UseAvx512(isa)) {
    switch (act) {
      case Activation::kNone: return BiasActRowsAvx512<Activation::kNone>(x, m, n, bias);
      case Activation::kRelu: return BiasActRowsAvx512<Activation::kRelu>(x, m, n, bias);
      case Activation::kGelu: return BiasActRowsAvx512<Activation::kGelu>(x, m, n, bias);
      default: break;  // tanh-based activations: the scalar path (libm tanh/exp)
    }
  }
  if (UseAvx2(isa)) {
    switch (act) {
      case Activation::kNone: return BiasActRowsAvx2<Activation::kNone>(x, m, n, bias);
      case Activation::kRelu: return BiasActRowsAvx2<Activation::kRelu>(x, m, n, bias);
      case Activation::kGelu: return BiasActRowsAvx2<Activation::kGelu>(x, m, n, bias);
      default: break;  // tanh-based activations: the scalar path (libm tanh/exp)
    }
  }
#else
  (void)isa;
#endif
  BiasActivationScalar(x, m, n, bias, act);
}

void SoftmaxRows(Isa isa, float* x, std::size_t rows, int n, float scale, const float* mask) {
  if (n <= 0) return;
  // Masked and far-off keys' probabilities fall below FLT_MIN at the final scaling: flushed to 0
  // instead of a microcode assist per vector (measured: 54% of the softmax's time at that store).
  const cpu_math::FlushDenormalsScope ftz;
#if DFW_HAVE_AVX2_PATH
  if (UseAvx512(isa)) {
    for (std::size_t r = 0; r < rows; ++r) SoftmaxRowAvx512(x + r * static_cast<std::size_t>(n), n, scale, mask);
    return;
  }
  if (UseAvx2(isa)) {
    for (std::size_t r = 0; r < rows; ++r) SoftmaxRowAvx2(x + r * static_cast<std::size_t>(n), n, scale, mask);
    return;
  }
#else
  (void)isa;
#endif
  for (std::size_t r = 0; r < rows; ++r) SoftmaxRowScalar(x + r * static_cast<std::size_t>(n), n, scale, mask);
}

void LayerNormRows(Isa isa, const float* x, const float* residual, const float* gamma, const float* beta, float* y,
                   int m, int n, float eps) {
  if (n <= 0) return;
#if DFW_HAVE_AVX2_PATH
  auto* row_fn = UseAvx512(isa) ? &LayerNormRowAvx512 : UseAvx2(isa) ? &LayerNormRowAvx2 : &LayerNormRowScalar;
#else
  (void)isa;
  auto* row_fn = &LayerNormRowScalar;
#endif
  for (int i = 0; i < m; ++i) {
    const std::size_t off = static_cast<std::size_t>(i) * n;
    row_fn(x + off, residual != nullptr ? residual + off : nullptr, gamma, beta, y + off, n, eps);
  }
}

}  // namespace dfw::cpu_kernels
