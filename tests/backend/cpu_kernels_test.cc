// The CPU backend's row kernels: the AVX2 + FMA path against the scalar reference on the same
// inputs (lengths with and without a vector tail, masks, aliasing, extreme values). Skips the
// comparisons, saying so, on a CPU without AVX2/FMA.
#include "backend/cpu/kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

namespace dfw::cpu_kernels {
namespace {

std::vector<float> Random(std::size_t n, float lo, float hi, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

void ExpectClose(const std::vector<float>& got, const std::vector<float>& want, double rel, double abs,
                 const std::string& what) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], abs + rel * std::fabs(want[i])) << what << " at " << i;
  }
}

// Each wide path against the scalar reference: AVX2 + FMA, and AVX-512 (softmax, LayerNorm and the
// bias/activation pass have kernels of their own there; the rest runs the AVX2 code), where the CPU
// has it.
class CpuKernels : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    if (static_cast<int>(BestIsa()) < static_cast<int>(GetParam())) {
      GTEST_SKIP() << "this CPU has no " << IsaName(GetParam()) << " (or DFW_CPU_KERNELS caps it); best here: "
                   << IsaName(BestIsa());
    }
  }
};

TEST_P(CpuKernels, BiasActivationMatchesScalar) {
  for (int n : {1, 7, 8, 9, 384, 1539}) {
    for (Activation act : {Activation::kNone, Activation::kRelu, Activation::kGelu, Activation::kGeluTanh,
                           Activation::kTanh, Activation::kSigmoid}) {
      for (bool with_bias : {false, true}) {
        const int m = 5;
        const auto x = Random(static_cast<std::size_t>(m) * n, -6.f, 6.f, 3 + n);
        const auto bias = Random(static_cast<std::size_t>(n), -1.f, 1.f, 5 + n);
        auto scalar = x, wide = x;
        BiasActivation(Isa::kScalar, scalar.data(), m, n, with_bias ? bias.data() : nullptr, act);
        BiasActivation(GetParam(), wide.data(), m, n, with_bias ? bias.data() : nullptr, act);
        // Each path is within 1e-6 of the exact GELU (next test); apart, up to twice that.
        ExpectClose(wide, scalar, 2e-6, 2e-6,
                    std::string(ActivationName(act)) + " n=" + std::to_string(n) + (with_bias ? " bias" : ""));
      }
    }
  }
}

// The AVX-512 bias/activation pass does per lane what the AVX2 one does: the same bits wherever the
// AVX2 pass runs whole vectors (its last n % 8 columns go through the scalar formula instead).
TEST(CpuKernelsWide, BiasActivationOnAvx512GivesTheAvx2Bits) {
  if (BestIsa() != Isa::kAvx512) GTEST_SKIP() << "no AVX-512 here; best: " << IsaName(BestIsa());
  for (int n : {8, 16, 24, 384, 1536}) {
    for (Activation act : {Activation::kNone, Activation::kRelu, Activation::kGelu}) {
      const int m = 3;
      const auto x = Random(static_cast<std::size_t>(m) * n, -6.f, 6.f, 11 + n);
      const auto bias = Random(static_cast<std::size_t>(n), -1.f, 1.f, 13 + n);
      auto avx2 = x, avx512 = x;
      BiasActivation(Isa::kAvx2, avx2.data(), m, n, bias.data(), act);
      BiasActivation(Isa::kAvx512, avx512.data(), m, n, bias.data(), act);
      ASSERT_EQ(avx512, avx2) << ActivationName(act) << " n=" << n;
    }
  }
}

TEST_P(CpuKernels, GeluMatchesExactErfFormula) {
  std::vector<float> x;
  for (float v = -12.f; v <= 12.f; v += 1.f / 128) x.push_back(v);
  auto y = x;
  BiasActivation(GetParam(), y.data(), 1, static_cast<int>(y.size()), nullptr, Activation::kGelu);
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double v = x[i], want = 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
    EXPECT_NEAR(y[i], want, 1e-6 * std::max(1.0, std::fabs(want))) << "gelu(" << v << ")";
  }
}

TEST_P(CpuKernels, GeluSaturatesLikeScalarAtExtremes) {
  std::vector<float> x = {-1e30f, -80.f, -4.f, -1e-30f, 0.f, 1e-30f, 4.f, 80.f, 1e30f, 3.4e38f, -3.4e38f, 0.5f};
  auto scalar = x, wide = x;
  BiasActivation(Isa::kScalar, scalar.data(), 1, static_cast<int>(x.size()), nullptr, Activation::kGelu);
  BiasActivation(GetParam(), wide.data(), 1, static_cast<int>(x.size()), nullptr, Activation::kGelu);
  for (std::size_t i = 0; i < x.size(); ++i) {
    EXPECT_TRUE(std::isfinite(wide[i])) << x[i];
    EXPECT_NEAR(wide[i], scalar[i], 1e-6 * std::max(1.f, std::fabs(scalar[i]))) << x[i];
  }
}

