// InferenceBackend: the compute interface every model handler runs on.
//
// The CPU backend (src/backend/cpu, BLAS) is the reference; the CUDA backend (src/backend/cuda,
// cuBLAS + kernels) is a separate shared library loaded at run time by the registry
// (src/backend/registry.cc), so core code never includes CUDA headers.
//
// Conventions: all matrices are row-major float32 unless a dtype says otherwise; pointers passed to
// the compute calls are *device* pointers obtained from Allocate() or UploadWeights() (on the CPU
// backend device memory is host memory). Calls may be asynchronous on a backend's stream; results
// are visible to the host after CopyToHost() or Synchronize().
//
// Threading: one backend instance is used by one thread at a time (each SDK harness thread that
// runs inference owns its own instance or serialises access). Distinct instances are independent.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <string_view>

#include "dfw/common/status.h"

namespace dfw {

struct DecoderSpec;     // dfw/backend/device_decoder.h
class DeviceDecoder;    // dfw/backend/device_decoder.h

enum class Activation : uint8_t {
  kNone,
  kRelu,
  kGelu,      // exact: 0.5 x (1 + erf(x / sqrt 2)) (BERT "gelu")
  kGeluTanh,  // tanh approximation ("gelu_new", "gelu_pytorch_tanh")
  kTanh,
  kSigmoid,
};

std::string_view ActivationName(Activation a);

// GELU (Activation::kGelu) of one value, the function the CPU backend's kernels compute: erf by
// the rational approximation of src/backend/cpu/fast_math.h (within 1e-6 of the exact form;
// tests/backend/cpu_fast_math_test.cc). Host-side layers (the encoders' heads, ModernBERT's MLP,
// the CPU decoder's MLP) call this one, so every layer of a model applies the same GELU.
float Gelu(float x);
// GELU's tanh approximation (Activation::kGeluTanh, "gelu_new" / "gelu_pytorch_tanh") of one value:
// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x³))) in float32 with libm's tanh, the function the CPU
// backend's kernels compute; the encoders' heads, ModernBERT's GeGLU and the CPU decoder's MLP call
// this one.
float GeluTanh(float x);

enum class DType : uint8_t { kF32, kF16, kBF16 };

// The precision a Linear layer runs in (PrepareLinear). Activations arrive and leave as float32
// whatever it is; only the product inside the layer changes:
//   kFloat32  float32 weights and products (the reference);
//   kBFloat16 bfloat16 weights (converted once) and activations (converted per call), float32
//             accumulation and output;
//   kInt8     dynamic quantisation: int8 weights with one scale per output channel (symmetric),
//             uint8 activations with one scale and zero point per row (token), int32
//             accumulation, dequantised to float32 before the bias and the activation.
enum class LinearDType : uint8_t { kFloat32, kBFloat16, kInt8 };
std::string_view LinearDTypeName(LinearDType d);  // "float32", "bfloat16", "int8"
// Bits per weight value (32, 16, 8): the `linear_dtype_bits` figure handlers record.
inline int LinearDTypeBits(LinearDType d) { return d == LinearDType::kFloat32 ? 32 : d == LinearDType::kBFloat16 ? 16 : 8; }
// The inverse of LinearDTypeName; kInvalidArgument naming the value and the allowed names.
Result<LinearDType> ParseLinearDType(std::string_view name);

// A Linear layer's weights made ready for one backend in one LinearDType (InferenceBackend::
// PrepareLinear). It remembers the float32 weights it was made from (a device pointer the caller
// keeps valid for the life of this object: the float32 path reads them in place); a reduced
// precision keeps its converted copy inside the backend's subclass. Immutable once made; use it
// only with the backend that made it.
class PreparedLinear {
 public:
  PreparedLinear(LinearDType dtype, const float* f32_weights, int n, int k)
      : dtype_(dtype), f32_(f32_weights), n_(n), k_(k) {}
  virtual ~PreparedLinear() = default;
  LinearDType dtype() const { return dtype_; }
  const float* f32_weights() const { return f32_; }  // [n x k], nn.Linear layout
  int n() const { return n_; }                       // out_features
  int k() const { return k_; }                       // in_features
  // Bytes this object holds beyond the float32 weights (converted weights, scales).
  virtual std::size_t bytes() const { return 0; }

 private:
  LinearDType dtype_;
  const float* f32_;
  int n_, k_;
};

// Owned device memory. Freed on destruction.
class DeviceBuffer {
 public:
  virtual ~DeviceBuffer() = default;
  virtual void* data() = 0;
  virtual std::size_t bytes() const = 0;
  float* f32() { return static_cast<float*>(data()); }
};

class InferenceBackend {
 public:
  virtual ~InferenceBackend() = default;

