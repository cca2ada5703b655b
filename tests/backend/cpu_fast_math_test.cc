// The CPU backend's vectorised approximations (GELU's erf, the softmax exp) over their whole useful
// range against double-precision libm, and the fused Linear op against naive loops.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <random>
#include <string>
#include <vector>

#include "dfw/backend/registry.h"

namespace dfw {
namespace {

TEST(CpuFastMath, GeluMatchesExactErfFormulaAcrossItsRange) {
  auto backend = MakeCpuBackend();
  std::vector<float> x;
  for (float v = -12.f; v <= 12.f; v += 1.f / 64) x.push_back(v);
  for (float v : {-80.f, -4.f, -3.35f, -1e-6f, 0.f, 1e-6f, 3.35f, 4.f, 80.f, 1e6f}) x.push_back(v);
  std::vector<float> y = x;
  ASSERT_TRUE(backend->BiasActivation(y.data(), 1, static_cast<int>(y.size()), nullptr, Activation::kGelu).ok());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double v = x[i], want = 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
    EXPECT_NEAR(y[i], want, 1e-6 * std::max(1.0, std::fabs(want))) << "gelu(" << v << ")";
  }
}

// dfw::Gelu, the scalar the host-side layers apply: the exact form within the same bound, and the
// kernels' value within it too.
TEST(CpuFastMath, HostGeluMatchesExactErfFormulaAndTheKernels) {
  auto backend = MakeCpuBackend();
  std::vector<float> x;
  for (float v = -12.f; v <= 12.f; v += 1.f / 64) x.push_back(v);
  for (float v : {-80.f, -4.f, -3.35f, -1e-6f, 0.f, 1e-6f, 3.35f, 4.f, 80.f, 1e6f}) x.push_back(v);
  std::vector<float> y = x;
  ASSERT_TRUE(backend->BiasActivation(y.data(), 1, static_cast<int>(y.size()), nullptr, Activation::kGelu).ok());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double v = x[i], want = 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
    EXPECT_NEAR(Gelu(x[i]), want, 1e-6 * std::max(1.0, std::fabs(want))) << "gelu(" << v << ")";
    EXPECT_NEAR(Gelu(x[i]), y[i], 1e-6 * std::max(1.0f, std::fabs(y[i]))) << "gelu(" << v << ")";
  }
}

// dfw::GeluTanh, the one tanh GELU (host-side layers and the kernels): within float32 rounding of
// the double-precision formula, and exactly the kernels' value (the kernels call it).
TEST(CpuFastMath, GeluTanhMatchesTheFormulaAndIsTheKernelsValue) {
  auto backend = MakeCpuBackend();
  std::vector<float> x;
  for (float v = -12.f; v <= 12.f; v += 1.f / 64) x.push_back(v);
  for (float v : {-80.f, -4.f, -1e-6f, 0.f, 1e-6f, 4.f, 80.f, 1e6f}) x.push_back(v);
  std::vector<float> y = x;
  ASSERT_TRUE(backend->BiasActivation(y.data(), 1, static_cast<int>(y.size()), nullptr, Activation::kGeluTanh).ok());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double v = x[i], want = 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
    EXPECT_NEAR(GeluTanh(x[i]), want, 1e-6 * std::max(1.0, std::fabs(want))) << "gelu_tanh(" << v << ")";
    EXPECT_EQ(GeluTanh(x[i]), y[i]) << "gelu_tanh(" << v << ")";
  }
}

TEST(CpuFastMath, SoftmaxMatchesLibmExpOverWideLogits) {
  auto backend = MakeCpuBackend();
  // Rows of 37 logits spread over [-spread, spread]: exp arguments down to -2 * spread after the
  // max is subtracted, so the tail underflows exactly where float exp does.
  for (float spread : {0.5f, 5.f, 40.f, 90.f}) {
    const int n = 37;
    std::vector<float> x(n);
    for (int j = 0; j < n; ++j) x[j] = spread * (2.f * j / (n - 1) - 1.f) * (j % 2 ? 1.f : -0.7f);
    std::vector<double> want(n);
    double mx = -INFINITY, sum = 0;
    for (float v : x) mx = std::max(mx, double(v));
    for (int j = 0; j < n; ++j) sum += want[j] = std::exp(x[j] - mx);
    for (double& w : want) w /= sum;
    ASSERT_TRUE(backend->Softmax(x.data(), 1, n).ok());
    for (int j = 0; j < n; ++j) EXPECT_NEAR(x[j], want[j], 1e-6 * std::max(1e-3, want[j])) << "spread " << spread;
  }
}

struct LinearCase {
  std::string name;
  int m, n, k;
  bool bias;
  Activation act;
};

void PrintTo(const LinearCase& c, std::ostream* os) { *os << c.name; }

class CpuLinear : public ::testing::TestWithParam<LinearCase> {};

TEST_P(CpuLinear, MatchesNaiveLoops) {
  const LinearCase c = GetParam();
  auto backend = MakeCpuBackend();
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  auto fill = [&](std::size_t n) {
    std::vector<float> v(n);
    for (float& f : v) f = dist(rng);
    return v;
  };
  const auto x = fill(static_cast<std::size_t>(c.m) * c.k), w = fill(static_cast<std::size_t>(c.n) * c.k),
             b = fill(static_cast<std::size_t>(c.n));
  std::vector<float> y = fill(static_cast<std::size_t>(c.m) * c.n);  // stale contents must not leak in
  ASSERT_TRUE(backend->Linear(x.data(), w.data(), c.bias ? b.data() : nullptr, y.data(), c.m, c.n, c.k, c.act).ok());
  for (int i = 0; i < c.m; ++i) {
    for (int j = 0; j < c.n; ++j) {
      double acc = c.bias ? b[j] : 0.0;
      for (int p = 0; p < c.k; ++p) acc += double(x[i * c.k + p]) * w[j * c.k + p];
      const double want = c.act == Activation::kGelu ? 0.5 * acc * (1 + std::erf(acc / std::sqrt(2.0)))
                          : c.act == Activation::kRelu ? std::max(acc, 0.0) : acc;
      ASSERT_NEAR(y[i * c.n + j], want, 1e-4 * std::max(1.0, std::fabs(want))) << "row " << i << " col " << j;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(All, CpuLinear,
                         ::testing::Values(LinearCase{"bias_none", 7, 13, 5, true, Activation::kNone},
                                           LinearCase{"no_bias_none", 7, 13, 5, false, Activation::kNone},
                                           LinearCase{"bias_gelu", 33, 96, 48, true, Activation::kGelu},
                                           LinearCase{"no_bias_relu", 4, 9, 17, false, Activation::kRelu},
                                           LinearCase{"one_row", 1, 1, 1, true, Activation::kGelu},
                                           LinearCase{"k_zero_is_bias", 3, 4, 0, true, Activation::kNone}),
                         [](const auto& info) { return info.param.name; });

TEST(CpuLinearArgs, BadSizesAreInvalidArgument) {
  auto backend = MakeCpuBackend();
  std::vector<float> buf(16);
  const Status s = backend->Linear(buf.data(), buf.data(), nullptr, buf.data(), -1, 2, 2, Activation::kNone);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("negative size"), std::string::npos) << s.message();
  EXPECT_FALSE(backend->Linear(nullptr, buf.data(), nullptr, buf.data(), 2, 2, 2, Activation::kNone).ok());
}

}  // namespace
}  // namespace dfw
