// The CPU backend's Linear layers in bfloat16 and int8 (dnnl_lowp.h) against its float32 Linear,
// the passes around them (lowp_kernels.h: AVX2 against scalar), and the instruction-set rules that
// refuse a dtype (cpu_isa.h). A path this CPU cannot run skips, naming what it lacks.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "backend/cpu/dnnl_gemm.h"
#include "backend/cpu/dnnl_lowp.h"
#include "backend/cpu/kernels.h"
#include "backend/cpu/lowp_kernels.h"
#include "dfw/backend/cpu_isa.h"
#include "dfw/backend/registry.h"

namespace dfw {
namespace cpu_lowp_test {

std::vector<float> Random(std::size_t n, float scale, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// ||got - want|| / ||want||.
double RelativeError(const std::vector<float>& got, const std::vector<float>& want) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    num += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
    den += double(want[i]) * want[i];
  }
  return std::sqrt(num / den);
}

struct Shape {
  int m, n, k;
  Activation act;
  bool bias;
};

// Shapes with tails everywhere (m of 1, n not a multiple of 8, k not of 32), the encoder's own, and
// m above the 512 rows one primitive runs (two full chunks and a remainder).
const Shape kShapes[] = {{1, 16, 32, Activation::kNone, true},    {7, 45, 67, Activation::kGelu, true},
                         {300, 384, 384, Activation::kNone, true},  {64, 1536, 384, Activation::kGelu, true},
                         {33, 384, 1536, Activation::kNone, false}, {5, 10, 3, Activation::kRelu, true},
                         {1100, 96, 64, Activation::kGelu, true}};

void CheckAgainstFloat32(LinearDType dtype, double tolerance) {
  auto backend = MakeCpuBackend();
  if (Status s = backend->CheckLinearDType(dtype); !s.ok()) GTEST_SKIP() << s.ToString();
  for (const Shape& s : kShapes) {
    SCOPED_TRACE(std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k));
    const std::vector<float> x = Random(std::size_t(s.m) * s.k, 1.f, 1), w = Random(std::size_t(s.n) * s.k, 0.05f, 2);
    const std::vector<float> bias = Random(s.n, 0.1f, 3);
    const float* b = s.bias ? bias.data() : nullptr;
    std::vector<float> want(std::size_t(s.m) * s.n), got(want.size(), -1.f);
    ASSERT_TRUE(backend->Linear(x.data(), w.data(), b, want.data(), s.m, s.n, s.k, s.act).ok());
    auto prepared = backend->PrepareLinear(w.data(), s.n, s.k, dtype);
    ASSERT_TRUE(prepared.ok()) << prepared.status().ToString();
    EXPECT_EQ((*prepared)->dtype(), dtype);
    EXPECT_GT((*prepared)->bytes(), 0u);
    for (int round = 0; round < 2; ++round) {  // the second call reuses the cached primitive
      Status st = backend->Linear(x.data(), **prepared, b, got.data(), s.m, s.act);
      ASSERT_TRUE(st.ok()) << st.ToString();
      EXPECT_LE(RelativeError(got, want), tolerance);
    }
  }
}

TEST(CpuLowPrecision, BFloat16LinearMatchesFloat32Within1Percent) { CheckAgainstFloat32(LinearDType::kBFloat16, 1e-2); }

TEST(CpuLowPrecision, Int8LinearMatchesFloat32Within3Percent) { CheckAgainstFloat32(LinearDType::kInt8, 3e-2); }

