// The CUDA DeviceDecoder (dfw/backend/device_decoder.h): CudaBackend::CreateDecoder makes it.
#pragma once

#include <memory>
#include <string>

#include "cuda_check.h"
#include "dfw/backend/device_decoder.h"

namespace dfw::cuda {

// Uploads `spec`'s weights (the products in spec.linear_dtype, already accepted by the backend's
// CheckLinearDType; everything else float32) and returns the decoder. It runs on `stream` with
// `pedantic` (plain FP32 cuBLAS math, for float32 products) and `tensor_math` (for bfloat16
// products), all the backend's: the backend must outlive the decoder. `device` names the GPU in
// description().
Result<std::unique_ptr<DeviceDecoder>> MakeCudaDecoder(const DecoderSpec& spec, cudaStream_t stream, cublasHandle_t pedantic,
                                                       cublasHandle_t tensor_math, std::string device);

}  // namespace dfw::cuda
