// Backend parity: one table of cases (op x shape x activation), run on every backend under test
// and compared element-wise with the CPU backend on its OpenBLAS path (the reference) under a
// per-case tolerance. A backend that cannot be created here (no GPU, no driver, library not built)
// skips its rows with the registry's reason, from the same binary. The "cpu_openblas" rows run the
// harness against the reference itself (they must agree exactly), so the table and the harness
// are exercised everywhere; "cpu_onednn" runs every product on oneDNN, "cpu" is the default
// (calibrated) path. tests/backend/CMakeLists.txt registers the table a second time with oneDNN's
// ISA capped at SSE4.1 and a third time with OPENBLAS_CORETYPE=Haswell. All data is float32: the
// InferenceBackend contract has no other compute dtype yet.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "dfw/backend/registry.h"

namespace dfw {
namespace {

enum class Op {
  kGemm, kGemmBatched, kGemmHeads, kLinear, kLinearNoBias, kBiasAct, kSoftmax, kMaskedSoftmax, kLayerNorm,
  kLayerNormResidualInPlace
};

struct ParityCase {
  const char* name;
  Op op;
  int m = 0, n = 0, k = 0;  // GEMM sizes; rows (m) x cols (n) for the others
  bool ta = false, tb = false;
  int batch = 1, heads = 1;  // GEMM batch; attention batch/heads (q_len = m, k_len = n)
  Activation act = Activation::kNone;
  double tol = 1e-5;    // |got - want| <= tol * max(1, |want|)
};

void PrintTo(const ParityCase& c, std::ostream* os) { *os << c.name; }

const ParityCase kCases[] = {
    {"gemm_nn_small", Op::kGemm, 3, 5, 7},
    {"gemm_nt", Op::kGemm, 17, 33, 65, false, true, 1, 1, Activation::kNone, 1e-4},
    {"gemm_tn", Op::kGemm, 64, 48, 32, true, false, 1, 1, Activation::kNone, 1e-4},
    {"gemm_tt_odd", Op::kGemm, 31, 1, 129, true, true, 1, 1, Activation::kNone, 1e-4},
    {"gemm_bert_ffn", Op::kGemm, 128, 3072, 768, false, true, 1, 1, Activation::kNone, 1e-3},
    {"gemm_k_zero", Op::kGemm, 4, 4, 0},
    {"gemm_batched_attention", Op::kGemmBatched, 16, 16, 64, false, true, 24, 1, Activation::kNone, 1e-4},
    {"gemm_batched_tn", Op::kGemmBatched, 9, 13, 11, true, false, 5, 1, Activation::kNone, 1e-4},
    {"gemm_batched_encoder_scores", Op::kGemmBatched, 128, 128, 32, false, true, 4, 1, Activation::kNone, 1e-4},
    {"gemm_batched_encoder_context", Op::kGemmBatched, 64, 32, 64, false, false, 6, 1, Activation::kNone, 1e-4},
    {"gemm_heads_scores", Op::kGemmHeads, 16, 16, 8, false, true, 3, 4, Activation::kNone, 1e-4},
    {"gemm_heads_context", Op::kGemmHeads, 16, 8, 16, false, false, 3, 4, Activation::kNone, 1e-4},
    {"gemm_heads_tn_odd", Op::kGemmHeads, 9, 13, 11, true, false, 2, 3, Activation::kNone, 1e-4},
    {"gemm_heads_encoder", Op::kGemmHeads, 128, 128, 32, false, true, 2, 12, Activation::kNone, 1e-4},
    {"linear_qkv", Op::kLinear, 130, 1152, 384, false, false, 1, 1, Activation::kNone, 1e-4},
    {"linear_gelu", Op::kLinear, 33, 768, 64, false, false, 1, 1, Activation::kGelu, 1e-4},
    {"linear_gelu_tanh", Op::kLinear, 33, 300, 65, false, false, 1, 1, Activation::kGeluTanh, 1e-4},
    {"linear_relu", Op::kLinear, 7, 300, 17, false, false, 1, 1, Activation::kRelu, 1e-4},
    {"linear_tanh", Op::kLinear, 5, 100, 40, false, false, 1, 1, Activation::kTanh, 1e-4},
    {"linear_sigmoid", Op::kLinear, 1, 257, 9, false, false, 1, 1, Activation::kSigmoid, 1e-4},
    {"linear_no_bias_gelu", Op::kLinearNoBias, 16, 64, 32, false, false, 1, 1, Activation::kGelu, 1e-4},
    {"linear_k_zero", Op::kLinear, 4, 6, 0, false, false, 1, 1, Activation::kRelu},
    {"bias_none", Op::kBiasAct, 7, 300, 0, false, false, 1, 1, Activation::kNone},
    {"bias_relu", Op::kBiasAct, 7, 300, 0, false, false, 1, 1, Activation::kRelu},
    {"bias_gelu", Op::kBiasAct, 33, 768, 0, false, false, 1, 1, Activation::kGelu, 1e-5},
    {"bias_gelu_tanh", Op::kBiasAct, 33, 768, 0, false, false, 1, 1, Activation::kGeluTanh, 1e-5},
    {"bias_tanh", Op::kBiasAct, 5, 1000, 0, false, false, 1, 1, Activation::kTanh, 1e-5},
    {"bias_sigmoid", Op::kBiasAct, 1, 4097, 0, false, false, 1, 1, Activation::kSigmoid, 1e-5},
    {"act_no_bias_gelu", Op::kBiasAct, 3, 17, -1, false, false, 1, 1, Activation::kGelu, 1e-5},
    {"softmax_narrow", Op::kSoftmax, 10, 3},
    {"softmax_wide", Op::kSoftmax, 4, 30522, 0, false, false, 1, 1, Activation::kNone, 1e-5},
    {"softmax_one_column", Op::kSoftmax, 6, 1},
    {"masked_softmax_bert", Op::kMaskedSoftmax, 16, 16, 0, false, false, 3, 12, Activation::kNone, 1e-5},
    {"masked_softmax_long", Op::kMaskedSoftmax, 5, 513, 0, false, false, 2, 2, Activation::kNone, 1e-5},
    {"layernorm", Op::kLayerNorm, 8, 768, 0, false, false, 1, 1, Activation::kNone, 1e-4},
    {"layernorm_odd", Op::kLayerNorm, 3, 37},
    {"layernorm_residual_in_place", Op::kLayerNormResidualInPlace, 9, 1024, 0, false, false, 1, 1, Activation::kNone, 1e-4},
};

std::vector<float> Random(std::size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-3.0f, 3.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// Uploads host vectors, runs the case's op, and returns the output on the host.
class Runner {
 public:
  explicit Runner(InferenceBackend& b) : b_(b) {}

  Result<float*> Upload(const std::vector<float>& host) {
    ASSIGN_OR_RETURN(std::unique_ptr<DeviceBuffer> buf, b_.Allocate(host.size() * sizeof(float)));
    RETURN_IF_ERROR(b_.CopyToDevice(buf->data(), host.data(), host.size() * sizeof(float)));
    buffers_.push_back(std::move(buf));
    return buffers_.back()->f32();
  }

  Result<std::vector<float>> Run(const ParityCase& c) {
    std::vector<float> out;
    float* d_out = nullptr;
    switch (c.op) {
      case Op::kGemm:
      case Op::kGemmBatched: {
        // Row-major storage with 2 extra columns of padding on each leading dimension.
        const int a_rows = c.ta ? c.k : c.m, a_cols = c.ta ? c.m : c.k;
        const int b_rows = c.tb ? c.n : c.k, b_cols = c.tb ? c.k : c.n;
        const int lda = a_cols + 2, ldb = b_cols + 2, ldc = c.n + 2;
        const int64_t sa = int64_t{a_rows} * lda + 5, sb = int64_t{b_rows} * ldb + 3, sc = int64_t{c.m} * ldc + 1;
        ASSIGN_OR_RETURN(float* a, Upload(Random(static_cast<std::size_t>(sa * c.batch) + 1, 1)));
        ASSIGN_OR_RETURN(float* b, Upload(Random(static_cast<std::size_t>(sb * c.batch) + 1, 2)));
        out = Random(static_cast<std::size_t>(sc * c.batch), 3);
        ASSIGN_OR_RETURN(d_out, Upload(out));
        if (c.op == Op::kGemm) {
          RETURN_IF_ERROR(b_.Gemm(c.ta, c.tb, c.m, c.n, c.k, 0.75f, a, lda, b, ldb, 0.5f, d_out, ldc));
        } else {
          RETURN_IF_ERROR(b_.GemmStridedBatched(c.ta, c.tb, c.m, c.n, c.k, 0.75f, a, lda, sa, b, ldb, sb, 0.5f, d_out,
                                                ldc, sc, c.batch));
        }
        break;
      }
      case Op::kGemmHeads: {
        // Heads side by side in each row (as Q/K/V heads sit in a fused QKV row), sequences below
        // each other; C per (sequence, head) blocks. Every stride padded so no two layouts coincide.
        const int a_rows = c.ta ? c.k : c.m, a_cols = c.ta ? c.m : c.k;
        const int b_rows = c.tb ? c.n : c.k, b_cols = c.tb ? c.k : c.n;
        const int lda = c.heads * a_cols + 2, ldb = c.heads * b_cols + 3, ldc = c.n + 2;
        const int64_t sa = int64_t{a_rows} * lda + 5, sb = int64_t{b_rows} * ldb + 3;
        const int64_t hc = int64_t{c.m} * ldc + 1, sc = hc * c.heads + 3;
        ASSIGN_OR_RETURN(float* a, Upload(Random(static_cast<std::size_t>(sa * c.batch) + 1, 16)));
        ASSIGN_OR_RETURN(float* b, Upload(Random(static_cast<std::size_t>(sb * c.batch) + 1, 17)));
        out = Random(static_cast<std::size_t>(sc * c.batch), 18);
        ASSIGN_OR_RETURN(d_out, Upload(out));
        RETURN_IF_ERROR(b_.GemmHeadsBatched(c.ta, c.tb, c.m, c.n, c.k, 0.75f, a, lda, sa, a_cols, b, ldb, sb, b_cols,
                                            0.5f, d_out, ldc, sc, hc, c.batch, c.heads));
        break;
      }
      case Op::kLinear:
      case Op::kLinearNoBias: {
        ASSIGN_OR_RETURN(float* x, Upload(Random(static_cast<std::size_t>(c.m) * c.k + 1, 12)));
        ASSIGN_OR_RETURN(float* w, Upload(Random(static_cast<std::size_t>(c.n) * c.k + 1, 13)));
        const float* bias = nullptr;
        if (c.op == Op::kLinear) {
          ASSIGN_OR_RETURN(float* d_bias, Upload(Random(static_cast<std::size_t>(c.n), 14)));
          bias = d_bias;
        }
        out = Random(static_cast<std::size_t>(c.m) * c.n, 15);  // stale values the layer must overwrite
        ASSIGN_OR_RETURN(d_out, Upload(out));
        RETURN_IF_ERROR(b_.Linear(x, w, bias, d_out, c.m, c.n, c.k, c.act));
        break;
      }
      case Op::kBiasAct: {
        out = Random(static_cast<std::size_t>(c.m) * c.n, 4);
        ASSIGN_OR_RETURN(d_out, Upload(out));
        const float* bias = nullptr;
        if (c.k >= 0) {
          ASSIGN_OR_RETURN(float* d_bias, Upload(Random(static_cast<std::size_t>(c.n), 5)));
          bias = d_bias;
        }
        RETURN_IF_ERROR(b_.BiasActivation(d_out, c.m, c.n, bias, c.act));
        break;
      }
      case Op::kSoftmax: {
        out = Random(static_cast<std::size_t>(c.m) * c.n, 6);
        ASSIGN_OR_RETURN(d_out, Upload(out));
        RETURN_IF_ERROR(b_.Softmax(d_out, c.m, c.n));
        break;
      }
      case Op::kMaskedSoftmax: {
        out = Random(static_cast<std::size_t>(c.batch) * c.heads * c.m * c.n, 7);
        ASSIGN_OR_RETURN(d_out, Upload(out));
        // Sequence b has n - 3*b real tokens; the last sequence is fully masked when n is small.
        std::vector<float> mask(static_cast<std::size_t>(c.batch) * c.n, 0.0f);
        for (int b = 0; b < c.batch; ++b) {
          for (int j = std::max(0, c.n - 3 * b); j < c.n; ++j) mask[static_cast<std::size_t>(b) * c.n + j] = -INFINITY;
        }
        ASSIGN_OR_RETURN(float* d_mask, Upload(mask));
        RETURN_IF_ERROR(b_.ScaledMaskedSoftmax(d_out, c.batch, c.heads, c.m, c.n, 0.125f, d_mask));
        break;
      }
      case Op::kLayerNorm:
      case Op::kLayerNormResidualInPlace: {
        const std::size_t size = static_cast<std::size_t>(c.m) * c.n;
        ASSIGN_OR_RETURN(float* x, Upload(Random(size, 8)));
        ASSIGN_OR_RETURN(float* gamma, Upload(Random(static_cast<std::size_t>(c.n), 9)));
        ASSIGN_OR_RETURN(float* beta, Upload(Random(static_cast<std::size_t>(c.n), 10)));
        out.assign(size, 0.0f);
        if (c.op == Op::kLayerNorm) {
          ASSIGN_OR_RETURN(d_out, Upload(out));
          RETURN_IF_ERROR(b_.LayerNorm(x, nullptr, gamma, beta, d_out, c.m, c.n, 1e-12f));
        } else {
          ASSIGN_OR_RETURN(float* residual, Upload(Random(size, 11)));
          d_out = x;  // y aliases x
          RETURN_IF_ERROR(b_.LayerNorm(x, residual, gamma, beta, x, c.m, c.n, 1e-5f));
        }
        break;
      }
    }
    RETURN_IF_ERROR(b_.Synchronize());
    RETURN_IF_ERROR(b_.CopyToHost(out.data(), d_out, out.size() * sizeof(float)));
    return out;
  }

 private:
  InferenceBackend& b_;
  std::vector<std::unique_ptr<DeviceBuffer>> buffers_;
};

using ParityParam = std::tuple<std::string, ParityCase>;

class BackendParity : public ::testing::TestWithParam<ParityParam> {};

// "cpu_openblas" / "cpu_onednn": the CPU backend with its GEMM path forced; others by registry name.
Result<std::unique_ptr<InferenceBackend>> MakeBackendUnderTest(const std::string& name) {
  if (name == "cpu_openblas") return MakeCpuBackend(CpuGemmPath::kOpenBlas);
  if (name == "cpu_onednn") return MakeCpuBackend(CpuGemmPath::kOneDnn);
  return CreateBackend(name);
}

TEST_P(BackendParity, MatchesTheCpuReference) {
  const auto& [backend_name, c] = GetParam();
  Result<std::unique_ptr<InferenceBackend>> backend = MakeBackendUnderTest(backend_name);
  if (!backend.ok()) {
    ASSERT_EQ(backend_name, "cuda") << backend.status().ToString();
    GTEST_SKIP() << "backend '" << backend_name << "' unavailable: " << backend.status().ToString();
  }
  std::unique_ptr<InferenceBackend> reference = MakeCpuBackend(CpuGemmPath::kOpenBlas);
  Result<std::vector<float>> want = Runner(*reference).Run(c);
  ASSERT_TRUE(want.ok()) << want.status().ToString();
  Result<std::vector<float>> got = Runner(**backend).Run(c);
  ASSERT_TRUE(got.ok()) << (*backend)->description() << ": " << got.status().ToString();
  ASSERT_EQ(got->size(), want->size());
  const double tol = backend_name == "cpu_openblas" ? 0.0 : c.tol;
  int reported = 0;
  for (std::size_t i = 0; i < want->size() && reported < 5; ++i) {
    const double w = (*want)[i], g = (*got)[i];
    if (!(std::fabs(g - w) <= tol * std::max(1.0, std::fabs(w)))) {
      ADD_FAILURE() << c.name << " on " << (*backend)->description() << ": element " << i << " got " << g
                    << ", cpu reference " << w << " (tolerance " << tol << ")";
      ++reported;
    }
  }
}

std::string ParamName(const ::testing::TestParamInfo<ParityParam>& info) {
  return std::get<0>(info.param) + "_" + std::get<1>(info.param).name;
}

INSTANTIATE_TEST_SUITE_P(AllCases, BackendParity,
                         ::testing::Combine(::testing::Values("cpu", "cpu_openblas", "cpu_onednn", "cuda"),
                                            ::testing::ValuesIn(kCases)), ParamName);

TEST(BackendParity, UnavailableCudaBackendSaysWhy) {
  Result<std::unique_ptr<InferenceBackend>> cuda = CreateBackend("cuda");
  if (cuda.ok()) GTEST_SKIP() << "a CUDA GPU is available here: " << (*cuda)->description();
  EXPECT_EQ(cuda.status().code(), StatusCode::kUnavailable) << cuda.status().ToString();
  EXPECT_FALSE(cuda.status().message().empty());
}

}  // namespace
}  // namespace dfw
