// The CUDA backend: cuBLAS for the GEMMs, kernels.cu for the rest. One stream and one cuBLAS
// handle per instance, both owned by unique_ptr with deleters; every CUDA/cuBLAS call goes
// through DFW_CUDA_CHECK and becomes a Status.
#include <algorithm>
#include <cstring>
#include <memory>
#include <new>
#include <string>

#include "cuda_check.h"
#include "decoder_cuda.h"
#include "dfw/backend/backend.h"
#include "dfw/backend/device_decoder.h"
#include "dfw/backend/registry.h"
#include "kernels.h"

namespace dfw::cuda {
namespace {

struct DeviceFree {
  void operator()(void* p) const { (void)cudaFree(p); }  // a destructor cannot report; nothing to do on failure
};
struct StreamDestroy {
  void operator()(CUstream_st* s) const { (void)cudaStreamDestroy(s); }
};
struct HandleDestroy {
  void operator()(cublasContext* h) const { (void)cublasDestroy(h); }
};
using DevicePtr = std::unique_ptr<void, DeviceFree>;
using StreamPtr = std::unique_ptr<CUstream_st, StreamDestroy>;
using HandlePtr = std::unique_ptr<cublasContext, HandleDestroy>;

class CudaBuffer final : public DeviceBuffer {
 public:
  CudaBuffer(DevicePtr p, std::size_t bytes) : p_(std::move(p)), bytes_(bytes) {}
  void* data() override { return p_.get(); }
  std::size_t bytes() const override { return bytes_; }

 private:
  DevicePtr p_;
  std::size_t bytes_;
};

// Device memory of another process, opened from its IPC handle; closing unmaps it (the memory
// stays the exporter's).
class CudaIpcBuffer final : public DeviceBuffer {
 public:
  CudaIpcBuffer(void* p, std::size_t bytes) : p_(p), bytes_(bytes) {}
  ~CudaIpcBuffer() override { (void)cudaIpcCloseMemHandle(p_); }  // a destructor cannot report
  CudaIpcBuffer(const CudaIpcBuffer&) = delete;
  CudaIpcBuffer& operator=(const CudaIpcBuffer&) = delete;
  void* data() override { return p_; }
  std::size_t bytes() const override { return bytes_; }

 private:
  void* p_;
  std::size_t bytes_;
};

Status CheckSizes(const char* op, long long m, long long n) {
  if (m < 0 || n < 0) {
    return InvalidArgument(std::string(op) + ": negative size m=" + std::to_string(m) + " n=" + std::to_string(n));
  }
  return Status::OK();
}

Status CheckGemm(bool trans_a, bool trans_b, int m, int n, int k, int lda, int ldb, int ldc) {
  if (m < 0 || n < 0 || k < 0) {
    return InvalidArgument("Gemm: negative size m=" + std::to_string(m) + " n=" + std::to_string(n) +
                           " k=" + std::to_string(k));
  }
  const int a_cols = trans_a ? m : k, b_cols = trans_b ? k : n;
  if (lda < std::max(1, a_cols) || ldb < std::max(1, b_cols) || ldc < std::max(1, n)) {
    return InvalidArgument("Gemm: leading dimension too small (lda=" + std::to_string(lda) + " needs >= " +
                           std::to_string(a_cols) + ", ldb=" + std::to_string(ldb) + " needs >= " +
                           std::to_string(b_cols) + ", ldc=" + std::to_string(ldc) + " needs >= " + std::to_string(n) +
                           ")");
  }
  return Status::OK();
}

// Linear weights in bfloat16 on the device (PrepareLinear), converted once from the float32 ones.
class CudaBf16Weights final : public PreparedLinear {
 public:
  CudaBf16Weights(const float* w, int n, int k, DevicePtr bf16) : PreparedLinear(LinearDType::kBFloat16, w, n, k), bf16_(std::move(bf16)) {}
  std::size_t bytes() const override { return static_cast<std::size_t>(n()) * k() * 2; }
  const void* bf16() const { return bf16_.get(); }