// The CUDA backend's bfloat16 Linear (cublasGemmEx on the tensor cores) against its own float32
// Linear, on device buffers, every shape above; skipped without a GPU (scripts/gpu-check.sh step 3
// runs it where there is one).
TEST(CudaLowPrecision, BFloat16LinearMatchesFloat32Within1Percent) {
  auto cuda = CreateBackend("cuda");
  if (!cuda.ok()) GTEST_SKIP() << "no CUDA backend here: " << cuda.status().ToString();
  InferenceBackend& be = **cuda;
  if (Status s = be.CheckLinearDType(LinearDType::kBFloat16); !s.ok()) GTEST_SKIP() << s.ToString();
  EXPECT_EQ(be.CheckLinearDType(LinearDType::kInt8).code(), StatusCode::kUnimplemented);
  for (const Shape& s : kShapes) {
    SCOPED_TRACE(std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k));
    const std::vector<float> x = Random(std::size_t(s.m) * s.k, 1.f, 1), w = Random(std::size_t(s.n) * s.k, 0.05f, 2);
    const std::vector<float> bias = Random(s.n, 0.1f, 3);
    auto upload = [&](const std::vector<float>& v) { return be.UploadWeights(v.data(), v.size() * sizeof(float)); };
    auto dx = upload(x), dw = upload(w), db = upload(bias);
    ASSERT_TRUE(dx.ok() && dw.ok() && db.ok());
    auto dwant = be.Allocate(std::size_t(s.m) * s.n * sizeof(float)), dgot = be.Allocate(std::size_t(s.m) * s.n * sizeof(float));
    ASSERT_TRUE(dwant.ok() && dgot.ok());
    const float* b = s.bias ? static_cast<const float*>((*db)->data()) : nullptr;
    const auto* xp = static_cast<const float*>((*dx)->data());
    const auto* wp = static_cast<const float*>((*dw)->data());
    ASSERT_TRUE(be.Linear(xp, wp, b, static_cast<float*>((*dwant)->data()), s.m, s.n, s.k, s.act).ok());
    auto prepared = be.PrepareLinear(wp, s.n, s.k, LinearDType::kBFloat16);
    ASSERT_TRUE(prepared.ok()) << prepared.status().ToString();
    EXPECT_EQ((*prepared)->dtype(), LinearDType::kBFloat16);
    ASSERT_TRUE(be.Linear(xp, **prepared, b, static_cast<float*>((*dgot)->data()), s.m, s.act).ok());
    std::vector<float> want(std::size_t(s.m) * s.n), got(want.size());
    ASSERT_TRUE(be.CopyToHost(want.data(), (*dwant)->data(), want.size() * sizeof(float)).ok());
    ASSERT_TRUE(be.CopyToHost(got.data(), (*dgot)->data(), got.size() * sizeof(float)).ok());
    EXPECT_LE(RelativeError(got, want), 1e-2);
  }
}

TEST(CpuLowPrecision, Float32PreparedLinearIsThePlainLinear) {
  auto backend = MakeCpuBackend();
  const int m = 9, n = 20, k = 31;
  const std::vector<float> x = Random(m * k, 1.f, 4), w = Random(n * k, 0.1f, 5), bias = Random(n, 0.1f, 6);
  std::vector<float> want(m * n), got(m * n);
  ASSERT_TRUE(backend->Linear(x.data(), w.data(), bias.data(), want.data(), m, n, k, Activation::kTanh).ok());
  auto prepared = backend->PrepareLinear(w.data(), n, k, LinearDType::kFloat32);
  ASSERT_TRUE(prepared.ok()) << prepared.status().ToString();
  ASSERT_TRUE(backend->Linear(x.data(), **prepared, bias.data(), got.data(), m, Activation::kTanh).ok());
  EXPECT_EQ(got, want);
}

