// The one place that knows which InferenceBackends exist.
//
// "cpu" is built in (OpenBLAS). "cuda" lives in a separate shared library,
// libdfw_backend_cuda.so, loaded with dlopen on first use, so that core code never links CUDA:
//   1. $DFW_CUDA_BACKEND_PATH (the library file, or a folder holding it), else
//   2. the build folder compiled in as DFW_CUDA_BACKEND_BUILD_DIR, else
//   3. the dynamic loader's search path (plain "libdfw_backend_cuda.so").
// The library exports the C symbol below. A missing library, a missing symbol, no GPU or no
// driver are reported as a Status (kUnavailable) with the reason; nothing aborts.
//
// Threading: CreateBackend may be called from several threads; the library is loaded once and
// never unloaded (backends created from it keep pointing into its code).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>

#include "dfw/backend/backend.h"
#include "dfw/backend/cpu_isa.h"
#include "dfw/common/status.h"

// Exported by libdfw_backend_cuda.so. Returns a new backend (caller owns it, delete with
// `delete`), or nullptr after writing a NUL-terminated reason of at most err_len bytes into err
// (e.g. "no CUDA device: cudaGetDeviceCount returned 100 (no CUDA-capable device is detected)").
extern "C" dfw::InferenceBackend* dfw_create_cuda_backend(char* err, std::size_t err_len);

