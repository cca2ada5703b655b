// CPU backend: OpenBLAS (the reference) or oneDNN (dnnl_gemm.h, where gemm_plan.h measured it
// faster, or when asked for) for GEMMs, the row kernels in kernels.h (AVX2 + FMA where the CPU has
// them, a scalar reference otherwise) for the element-wise ops. It is the numerical reference the
// CUDA backend is compared against, so every op checks its arguments and computes in float with
// double accumulators where rows are reduced. GELU's erf and the softmax exp use the branch-free
// approximations in fast_math.h (errors < 1e-6, far inside the 1e-5 the tests allow).
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "dfw/backend/backend.h"
#include "dfw/backend/device_decoder.h"
#include "dfw/backend/registry.h"
#include "attention_kernels.h"
#include "cpu_decoder.h"
#include "dnnl_gemm.h"
#include "dnnl_lowp.h"
#include "gemm_plan.h"
#include "kernels.h"
#include "openblas_api.h"

namespace dfw {
namespace {

constexpr std::size_t kAlignment = 64;
// Attention scores per round of an encoder layer's attention (AttentionSequencesPerCall): half a
// MiB, a quarter of the 2 MiB L2 of the cores this was measured on, beside the Q, K and V slices.
constexpr std::size_t kAttentionScoreBytes = 512 * 1024;
// An encoder sub-batch's widest activation (EncoderTokensPerCall): 1 MiB, half that L2, so each
// layer's intermediate, its int8 accumulators and the products' weights stay in the core's cache
// between the passes over them (quantise, product, dequantise, activation, LayerNorm).
constexpr std::size_t kEncoderActivationBytes = 1024 * 1024;

class HostBuffer final : public DeviceBuffer {
 public:
  HostBuffer(void* data, std::size_t bytes) : data_(data), bytes_(bytes) {}
  ~HostBuffer() override { std::free(data_); }
  void* data() override { return data_; }
  std::size_t bytes() const override { return bytes_; }

 private:
  void* data_;
  std::size_t bytes_;
};

// Host memory owned by someone else (an mmapped weights file): UploadWeights never copies.
class BorrowedBuffer final : public DeviceBuffer {
 public:
  BorrowedBuffer(const void* data, std::size_t bytes) : data_(const_cast<void*>(data)), bytes_(bytes) {}
  void* data() override { return data_; }
  std::size_t bytes() const override { return bytes_; }

 private:
  void* data_;
  std::size_t bytes_;
};

Status CheckGemmArgs(bool trans_a, bool trans_b, int m, int n, int k, const float* a, int lda, const float* b,
                     int ldb, const float* c, int ldc) {
  if (m < 0 || n < 0 || k < 0) {
    return InvalidArgument("Gemm: negative size m=" + std::to_string(m) + " n=" + std::to_string(n) +
                           " k=" + std::to_string(k));
  }
  // Row-major storage: op(A) is m x k, so A is stored m x k (cols k) or k x m (cols m).
  const int a_cols = trans_a ? m : k;
  const int b_cols = trans_b ? k : n;
  if (lda < std::max(1, a_cols) || ldb < std::max(1, b_cols) || ldc < std::max(1, n)) {
    return InvalidArgument("Gemm: leading dimension too small (lda=" + std::to_string(lda) + " needs >= " +
                           std::to_string(a_cols) + ", ldb=" + std::to_string(ldb) + " needs >= " +
                           std::to_string(b_cols) + ", ldc=" + std::to_string(ldc) + " needs >= " +
                           std::to_string(n) + ")");
  }
  if (m > 0 && n > 0 && (c == nullptr || (k > 0 && (a == nullptr || b == nullptr)))) {
    return InvalidArgument("Gemm: null matrix pointer");
  }
  return Status::OK();
}

int OpenBlasThreads() { return cpu_blas::Threads(); }

// float32 Linear weights copied once into the layout oneDNN runs fastest here
// (cpu_dnnl::LinearWeightsLayout): [k x n] below AVX-512, oneDNN's blocked layout on AVX-512 and
// up. A copy is shared by every PreparedLinear of the same weights in this backend (a lane's
// encoders: the main one, one per other bucket dtype, the run-time check's).
struct F32Copy {
  std::vector<float> kn;                                    // kKn: wᵀ row-major
  std::shared_ptr<const cpu_dnnl::BlockedWeights> blocked;  // kBlocked
  std::vector<float> sample;                                // w at SampledWeights' points when copied
  std::size_t bytes() const { return blocked != nullptr ? blocked->bytes() : kn.size() * sizeof(float); }
};

class F32PreparedWeights final : public PreparedLinear {
 public:
  F32PreparedWeights(const float* w, int n, int k, std::shared_ptr<const F32Copy> copy)
      : PreparedLinear(LinearDType::kFloat32, w, n, k), copy_(std::move(copy)) {}
  std::size_t bytes() const override { return copy_->bytes(); }
  const F32Copy& copy() const { return *copy_; }

