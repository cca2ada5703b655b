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

// `name` is "cpu" or "cuda"; anything else is kInvalidArgument naming the allowed values.
Result<std::unique_ptr<InferenceBackend>> CreateBackend(std::string_view name);

}  // namespace dfw
