// The CPU backend against naive loops: every op, several shapes, every activation.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <ostream>
#include <random>
#include <thread>
#include <vector>

#include "dfw/backend/registry.h"

namespace dfw {

// Activation is dfw's enum, so its printer must sit in dfw itself (not the anonymous namespace) for
// gtest to find it by ADL; static keeps it private to this file.
static void PrintTo(Activation a, std::ostream* os) { *os << ActivationName(a); }

namespace {

std::vector<float> RandomVector(std::size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

void ExpectNear(const std::vector<float>& got, const std::vector<double>& want, double rel) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], rel * std::max(1.0, std::fabs(want[i]))) << "element " << i;
  }
}

double NaiveActivation(Activation act, double x) {
  switch (act) {
    case Activation::kNone: return x;
    case Activation::kRelu: return x > 0 ? x : 0;
    case Activation::kGelu: return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
    case Activation::kGeluTanh: return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
    case Activation::kTanh: return std::tanh(x);
    case Activation::kSigmoid: return 1 / (1 + std::exp(-x));
  }
  return NAN;
}

struct GemmCase {
  int m, n, k;
  bool ta, tb;
  float alpha, beta;
};

void PrintTo(const GemmCase& c, std::ostream* os) {
  *os << "m=" << c.m << " n=" << c.n << " k=" << c.k << ' ' << (c.ta ? 'T' : 'N') << (c.tb ? 'T' : 'N')
      << " alpha=" << c.alpha << " beta=" << c.beta;
}

class CpuGemm : public ::testing::TestWithParam<GemmCase> {};

TEST_P(CpuGemm, MatchesNaiveLoops) {
  const GemmCase c = GetParam();
  auto backend = MakeCpuBackend();
  // Stored shapes (row-major): A is m x k or k x m; B is k x n or n x k. Add 3 columns of padding
  // to each leading dimension so the stride handling is exercised.
  const int a_cols = c.ta ? c.m : c.k, a_rows = c.ta ? c.k : c.m;
  const int b_cols = c.tb ? c.k : c.n, b_rows = c.tb ? c.n : c.k;
  const int lda = a_cols + 3, ldb = b_cols + 3, ldc = c.n + 3;
  auto a = RandomVector(static_cast<std::size_t>(a_rows) * lda, 1);
  auto b = RandomVector(static_cast<std::size_t>(b_rows) * ldb, 2);
  auto out = RandomVector(static_cast<std::size_t>(c.m) * ldc, 3);
  std::vector<double> want(out.begin(), out.end());
  for (int i = 0; i < c.m; ++i) {
    for (int j = 0; j < c.n; ++j) {
      double acc = 0;
      for (int p = 0; p < c.k; ++p) {
        const double av = c.ta ? a[p * lda + i] : a[i * lda + p];
        const double bv = c.tb ? b[j * ldb + p] : b[p * ldb + j];
        acc += av * bv;
      }
      want[i * ldc + j] = c.alpha * acc + c.beta * out[i * ldc + j];
    }
  }
  ASSERT_TRUE(backend->Gemm(c.ta, c.tb, c.m, c.n, c.k, c.alpha, a.data(), lda, b.data(), ldb, c.beta, out.data(), ldc).ok());
  ExpectNear(out, want, 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Shapes, CpuGemm,
                         ::testing::Values(GemmCase{1, 1, 1, false, false, 1, 0}, GemmCase{7, 5, 3, false, false, 1, 0},
                                           GemmCase{16, 33, 64, false, true, 1, 0},
                                           GemmCase{5, 9, 17, true, false, 0.5f, 1},
                                           GemmCase{31, 8, 12, true, true, 2, -0.5f},
                                           GemmCase{64, 128, 30, false, true, 1, 0}));

TEST(CpuBackend, GemmRejectsBadLeadingDimensionAndNegativeSizes) {
  auto backend = MakeCpuBackend();
  float a[4] = {}, b[4] = {}, c[4] = {};
  Status s = backend->Gemm(false, false, 2, 2, 2, 1, a, 1, b, 2, 0, c, 2);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("lda=1"), std::string::npos) << s.message();
  EXPECT_EQ(backend->Gemm(false, false, -1, 2, 2, 1, a, 2, b, 2, 0, c, 2).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(backend->Gemm(false, false, 0, 2, 2, 1, nullptr, 2, nullptr, 2, 0, nullptr, 2).ok());
}

TEST(CpuBackend, StridedBatchedGemmIsOneGemmPerMatrix) {
  auto backend = MakeCpuBackend();
  const int m = 3, n = 4, k = 5, batch = 3;
  auto a = RandomVector(batch * m * k, 4);
  auto b = RandomVector(batch * k * n, 5);
  std::vector<float> c(batch * m * n, 0.0f), want(batch * m * n, 0.0f);
  ASSERT_TRUE(backend->GemmStridedBatched(false, false, m, n, k, 1, a.data(), k, m * k, b.data(), n, k * n, 0,
                                          c.data(), n, m * n, batch).ok());
  for (int i = 0; i < batch; ++i) {
    ASSERT_TRUE(backend->Gemm(false, false, m, n, k, 1, a.data() + i * m * k, k, b.data() + i * k * n, n, 0,
                              want.data() + i * m * n, n).ok());
  }
  EXPECT_EQ(c, want);
}

class CpuBiasActivation : public ::testing::TestWithParam<Activation> {};

TEST_P(CpuBiasActivation, MatchesNaiveFormula) {
  auto backend = MakeCpuBackend();
  const int m = 7, n = 13;
  auto x = RandomVector(m * n, 6);
  auto bias = RandomVector(n, 7);
  std::vector<double> want(m * n);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) want[i * n + j] = NaiveActivation(GetParam(), double(x[i * n + j]) + bias[j]);
  ASSERT_TRUE(backend->BiasActivation(x.data(), m, n, bias.data(), GetParam()).ok());
  ExpectNear(x, want, 1e-5);
}