 private:
  std::shared_ptr<const F32Copy> copy_;
};

// w [n x k] → [k x n], in 32 x 32 tiles (both sides stay in cache lines a tile at a time).
std::vector<float> TransposedWeights(const float* w, int n, int k) {
  std::vector<float> out(static_cast<std::size_t>(n) * k);
  float* t = out.data();
  constexpr int kTile = 32;
  for (int j0 = 0; j0 < n; j0 += kTile) {
    for (int p0 = 0; p0 < k; p0 += kTile) {
      const int j1 = std::min(n, j0 + kTile), p1 = std::min(k, p0 + kTile);
      for (int j = j0; j < j1; ++j) {
        for (int p = p0; p < p1; ++p) t[static_cast<std::size_t>(p) * n + j] = w[static_cast<std::size_t>(j) * k + p];
      }
    }
  }
  return out;
}

// w's values along the diagonal stripe and its mirror, corners included: a copy kept for weights at
// the same address is reused only while they still read the same there.
std::vector<float> SampledWeights(const float* w, int n, int k) {
  std::vector<float> out;
  out.reserve(34);
  for (int i = 0; i <= 16; ++i) {
    const int j = static_cast<int>(static_cast<int64_t>(n - 1) * i / 16), p = static_cast<int>(static_cast<int64_t>(k - 1) * i / 16);
    out.push_back(w[static_cast<std::size_t>(j) * k + p]);
    out.push_back(w[static_cast<std::size_t>(j) * k + (k - 1 - p)]);
  }
  return out;
}

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

class CpuBackend final : public InferenceBackend {
 public:
  explicit CpuBackend(CpuBackendOptions options)
      : path_(options.gemm),
        cpu_(options.isa.has_value() ? *options.isa : DetectCpuIsa()),
        f32_copy_bytes_(options.f32_copy_bytes) {
    if (path_ == CpuGemmPath::kOpenBlas) return;
    cpu_dnnl::DnnlGemmOptions dnnl_options;
    dnnl_options.threads = OpenBlasThreads;
    dnnl_options.refuse_create_for_testing = std::move(options.onednn_refuse_create_for_testing);
    auto dnnl = cpu_dnnl::DnnlGemm::Make(std::move(dnnl_options));
    if (dnnl.ok()) {
      dnnl_ = std::move(*dnnl);
    } else {
      static std::once_flag warned;
      std::call_once(warned,
                     [&] { spdlog::warn("cpu backend: {}; every GEMM runs on OpenBLAS", dnnl.status().message()); });
    }
  }

  std::string_view name() const override { return "cpu"; }

  std::string description() const override {
    std::string config = blas_.ok() ? (*blas_)->get_config() : blas_.status().message();
    while (!config.empty() && config.back() == ' ') config.pop_back();
    std::string gemm = "GEMM path " + std::string(CpuGemmPathName(path_));
    if (path_ != CpuGemmPath::kOpenBlas) {
      gemm += dnnl_ == nullptr ? " (oneDNN unavailable: all OpenBLAS)"
                               : ", " + cpu_dnnl::LibraryName() + " at " + cpu_dnnl::EffectiveIsaName();
      // The plan only once calibrated: a model whose products are all small (the demo's MLP) never
      // pays for the calibration, and describing the backend must not trigger it.
      if (path_ == CpuGemmPath::kAuto && dnnl_ != nullptr) {
        gemm += plan_ != nullptr ? " [" + plan_->Describe() + "]" : " [calibrated at the first product that is not small]";
      }
    }
    return "OpenBLAS (" + config + ", " + std::to_string(OpenBlasThreads()) + " threads), " + gemm + ", " +
           cpu_kernels::IsaName(isa_) + " row kernels; CPU " + cpu_.Flags();
  }

