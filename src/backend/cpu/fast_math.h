// Branch-free float approximations of exp and erf for the CPU backend's element-wise loops:
// written so GCC vectorises loops that call them (no libm calls, no branches, no tables).
// Accuracy (measured on a 1e-4 grid against double libm: exp 9.9e-8 relative, erf 4.3e-7
// absolute; tests/backend/cpu_fast_math_test.cc checks GELU and softmax through the backend):
//   FastExp: relative error < 2e-7 on [-87, 88]; 1.2e-38 (exp(-87.3)) at and below -87.3, not 0
//            (harmless for softmax: next to the row maximum exp(0) = 1); clamped above 88.3.
//   FastErf: absolute error < 1e-6 over all floats (saturates to ±1 beyond |x| = 4).
#pragma once

#include <bit>
#include <cstdint>

#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

namespace dfw::cpu_math {

// Flush-to-zero and denormals-are-zero for the lifetime of the object, the caller's MXCSR restored
// after (so code that runs later on the thread, the user's Python included, keeps IEEE denormals).
// A float kernel that produces or reads a denormal takes a microcode assist on every such vector
// (~100+ cycles): softmax's masked and far-off keys give probabilities below FLT_MIN, and the
// products after it read them. What is flushed is below 1.2e-38. A no-op off x86-64.
class FlushDenormalsScope {
 public:
#if defined(__x86_64__)
  FlushDenormalsScope() : saved_(_mm_getcsr()) { _mm_setcsr(saved_ | 0x8040u); }
  ~FlushDenormalsScope() { _mm_setcsr(saved_); }
#else
  FlushDenormalsScope() = default;
#endif
  FlushDenormalsScope(const FlushDenormalsScope&) = delete;
  FlushDenormalsScope& operator=(const FlushDenormalsScope&) = delete;

 private:
#if defined(__x86_64__)
  unsigned saved_;
#endif
};

inline float FastExp(float x) {
  // exp(x) = 2^n · exp(r), n = round(x / ln 2), r = x - n ln 2 in [-ln2/2, ln2/2].
  x = x < -87.3f ? -87.3f : (x > 88.3f ? 88.3f : x);
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kShift = 12582912.0f;  // 1.5 · 2^23: adding it rounds to an integer in the low bits
  const float t = x * kLog2e + kShift;
  const float n = t - kShift;
  const int32_t ni = std::bit_cast<int32_t>(t) - std::bit_cast<int32_t>(kShift);
  const float r = (x - n * 0.693145751953125f) - n * 1.428606765330187e-06f;  // ln 2 split hi + lo
  // Taylor polynomial to degree 7 on |r| <= 0.347 (truncation < 1e-8 relative).
  float p = 1.f / 5040.f;
  p = p * r + 1.f / 720.f;
  p = p * r + 1.f / 120.f;
  p = p * r + 1.f / 24.f;
  p = p * r + 1.f / 6.f;
  p = p * r + 0.5f;
  p = p * r + 1.f;
  p = p * r + 1.f;
  // n in [-126, 127] after the clamp: a normal power of two built from the exponent bits.
  const float scale = std::bit_cast<float>((ni + 127) << 23);
  return p * scale;
}

inline float FastErf(float x) {
  // erf(x) ≈ x · P(x²) / Q(x²) on [-4, 4] (a minimax rational form, as used by Eigen and XLA);
  // |erf(4)| rounds to 1 in float, so clamping costs nothing.
  x = x < -4.f ? -4.f : (x > 4.f ? 4.f : x);
  const float x2 = x * x;
  float p = -2.72614225801306e-10f;
  p = p * x2 + 2.77068142495902e-08f;
  p = p * x2 + -2.10102402082508e-06f;
  p = p * x2 + -5.69250639462346e-05f;
  p = p * x2 + -7.34990630326855e-04f;
  p = p * x2 + -2.95459980854025e-03f;
  p = p * x2 + -1.60960333262415e-02f;
  float q = -1.45660718464996e-05f;
  q = q * x2 + -2.13374055278905e-04f;
  q = q * x2 + -1.68282697438203e-03f;
  q = q * x2 + -7.37332916720468e-03f;
  q = q * x2 + -1.42647390514189e-02f;
  return x * p / q;
}

}  // namespace dfw::cpu_math
