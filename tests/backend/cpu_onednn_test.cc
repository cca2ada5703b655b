// The CPU backend's oneDNN path: primitive caching, the OpenBLAS fallback and its one warning, the
// thread count handed to oneDNN's OpenMP team, the ISA limit and the description. Numerical parity
// with OpenBLAS is parity_test.cc's table (its "cpu_onednn" rows).
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <tuple>
#include <string>
#include <vector>

#include "backend/cpu/dnnl_gemm.h"
#include "backend/cpu/gemm_plan.h"
#include "dfw/backend/registry.h"

namespace dfw {
namespace cpu_onednn_test {

using cpu_dnnl::DnnlGemm;
using cpu_dnnl::DnnlGemmOptions;

std::unique_ptr<DnnlGemm> MakeDnnl(std::size_t max_primitives = 256, std::function<bool()> refuse = nullptr) {
  DnnlGemmOptions o;
  o.threads = [] { return 1; };
  o.max_primitives = max_primitives;
  o.refuse_create_for_testing = std::move(refuse);
  auto d = DnnlGemm::Make(std::move(o));
  EXPECT_TRUE(d.ok()) << d.status().ToString();
  return d.ok() ? std::move(*d) : nullptr;
}

// Runs y = x · wᵀ for an m x n x k Linear with small integer data (exact in float).
struct LinearCase {
  int m, n, k;
  std::vector<float> x, w, y;
  LinearCase(int m_, int n_, int k_)
      : m(m_), n(n_), k(k_), x(std::size_t(m) * k), w(std::size_t(n) * k), y(std::size_t(m) * n, -7.f) {
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 5) - 2;
    for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i % 3) - 1;
  }
  Result<bool> Run(DnnlGemm& d) { return d.Linear(x.data(), w.data(), nullptr, y.data(), m, n, k, Activation::kNone); }
  float Want(int i, int j) const {
    float s = 0;
    for (int p = 0; p < k; ++p) s += x[std::size_t(i) * k + p] * w[std::size_t(j) * k + p];
    return s;
  }
};

TEST(DnnlGemm, ARepeatedShapeReusesItsPrimitive) {
  auto d = MakeDnnl();
  ASSERT_NE(d, nullptr);
  LinearCase a(8, 16, 32), b(9, 16, 32);
  for (int i = 0; i < 3; ++i) {
    Result<bool> r = a.Run(*d);
    ASSERT_TRUE(r.ok() && *r) << r.status().ToString();
  }
  EXPECT_EQ(d->primitives_created(), 1);
  ASSERT_TRUE(*b.Run(*d));
  EXPECT_EQ(d->primitives_created(), 2);
  for (int i = 0; i < b.m; ++i) {
    for (int j = 0; j < b.n; ++j) ASSERT_EQ(b.y[std::size_t(i) * b.n + j], b.Want(i, j)) << i << "," << j;
  }
}

TEST(DnnlGemm, TheCacheDropsTheLeastRecentlyUsedShape) {
  auto d = MakeDnnl(/*max_primitives=*/2);
  ASSERT_NE(d, nullptr);
  LinearCase a(2, 4, 8), b(3, 4, 8), c(4, 4, 8);
  ASSERT_TRUE(*a.Run(*d));  // created: a
  ASSERT_TRUE(*b.Run(*d));  // b
  ASSERT_TRUE(*a.Run(*d));  // hit; b is now the oldest
  ASSERT_TRUE(*c.Run(*d));  // c, drops b
  EXPECT_EQ(d->primitives_created(), 3);
  ASSERT_TRUE(*a.Run(*d));  // still cached
  EXPECT_EQ(d->primitives_created(), 3);
  ASSERT_TRUE(*b.Run(*d));  // re-created
  EXPECT_EQ(d->primitives_created(), 4);
}

TEST(DnnlGemm, ARefusedPrimitiveReturnsFalseAndWritesNothing) {
  auto d = MakeDnnl(256, [] { return true; });
  ASSERT_NE(d, nullptr);
  LinearCase a(4, 4, 4);
  Result<bool> r = a.Run(*d);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(*r);
  EXPECT_TRUE(std::all_of(a.y.begin(), a.y.end(), [](float v) { return v == -7.f; }));
  EXPECT_FALSE(*a.Run(*d));  // remembered, not retried
  EXPECT_EQ(d->primitives_refused(), 1);
}