  Result<std::unique_ptr<DeviceBuffer>> Allocate(std::size_t bytes) override {
    const std::size_t rounded = std::max<std::size_t>(kAlignment, (bytes + kAlignment - 1) / kAlignment * kAlignment);
    void* p = std::aligned_alloc(kAlignment, rounded);
    if (p == nullptr) return ResourceExhausted("cpu backend: cannot allocate " + std::to_string(bytes) + " bytes");
    return std::unique_ptr<DeviceBuffer>(std::make_unique<HostBuffer>(p, bytes));
  }

  Result<std::unique_ptr<DeviceBuffer>> UploadWeights(const void* host, std::size_t bytes) override {
    if (host == nullptr && bytes > 0) return InvalidArgument("UploadWeights: null host pointer");
    return std::unique_ptr<DeviceBuffer>(std::make_unique<BorrowedBuffer>(host, bytes));
  }

  Status CopyToDevice(void* dst, const void* src, std::size_t bytes) override { return Copy(dst, src, bytes); }
  Status CopyToHost(void* dst, const void* src, std::size_t bytes) override { return Copy(dst, src, bytes); }
  Status Synchronize() override { return Status::OK(); }

  Status Gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda, const float* b,
              int ldb, float beta, float* c, int ldc) override {
    RETURN_IF_ERROR(CheckGemmArgs(trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc));
    if (m == 0 || n == 0) return Status::OK();
    RETURN_IF_ERROR(blas_.status());
    if (UseOneDnn(m, n, k, 1)) {
      ASSIGN_OR_RETURN(const bool ran, dnnl_->Gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc));
      if (ran) return Status::OK();
    }
    (*blas_)->sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, m, n, k,
                alpha, a, lda, b, ldb, beta, c, ldc);
    return Status::OK();
  }

  Status GemmStridedBatched(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
                            int64_t stride_a, const float* b, int ldb, int64_t stride_b, float beta, float* c,
                            int ldc, int64_t stride_c, int batch) override {
    if (batch < 0) return InvalidArgument("GemmStridedBatched: negative batch " + std::to_string(batch));
    if (batch > 1 && UseOneDnn(m, n, k, batch)) {
      RETURN_IF_ERROR(CheckGemmArgs(trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc));
      if (m == 0 || n == 0) return Status::OK();
      ASSIGN_OR_RETURN(const bool ran, dnnl_->GemmStridedBatched(trans_a, trans_b, m, n, k, alpha, a, lda, stride_a, b,
                                                                 ldb, stride_b, beta, c, ldc, stride_c, batch));
      if (ran) return Status::OK();
    }
    for (int i = 0; i < batch; ++i) {
      RETURN_IF_ERROR(Gemm(trans_a, trans_b, m, n, k, alpha, a + i * stride_a, lda, b + i * stride_b, ldb, beta,
                           c + i * stride_c, ldc));
    }
    return Status::OK();
  }

  Status GemmHeadsBatched(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
                          int64_t stride_a, int64_t head_stride_a, const float* b, int ldb, int64_t stride_b,
                          int64_t head_stride_b, float beta, float* c, int ldc, int64_t stride_c,
                          int64_t head_stride_c, int batch, int heads) override {
    if (batch < 0 || heads < 0) {
      return InvalidArgument("GemmHeadsBatched: negative batch " + std::to_string(batch) + " or heads " +
                             std::to_string(heads));
    }
    if (UseAttentionKernels(trans_a, trans_b, n, k, beta)) {
      RETURN_IF_ERROR(CheckGemmArgs(trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc));
      if (m == 0 || n == 0) return Status::OK();
      const cpu_attention::Batched p{m,  n,        k,          alpha,         a,     lda,   stride_a,
                                     head_stride_a, b, ldb,    stride_b,      head_stride_b, c, ldc,
                                     stride_c,      head_stride_c, batch, heads};
      if (!trans_b) {
        cpu_attention::ContextPv(p, attention_scratch_);
      } else {
        cpu_attention::ScoresQkT(p, attention_scratch_);
      }
      return Status::OK();
    }
    if (int64_t{batch} * heads > 1 && UseOneDnn(m, n, k, batch * heads)) {
      RETURN_IF_ERROR(CheckGemmArgs(trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc));
      if (m == 0 || n == 0) return Status::OK();
      ASSIGN_OR_RETURN(const bool ran,
                       dnnl_->GemmHeadsBatched(trans_a, trans_b, m, n, k, alpha, a, lda, stride_a, head_stride_a, b,
                                               ldb, stride_b, head_stride_b, beta, c, ldc, stride_c, head_stride_c,
                                               batch, heads));
      if (ran) return Status::OK();
    }
    return InferenceBackend::GemmHeadsBatched(trans_a, trans_b, m, n, k, alpha, a, lda, stride_a, head_stride_a, b, ldb,
                                              stride_b, head_stride_b, beta, c, ldc, stride_c, head_stride_c, batch,
                                              heads);
  }

  // Bias first, then the GEMM accumulates onto it (beta = 1: OpenBLAS skips its C-scaling pass),
  // then the activation alone: two passes over y instead of three.
  Status Linear(const float* x, const float* w, const float* bias, float* y, int m, int n, int k,
                Activation act) override {
    const int ld = std::max(1, k);  // k = 0 (an empty product) still needs valid strides
    RETURN_IF_ERROR(CheckGemmArgs(false, true, m, n, k, x, ld, w, ld, y, n));
    if (m == 0 || n == 0) return Status::OK();
    RETURN_IF_ERROR(blas_.status());
    if (UseOneDnn(m, n, k, 1) && static_cast<int>(act) <= static_cast<int>(Activation::kSigmoid)) {
      ASSIGN_OR_RETURN(const bool ran, dnnl_->Linear(x, w, bias, y, m, n, k, act));
      if (ran) return Status::OK();
    }
    for (int i = 0; i < m; ++i) {
      float* row = y + static_cast<std::size_t>(i) * n;
      if (bias != nullptr) {
        std::memcpy(row, bias, sizeof(float) * n);
      } else if (k == 0) {
        std::fill(row, row + n, 0.f);
      }
    }
    if (k > 0) {
      (*blas_)->sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.f, x, k, w, k, bias != nullptr ? 1.f : 0.f,
                  y, n);
    }
    return act == Activation::kNone ? Status::OK() : BiasActivation(y, m, n, nullptr, act);
  }

  Status CheckLinearDType(LinearDType dtype) const override { return CheckLinearDTypeOn(cpu_, dtype); }

  Result<std::unique_ptr<PreparedLinear>> PrepareLinear(const float* w, int n, int k, LinearDType dtype) override {
    if (dtype == LinearDType::kFloat32) {
      if (n < 1 || k < 1 || w == nullptr) return InferenceBackend::PrepareLinear(w, n, k, dtype);
      ASSIGN_OR_RETURN(std::shared_ptr<const F32Copy> copy, F32CopyOf(w, n, k));
      if (copy == nullptr) return InferenceBackend::PrepareLinear(w, n, k, dtype);
      return std::unique_ptr<PreparedLinear>(std::make_unique<F32PreparedWeights>(w, n, k, std::move(copy)));
    }
    RETURN_IF_ERROR(CheckLinearDType(dtype));
    if (n < 1 || k < 1 || w == nullptr) return InferenceBackend::PrepareLinear(w, n, k, LinearDType::kFloat32).status();
    if (lowp_ == nullptr) {
      ASSIGN_OR_RETURN(lowp_, cpu_dnnl::LowpMatmul::Make(OpenBlasThreads, cpu_.reduce_range_int8(), isa_));
    }
    return lowp_->Prepare(w, n, k, dtype);
  }

  Status Linear(const float* x, const PreparedLinear& w, const float* bias, float* y, int m, Activation act) override {
    if (w.dtype() == LinearDType::kFloat32 || m == 0) {
      const auto* f32 = dynamic_cast<const F32PreparedWeights*>(&w);
      if (f32 != nullptr && m > 0 && UseOneDnn(m, w.n(), w.k(), 1) &&
          static_cast<int>(act) <= static_cast<int>(Activation::kSigmoid)) {
        const F32Copy& copy = f32->copy();
        bool ran = false;
        if (copy.blocked != nullptr) {
          RETURN_IF_ERROR(CheckGemmArgs(false, true, m, w.n(), w.k(), x, w.k(), w.f32_weights(), w.k(), y, w.n()));
          ASSIGN_OR_RETURN(ran, dnnl_->Linear(x, *copy.blocked, bias, y, m, act));
        } else {
          RETURN_IF_ERROR(CheckGemmArgs(false, false, m, w.n(), w.k(), x, w.k(), copy.kn.data(), w.n(), y, w.n()));
          ASSIGN_OR_RETURN(ran, dnnl_->Linear(x, copy.kn.data(), bias, y, m, w.n(), w.k(), act, /*weights_kn=*/true));
        }
        if (ran) return Status::OK();
      }
      return Linear(x, w.f32_weights(), bias, y, m, w.n(), w.k(), act);
    }
    RETURN_IF_ERROR(CheckGemmArgs(false, true, m, w.n(), w.k(), x, w.k(), w.f32_weights(), w.k(), y, w.n()));
    if (lowp_ == nullptr) return InvalidArgument("Linear: weights were not prepared by this CPU backend");
    ASSIGN_OR_RETURN(const cpu_dnnl::LowpMatmul::Ran ran, lowp_->Run(x, w, bias, y, m, act));
    if (!ran.ran) return Linear(x, w.f32_weights(), bias, y, m, w.n(), w.k(), act);
    return ran.act_pending ? BiasActivation(y, m, w.n(), nullptr, act) : Status::OK();
  }

  // The whole decoder step in host memory (cpu_decoder.cc, which validates the spec), its
  // products on this backend.
  Result<std::unique_ptr<DeviceDecoder>> CreateDecoder(const DecoderSpec& spec) override {
    RETURN_IF_ERROR(CheckLinearDType(spec.linear_dtype));
    return cpu_decoder::MakeCpuDecoder(spec, *this);
  }

  Status BiasActivation(float* x, int m, int n, const float* bias, Activation act) override {
    RETURN_IF_ERROR(CheckMatrix("BiasActivation", x, m, n));
    if (static_cast<int>(act) > static_cast<int>(Activation::kSigmoid)) {
      return InvalidArgument("BiasActivation: unknown activation " + std::to_string(static_cast<int>(act)));
    }
    cpu_kernels::BiasActivation(isa_, x, m, n, bias, act);
    return Status::OK();
  }

  Status Softmax(float* x, int m, int n) override {
    RETURN_IF_ERROR(CheckMatrix("Softmax", x, m, n));
    cpu_kernels::SoftmaxRows(isa_, x, static_cast<std::size_t>(m), n, 1.0f, nullptr);
    return Status::OK();
  }

  Status ScaledMaskedSoftmax(float* x, int batch, int heads, int q_len, int k_len, float scale,
                             const float* mask) override {
    if (batch < 0 || heads < 0) return InvalidArgument("ScaledMaskedSoftmax: negative batch or heads");
    RETURN_IF_ERROR(CheckMatrix("ScaledMaskedSoftmax", x, q_len, k_len));
    if (k_len == 0) return Status::OK();
    const std::size_t rows_per_sequence = static_cast<std::size_t>(heads) * q_len;
    for (int b = 0; b < batch; ++b) {
      const float* m = mask != nullptr ? mask + static_cast<std::size_t>(b) * k_len : nullptr;
      cpu_kernels::SoftmaxRows(isa_, x + static_cast<std::size_t>(b) * rows_per_sequence * k_len, rows_per_sequence,
                               k_len, scale, m);
    }
    return Status::OK();
  }

  // The scores of one round stay within kAttentionScoreBytes (a share of one core's L2), so the
  // softmax and the context product read them from cache, not memory: measured on all-MiniLM-L6-v2
  // (12 heads, ~80 tokens: 300 KB of scores per sequence), a whole 32-sequence sub-batch's 10 MB of
  // scores made the softmax a memory-bound 12-15% of a bfloat16 encoder.
  int AttentionSequencesPerCall(int heads, int seq) const override {
    const std::size_t per_sequence = static_cast<std::size_t>(std::max(heads, 1)) * std::max(seq, 1) * std::max(seq, 1) * sizeof(float);
    return static_cast<int>(std::clamp<std::size_t>(kAttentionScoreBytes / per_sequence, 1, 1 << 20));
  }

  // Measured on all-MiniLM-L6-v2 (2,048 sentences of ~88 tokens, int8 and bfloat16 on AMX): 32
  // sequences a call (2,800 tokens, 17 MB of feed-forward activations) spent its time waiting on
  // memory in every pass after the product; see docs/precision.md for the figures.
  int EncoderTokensPerCall(int widest_row) const override {
    const std::size_t per_token = static_cast<std::size_t>(std::max(widest_row, 1)) * sizeof(float);
    return static_cast<int>(std::clamp<std::size_t>(kEncoderActivationBytes / per_token, 1, 1 << 20));
  }

  Status LayerNorm(const float* x, const float* residual, const float* gamma, const float* beta, float* y, int m,
                   int n, float eps) override {
    RETURN_IF_ERROR(CheckMatrix("LayerNorm", y, m, n));
    if (m > 0 && n > 0 && (x == nullptr || gamma == nullptr || beta == nullptr)) {
      return InvalidArgument("LayerNorm: null x, gamma or beta");
    }
    cpu_kernels::LayerNormRows(isa_, x, residual, gamma, beta, y, m, n, eps);
    return Status::OK();
  }

 private:
  // OpenBLAS, loaded when the first CPU backend is made (openblas_api.h): the GEMMs' reference
  // path. When it cannot load, every product returns its error.
  const Result<const cpu_blas::OpenBlasApi*> blas_ = cpu_blas::OpenBlas();
  const cpu_kernels::Isa isa_ = cpu_kernels::BestIsa();
  const CpuGemmPath path_;
  const CpuIsa cpu_;  // what CheckLinearDType judges by (CpuBackendOptions::isa)
  const std::size_t f32_copy_bytes_;  // CpuBackendOptions::f32_copy_bytes
  std::unique_ptr<cpu_dnnl::DnnlGemm> dnnl_;  // null on kOpenBlas or when oneDNN cannot start
  std::unique_ptr<cpu_dnnl::LowpMatmul> lowp_;  // made at the first bf16/int8 PrepareLinear
  std::vector<float> attention_scratch_;         // the attention kernels' packed Kᵀ / V
  // The float32 copies (F32Copy), by the weights they were made from; held by the PreparedLinears,
  // dropped with the last of them.
  std::map<std::tuple<const float*, int, int>, std::weak_ptr<const F32Copy>> f32_copies_;
  // kAuto: the process-wide plan for the BLAS thread count at the first product that needs it, so a
  // backend that never multiplies a product above the small class never calibrates.
  mutable const cpu_gemm::GemmPlan* plan_ = nullptr;

  const cpu_gemm::GemmPlan& Plan() const {
    if (plan_ == nullptr) plan_ = &cpu_gemm::CalibratedPlan(OpenBlasThreads());
    return *plan_;
  }

  // The default path with one BLAS thread on an AVX-512 CPU runs attention's products on
  // attention_kernels.h (one thread: with more, oneDNN's team splits the heads). The forced paths
  // keep their library (the parity reference and the oneDNN rows).
  bool UseAttentionKernels(bool trans_a, bool trans_b, int n, int k, float beta) const {
    if (path_ != CpuGemmPath::kAuto || !DetectCpuIsa().avx512f || k == 0 || OpenBlasThreads() != 1) return false;
    return trans_b ? cpu_attention::ScoresFit(trans_a, trans_b, k, beta) : cpu_attention::ContextFit(trans_a, trans_b, n, beta);
  }

  // float32 weights get a copy where oneDNN runs another layout faster and runs this backend's
  // Linear layers (the plan is calibrated now if it was not yet: it decides the library), within
  // CpuBackendOptions::f32_copy_bytes (90 MB for all-MiniLM-L6-v2's Linear layers). Null: the
  // weights are used as they are.
  Result<std::shared_ptr<const F32Copy>> F32CopyOf(const float* w, int n, int k) {
    if (dnnl_ == nullptr) return std::shared_ptr<const F32Copy>();
    const cpu_dnnl::WeightsLayout layout = cpu_dnnl::LinearWeightsLayout();
    // (UseOneDnn at 256 rows: as a batch's products, sub-batches of up to 256 tokens, classify.)
    if (layout == cpu_dnnl::WeightsLayout::kNk || !UseOneDnn(256, n, k, 1)) return std::shared_ptr<const F32Copy>();
    const auto key = std::tuple{w, n, k};
    std::vector<float> sample = SampledWeights(w, n, k);
    if (auto kept = f32_copies_[key].lock(); kept != nullptr && SameBits(kept->sample, sample)) return kept;
    std::erase_if(f32_copies_, [](const auto& e) { return e.second.expired(); });
    std::size_t held = 0;
    for (const auto& [unused, weak] : f32_copies_) {
      if (auto live = weak.lock()) held += live->bytes();
    }
    if (held + sizeof(float) * static_cast<std::size_t>(n) * k > f32_copy_bytes_) {
      return std::shared_ptr<const F32Copy>();
    }
    auto copy = std::make_shared<F32Copy>();
    copy->sample = std::move(sample);
    if (layout == cpu_dnnl::WeightsLayout::kKn) {
      copy->kn = TransposedWeights(w, n, k);
    } else {
      ASSIGN_OR_RETURN(copy->blocked, dnnl_->BlockWeights(w, n, k));
      if (copy->blocked == nullptr) return std::shared_ptr<const F32Copy>();
    }
    f32_copies_[key] = copy;
    return std::shared_ptr<const F32Copy>(std::move(copy));
  }

  // k = 0 stays on OpenBLAS (C = beta C, which a zero-volume matmul would not write).
  bool UseOneDnn(int m, int n, int k, int batch) const {
    if (dnnl_ == nullptr || k == 0) return false;
    if (path_ == CpuGemmPath::kOneDnn) return true;
    const cpu_gemm::GemmClass c = cpu_gemm::ClassOf(m, n, k, batch);
    // Small products do not start the calibration (gemm_plan.h): before it ran, they go to oneDNN
    // only when OpenBLAS's core is generic here.
    if (c == cpu_gemm::GemmClass::kSmall) return plan_ != nullptr ? plan_->onednn_small : cpu_gemm::OpenBlasIsGeneric();
    return Plan().OnOneDnn(c);
  }

  static Status Copy(void* dst, const void* src, std::size_t bytes) {
    if (bytes == 0) return Status::OK();
    if (dst == nullptr || src == nullptr) return InvalidArgument("copy: null pointer");
    std::memcpy(dst, src, bytes);
    return Status::OK();
  }

  static Status CheckMatrix(std::string_view op, const float* x, int m, int n) {
    if (m < 0 || n < 0) {
      return InvalidArgument(std::string(op) + ": negative size m=" + std::to_string(m) + " n=" + std::to_string(n));
    }
    if (m > 0 && n > 0 && x == nullptr) return InvalidArgument(std::string(op) + ": null matrix pointer");
    return Status::OK();
  }
};

}  // namespace