  // "cpu" or "cuda".
  virtual std::string_view name() const = 0;
  // Human description, e.g. "OpenBLAS 0.3.21 (2 threads)" or "NVIDIA H200, CC 9.0".
  virtual std::string description() const = 0;

  // ---- memory ----
  virtual Result<std::unique_ptr<DeviceBuffer>> Allocate(std::size_t bytes) = 0;
  // Makes `bytes` of host weights available on the device. On the CPU the host memory itself is
  // used (no copy: `host` must outlive the returned buffer, e.g. an mmapped file); on CUDA it is
  // copied to device memory.
  virtual Result<std::unique_ptr<DeviceBuffer>> UploadWeights(const void* host, std::size_t bytes) = 0;
  virtual Status CopyToDevice(void* dst_device, const void* src_host, std::size_t bytes) = 0;
  virtual Status CopyToHost(void* dst_host, const void* src_device, std::size_t bytes) = 0;
  virtual Status Synchronize() = 0;

  // ---- device memory shared between processes (CUDA IPC) ----
  // An opaque handle with which another process on this machine opens `buffer` (ImportBuffer)
  // and uses the same device memory, without a copy. `buffer` must be an allocation of this
  // backend (Allocate/UploadWeights). The default is kUnimplemented: backends whose "device
  // memory" is host memory share weights through a read-only file mapping instead (the CPU).
  virtual Result<std::string> ExportBuffer(DeviceBuffer& buffer) {
    (void)buffer;
    return Unimplemented(std::string(name()) + " backend: device memory cannot be exported to other processes");
  }
  // Opens a handle made by ExportBuffer in ANOTHER process (CUDA cannot open its own handles).
  // The result maps the exporter's memory (`bytes` long, as the exporter says): destroying it
  // unmaps; the memory stays the exporter's and is valid only while the exporter runs.
  virtual Result<std::unique_ptr<DeviceBuffer>> ImportBuffer(std::string_view handle, std::size_t bytes) {
    (void)handle;
    (void)bytes;
    return Unimplemented(std::string(name()) + " backend: cannot open device memory of other processes");
  }

  // ---- compute (row-major, float32) ----
  // C[m x n] = alpha * op(A) * op(B) + beta * C, op(X) = X or X^T.
  // lda/ldb/ldc are row strides in elements of the matrices as stored.
  virtual Status Gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
                      const float* b, int ldb, float beta, float* c, int ldc) = 0;
  // `batch` independent GEMMs; matrix i starts at a + i*stride_a (etc.), strides in elements.
  virtual Status GemmStridedBatched(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a,
                                    int lda, int64_t stride_a, const float* b, int ldb, int64_t stride_b, float beta,
                                    float* c, int ldc, int64_t stride_c, int batch) = 0;
  // `batch` x `heads` GEMMs at once (attention's QKᵀ and PV over every head of a batch): matrix
  // (i, h) of A starts at a + i*stride_a + h*head_stride_a, likewise B and C. The default runs one
  // GemmStridedBatched per head; a backend may run all of them as one batched product (the CPU
  // backend does on its oneDNN path).
  virtual Status GemmHeadsBatched(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a,
                                  int lda, int64_t stride_a, int64_t head_stride_a, const float* b, int ldb,
                                  int64_t stride_b, int64_t head_stride_b, float beta, float* c, int ldc,
                                  int64_t stride_c, int64_t head_stride_c, int batch, int heads) {
    if (heads < 0) return InvalidArgument("GemmHeadsBatched: negative heads " + std::to_string(heads));
    for (int h = 0; h < heads; ++h) {
      RETURN_IF_ERROR(GemmStridedBatched(trans_a, trans_b, m, n, k, alpha, a + h * head_stride_a, lda, stride_a,
                                         b + h * head_stride_b, ldb, stride_b, beta, c + h * head_stride_c, ldc,
                                         stride_c, batch));
    }
    return Status::OK();
  }
  // A dense layer: y[m x n] = act(x[m x k] · w[n x k]ᵀ + bias), with w stored as PyTorch stores
  // nn.Linear weights (out_features x in_features); bias has n entries or is nullptr; y must not
  // alias x or w. The default is Gemm then BiasActivation; a backend may fuse them (the CPU backend
  // writes the bias first and accumulates the GEMM onto it: one pass over y fewer).
  virtual Status Linear(const float* x, const float* w, const float* bias, float* y, int m, int n, int k,
                        Activation act) {
    const int ld = k > 1 ? k : 1;  // k = 0 (an empty product) still needs valid strides
    RETURN_IF_ERROR(Gemm(false, true, m, n, k, 1.f, x, ld, w, ld, 0.f, y, n));
    return BiasActivation(y, m, n, bias, act);
  }
  // ---- Linear layers in a chosen precision (LinearDType) ----
  // OK when this backend runs Linear layers in `dtype` on this machine; otherwise kUnimplemented
  // naming what is missing (the CPU backend names the instruction set). The default runs float32
  // only.
  virtual Status CheckLinearDType(LinearDType dtype) const {
    if (dtype == LinearDType::kFloat32) return Status::OK();
    return Unimplemented(std::string(name()) + " backend runs Linear layers in float32 only, not " +
                         std::string(LinearDTypeName(dtype)));
  }
  // Prepares w[n x k] (nn.Linear layout, a device pointer that must outlive the result) once, at
  // load, for Linear(x, prepared, ...) in `dtype`. Fails as CheckLinearDType does, or
  // kInvalidArgument on non-positive sizes or a null w. The default keeps float32.
  virtual Result<std::unique_ptr<PreparedLinear>> PrepareLinear(const float* w, int n, int k, LinearDType dtype) {
    RETURN_IF_ERROR(CheckLinearDType(dtype));
    if (n < 1 || k < 1 || w == nullptr) {
      return InvalidArgument("PrepareLinear: needs n, k >= 1 and weights (n=" + std::to_string(n) +
                             " k=" + std::to_string(k) + ")");
    }
    return std::make_unique<PreparedLinear>(LinearDType::kFloat32, w, n, k);
  }
  // y[m x n] = act(x[m x k] · wᵀ + bias) with weights from this backend's PrepareLinear, in their
  // dtype; bias (n floats, float32) may be nullptr; y must not alias x. The default runs the
  // float32 Linear on the weights w was made from.
  virtual Status Linear(const float* x, const PreparedLinear& w, const float* bias, float* y, int m, Activation act) {
    return Linear(x, w.f32_weights(), bias, y, m, w.n(), w.k(), act);
  }