// Captures warnings logged while alive (spdlog's default logger is swapped and restored).
class WarningCapture {
 public:
  WarningCapture() : sink_(std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(64)), old_(spdlog::default_logger()) {
    spdlog::set_default_logger(std::make_shared<spdlog::logger>("capture", sink_));
  }
  ~WarningCapture() { spdlog::set_default_logger(old_); }
  std::vector<std::string> Lines() { return sink_->last_formatted(); }

 private:
  std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> sink_;
  std::shared_ptr<spdlog::logger> old_;
};

TEST(CpuBackend, ARefusedOneDnnPrimitiveFallsBackToOpenBlasWithOneWarning) {
  WarningCapture capture;
  CpuBackendOptions o;
  o.gemm = CpuGemmPath::kOneDnn;
  o.onednn_refuse_create_for_testing = [] { return true; };
  auto backend = MakeCpuBackend(std::move(o));
  auto reference = MakeCpuBackend(CpuGemmPath::kOpenBlas);
  for (const auto& [m, n, k] : {std::tuple{8, 16, 32}, std::tuple{64, 96, 80}}) {
    LinearCase c(m, n, k);
    std::vector<float> bias(std::size_t(n), 0.5f), got(c.y.size()), want(c.y.size());
    ASSERT_TRUE(backend->Linear(c.x.data(), c.w.data(), bias.data(), got.data(), m, n, k, Activation::kGelu).ok());
    ASSERT_TRUE(reference->Linear(c.x.data(), c.w.data(), bias.data(), want.data(), m, n, k, Activation::kGelu).ok());
    EXPECT_EQ(got, want);  // the OpenBLAS path itself, bit for bit
  }
  std::vector<std::string> lines = capture.Lines();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("oneDNN could not create a matmul for m=8 n=16 k=32"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("OpenBLAS runs this shape"), std::string::npos) << lines[0];
}

// oneDNN's OpenMP team is sized per calling thread; each call applies BlasThreads() first.
TEST(CpuBackend, OneDnnCallsUseTheBlasThreadCount) {
  using GetFn = int (*)();
  auto omp_get_max_threads = reinterpret_cast<GetFn>(::dlsym(RTLD_DEFAULT, "omp_get_max_threads"));
  ASSERT_NE(omp_get_max_threads, nullptr) << "libdnnl's OpenMP runtime is not loaded";
  const int before = BlasThreads();
  auto backend = MakeCpuBackend(CpuGemmPath::kOneDnn);
  LinearCase c(16, 16, 16);
  for (int threads : {1, 2, 1}) {
    ASSERT_TRUE(SetBlasThreads(threads).ok());
    ASSERT_TRUE(backend->Linear(c.x.data(), c.w.data(), nullptr, c.y.data(), c.m, c.n, c.k, Activation::kNone).ok());
    EXPECT_EQ(omp_get_max_threads(), threads);
  }
  ASSERT_TRUE(SetBlasThreads(before).ok());
}

TEST(CpuBackend, DescriptionNamesTheGemmPathAndOneDnnIsa) {
  const std::string isa = cpu_dnnl::EffectiveIsaName();
  const std::string onednn = MakeCpuBackend(CpuGemmPath::kOneDnn)->description();
  EXPECT_NE(onednn.find("GEMM path onednn, oneDNN 2."), std::string::npos) << onednn;
  EXPECT_NE(onednn.find("at " + isa), std::string::npos) << onednn;
  const std::string openblas = MakeCpuBackend(CpuGemmPath::kOpenBlas)->description();
  EXPECT_NE(openblas.find("GEMM path openblas"), std::string::npos) << openblas;
  EXPECT_EQ(openblas.find("oneDNN"), std::string::npos) << openblas;
  auto backend = MakeCpuBackend();
  const std::string before = backend->description();
  EXPECT_NE(before.find("GEMM path auto"), std::string::npos) << before;
  EXPECT_NE(before.find("[calibrated at the first product that is not small]"), std::string::npos)
      << "describing the backend must not calibrate it: " << before;
  // A product above the small class (64 x 64 x 64 = 2^18) calibrates; the description then has the plan.
  std::vector<float> a(64 * 64, 1.0f), b(64 * 64, 1.0f), c(64 * 64, 0.0f);
  ASSERT_TRUE(backend->Gemm(false, false, 64, 64, 64, 1.0f, a.data(), 64, b.data(), 64, 0.0f, c.data(), 64).ok());
  EXPECT_EQ(c[0], 64.0f);
  const std::string after = backend->description();
  EXPECT_NE(after.find("linear: "), std::string::npos) << after;
  EXPECT_NE(after.find("calibrated at "), std::string::npos) << after;
}