std::string_view CpuGemmPathName(CpuGemmPath path) {
  switch (path) {
    case CpuGemmPath::kAuto: return "auto";
    case CpuGemmPath::kOpenBlas: return "openblas";
    case CpuGemmPath::kOneDnn: return "onednn";
  }
  return "unknown";
}

std::unique_ptr<InferenceBackend> MakeCpuBackend(CpuBackendOptions options) {
  return std::make_unique<CpuBackend>(std::move(options));
}

std::unique_ptr<InferenceBackend> MakeCpuBackend(CpuGemmPath path) {
  CpuBackendOptions options;
  options.gemm = path;
  return MakeCpuBackend(std::move(options));
}

namespace {
int Cpus() { return static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }
}  // namespace

int DefaultInferenceLanes(int sdk_processes, int harness_threads) {
  if (sdk_processes > 1) return 1;
  // A lane per CPU (one BLAS thread each) when the harness threads can keep them all busy; else
  // one lane with every CPU in its BLAS pool. Never lanes sharing OpenBLAS's single pool.
  return harness_threads >= Cpus() ? Cpus() : 1;
}

int DefaultBlasThreads(int sdk_processes, int inference_lanes) {
  if (sdk_processes > 1) return 1;
  return std::max(1, Cpus() / std::max(1, inference_lanes));
}

Status SetBlasThreads(int threads) {
  if (threads < 1) return InvalidArgument("BLAS threads: " + std::to_string(threads) + " must be >= 1");
  cpu_blas::SetThreads(threads);
  return Status::OK();
}

int BlasThreads() { return cpu_blas::Threads(); }

void SetCpuGemmPlanCache(const std::string& path) { cpu_gemm::SetPlanCachePath(path); }
std::string CpuGemmPlanCache() { return cpu_gemm::PlanCachePath(); }

}  // namespace dfw
