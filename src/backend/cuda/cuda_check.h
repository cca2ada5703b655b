// The one macro through which every CUDA runtime and cuBLAS call in the CUDA backend goes.
//
//   DFW_CUDA_CHECK(cudaMemcpyAsync(...));
//
// On failure it returns (from the enclosing function, which returns Status or Result<T>) a Status
// that names the call as written, file:line, the device ordinal and the library's error text, e.g.
//   "cuda backend: cudaMalloc(&p, bytes) failed at cuda_backend.cc:88 on device 0:
//    out of memory (cudaErrorMemoryAllocation)".
// It never aborts: a worker reports the failure and the bundle is retried. Out-of-memory errors
// become kResourceExhausted, a missing device or driver kUnavailable, everything else kInternal.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "dfw/common/status.h"

namespace dfw::cuda {

Status CheckCall(cudaError_t code, const char* call, const char* file, int line);
Status CheckCall(cublasStatus_t code, const char* call, const char* file, int line);

}  // namespace dfw::cuda

#define DFW_CUDA_CHECK(expr) RETURN_IF_ERROR(::dfw::cuda::CheckCall((expr), #expr, __FILE__, __LINE__))