// AVX2, and AVX-512 (with the AVX512-BF16 conversion where the CPU has it), bit for bit.
TEST(CpuLowPrecision, WidePassesAgreeWithTheScalarReferenceExactly) {
  using cpu_kernels::Isa;
  if (cpu_kernels::BestIsa() == Isa::kScalar) GTEST_SKIP() << "this CPU has no AVX2 + FMA";
  for (Isa wide : {Isa::kAvx2, Isa::kAvx512}) {
    if (static_cast<int>(wide) > static_cast<int>(cpu_kernels::BestIsa())) continue;
    SCOPED_TRACE(cpu_kernels::IsaName(wide));
    const int m = 5, k = 77, n = 37;  // past two 16-lane blocks and four 8-lane ones, with tails
    std::vector<float> x = Random(m * k, 2.f, 7);
    x[3] = 0.f;
    for (int j = 0; j < k; ++j) x[2 * k + j] = 0.f;  // a row of zeros: scale 1, zero point 0
    std::vector<float> ties = x;  // bf16 rounding: ties to even (down, then up), the largest floats
    ties[5] = std::bit_cast<float>(0x3f808000u);
    ties[6] = std::bit_cast<float>(0x3f818000u);
    ties[7] = 3.0e38f;
    ties[8] = -3.0e38f;
    std::vector<uint16_t> t1(x.size()), t2(x.size());
    cpu_lowp::ToBf16(Isa::kScalar, ties.data(), t1.data(), ties.size());
    cpu_lowp::ToBf16(wide, ties.data(), t2.data(), ties.size());
    EXPECT_EQ(t1, t2);
    EXPECT_EQ(t1[5], 0x3f80);
    EXPECT_EQ(t1[6], 0x3f82);
    std::vector<uint16_t> b1(x.size()), b2(x.size());
    cpu_lowp::ToBf16(Isa::kScalar, x.data(), b1.data(), x.size());
    cpu_lowp::ToBf16(wide, x.data(), b2.data(), x.size());
    EXPECT_EQ(b1, b2);
    std::vector<uint8_t> q1(x.size()), q2(x.size());
    std::vector<float> s1(m), s2(m);
    std::vector<int32_t> z1(m), z2(m);
    for (int top : {127, 255}) {  // 7-bit activations (a reduced range), then 8-bit
      SCOPED_TRACE("top " + std::to_string(top));
      cpu_lowp::QuantizeRowsU8(Isa::kScalar, x.data(), m, k, q1.data(), s1.data(), z1.data(), top);
      cpu_lowp::QuantizeRowsU8(wide, x.data(), m, k, q2.data(), s2.data(), z2.data(), top);
      EXPECT_EQ(q1, q2);
      EXPECT_EQ(s1, s2);
      EXPECT_EQ(z1, z2);
      EXPECT_EQ(s1[2], 1.f);
      EXPECT_EQ(z1[2], 0);
      EXPECT_EQ(*std::max_element(q1.begin(), q1.end()), top);  // the rows' maxima reach the top
      // The quantised row reconstructs the row to within half a step.
      for (int j = 0; j < k; ++j) EXPECT_NEAR((q1[j] - z1[0]) * s1[0], x[j], 0.5f * s1[0] + 1e-6f) << j;
    }
    std::vector<int32_t> acc(m * n), col_sum(n);
    for (std::size_t i = 0; i < acc.size(); ++i) acc[i] = int32_t(i * 37 % 1001) - 500;
    for (int j = 0; j < n; ++j) col_sum[j] = j * 3 - 11;
    const std::vector<float> col_scale = Random(n, 0.01f, 8), bias = Random(n, 1.f, 9);
    std::vector<float> y1(m * n), y2(m * n);
    cpu_lowp::DequantizeRows(Isa::kScalar, acc.data(), m, n, s1.data(), z1.data(), col_scale.data(), col_sum.data(),
                             bias.data(), y1.data());
    cpu_lowp::DequantizeRows(wide, acc.data(), m, n, s1.data(), z1.data(), col_scale.data(), col_sum.data(),
                             bias.data(), y2.data());
    EXPECT_EQ(y1, y2);
  }
}

// A weight row's scale by QuantizeWeightRows' definition: max |w| / top, raised to the largest
// same-signed pair (w[2i], w[2i+1]) over pair_top where pair_top > 0; 1 for a row of zeros.
float WantWeightScale(const float* row, int k, float top, int pair_top) {
  float amax = 0.f, pair_max = 0.f;
  for (int p = 0; p < k; ++p) amax = std::max(amax, std::fabs(row[p]));
  for (int p = 0; p + 1 < k; p += 2) {
    if (row[p] * row[p + 1] > 0.f) pair_max = std::max(pair_max, std::fabs(row[p]) + std::fabs(row[p + 1]));
  }
  if (amax == 0.f) return 1.f;
  return pair_top > 0 ? std::max(amax / top, pair_max / static_cast<float>(pair_top)) : amax / top;
}