namespace dfw {

inline constexpr const char* kCudaBackendLibrary = "libdfw_backend_cuda.so";
inline constexpr const char* kCudaBackendSymbol = "dfw_create_cuda_backend";

// Which library runs the CPU backend's matrix products (Gemm, GemmStridedBatched, Linear). The
// element-wise ops always run on the backend's own row kernels.
enum class CpuGemmPath : uint8_t {
  // Per op class, the library measured faster on this CPU: a calibration (0.1-0.3 s) once per process
  // and BLAS thread count, at the first product that needs it (src/backend/cpu/gemm_plan.h).
  kAuto,
  // OpenBLAS only: the reference the other paths are compared with.
  kOpenBlas,
  // oneDNN for every product it can create a primitive for, whatever its size (the parity tests'
  // oneDNN rows); OpenBLAS for the rest.
  kOneDnn,
};
std::string_view CpuGemmPathName(CpuGemmPath path);  // "auto", "openblas", "onednn"

struct CpuBackendOptions {
  // The GEMM library; see CpuGemmPath.
  CpuGemmPath gemm = CpuGemmPath::kAuto;
  // Test seam: when set and it returns true, oneDNN primitive creation is treated as refused, so
  // tests reach the OpenBLAS fallback and its warning. Never set outside tests.
  std::function<bool()> onednn_refuse_create_for_testing;
  // The instruction sets CheckLinearDType judges by (dfw/backend/cpu_isa.h); unset = this
  // machine's (DetectCpuIsa). Tests set made-up ones to reach the refusals on any machine.
  std::optional<CpuIsa> isa;
  // The bytes of float32 weights copies one backend keeps at most: float32 Linear layers prepared
  // once (PrepareLinear) get a copy in the layout oneDNN runs faster here ([k x n] below AVX-512,
  // oneDNN's blocked layout on AVX-512 and up), which costs their size once more per SDK process;
  // weights prepared beyond it run in nn.Linear's layout, as they are. 0: no copies.
  std::size_t f32_copy_bytes = std::size_t{256} << 20;
};

// The CPU backend: OpenBLAS and, where it is faster or asked for, oneDNN. Never fails: a oneDNN
// that cannot start (one warning per process) or refuses a shape (one warning per backend) leaves
// those products on OpenBLAS. description() names the libraries, the ISA oneDNN dispatches to and the plan.
std::unique_ptr<InferenceBackend> MakeCpuBackend(CpuBackendOptions options = {});
// The same with only the GEMM path chosen.
std::unique_ptr<InferenceBackend> MakeCpuBackend(CpuGemmPath path);

// CPU inference threading policy. OpenBLAS keeps ONE process-wide thread pool, so the BLAS knob is
// per process, not per backend instance. The rule: (SDK processes) x (inference lanes) x (BLAS
// threads) must not exceed the CPUs the worker was given.
//   - several SDK processes share the machine (Dataflow's default: one per vCPU) -> one lane and
//     one BLAS thread per process;
//   - one SDK process whose harness threads can keep every CPU busy (threads >= CPUs) -> one lane
//     per CPU, each a model running its own batches with one BLAS thread (Beam's harness threads
//     calling a shared model's run_inference concurrently). Lanes beat one multi-threaded GEMM
//     because a statically split GEMM stalls, spinning in sched_yield, whenever the JSON work of
//     another harness thread takes one of its CPUs. Measured on an idle 2-vCPU machine,
//     64→2048→2048→16, batch 256, 40k rows through `dfworker run`: 75% of the raw handler's
//     rows/s with one 2-thread lane, 92% with two 1-thread lanes (scripts/bench_inference.sh);
//   - one SDK process with fewer harness threads than CPUs -> one lane, every CPU in its BLAS
//     pool. (Lanes that would each need several BLAS threads are not used: OpenBLAS has one pool
//     per process, and concurrent callers into it were never measured to pay.)
// DefaultInferenceLanes(sdk_processes, harness_threads) (1 or the CPU count) and
// DefaultBlasThreads(sdk_processes, lanes) apply the rule (arguments clamped to >= 1). Set by PipelineRunner (RunnerOptions
// inference_lanes / blas_threads); the RunInference model_handler config key `blas_threads`
// overrides the pool and then runs one lane.
int DefaultInferenceLanes(int sdk_processes, int harness_threads);
int DefaultBlasThreads(int sdk_processes, int inference_lanes);
// The same count sizes oneDNN's OpenMP team on the CPU backend's oneDNN path: each call sets the
// calling thread's omp_set_num_threads to BlasThreads() (OpenMP's count is per calling thread, so
// each lane's calls run on its own thread alone when BLAS threads = 1).
// Sets the OpenBLAS pool size for this process (openblas_set_num_threads); `threads` must be >= 1,
// else kInvalidArgument naming the value. Safe to call from any thread between GEMMs.
Status SetBlasThreads(int threads);
// The current OpenBLAS pool size (openblas_get_num_threads).
int BlasThreads();

// Where the CPU backend's default GEMM path (kAuto) keeps the calibration it measures, shared by
// every process that sets the same path (the SDK processes of one job: "<job dir>/gemm_plan"): the
// first to need a plan measures it under an exclusive lock and writes "<path>-t<threads>"; the
// others wait for the lock and read it, so 8 processes on 2 CPUs measure once, not 8 times at once
// (which also skews what they measure). "" (the default): each process measures its own.
void SetCpuGemmPlanCache(const std::string& path);
// The path SetCpuGemmPlanCache set ("" when none): other per-CPU decisions of the job (a model's
// precision, dfw/inference/precision_choice.h) are cached beside it.
std::string CpuGemmPlanCache();

// `name` is "cpu" or "cuda"; anything else is kInvalidArgument naming the allowed values.
// When CUDA was ruled out for this process (kCudaUnavailableEnv set non-empty in its environment),
// "cuda" is kUnavailable with that reason at once, without loading the library. `dfworker run`
// rules it out for a worker whose plan has no usable GPU in the environment of its SDK processes
// and model hosts (the launcher itself makes no backend: it plans bundles from the sources alone).
// Each then skips a probe that costs ~130 ms of CPU (loading cuBLAS, asking the driver) and that
// can only fail.
Result<std::unique_ptr<InferenceBackend>> CreateBackend(std::string_view name);
inline constexpr const char* kCudaUnavailableEnv = "DFW_CUDA_UNAVAILABLE";

}  // namespace dfw