 private:
  DevicePtr bf16_;
};

class CudaBackend final : public InferenceBackend {
 public:
  static Result<std::unique_ptr<CudaBackend>> Make() {
    int count = 0;
    DFW_CUDA_CHECK(cudaGetDeviceCount(&count));
    if (count == 0) return Unavailable("cuda backend: the driver reports no CUDA device");
    int device = 0;
    DFW_CUDA_CHECK(cudaSetDevice(device));
    cudaDeviceProp prop;
    DFW_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
    cudaStream_t raw_stream = nullptr;
    DFW_CUDA_CHECK(cudaStreamCreateWithFlags(&raw_stream, cudaStreamNonBlocking));
    StreamPtr stream(raw_stream);
    cublasHandle_t raw_handle = nullptr;
    DFW_CUDA_CHECK(cublasCreate(&raw_handle));
    HandlePtr handle(raw_handle);
    DFW_CUDA_CHECK(cublasSetStream(handle.get(), stream.get()));
    // Plain FP32 (no TF32 tensor-core rounding), so results match the CPU reference closely.
    DFW_CUDA_CHECK(cublasSetMathMode(handle.get(), CUBLAS_PEDANTIC_MATH));
    std::string description = std::string(prop.name) + ", CC " + std::to_string(prop.major) + "." +
                              std::to_string(prop.minor) + ", " + std::to_string(prop.totalGlobalMem >> 20) + " MiB";
    // A second handle on the same stream for the reduced-precision Linear layers: tensor-core math
    // (the pedantic one above may keep cuBLAS off the tensor cores).
    cublasHandle_t raw_lowp = nullptr;
    DFW_CUDA_CHECK(cublasCreate(&raw_lowp));
    HandlePtr lowp(raw_lowp);
    DFW_CUDA_CHECK(cublasSetStream(lowp.get(), stream.get()));
    DFW_CUDA_CHECK(cublasSetMathMode(lowp.get(), CUBLAS_DEFAULT_MATH));
    auto backend = std::unique_ptr<CudaBackend>(new CudaBackend(device, std::move(description), std::move(stream), std::move(handle)));
    backend->lowp_handle_ = std::move(lowp);
    backend->compute_major_ = prop.major;
    backend->compute_minor_ = prop.minor;
    return backend;
  }

  std::string_view name() const override { return "cuda"; }
  std::string description() const override { return description_; }

  Result<std::unique_ptr<DeviceBuffer>> Allocate(std::size_t bytes) override {
    void* p = nullptr;
    DFW_CUDA_CHECK(cudaMalloc(&p, std::max<std::size_t>(bytes, 1)));
    return std::unique_ptr<DeviceBuffer>(std::make_unique<CudaBuffer>(DevicePtr(p), bytes));
  }

  Result<std::unique_ptr<DeviceBuffer>> UploadWeights(const void* host, std::size_t bytes) override {
    if (host == nullptr && bytes > 0) return InvalidArgument("UploadWeights: null host pointer");
    ASSIGN_OR_RETURN(std::unique_ptr<DeviceBuffer> buffer, Allocate(bytes));
    if (bytes > 0) {
      DFW_CUDA_CHECK(cudaMemcpyAsync(buffer->data(), host, bytes, cudaMemcpyHostToDevice, stream_.get()));
      // The host copy may be unmapped as soon as this returns.
      DFW_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
    }
    return buffer;
  }

  // cudaIpcGetMemHandle names the whole allocation, so only a buffer this backend allocated (whose
  // data() is the allocation's base) is exported.
  Result<std::string> ExportBuffer(DeviceBuffer& buffer) override {
    if (dynamic_cast<CudaBuffer*>(&buffer) == nullptr) {
      return InvalidArgument("ExportBuffer: not a buffer allocated by this CUDA backend");
    }
    cudaIpcMemHandle_t handle;
    DFW_CUDA_CHECK(cudaIpcGetMemHandle(&handle, buffer.data()));
    return std::string(reinterpret_cast<const char*>(&handle), sizeof(handle));
  }