// The int8 weights made at load: the AVX-512 pass gives the scalar reference's bytes, scales and
// sums exactly (ties rounded to even, rows shorter than, equal to and past 16 lanes, a row of
// zeros), for 8-bit and 7-bit weights and for 8-bit weights with same-signed pairs bounded to 128
// steps; each weight within half a step of its original (a pair the bound corrects: one step).
TEST(CpuLowPrecision, WeightQuantisationIsExactOnEveryPath) {
  using cpu_kernels::Isa;
  for (int k : {1, 15, 16, 17, 77, 384}) {
    const int n = 9;
    std::vector<float> w = Random(static_cast<std::size_t>(n) * k, 0.05f, 11 + k);
    for (int p = 0; p < k; ++p) w[static_cast<std::size_t>(3) * k + p] = 0.f;  // a row of zeros
    // Row 5: max 127, so the scale is 1 and x.5 values are ties: -2.5 -> -2, 3.5 -> 4, -0.5 -> -0
    // (no same-signed pair past 128 steps: the pair bound leaves the scale at 1 too).
    if (k >= 4) {
      float* r = w.data() + static_cast<std::size_t>(5) * k;
      r[0] = 127.f, r[1] = -2.5f, r[2] = 3.5f, r[3] = -0.5f;
      for (int p = 4; p < k; ++p) r[p] = 0.25f;
    }
    // Row 7: one same-signed pair sets the pair-bounded scale (7.092451 / 128), and float rounding
    // puts both halves just past a tie (105.50001, 22.500004): rounded, 106 + 23 = 129 steps; the
    // bound takes the step back from the larger half (105 + 23).
    if (k >= 2) {
      float* r = w.data() + static_cast<std::size_t>(7) * k;
      r[0] = 5.845731f, r[1] = 1.24672f;
      for (int p = 2; p < k; ++p) r[p] = p % 2 == 0 ? 0.001f : -0.001f;
    }
    struct Mode {
      float top;
      int pair_top;
    };
    for (const Mode mode : {Mode{127.f, 0}, Mode{63.f, 0}, Mode{127.f, 128}}) {
      const float top = mode.top;
      SCOPED_TRACE("k " + std::to_string(k) + ", top " + std::to_string(top) + ", pair_top " +
                   std::to_string(mode.pair_top));
      std::vector<int8_t> q1(w.size()), q2(w.size());
      std::vector<float> s1(n), s2(n);
      std::vector<int32_t> z1(n), z2(n);
      cpu_lowp::QuantizeWeightRows(Isa::kScalar, w.data(), n, k, top, q1.data(), s1.data(), z1.data(), mode.pair_top);
      EXPECT_EQ(s1[3], 1.f);
      EXPECT_EQ(z1[3], 0);
      if (k >= 4 && top == 127.f) {
        EXPECT_EQ(s1[5], 1.f);
        EXPECT_EQ(q1[static_cast<std::size_t>(5) * k + 1], -2);
        EXPECT_EQ(q1[static_cast<std::size_t>(5) * k + 2], 4);
        EXPECT_EQ(q1[static_cast<std::size_t>(5) * k + 3], 0);
      }
      if (k >= 2 && mode.pair_top == 128) {
        EXPECT_EQ(s1[7], (5.845731f + 1.24672f) / 128.f);
        EXPECT_EQ(q1[static_cast<std::size_t>(7) * k], 105);
        EXPECT_EQ(q1[static_cast<std::size_t>(7) * k + 1], 23);
      }
      for (int j = 0; j < n; ++j) {
        const float* row = w.data() + static_cast<std::size_t>(j) * k;
        int32_t total = 0;
        EXPECT_EQ(s1[j], WantWeightScale(row, k, top, mode.pair_top)) << "row " << j;
        for (int p = 0; p < k; ++p) {
          const std::size_t i = static_cast<std::size_t>(j) * k + p;
          EXPECT_LE(std::abs(q1[i]), static_cast<int>(top));
          const bool corrected = mode.pair_top > 0 && j == 7 && p == 0;
          EXPECT_NEAR(q1[i] * s1[j], w[i], (corrected ? 1.f : 0.5f) * s1[j] * 1.0001f) << "row " << j << " col " << p;
          total += q1[i];
          if (mode.pair_top > 0 && p % 2 == 1 && q1[i - 1] * q1[i] > 0) {
            EXPECT_LE(std::abs(q1[i - 1] + q1[i]), mode.pair_top) << "row " << j << " pair at " << p - 1;
          }
        }
        EXPECT_EQ(z1[j], total);
      }
      if (cpu_kernels::BestIsa() != Isa::kAvx512) continue;  // no wide path to compare here
      cpu_lowp::QuantizeWeightRows(Isa::kAvx512, w.data(), n, k, top, q2.data(), s2.data(), z2.data(), mode.pair_top);
      EXPECT_EQ(q1, q2);
      EXPECT_EQ(s1, s2);
      EXPECT_EQ(z1, z2);
    }
  }
}