TEST(GemmPlan, EachClassFollowsItsOwnMeasurement) {
  using cpu_gemm::GemmClass;
  EXPECT_EQ(cpu_gemm::ClassOf(1, 384, 128, 1), GemmClass::kSmall);  // one sequence's pooling
  EXPECT_EQ(cpu_gemm::ClassOf(64, 64, 63, 1), GemmClass::kSmall);
  EXPECT_EQ(cpu_gemm::ClassOf(64, 64, 64, 1), GemmClass::kLarge);  // 2^18
  EXPECT_EQ(cpu_gemm::ClassOf(1, 384, 128, 32), GemmClass::kBatched);  // a batch's pooling: one launch
  EXPECT_EQ(cpu_gemm::ClassOf(16, 16, 32, 12 * 32), GemmClass::kBatched);  // attention at 16 tokens
  EXPECT_EQ(cpu_gemm::ClassOf(16, 16, 32, 12 * 2), GemmClass::kSmall);
  cpu_gemm::GemmPlan plan;
  plan.onednn_large = plan.onednn_batched = true;
  EXPECT_FALSE(plan.OnOneDnn(GemmClass::kSmall));
  EXPECT_TRUE(plan.OnOneDnn(GemmClass::kLarge));
  EXPECT_TRUE(plan.OnOneDnn(GemmClass::kBatched));
  plan.onednn_small = true;
  EXPECT_TRUE(plan.OnOneDnn(GemmClass::kSmall));
}

// Registered by tests/backend/CMakeLists.txt a second time with ONEDNN_MAX_CPU_ISA=SSE41 (next to
// the parity table): proves the limit took effect, so those parity rows ran SSE4.1 kernels.
TEST(CpuOneDnn, HonoursOneDnnMaxCpuIsaFromTheEnvironment) {
  const char* limit = std::getenv("ONEDNN_MAX_CPU_ISA");
  if (limit == nullptr || *limit == '\0') {
    GTEST_SKIP() << "ONEDNN_MAX_CPU_ISA not set (the ctest 'onednn_sse41/' rows set it)";
  }
  std::string want = limit;
  std::transform(want.begin(), want.end(), want.begin(), [](unsigned char ch) { return std::tolower(ch); });
  EXPECT_EQ(cpu_dnnl::EffectiveIsaName(), want);
  const std::string d = MakeCpuBackend(CpuGemmPath::kOneDnn)->description();
  EXPECT_NE(d.find("at " + want), std::string::npos) << d;
}

// float32 Linear weights in oneDNN's blocked layout: made once, the same products as nn.Linear's
// layout at every row count (1 to 513; the layout was made for 256 rows), bias and activation
// fused; a narrow head whose blocks would pad it (n = 2 -> 64 columns) gets no blocked copy.
TEST(DnnlGemm, BlockedWeightsGiveTheSameProductsAtEveryRowCount) {
  if (cpu_dnnl::LinearWeightsLayout() != cpu_dnnl::WeightsLayout::kBlocked) {
    GTEST_SKIP() << "oneDNN at " << cpu_dnnl::EffectiveIsaName() << " runs float32 weights in a plain layout";
  }
  auto d = MakeDnnl();
  ASSERT_NE(d, nullptr);
  auto narrow = d->BlockWeights(LinearCase(1, 2, 384).w.data(), 2, 384);
  ASSERT_TRUE(narrow.ok()) << narrow.status().ToString();
  EXPECT_EQ(*narrow, nullptr);
  for (auto [n, k] : {std::pair{384, 1536}, std::pair{1152, 384}, std::pair{192, 48}}) {
    LinearCase base(1, n, k);
    auto blocked = d->BlockWeights(base.w.data(), n, k);
    ASSERT_TRUE(blocked.ok()) << blocked.status().ToString();
    ASSERT_NE(*blocked, nullptr) << n << " x " << k;
    EXPECT_GE((*blocked)->bytes(), sizeof(float) * n * k);
    EXPECT_LE((*blocked)->bytes(), sizeof(float) * n * k * 9 / 8);
    std::vector<float> bias(n);
    for (int j = 0; j < n; ++j) bias[j] = 0.5f * static_cast<float>(j % 5) - 1.f;
    for (int m : {1, 5, 33, 170, 256, 513}) {
      SCOPED_TRACE("m " + std::to_string(m) + " n " + std::to_string(n) + " k " + std::to_string(k));
      LinearCase c(m, n, k);
      std::vector<float> plain(std::size_t(m) * n, -7.f), relu(std::size_t(m) * n, -7.f);
      Result<bool> r = d->Linear(c.x.data(), **blocked, bias.data(), plain.data(), m, Activation::kNone);
      ASSERT_TRUE(r.ok() && *r) << r.status().ToString();
      r = d->Linear(c.x.data(), **blocked, bias.data(), relu.data(), m, Activation::kRelu);
      ASSERT_TRUE(r.ok() && *r) << r.status().ToString();
      // Every row of the small products; of the larger ones every 7th and the last (the reference
      // is a plain loop, slow in the sanitizer build), every column.
      std::vector<int> rows;
      for (int i = 0; i < m; i += m <= 33 ? 1 : 7) rows.push_back(i);
      if (rows.back() != m - 1) rows.push_back(m - 1);
      for (int row : rows) {
        for (int j = 0; j < n; ++j) {
          const float want = c.Want(row, j) + bias[j];
          ASSERT_EQ(plain[std::size_t(row) * n + j], want) << "row " << row << " col " << j;
          ASSERT_EQ(relu[std::size_t(row) * n + j], std::max(want, 0.f)) << "row " << row << " col " << j;
        }
      }
    }
  }
  EXPECT_EQ(d->layout_misses(), 0);
  EXPECT_EQ(d->primitives_refused(), 0);
}