TEST_P(CpuKernels, MaskedSoftmaxMatchesScalarAndSumsToOne) {
  for (int n : {1, 3, 8, 13, 64, 127, 512}) {
    const std::size_t rows = 6;
    const auto x = Random(rows * n, -20.f, 20.f, 11 + n);
    std::vector<float> mask(static_cast<std::size_t>(n), 0.f);
    for (int j = n / 2 + 1; j < n; ++j) mask[static_cast<std::size_t>(j)] = -1e30f;  // padded keys
    for (const float* m : {static_cast<const float*>(nullptr), static_cast<const float*>(mask.data())}) {
      auto scalar = x, wide = x;
      SoftmaxRows(Isa::kScalar, scalar.data(), rows, n, 0.125f, m);
      SoftmaxRows(GetParam(), wide.data(), rows, n, 0.125f, m);
      ExpectClose(wide, scalar, 1e-6, 1e-12, "softmax n=" + std::to_string(n) + (m ? " masked" : ""));
      for (std::size_t r = 0; r < rows; ++r) {
        double sum = 0;
        for (int j = 0; j < n; ++j) sum += wide[r * n + static_cast<std::size_t>(j)];
        EXPECT_NEAR(sum, 1.0, 1e-5) << "row " << r << " n=" << n;
      }
    }
  }
}

TEST_P(CpuKernels, FullyMaskedRowIsUniform) {
  const int n = 11;
  std::vector<float> x(n, 1.f), mask(n, -INFINITY);
  SoftmaxRows(GetParam(), x.data(), 1, n, 1.f, mask.data());
  for (float v : x) EXPECT_FLOAT_EQ(v, 1.f / n);
}

// A padded key's probability is exp(-87.3) / sum, below FLT_MIN: flushed to exactly 0 while the
// kernel runs (a denormal result costs a microcode assist per vector), and the caller's MXCSR is
// as it was afterwards, so later float code on the thread keeps IEEE denormals.
TEST_P(CpuKernels, SoftmaxFlushesPaddedKeysToZeroAndRestoresTheFloatMode) {
  const int n = 19;
  std::vector<float> x(n, 0.5f), mask(n, 0.f);
  for (int j = 10; j < n; ++j) mask[static_cast<std::size_t>(j)] = -INFINITY;
  volatile float tiny = 1e-39f;  // a denormal, through memory so the compiler cannot fold it
#if defined(__x86_64__)
  const unsigned before = _mm_getcsr();
#endif
  SoftmaxRows(GetParam(), x.data(), 1, n, 1.f, mask.data());
#if defined(__x86_64__)
  EXPECT_EQ(_mm_getcsr(), before);
#endif
  for (int j = 0; j < 10; ++j) EXPECT_FLOAT_EQ(x[static_cast<std::size_t>(j)], 0.1f);
  for (int j = 10; j < n; ++j) EXPECT_EQ(x[static_cast<std::size_t>(j)], 0.f) << "key " << j;
  EXPECT_GT(tiny * 0.5f, 0.f) << "denormals are flushed after the kernel returned";
}

TEST_P(CpuKernels, LayerNormMatchesScalarWithResidualInPlace) {
  for (int n : {1, 5, 8, 31, 384, 1000}) {
    const int m = 4;
    const std::size_t size = static_cast<std::size_t>(m) * n;
    // An offset mean far from zero checks the two-pass variance.
    const auto x = Random(size, 90.f, 110.f, 21 + n);
    const auto res = Random(size, -3.f, 3.f, 23 + n);
    const auto gamma = Random(static_cast<std::size_t>(n), 0.5f, 1.5f, 25 + n);
    const auto beta = Random(static_cast<std::size_t>(n), -0.5f, 0.5f, 27 + n);
    std::vector<float> scalar(size), wide = res;  // wide: y aliases the residual
    LayerNormRows(Isa::kScalar, x.data(), res.data(), gamma.data(), beta.data(), scalar.data(), m, n, 1e-12f);
    LayerNormRows(GetParam(), x.data(), wide.data(), gamma.data(), beta.data(), wide.data(), m, n, 1e-12f);
    ExpectClose(wide, scalar, 2e-6, 2e-6, "layernorm n=" + std::to_string(n));
  }
}

INSTANTIATE_TEST_SUITE_P(WidePaths, CpuKernels, ::testing::Values(Isa::kAvx2, Isa::kAvx512),
                         [](const ::testing::TestParamInfo<Isa>& info) {
                           return std::string(info.param == Isa::kAvx2 ? "avx2" : "avx512");
                         });

}  // namespace
}  // namespace dfw::cpu_kernels