// Products at the extremes of the integer ranges (every activation at the top of its row's range,
// weight pairs at the bound) against the exact integer result. Where oneDNN's u8·s8 kernels sum
// pairs in int16 (no VNNI; ctest reruns this as onednn_avx2/... under ONEDNN_MAX_CPU_ISA=AVX2),
// 8-bit weights against 8-bit activations would saturate (2 x 255 x 127 > 32767): the reduced
// range must keep every product exact. The "bound" weights come in same-signed pairs of exactly
// 128 steps split unevenly (t, 128 - t), so neighbours across pairs sum to up to 254 steps: that
// case also fails if the kernels paired the features other than (2i, 2i+1), as the bound assumes.
TEST(CpuLowPrecision, Int8ProductsAtTheExtremesAreExact) {
  auto backend = MakeCpuBackend();
  if (Status s = backend->CheckLinearDType(LinearDType::kInt8); !s.ok()) GTEST_SKIP() << s.ToString();
  const bool reduced = DetectCpuIsa().reduce_range_int8();
  const int m = 3, n = 4, k = 1024;
  std::vector<float> x(std::size_t(m) * k);
  for (int i = 0; i < m; ++i) std::fill_n(x.begin() + i * k, k, 0.5f + i);  // u = top in every row
  // Constant weights: exact at the pair bound (64 + 64 steps), so they keep it.
  // Bound: same-signed pairs of t and 128 - t steps of 1/256, a random sign per pair: exact too.
  // Outlier weights: one same-signed pair at the row's max, the other 1,022 small and off-grid: the
  // bound would double their step (an error of about 0.07 of their norm beyond the 8-bit one), so
  // those keep 8 bits and the activations give up theirs.
  std::vector<float> flat(std::size_t(n) * k), bound(std::size_t(n) * k), outlier(std::size_t(n) * k);
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> small(-0.05f, 0.05f);
  std::uniform_int_distribution<int> split(1, 127);
  for (int j = 0; j < n; ++j) {
    const float sign = j % 2 == 0 ? 1.f : -1.f;
    for (int p = 0; p < k; ++p) {
      flat[std::size_t(j) * k + p] = sign * 0.25f;
      outlier[std::size_t(j) * k + p] = p < 2 ? sign : small(rng);
    }
    for (int p = 0; p < k; p += 2) {
      const int t = split(rng);
      const float pair_sign = rng() % 2 == 0 ? 1.f : -1.f;
      bound[std::size_t(j) * k + p] = pair_sign * static_cast<float>(t) / 256.f;
      bound[std::size_t(j) * k + p + 1] = pair_sign * static_cast<float>(128 - t) / 256.f;
    }
  }
  struct Case {
    const char* name;
    const std::vector<float>* w;
    int act_top;
  };
  for (const Case& c : {Case{"flat", &flat, 255}, Case{"bound", &bound, 255},
                        Case{"outlier", &outlier, reduced ? 127 : 255}}) {
    SCOPED_TRACE(c.name);
    auto prepared = backend->PrepareLinear(c.w->data(), n, k, LinearDType::kInt8);
    ASSERT_TRUE(prepared.ok()) << prepared.status().ToString();
    EXPECT_EQ(cpu_dnnl::Int8ActivationTop(**prepared), c.act_top);
    const bool pair_bound = reduced && c.act_top == 255;
    std::vector<float> got(std::size_t(m) * n);
    ASSERT_TRUE(backend->Linear(x.data(), **prepared, nullptr, got.data(), m, Activation::kNone).ok());
    for (int j = 0; j < n; ++j) {
      // The weights as the backend quantised them (per row, symmetric, round to nearest even;
      // pair-bounded where the range is reduced and the activations keep 8 bits).
      const float* row = c.w->data() + std::size_t(j) * k;
      const float scale = WantWeightScale(row, k, 127.f, pair_bound ? 128 : 0);
      double qsum = 0;
      for (int p = 0; p < k; ++p) qsum += std::clamp(std::nearbyint(row[p] * (1.f / scale)), -127.f, 127.f);
      for (int i = 0; i < m; ++i) {
        const double want = (0.5 + i) * scale * qsum;  // the activations are exact: x = top * (x / top)
        EXPECT_NEAR(got[std::size_t(i) * n + j], want, 1e-5 * std::fabs(want) + 1e-6) << "row " << i << " col " << j;
      }
    }
  }
}