// float32 Linear layers prepared once: the backend keeps one copy in the layout oneDNN runs faster
// here (below AVX-512 [k x n]: ctest runs this under ONEDNN_MAX_CPU_ISA=SSE41 and =AVX2 too; on
// AVX-512 and up oneDNN's blocked layout), bytes() says so, and the products are nn.Linear's, bias
// and activation included, at shapes small and large. The copy is what runs: weights changed in
// place after preparing do not change the prepared products, and preparing them again makes a
// fresh copy, not the old one.
TEST(CpuOneDnn, PreparedFloat32LinearRunsItsCopyAndGivesTheSameProducts) {
  const cpu_dnnl::WeightsLayout layout = cpu_dnnl::LinearWeightsLayout();
  for (CpuGemmPath path : {CpuGemmPath::kOneDnn, CpuGemmPath::kAuto}) {
    auto backend = MakeCpuBackend(path);
    for (auto [m, n, k] : {std::tuple{37, 7, 13}, std::tuple{256, 384, 1536}, std::tuple{70, 1152, 384}}) {
      SCOPED_TRACE("m " + std::to_string(m) + " n " + std::to_string(n) + " k " + std::to_string(k));
      LinearCase c(m, n, k);
      std::vector<float> bias(n);
      for (int j = 0; j < n; ++j) bias[j] = 0.25f * static_cast<float>(j % 7) - 0.5f;
      auto prepared = backend->PrepareLinear(c.w.data(), n, k, LinearDType::kFloat32);
      ASSERT_TRUE(prepared.ok()) << prepared.status().ToString();
      const std::size_t plain = sizeof(float) * n * k, held = (*prepared)->bytes();
      // (7 x 13 is padded more than an eighth by oneDNN's blocks: no blocked copy.)
      const bool copied = layout == cpu_dnnl::WeightsLayout::kKn || (layout == cpu_dnnl::WeightsLayout::kBlocked && n > 7);
      if (path == CpuGemmPath::kOneDnn) {
        if (!copied) {
          EXPECT_EQ(held, 0u);
        } else if (layout == cpu_dnnl::WeightsLayout::kKn) {
          EXPECT_EQ(held, plain);
        } else {
          EXPECT_GE(held, plain);
        }
      }
      for (Activation act : {Activation::kNone, Activation::kGelu}) {
        std::vector<float> want(std::size_t(m) * n), got(std::size_t(m) * n, -7.f);
        ASSERT_TRUE(backend->Linear(c.x.data(), c.w.data(), bias.data(), want.data(), m, n, k, act).ok());
        ASSERT_TRUE(backend->Linear(c.x.data(), **prepared, bias.data(), got.data(), m, act).ok());
        for (std::size_t i = 0; i < got.size(); ++i) {
          ASSERT_NEAR(got[i], want[i], 1e-4f * std::max(1.f, std::fabs(want[i]))) << "element " << i;
        }
        if (act == Activation::kNone) {
          for (int i = 0; i < m; i += 11) {
            for (int j = 0; j < n; j += 5) {
              ASSERT_EQ(got[std::size_t(i) * n + j], c.Want(i, j) + bias[j]) << "row " << i << " col " << j;
            }
          }
        }
      }
      // The same weights again share the copy; weights changed in place are copied afresh, and
      // until then the prepared products stay those of the weights it was made from.
      auto again = backend->PrepareLinear(c.w.data(), n, k, LinearDType::kFloat32);
      ASSERT_TRUE(again.ok());
      for (float& v : c.w) v = -v;
      if (copied && path == CpuGemmPath::kOneDnn) {  // (kAuto may send a shape to OpenBLAS, which reads w)
        std::vector<float> stale(std::size_t(m) * n);
        ASSERT_TRUE(backend->Linear(c.x.data(), **again, nullptr, stale.data(), m, Activation::kNone).ok());
        for (int i = 0; i < m; i += 7) {
          for (int j = 0; j < n; j += 3) {  // the products of the weights before (exact: integer sums)
            ASSERT_EQ(stale[std::size_t(i) * n + j], -c.Want(i, j)) << "row " << i << " col " << j;
          }
        }
      }
      auto changed = backend->PrepareLinear(c.w.data(), n, k, LinearDType::kFloat32);
      ASSERT_TRUE(changed.ok());
      std::vector<float> got(std::size_t(m) * n);
      ASSERT_TRUE(backend->Linear(c.x.data(), **changed, nullptr, got.data(), m, Activation::kNone).ok());
      for (int i = 0; i < m; i += 11) {
        for (int j = 0; j < n; j += 5) {
          ASSERT_EQ(got[std::size_t(i) * n + j], c.Want(i, j)) << "row " << i << " col " << j;
        }
      }
    }
  }
}

