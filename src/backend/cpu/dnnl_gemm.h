// DnnlGemm: the CPU backend's oneDNN matmul path (libdnnl, Debian's oneDNN 2.x, OpenMP runtime).
//
// Why it exists: OpenBLAS picks its kernels once, from the CPU or from OPENBLAS_CORETYPE, which
// images set to a safe older core (Haswell); oneDNN dispatches on the CPU it runs on (capped only by
// ONEDNN_MAX_CPU_ISA), so it reaches AVX-512/AMX widths that such an OpenBLAS never uses. OpenBLAS
// stays the reference and the fallback (cpu_backend.cc).
//
// One matmul primitive per call shape (sizes, transposes, strides, alpha/beta, bias, activation),
// created on first use and kept in a small LRU cache, so a batch of a shape seen before creates
// nothing. Bias and the activation of Linear are fused as post-ops; alpha is an output scale and
// beta a sum post-op. Linear weights are used in place (format "ba", i.e. w stored [n x k]), or from
// a copy the backend prepares once in the layout that runs faster here (LinearWeightsLayout): below
// AVX-512 a [k x n] copy ("ab": Debian's oneDNN 2.6 runs f32 matmul there through its jit GEMM,
// which packs B itself and takes plain layouts only), on AVX-512 and up oneDNN's own blocked
// layout (BlockWeights: its brgemm kernels read B in blocks, and a plain B is copied into them on
// every call).
//
// Results: every call returns
//   - true: oneDNN computed the result;
//   - false: no primitive for this shape (oneDNN refused to create one: the first refusal of this
//     DnnlGemm is logged as one warning, later ones are silent; a refused shape is remembered, not
//     retried). The caller must compute the result itself (OpenBLAS); nothing was written;
//   - an error Status when a created primitive failed to execute (C may be partly written).
//
// Threading: one DnnlGemm is used by one thread at a time (as its backend). oneDNN's OpenMP
// runtime sizes its team from the *calling thread's* omp_set_num_threads; each call first sets it
// to `threads()` of the options below, so inference lanes (threads = 1 each) never start teams and
// one lane gets a pool the size of the BLAS pool. libgomp is not fork-safe: a process that has run
// a oneDNN call with more than one thread must not fork a child that calls oneDNN without exec
// (dfworker's children, SDK processes and model hosts, are fork + exec: each starts afresh).
#pragma once

#include <cstdint>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "dfw/backend/backend.h"
#include "dfw/common/status.h"