TEST(CpuIsa, BFloat16IsRefusedOnACpuWithoutAvx512Bf16OrAmxNamingThem) {
  CpuIsa avx2_only;
  avx2_only.sse41 = avx2_only.avx2 = avx2_only.fma = true;
  avx2_only.onednn_isa = "avx2";
  CpuBackendOptions o;
  o.isa = avx2_only;
  auto backend = MakeCpuBackend(o);
  const Status s = backend->CheckLinearDType(LinearDType::kBFloat16);
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented);
  EXPECT_NE(s.message().find("avx512_bf16 or amx_bf16"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("this one has: avx2 fma; oneDNN avx2"), std::string::npos) << s.message();
  const std::vector<float> w(8 * 8, 0.5f);
  auto prepared = backend->PrepareLinear(w.data(), 8, 8, LinearDType::kBFloat16);
  EXPECT_EQ(prepared.status().code(), StatusCode::kUnimplemented);
  EXPECT_TRUE(backend->CheckLinearDType(LinearDType::kInt8).ok());
  EXPECT_TRUE(avx2_only.reduce_range_int8());
}

TEST(CpuIsa, Int8KeepsEightBitWeightsOnlyWhereOneDnnRunsAVnniKernel) {
  CpuIsa vnni;
  vnni.sse41 = vnni.avx2 = vnni.fma = vnni.avx512f = vnni.avx512_vnni = true;
  vnni.onednn_isa = "avx512_core_vnni";
  EXPECT_FALSE(vnni.reduce_range_int8());
  vnni.onednn_isa = "";  // unknown: the CPU's word
  EXPECT_FALSE(vnni.reduce_range_int8());
  vnni.onednn_isa = "avx512_core_amx";
  EXPECT_FALSE(vnni.reduce_range_int8());
  // ONEDNN_MAX_CPU_ISA=AVX2 (or AVX512_CORE) on a VNNI CPU: oneDNN's u8s8 kernels then sum pairs
  // in int16 (vpmaddubsw), which 8-bit weights can saturate.
  vnni.onednn_isa = "avx2";
  EXPECT_TRUE(vnni.reduce_range_int8());
  vnni.onednn_isa = "avx512_core";
  EXPECT_TRUE(vnni.reduce_range_int8());
  CpuIsa avx_vnni;
  avx_vnni.sse41 = avx_vnni.avx2 = avx_vnni.fma = avx_vnni.avx_vnni = true;
  avx_vnni.onednn_isa = "avx2_vnni";
  EXPECT_FALSE(avx_vnni.reduce_range_int8());
}