INSTANTIATE_TEST_SUITE_P(All, CpuBiasActivation,
                         ::testing::Values(Activation::kNone, Activation::kRelu, Activation::kGelu,
                                           Activation::kGeluTanh, Activation::kTanh, Activation::kSigmoid),
                         [](const auto& info) { return std::string(ActivationName(info.param)); });

// The CPU backend sizes an encoder's calls to its core's cache: a sub-batch's widest activation
// within 1 MiB (BERT-base / MiniLM's 1,536-wide feed-forward: 170 tokens), attention's scores
// within 512 KiB; one at least however wide. The interface's default caps nothing.
TEST(CpuBackend, EncoderCallsAreSizedToTheCache) {
  auto b = MakeCpuBackend();
  EXPECT_EQ(b->EncoderTokensPerCall(1536), 1024 * 1024 / (1536 * 4));
  EXPECT_EQ(b->EncoderTokensPerCall(384), 1024 * 1024 / (384 * 4));
  EXPECT_EQ(b->EncoderTokensPerCall(1 << 30), 1);
  EXPECT_EQ(b->EncoderTokensPerCall(0), 1024 * 1024 / 4);
  EXPECT_EQ(b->AttentionSequencesPerCall(12, 80), 512 * 1024 / (12 * 80 * 80 * 4));
  EXPECT_EQ(b->AttentionSequencesPerCall(12, 4096), 1);
  EXPECT_EQ(b->InferenceBackend::EncoderTokensPerCall(1536), std::numeric_limits<int>::max());
}