  Result<std::unique_ptr<DeviceBuffer>> ImportBuffer(std::string_view handle, std::size_t bytes) override {
    cudaIpcMemHandle_t h;
    if (handle.size() != sizeof(h)) {
      return InvalidArgument("ImportBuffer: a CUDA IPC handle has " + std::to_string(sizeof(h)) + " bytes, got " +
                             std::to_string(handle.size()));
    }
    std::memcpy(&h, handle.data(), sizeof(h));
    void* p = nullptr;
    DFW_CUDA_CHECK(cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess));
    return std::unique_ptr<DeviceBuffer>(std::make_unique<CudaIpcBuffer>(p, bytes));
  }

  Status CopyToDevice(void* dst, const void* src, std::size_t bytes) override {
    if (bytes == 0) return Status::OK();
    if (dst == nullptr || src == nullptr) return InvalidArgument("CopyToDevice: null pointer");
    DFW_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_.get()));
    // Pageable host memory may be reused by the caller right after the call: wait for the copy.
    DFW_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
    return Status::OK();
  }

  Status CopyToHost(void* dst, const void* src, std::size_t bytes) override {
    if (bytes == 0) return Status::OK();
    if (dst == nullptr || src == nullptr) return InvalidArgument("CopyToHost: null pointer");
    DFW_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream_.get()));
    DFW_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
    return Status::OK();
  }

  Status Synchronize() override {
    DFW_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
    return Status::OK();
  }

  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: swap the operands and m/n,
  // keep each operand's transpose flag (a row-major matrix read column-major is its transpose).
  Status Gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda, const float* b,
              int ldb, float beta, float* c, int ldc) override {
    RETURN_IF_ERROR(CheckGemm(trans_a, trans_b, m, n, k, lda, ldb, ldc));
    if (m == 0 || n == 0) return Status::OK();
    if (c == nullptr || (k > 0 && (a == nullptr || b == nullptr))) return InvalidArgument("Gemm: null matrix pointer");
    DFW_CUDA_CHECK(cublasSgemm(handle_.get(), Op(trans_b), Op(trans_a), n, m, k, &alpha, b, ldb, a, lda, &beta, c, ldc));
    return Status::OK();
  }

  Status GemmStridedBatched(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
                            int64_t stride_a, const float* b, int ldb, int64_t stride_b, float beta, float* c, int ldc,
                            int64_t stride_c, int batch) override {
    RETURN_IF_ERROR(CheckGemm(trans_a, trans_b, m, n, k, lda, ldb, ldc));
    if (batch < 0) return InvalidArgument("GemmStridedBatched: negative batch " + std::to_string(batch));
    if (m == 0 || n == 0 || batch == 0) return Status::OK();
    if (c == nullptr || (k > 0 && (a == nullptr || b == nullptr))) {
      return InvalidArgument("GemmStridedBatched: null matrix pointer");
    }
    DFW_CUDA_CHECK(cublasSgemmStridedBatched(handle_.get(), Op(trans_b), Op(trans_a), n, m, k, &alpha, b, ldb, stride_b,
                                             a, lda, stride_a, &beta, c, ldc, stride_c, batch));
    return Status::OK();
  }

  // bfloat16 Linear layers on the tensor cores (cublasGemmEx, bf16 inputs, float32 accumulation and
  // output) from compute capability 8.0 (Ampere) on; int8 is not built for CUDA.
  Status CheckLinearDType(LinearDType dtype) const override {
    if (dtype == LinearDType::kFloat32) return Status::OK();
    if (dtype == LinearDType::kBFloat16) {
      if (compute_major_ >= 8) return Status::OK();
      return Unimplemented("dtype 'bfloat16' on cuda needs compute capability 8.0 or later (bf16 tensor cores); this GPU "
                           "has " + std::to_string(compute_major_) + "." + std::to_string(compute_minor_));
    }
    return Unimplemented("cuda backend runs Linear layers in float32 or bfloat16, not " + std::string(LinearDTypeName(dtype)));
  }

  Result<std::unique_ptr<PreparedLinear>> PrepareLinear(const float* w, int n, int k, LinearDType dtype) override {
    RETURN_IF_ERROR(CheckLinearDType(dtype));
    if (n < 1 || k < 1 || w == nullptr) {
      return InvalidArgument("PrepareLinear: needs n, k >= 1 and weights (n=" + std::to_string(n) + " k=" + std::to_string(k) + ")");
    }
    if (dtype == LinearDType::kFloat32) return std::make_unique<PreparedLinear>(LinearDType::kFloat32, w, n, k);
    const long long count = static_cast<long long>(n) * k;
    void* p = nullptr;
    DFW_CUDA_CHECK(cudaMalloc(&p, static_cast<std::size_t>(count) * 2));
    DevicePtr bf16(p);
    DFW_CUDA_CHECK(LaunchToBf16(w, bf16.get(), count, stream_.get()));
    DFW_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
    return std::unique_ptr<PreparedLinear>(std::make_unique<CudaBf16Weights>(w, n, k, std::move(bf16)));
  }

  // y = act(x · wᵀ + bias): x converted to bfloat16 into a scratch buffer kept between calls, one
  // GemmEx (row-major y is column-major yᵀ = w · xᵀ, as Gemm swaps its operands), then the bias
  // and activation kernel.
  Status Linear(const float* x, const PreparedLinear& prepared, const float* bias, float* y, int m, Activation act) override {
    const auto* w = dynamic_cast<const CudaBf16Weights*>(&prepared);
    if (w == nullptr) return InferenceBackend::Linear(x, prepared, bias, y, m, act);  // float32 weights
    const int n = w->n(), k = w->k();
    RETURN_IF_ERROR(CheckSizes("Linear", m, n));
    if (m == 0) return Status::OK();
    if (x == nullptr || y == nullptr) return InvalidArgument("Linear: null x or y");
    const std::size_t need = static_cast<std::size_t>(m) * k * 2;
    if (x_bf16_bytes_ < need) {
      void* p = nullptr;
      DFW_CUDA_CHECK(cudaMalloc(&p, need));
      x_bf16_.reset(p);
      x_bf16_bytes_ = need;
    }
    DFW_CUDA_CHECK(LaunchToBf16(x, x_bf16_.get(), static_cast<long long>(m) * k, stream_.get()));
    const float alpha = 1.f, beta = 0.f;
    DFW_CUDA_CHECK(cublasGemmEx(lowp_handle_.get(), CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, &alpha, w->bf16(), CUDA_R_16BF, k,
                                x_bf16_.get(), CUDA_R_16BF, k, &beta, y, CUDA_R_32F, n, CUBLAS_COMPUTE_32F,
                                CUBLAS_GEMM_DEFAULT));
    return BiasActivation(y, m, n, bias, act);
  }

  // The whole decoder step on the GPU (decoder_cuda.cc), on this backend's stream and handles.
  Result<std::unique_ptr<DeviceDecoder>> CreateDecoder(const DecoderSpec& spec) override {
    RETURN_IF_ERROR(CheckLinearDType(spec.linear_dtype));
    return MakeCudaDecoder(spec, stream_.get(), handle_.get(), lowp_handle_.get(), description_);
  }

  Status BiasActivation(float* x, int m, int n, const float* bias, Activation act) override {
    RETURN_IF_ERROR(CheckSizes("BiasActivation", m, n));
    if (m > 0 && n > 0 && x == nullptr) return InvalidArgument("BiasActivation: null matrix pointer");
    DFW_CUDA_CHECK(LaunchBiasActivation(x, m, n, bias, act, stream_.get()));
    return Status::OK();
  }

  Status Softmax(float* x, int m, int n) override {
    RETURN_IF_ERROR(CheckSizes("Softmax", m, n));
    if (m > 0 && n > 0 && x == nullptr) return InvalidArgument("Softmax: null matrix pointer");
    DFW_CUDA_CHECK(LaunchSoftmaxRows(x, m, n, 1.0f, nullptr, 1, stream_.get()));
    return Status::OK();
  }

  Status ScaledMaskedSoftmax(float* x, int batch, int heads, int q_len, int k_len, float scale,
                             const float* mask) override {
    if (batch < 0 || heads < 0) return InvalidArgument("ScaledMaskedSoftmax: negative batch or heads");
    RETURN_IF_ERROR(CheckSizes("ScaledMaskedSoftmax", q_len, k_len));
    const long long rows_per_sequence = static_cast<long long>(heads) * q_len;
    const long long rows = static_cast<long long>(batch) * rows_per_sequence;
    if (rows > 0 && k_len > 0 && x == nullptr) return InvalidArgument("ScaledMaskedSoftmax: null matrix pointer");
    DFW_CUDA_CHECK(LaunchSoftmaxRows(x, rows, k_len, scale, mask, rows_per_sequence, stream_.get()));
    return Status::OK();
  }

  Status LayerNorm(const float* x, const float* residual, const float* gamma, const float* beta, float* y, int m, int n,
                   float eps) override {
    RETURN_IF_ERROR(CheckSizes("LayerNorm", m, n));
    if (m > 0 && n > 0 && (x == nullptr || y == nullptr || gamma == nullptr || beta == nullptr)) {
      return InvalidArgument("LayerNorm: null x, y, gamma or beta");
    }
    DFW_CUDA_CHECK(LaunchLayerNorm(x, residual, gamma, beta, y, m, n, eps, stream_.get()));
    return Status::OK();
  }

 private:
  CudaBackend(int device, std::string description, StreamPtr stream, HandlePtr handle)
      : device_(device), description_(std::move(description)), stream_(std::move(stream)), handle_(std::move(handle)) {}

  static cublasOperation_t Op(bool trans) { return trans ? CUBLAS_OP_T : CUBLAS_OP_N; }

  int device_;
  std::string description_;
  // Declared before the handles so they (which use the stream) are destroyed first.
  StreamPtr stream_;
  HandlePtr handle_;
  HandlePtr lowp_handle_;  // tensor-core math, for bfloat16 Linear layers
  int compute_major_ = 0, compute_minor_ = 0;
  DevicePtr x_bf16_;  // the activations of the last bfloat16 Linear, converted
  std::size_t x_bf16_bytes_ = 0;
};

void WriteError(char* err, std::size_t err_len, const std::string& message) {
  if (err == nullptr || err_len == 0) return;
  const std::size_t n = std::min(message.size(), err_len - 1);
  std::memcpy(err, message.data(), n);
  err[n] = '\0';
}

}  // namespace
}  // namespace dfw::cuda

// The registry's entry point (registry.h). No exception crosses this C boundary.
extern "C" __attribute__((visibility("default"))) dfw::InferenceBackend* dfw_create_cuda_backend(char* err,
                                                                                                std::size_t err_len) {
  try {
    dfw::Result<std::unique_ptr<dfw::cuda::CudaBackend>> backend = dfw::cuda::CudaBackend::Make();
    if (!backend.ok()) {
      dfw::cuda::WriteError(err, err_len, backend.status().ToString());
      return nullptr;
    }
    return std::move(backend).value().release();
  } catch (const std::exception& e) {
    dfw::cuda::WriteError(err, err_len, std::string("cuda backend: ") + e.what());
  } catch (...) {
    dfw::cuda::WriteError(err, err_len, "cuda backend: unknown exception");
  }
  return nullptr;
}
