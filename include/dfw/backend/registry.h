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
#include <memory>
#include <string_view>

#include "dfw/backend/backend.h"
#include "dfw/common/status.h"

// Exported by libdfw_backend_cuda.so. Returns a new backend (caller owns it, delete with
// `delete`), or nullptr after writing a NUL-terminated reason of at most err_len bytes into err
// (e.g. "no CUDA device: cudaGetDeviceCount returned 100 (no CUDA-capable device is detected)").
extern "C" dfw::InferenceBackend* dfw_create_cuda_backend(char* err, std::size_t err_len);

namespace dfw {

inline constexpr const char* kCudaBackendLibrary = "libdfw_backend_cuda.so";
inline constexpr const char* kCudaBackendSymbol = "dfw_create_cuda_backend";

// The CPU (OpenBLAS) backend. Never fails.
std::unique_ptr<InferenceBackend> MakeCpuBackend();

// BLAS threading policy. OpenBLAS keeps ONE process-wide thread pool, so the knob is per process,
// not per backend instance. The rule: (SDK processes) x (BLAS threads) must not exceed the CPUs the
// worker was given, and BLAS threads must not run on top of busy TBB harness threads:
//   - several SDK processes share the machine (Dataflow's default: one per vCPU) -> 1 per process;
//   - one SDK process -> every CPU. Measured on an idle 2-vCPU machine, 2 harness threads,
//     64→2048→2048→16, 40k rows through `dfworker run`, raw handler 9.2–9.4k rows/s (2 BLAS
//     threads): the pipeline ran 7.44k rec/s with 2 BLAS threads and 5.6–5.7k with 1 (80% vs
//     61% of raw). The JSON work of the other harness threads is small next to the GEMMs, so
//     reserving a CPU for it idled that CPU. (An earlier measurement on a machine at load 7–8
//     had suggested the opposite.)
// DefaultBlasThreads(sdk_processes, harness_threads) applies that rule (both clamped to >= 1).
// Set by PipelineRunner (RunnerOptions::blas_threads) and overridable per model with the
// RunInference model_handler config key `blas_threads`.
int DefaultBlasThreads(int sdk_processes, int harness_threads);
// Sets the OpenBLAS pool size for this process (openblas_set_num_threads); `threads` must be >= 1,
// else kInvalidArgument naming the value. Safe to call from any thread between GEMMs.
Status SetBlasThreads(int threads);
// The current OpenBLAS pool size (openblas_get_num_threads).
int BlasThreads();

// `name` is "cpu" or "cuda"; anything else is kInvalidArgument naming the allowed values.
// When the environment has kCudaUnavailableEnv set (non-empty), "cuda" is kUnavailable with that
// reason at once, without loading the library: `dfworker run` sets it for a worker whose plan has
// no usable GPU, so the launcher and its SDK processes skip a probe that costs each of them
// ~130 ms of CPU (loading cuBLAS, asking the driver) and that can only fail.
Result<std::unique_ptr<InferenceBackend>> CreateBackend(std::string_view name);
inline constexpr const char* kCudaUnavailableEnv = "DFW_CUDA_UNAVAILABLE";

}  // namespace dfw