TEST(CpuBackend, SoftmaxRowsSumToOneAndMatchFormula) {
  auto backend = MakeCpuBackend();
  const int m = 4, n = 9;
  auto x = RandomVector(m * n, 8);
  x[0] = 80.0f;  // large logits must not overflow
  std::vector<double> want(m * n);
  for (int i = 0; i < m; ++i) {
    double mx = -INFINITY, sum = 0;
    for (int j = 0; j < n; ++j) mx = std::max(mx, double(x[i * n + j]));
    for (int j = 0; j < n; ++j) sum += std::exp(x[i * n + j] - mx);
    for (int j = 0; j < n; ++j) want[i * n + j] = std::exp(x[i * n + j] - mx) / sum;
  }
  ASSERT_TRUE(backend->Softmax(x.data(), m, n).ok());
  ExpectNear(x, want, 1e-6);
}

TEST(CpuBackend, ScaledMaskedSoftmaxIgnoresMaskedKeys) {
  auto backend = MakeCpuBackend();
  const int batch = 2, heads = 2, q = 3, k = 4;
  auto x = RandomVector(batch * heads * q * k, 9);
  std::vector<float> mask = {0, 0, 0, -INFINITY, 0, -INFINITY, -INFINITY, -INFINITY};
  std::vector<double> want(x.size());
  for (int b = 0; b < batch; ++b)
    for (int h = 0; h < heads; ++h)
      for (int r = 0; r < q; ++r) {
        const int off = ((b * heads + h) * q + r) * k;
        double sum = 0;
        for (int j = 0; j < k; ++j) sum += mask[b * k + j] == 0 ? std::exp(0.5 * x[off + j]) : 0;
        for (int j = 0; j < k; ++j) want[off + j] = mask[b * k + j] == 0 ? std::exp(0.5 * x[off + j]) / sum : 0;
      }
  ASSERT_TRUE(backend->ScaledMaskedSoftmax(x.data(), batch, heads, q, k, 0.5f, mask.data()).ok());
  ExpectNear(x, want, 1e-6);
}

TEST(CpuBackend, LayerNormWithResidualMatchesFormulaAndMayAlias) {
  auto backend = MakeCpuBackend();
  const int m = 3, n = 10;
  auto x = RandomVector(m * n, 10), r = RandomVector(m * n, 11);
  auto gamma = RandomVector(n, 12), beta = RandomVector(n, 13);
  std::vector<double> want(m * n);
  for (int i = 0; i < m; ++i) {
    double mean = 0, var = 0;
    for (int j = 0; j < n; ++j) mean += double(x[i * n + j]) + r[i * n + j];
    mean /= n;
    for (int j = 0; j < n; ++j) var += std::pow(double(x[i * n + j]) + r[i * n + j] - mean, 2);
    var /= n;
    for (int j = 0; j < n; ++j)
      want[i * n + j] = (double(x[i * n + j]) + r[i * n + j] - mean) / std::sqrt(var + 1e-5) * gamma[j] + beta[j];
  }
  ASSERT_TRUE(backend->LayerNorm(x.data(), r.data(), gamma.data(), beta.data(), x.data(), m, n, 1e-5f).ok());
  ExpectNear(x, want, 1e-5);
}

TEST(CpuBackend, UploadWeightsDoesNotCopy) {
  auto backend = MakeCpuBackend();
  std::vector<float> host = {1, 2, 3};
  auto buf = backend->UploadWeights(host.data(), host.size() * sizeof(float));
  ASSERT_TRUE(buf.ok());
  EXPECT_EQ((*buf)->data(), host.data());
  EXPECT_EQ((*buf)->bytes(), 12u);
}

TEST(CpuBackend, AllocateCopyRoundTrip) {
  auto backend = MakeCpuBackend();
  auto buf = backend->Allocate(5 * sizeof(float));
  ASSERT_TRUE(buf.ok());
  EXPECT_EQ(reinterpret_cast<uintptr_t>((*buf)->data()) % 64, 0u);
  std::vector<float> in = {1, 2, 3, 4, 5}, out(5);
  ASSERT_TRUE(backend->CopyToDevice((*buf)->data(), in.data(), 20).ok());
  ASSERT_TRUE(backend->CopyToHost(out.data(), (*buf)->data(), 20).ok());
  EXPECT_EQ(in, out);
  EXPECT_NE(backend->description().find("OpenBLAS"), std::string::npos);
}