// The float32 copies are bounded per backend (CpuBackendOptions::f32_copy_bytes): weights that
// would take the copies past it are used in place (no copy, the same products), a copy released
// with the last PreparedLinear holding it frees its share, and 0 makes no copies at all.
TEST(CpuOneDnn, Float32WeightsCopiesStayWithinTheBackendsBudget) {
  if (cpu_dnnl::LinearWeightsLayout() == cpu_dnnl::WeightsLayout::kNk) GTEST_SKIP() << "no copies on this ISA";
  const int n = 384, k = 384, m = 40;
  const std::size_t one = sizeof(float) * n * k;  // 576 KiB ([k x n]; oneDNN's blocks pad nothing here)
  CpuBackendOptions options;
  options.gemm = CpuGemmPath::kOneDnn;
  options.f32_copy_bytes = 2 * one + one / 2;  // room for two copies
  auto backend = MakeCpuBackend(options);
  std::vector<LinearCase> cases;
  for (int i = 0; i < 3; ++i) cases.emplace_back(m, n, k);
  for (int i = 0; i < 3; ++i) cases[i].w[std::size_t(i)] += 1.f;  // three distinct weights
  std::vector<std::unique_ptr<PreparedLinear>> prepared;
  for (LinearCase& c : cases) {
    auto p = backend->PrepareLinear(c.w.data(), n, k, LinearDType::kFloat32);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    prepared.push_back(std::move(*p));
  }
  EXPECT_GE(prepared[0]->bytes(), one);
  EXPECT_GE(prepared[1]->bytes(), one);
  EXPECT_EQ(prepared[2]->bytes(), 0u);  // past the budget: in place
  for (std::size_t i = 0; i < cases.size(); ++i) {
    LinearCase& c = cases[i];
    std::vector<float> got(std::size_t(m) * n);
    ASSERT_TRUE(backend->Linear(c.x.data(), *prepared[i], nullptr, got.data(), m, Activation::kNone).ok());
    for (int r = 0; r < m; r += 13) {
      for (int j = 0; j < n; j += 17) ASSERT_EQ(got[std::size_t(r) * n + j], c.Want(r, j)) << i << ": " << r << ", " << j;
    }
  }
  prepared[0].reset();  // its copy goes with it
  auto again = backend->PrepareLinear(cases[2].w.data(), n, k, LinearDType::kFloat32);
  ASSERT_TRUE(again.ok());
  EXPECT_GE((*again)->bytes(), one);
  options.f32_copy_bytes = 0;
  auto without = MakeCpuBackend(options);
  auto none = without->PrepareLinear(cases[0].w.data(), n, k, LinearDType::kFloat32);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ((*none)->bytes(), 0u);
}

}  // namespace cpu_onednn_test
}  // namespace dfw
