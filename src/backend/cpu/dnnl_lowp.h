// Reduced-precision Linear layers on oneDNN for the CPU backend (LinearDType in
// dfw/backend/backend.h):
//   bfloat16: weights reordered once into the blocked bf16 layout oneDNN's matmul asks for
//             (AMX / AVX512-BF16 kernels), activations converted per call (lowp_kernels.h), bias
//             and activation as post-ops, float32 output;
//   int8:     weights quantised once per output channel (symmetric int8; where the CPU has no
//             VNNI, cpu_isa.h, with every same-signed pair of neighbouring weights bounded to 128
//             steps, or for a layer where that bound costs too much, 7-bit activations: int16
//             pair sums never saturate) and reordered into oneDNN's
//             blocked s8 layout, with their per-channel sums; per call each row of x is quantised to uint8 with its own scale and
//             zero point, oneDNN multiplies u8·s8 into int32, and one pass dequantises with the
//             row × column scales, the zero-point correction and the bias; the activation runs
//             after it on the backend's row kernels.
// oneDNN 2.6 has no per-row runtime scale or zero point on a matmul, hence the passes of our own.
// Primitives are cached per (dtype, m, n, k, bias, activation); products run at most 512 rows per
// primitive and every primitive's m is a multiple of 32 (a product's last rows padded with zeros
// through scratch), so a text model's varying batch shapes need at most 16 primitives per layer
// shape, made once. The weights layout comes from a primitive made for a 256-row product and is
// passed explicitly for every other m.
//
// Threading: as the backend; one thread at a time (the scratch buffers are shared).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "dfw/backend/backend.h"
#include "dfw/common/status.h"
#include "kernels.h"

namespace dfw::cpu_dnnl {

class LowpMatmul {
 public:
  // `threads` sizes oneDNN's team per call (as DnnlGemmOptions::threads); `reduce_range_int8`
  // keeps every u8·s8 pair sum within int16 (CpuIsa::reduce_range_int8): pair-bounded weights
  // (|q[2i] + q[2i+1]| <= 128), or ±127 weights with 0..127 activations per layer (dnnl_lowp.cc). kUnavailable when oneDNN has no engine.
  static Result<std::unique_ptr<LowpMatmul>> Make(std::function<int()> threads, bool reduce_range_int8,
                                                  cpu_kernels::Isa isa);
  ~LowpMatmul();

  // w [n x k] (must outlive the result) in kBFloat16 or kInt8. kUnimplemented when oneDNN makes
  // no primitive for that dtype on this CPU (the message says which).
  Result<std::unique_ptr<PreparedLinear>> Prepare(const float* w, int n, int k, LinearDType dtype);
  // y[m x n] = x · wᵀ + bias (m >= 1), then `act` for bf16 (post-op); for int8 the caller applies
  // `act` (the returned bool says whether it still has to). False: oneDNN refused this m; the
  // caller runs the float32 path.
  struct Ran {
    bool ran = false;
    bool act_pending = false;
  };
  Result<Ran> Run(const float* x, const PreparedLinear& w, const float* bias, float* y, int m, Activation act);

  // The oneDNN implementation the last Prepare used, e.g. "brg:avx512_core_amx_bf16".
  const std::string& last_impl() const { return last_impl_; }

  struct Impl;

 private:
  explicit LowpMatmul(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  std::string last_impl_;
};

// The top of the activations' uint8 range for int8 weights made by LowpMatmul::Prepare: 255, or
// 127 for a layer that kept 8-bit weights where the range is reduced; 0 for any other weights.
int Int8ActivationTop(const PreparedLinear& w);

}  // namespace dfw::cpu_dnnl
