// What this CPU (and the oneDNN build the CPU backend uses) can run, for choosing the precision of
// Linear layers (LinearDType in dfw/backend/backend.h).
//
// DetectCpuIsa() reads cpuid (and the OS's XSAVE state for AVX, AVX-512 and AMX) once, plus the
// ISA oneDNN dispatches to (dnnl::get_effective_cpu_isa(), which ONEDNN_MAX_CPU_ISA can lower).
// The rules, in CheckLinearDTypeOn:
//   float32  always;
//   bfloat16 the CPU has avx512_bf16 or amx_bf16 AND oneDNN dispatches to avx512_core_bf16 or
//            avx512_core_amx: native bf16 dot products. oneDNN 2.6 also emulates bf16 on plain
//            avx512_core, at or below the float32 speed; that is refused rather than offered;
//   int8     oneDNN has a u8s8 matmul on every x86-64 ISA it runs (SSE4.1 and up). Without a VNNI
//            dot product (avx512_vnni, avx_vnni or amx_int8) the u8·s8 pair sums saturate int16,
//            so every int8 product keeps them within it (reduce_range_int8): weights with every
//            same-signed pair bounded to 128 steps (about 7.6 bits), or 7-bit activations for a
//            layer where that bound costs too much (dnnl_lowp.cc).
//            What counts is the ISA oneDNN runs, not only the CPU: a VNNI CPU with
//            ONEDNN_MAX_CPU_ISA=AVX2 runs the saturating kernels and reduces the range too.
// Tests pass a made-up CpuIsa to the backend (CpuBackendOptions::isa) instead of this machine's.
#pragma once

#include <string>

#include "dfw/backend/backend.h"
#include "dfw/common/status.h"

namespace dfw {

struct CpuIsa {
  bool sse41 = false, avx2 = false, fma = false;
  bool avx512f = false, avx512bw = false, avx512_vnni = false, avx_vnni = false;
  bool avx512_bf16 = false, amx_bf16 = false, amx_int8 = false;
  std::string onednn_isa;      // as oneDNN names it: "avx512_core_amx", "avx2", ...
  bool onednn_bf16 = false;    // oneDNN dispatches to an ISA with native bf16 (avx512_core_bf16, _amx)
  std::string cpu_model;       // the cpuid brand string, for caches and reports

  bool has_vnni() const { return avx512_vnni || avx_vnni || amx_int8; }
  // oneDNN dispatches to an ISA with a VNNI (or AMX) dot product; with onednn_isa unknown (empty),
  // whatever the CPU has.
  bool onednn_vnni() const;
  // Int8 products give up range (pair-bounded weights or 7-bit activations) where u8·s8 pair
  // sums could saturate int16: no VNNI in the CPU, or none in the kernels oneDNN runs.
  bool reduce_range_int8() const { return !has_vnni() || !onednn_vnni(); }
  // The widest matrix instructions it has, as one number for metrics (`cpu_isa_level`): 0 none of
  // these, 1 AVX2 + FMA, 2 AVX-512, 3 AVX-512 with VNNI or BF16, 4 AMX (BF16 or INT8). The run
  // report names them (dfw/report/job_report.h CpuIsaLevelName).
  int Level() const;
  // "avx2 fma avx512f ... amx_int8" (the instructions the rules look at).
  std::string Flags() const;
  // Flags() + "; oneDNN avx512_core_amx".
  std::string Describe() const;
};

// This machine, detected once per process.
const CpuIsa& DetectCpuIsa();

// OK when a CPU with `isa` runs `dtype` (rules above), else kUnimplemented naming the dtype, the
// instructions it needs and what this CPU has, e.g. "dtype 'bfloat16' needs a CPU with avx512_bf16
// or amx_bf16 (this one has: avx2 fma; oneDNN avx2)".
Status CheckLinearDTypeOn(const CpuIsa& isa, LinearDType dtype);

}  // namespace dfw