  // x[m x n] = act(x + bias) in place; bias has n entries or is nullptr.
  virtual Status BiasActivation(float* x, int m, int n, const float* bias, Activation act) = 0;
  // Row-wise softmax of x[m x n] in place.
  virtual Status Softmax(float* x, int m, int n) = 0;
  // Attention scores in place: for each of `batch` sequences and `heads` heads, a [q_len x k_len]
  // block at x + ((b*heads)+h)*q_len*k_len becomes softmax(scale * x + mask), where mask[b][j] is
  // 0 for real tokens and -inf (or a large negative) for padding. mask may be nullptr.
  virtual Status ScaledMaskedSoftmax(float* x, int batch, int heads, int q_len, int k_len, float scale,
                                     const float* mask) = 0;
  // How many sequences an encoder's attention (scores, softmax, context) should cover per round of
  // calls, for `heads` heads of `seq` x `seq` scores: every one at once by default (a GPU wants
  // few large launches); the CPU backend answers what keeps the scores in its core's cache.
  virtual int AttentionSequencesPerCall(int heads, int seq) const {
    (void)heads;
    (void)seq;
    return std::numeric_limits<int>::max();
  }
  // How many tokens (sequences x their padded length) an encoder should run through its layers per
  // call, for a model whose widest activation row is `widest_row` floats (BERT: the feed-forward
  // width): no cap by default (a GPU wants few large launches; the caller's sequence count bounds
  // the sub-batch); the CPU backend answers what keeps a sub-batch's activations in its core's
  // cache. A sub-batch holds at least one sequence whatever this says.
  virtual int EncoderTokensPerCall(int widest_row) const {
    (void)widest_row;
    return std::numeric_limits<int>::max();
  }
  // y[m x n] = LayerNorm(x + residual) * gamma + beta over each row; residual may be nullptr;
  // y may alias x.
  virtual Status LayerNorm(const float* x, const float* residual, const float* gamma, const float* beta, float* y,
                           int m, int n, float eps) = 0;

  // ---- a whole decoder-only model on the device (dfw/backend/device_decoder.h) ----
  // Takes `spec`'s weights (the CUDA backend copies them to the device once; the CPU backend keeps
  // the host weights through spec.host_weights_owner) and returns the decoder that runs every
  // forward step, with its KV pool. The default is kUnimplemented (a backend with no decoder
  // engine); DecoderModel::Load fails on any error (out of device memory, a refused linear_dtype,
  // a spec ValidateDecoderSpec refuses), naming the backend.
  // Defined in src/backend/device_decoder.cc (the result's type is incomplete here).
  virtual Result<std::unique_ptr<DeviceDecoder>> CreateDecoder(const DecoderSpec& spec);
};

}  // namespace dfw
