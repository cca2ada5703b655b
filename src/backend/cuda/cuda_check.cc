#include "cuda_check.h"

#include <string>

namespace dfw::cuda {
namespace {

std::string Where(const char* call, const char* file, int line) {
  std::string f(file);
  std::size_t slash = f.rfind('/');
  if (slash != std::string::npos) f = f.substr(slash + 1);
  int device = -1;
  // Not checked: this runs on an error path only, and -1 says "unknown".
  if (cudaGetDevice(&device) != cudaSuccess) device = -1;
  return "cuda backend: " + std::string(call) + " failed at " + f + ":" + std::to_string(line) + " on device " +
         std::to_string(device) + ": ";
}

}  // namespace

Status CheckCall(cudaError_t code, const char* call, const char* file, int line) {
  if (code == cudaSuccess) return Status::OK();
  std::string msg = Where(call, file, line) + cudaGetErrorString(code) + " (" + cudaGetErrorName(code) + ")";
  switch (code) {
    case cudaErrorMemoryAllocation:
      return ResourceExhausted(msg);
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorStubLibrary:
    case cudaErrorDevicesUnavailable:
      return Unavailable(msg);
    default:
      return Internal(msg);
  }
}

Status CheckCall(cublasStatus_t code, const char* call, const char* file, int line) {
  if (code == CUBLAS_STATUS_SUCCESS) return Status::OK();
  std::string msg = Where(call, file, line) + cublasGetStatusString(code) + " (" + cublasGetStatusName(code) + ")";
  return code == CUBLAS_STATUS_ALLOC_FAILED ? ResourceExhausted(msg) : Internal(msg);
}

}  // namespace dfw::cuda
