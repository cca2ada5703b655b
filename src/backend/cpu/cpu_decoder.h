// The CPU DeviceDecoder (dfw/backend/device_decoder.h): CpuBackend::CreateDecoder makes it. The
// whole forward step in host memory: the products on `backend`'s PrepareLinear / Linear (prefill)
// or the streaming kernels (dfw/backend/skinny_kernels.h, steps of at most spec.skinny_rows rows),
// norms, RoPE, the MLP's activation and paged attention on dfw/backend/decoder_kernels.h, and the
// KV cache a pool of host blocks indexed by the caller's block ids.
//
// Ownership: the decoder reads the spec's float32 host weights in place and keeps
// spec.host_weights_owner for its life (a spec without an owner is refused); `backend` must outlive
// it. Threading: one thread at a time per decoder; a step's attention and streaming products use
// the backend's BLAS thread count.
#pragma once

#include <memory>

#include "dfw/backend/backend.h"
#include "dfw/backend/device_decoder.h"
#include "dfw/common/status.h"

namespace dfw::cpu_decoder {

// Validates `spec` (ValidateDecoderSpec, an owner of its weights) and prepares every product on
// `backend` in spec.linear_dtype (a dtype the backend refuses fails here).
Result<std::unique_ptr<DeviceDecoder>> MakeCpuDecoder(const DecoderSpec& spec, InferenceBackend& backend);

}  // namespace dfw::cpu_decoder