TEST(CpuIsa, BFloat16NeedsOneDnnToDispatchToANativeBf16Isa) {
  CpuIsa capped;
  capped.sse41 = capped.avx2 = capped.avx512f = capped.avx512_bf16 = true;
  capped.onednn_isa = "sse41";  // ONEDNN_MAX_CPU_ISA=SSE41
  const Status s = CheckLinearDTypeOn(capped, LinearDType::kBFloat16);
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented);
  EXPECT_NE(s.message().find("ONEDNN_MAX_CPU_ISA"), std::string::npos) << s.message();
  capped.onednn_bf16 = true;
  EXPECT_TRUE(CheckLinearDTypeOn(capped, LinearDType::kBFloat16).ok());
}

TEST(CpuIsa, DetectionAgreesWithProcCpuinfo) {
  std::ifstream in("/proc/cpuinfo");
  std::string line, flags;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) == 0) {
      flags = " " + line.substr(line.find(':') + 1) + " ";
      break;
    }
  }
  if (flags.empty()) GTEST_SKIP() << "no flags line in /proc/cpuinfo";
  if (const char* mask = std::getenv("DFW_CPU_MASK"); mask != nullptr && *mask != '\0') {
    GTEST_SKIP() << "cpuid answers as a smaller CPU here (scripts/as-cpu.sh " << mask
                 << "); /proc/cpuinfo is the real one";
  }
  auto has = [&](const char* f) { return flags.find(" " + std::string(f) + " ") != std::string::npos; };
  const CpuIsa& isa = DetectCpuIsa();
  EXPECT_EQ(isa.avx2, has("avx2"));
  EXPECT_EQ(isa.avx512f, has("avx512f"));
  EXPECT_EQ(isa.avx512_vnni, has("avx512_vnni"));
  EXPECT_EQ(isa.avx512_bf16, has("avx512_bf16"));
  EXPECT_EQ(isa.amx_bf16, has("amx_bf16"));
  EXPECT_EQ(isa.amx_int8, has("amx_int8"));
  EXPECT_FALSE(isa.onednn_isa.empty());
}

// Under scripts/as-cpu.sh avx2 (ctest's as_cpu_avx2/backend row) the whole process sees an
// AVX2-only CPU: the detection, the row kernels' choice and oneDNN's ISA, so that row's int8 tests
// run the reduced range because the CPU has no VNNI, not because oneDNN was capped.
TEST(CpuIsa, AsAnAvx2CpuTheShimHidesEveryWiderFeatureFromEveryLayer) {
  const char* mask = std::getenv("DFW_CPU_MASK");
  if (mask == nullptr || std::string(mask) != "avx2") GTEST_SKIP() << "not run under scripts/as-cpu.sh avx2";
  const CpuIsa& isa = DetectCpuIsa();
  EXPECT_TRUE(isa.avx2 && isa.fma) << isa.Describe();
  EXPECT_FALSE(isa.avx512f || isa.avx512bw || isa.avx512_vnni || isa.avx_vnni || isa.avx512_bf16 || isa.amx_bf16 ||
               isa.amx_int8)
      << isa.Describe();
  EXPECT_EQ(isa.onednn_isa, "avx2");
  EXPECT_EQ(cpu_kernels::BestIsa(), cpu_kernels::Isa::kAvx2);
  EXPECT_TRUE(isa.reduce_range_int8());
  EXPECT_EQ(cpu_dnnl::LinearWeightsLayout(), cpu_dnnl::WeightsLayout::kKn);
}

}  // namespace cpu_lowp_test
}  // namespace dfw