TEST(BackendRegistry, CreatesCpuAndRejectsUnknownNames) {
  auto cpu = CreateBackend("cpu");
  ASSERT_TRUE(cpu.ok());
  EXPECT_EQ((*cpu)->name(), "cpu");
  auto bad = CreateBackend("tpu");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("'tpu'; allowed: cpu, cuda"), std::string::npos);
}

TEST(BackendRegistry, MissingCudaLibraryIsAClearStatus) {
  ::setenv("DFW_CUDA_BACKEND_PATH", "/nonexistent/dir/libdfw_backend_cuda.so", 1);
  auto cuda = CreateBackend("cuda");
  ::unsetenv("DFW_CUDA_BACKEND_PATH");
  ASSERT_FALSE(cuda.ok());
  EXPECT_EQ(cuda.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(cuda.status().message().find("/nonexistent/dir/libdfw_backend_cuda.so"), std::string::npos)
      << cuda.status().message();
}

TEST(BackendRegistry, LibraryWithoutTheSymbolIsAClearStatus) {
  // libopenblas is a real shared library that does not export dfw_create_cuda_backend.
  ::setenv("DFW_CUDA_BACKEND_PATH", "libopenblas.so.0", 1);
  auto cuda = CreateBackend("cuda");
  ::unsetenv("DFW_CUDA_BACKEND_PATH");
  ASSERT_FALSE(cuda.ok());
  EXPECT_NE(cuda.status().message().find("does not export 'dfw_create_cuda_backend'"), std::string::npos)
      << cuda.status().message();
}

}  // namespace
}  // namespace dfw

namespace dfw {
namespace {

TEST(InferencePolicy, OneLaneAndOneBlasThreadPerProcessWhenSeveralShareTheMachine) {
  const int cpus = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  struct Case {
    int sdk_processes, harness_threads, want_lanes;
  };
  const std::vector<Case> cases = {
      {8, 12, 1},                    // Dataflow default: one SDK process per vCPU
      {2, 1, 1},
      {1, 1, 1},                     // one process, one harness thread: one lane
      {1, 0, 1},                     // harness threads clamped to >= 1
      {1, 2, cpus <= 2 ? cpus : 1},  // a lane per CPU only when the threads can keep them all busy
      {1, cpus - 1, 1},
      {1, 100000, cpus},
      {0, cpus, cpus},               // processes clamped to >= 1
  };
  for (const Case& c : cases) {
    const int lanes = DefaultInferenceLanes(c.sdk_processes, c.harness_threads);
    EXPECT_EQ(lanes, c.want_lanes) << c.sdk_processes << " processes, " << c.harness_threads << " harness threads";
    const int blas = DefaultBlasThreads(c.sdk_processes, lanes);
    if (c.sdk_processes > 1) {
      EXPECT_EQ(blas, 1);
    } else {  // one lane with every CPU, or a single-threaded lane per CPU
      EXPECT_EQ(lanes * blas, cpus) << lanes << " lanes";
      EXPECT_TRUE(lanes == 1 || blas == 1) << lanes << " lanes x " << blas << " BLAS threads";
    }
  }
  EXPECT_EQ(DefaultBlasThreads(1, 0), cpus);  // lanes clamped to >= 1
}

TEST(BlasThreads, SetChangesTheOpenBlasPoolAndRejectsZero) {
  const int before = BlasThreads();
  ASSERT_TRUE(SetBlasThreads(1).ok());
  EXPECT_EQ(BlasThreads(), 1);
  Status bad = SetBlasThreads(0);
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("0 must be >= 1"), std::string::npos) << bad.message();
  EXPECT_EQ(BlasThreads(), 1);
  ASSERT_TRUE(SetBlasThreads(before).ok());
}

}  // namespace
}  // namespace dfw