namespace dfw::cpu_dnnl {

// The ISA oneDNN dispatches to in this process, lower case ("avx2", "avx512_core", "sse41", ...).
std::string EffectiveIsaName();
// How float32 Linear weights run fastest on oneDNN here; the backend keeps one copy so laid out
// (shared by a lane's encoders). Measured with bench/backend_gemm_bench.cc BM_LinearWeightsLayout
// (six all-MiniLM-L6-v2 layers' products, one thread):
//   - kKn below AVX-512 (the jit GEMM packs B on every call, a transposed B more slowly): 84 -> 88
//     GFLOP/s at 256 rows and 89 -> 97 at 128 (ONEDNN_MAX_CPU_ISA=AVX2 on an Intel Xeon);
//   - kBlocked on AVX-512 and up (brgemm; a plain B is copied into its blocks on every call): see
//     docs/precision.md for the figures per CPU.
enum class WeightsLayout {
  kNk,       // nn.Linear's [n x k], used in place (no copy)
  kKn,       // [k x n] (wᵀ row-major)
  kBlocked,  // the blocked layout oneDNN's matmul picks for the weights (BlockWeights)
};
WeightsLayout LinearWeightsLayout();
// "oneDNN 2.6.3 (OpenMP)": the library version and its CPU threading runtime.
std::string LibraryName();

struct DnnlGemmOptions {
  // Thread count for every call; called before each execution (the backend passes the OpenBLAS
  // pool size, so both libraries honour SetBlasThreads / the runner's policy). Required.
  std::function<int()> threads;
  // Test seam: when set and it returns true, a primitive creation is treated as refused by oneDNN
  // (exercises the OpenBLAS fallback and its warning). Never set in production.
  std::function<bool()> refuse_create_for_testing;
  // Primitives kept (least recently used dropped first). The encoder needs about 7 per distinct
  // padded sequence length it sees.
  std::size_t max_primitives = 256;
};

// Sets the calling thread's OpenMP team size (oneDNN's thread count) to `threads` (>= 1; cheap
// when already right). The OpenMP runtime is the one libdnnl loaded, looked up in the process.
void ApplyOmpThreads(int threads);

// float32 Linear weights reordered once into the blocked layout oneDNN's matmul picks for a
// [rows x k] · [k x n] product (format "any"); made by DnnlGemm::BlockWeights, run by
// DnnlGemm::Linear. Immutable once made; shared between threads is fine (only read).
class BlockedWeights {
 public:
  struct Impl;  // the oneDNN memory descriptor and the buffer (oneDNN types stay in the .cc)
  explicit BlockedWeights(std::unique_ptr<Impl> impl);
  ~BlockedWeights();
  int n() const;
  int k() const;
  std::size_t bytes() const;  // the blocked buffer (the layout pads n and k to its blocks)
  const Impl& impl() const { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

class DnnlGemm {
 public:
  // Fails (kUnavailable) when oneDNN has no CPU engine; the backend then runs OpenBLAS only.
  static Result<std::unique_ptr<DnnlGemm>> Make(DnnlGemmOptions options);
  ~DnnlGemm();

  // As InferenceBackend::Gemm / GemmStridedBatched (arguments already checked, m, n, k > 0).
  Result<bool> Gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
                    const float* b, int ldb, float beta, float* c, int ldc);
  Result<bool> GemmStridedBatched(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a,
                                  int lda, int64_t stride_a, const float* b, int ldb, int64_t stride_b, float beta,
                                  float* c, int ldc, int64_t stride_c, int batch);
  // As InferenceBackend::GemmHeadsBatched: one 4-D matmul over batch x heads.
  Result<bool> GemmHeadsBatched(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
                                int64_t stride_a, int64_t head_stride_a, const float* b, int ldb, int64_t stride_b,
                                int64_t head_stride_b, float beta, float* c, int ldc, int64_t stride_c,
                                int64_t head_stride_c, int batch, int heads);
  // As InferenceBackend::Linear (m, n, k > 0): y = act(x · wᵀ + bias), bias and act as post-ops.
  // weights_kn: w is stored [k x n] (wᵀ, row-major) rather than nn.Linear's [n x k].
  Result<bool> Linear(const float* x, const float* w, const float* bias, float* y, int m, int n, int k,
                      Activation act, bool weights_kn = false);
  // w [n x k] (nn.Linear) reordered into oneDNN's blocked layout for this product. Null, without an
  // error, where that layout would not pay: oneDNN picks a plain layout here, or its blocks pad the
  // weights by more than an eighth (a narrow classifier head: n = 2 is padded to 64 columns).
  Result<std::shared_ptr<const BlockedWeights>> BlockWeights(const float* w, int n, int k);
  // As Linear, on weights from BlockWeights. False (nothing written) where the primitive oneDNN
  // creates for m rows wants another weights layout than the one w was made for; the caller then
  // runs nn.Linear's weights. Such a miss is remembered per shape and not logged.
  Result<bool> Linear(const float* x, const BlockedWeights& w, const float* bias, float* y, int m, Activation act);

  // Primitives created so far (cache misses), and those refused; for tests and the description.
  int64_t primitives_created() const { return created_; }
  int64_t primitives_refused() const { return refused_; }
  // Shapes whose primitive wanted another weights layout than BlockWeights made (see Linear).
  int64_t layout_misses() const { return layout_misses_; }

  struct Key;

 private:
  struct Impl;  // engine, stream and the primitive cache (oneDNN types stay in the .cc)
  explicit DnnlGemm(std::unique_ptr<Impl> impl);
  Result<bool> Run(const Key& key, const void* a, const void* b, const void* bias, void* c,
                   const BlockedWeights* blocked = nullptr);

  std::unique_ptr<Impl> impl_;
  int64_t created_ = 0;
  int64_t refused_ = 0;
  int64_t layout_misses_ = 0;
};

}  // namespace dfw::cpu_dnnl
