// CPU feature detection for the precision rules in dfw/backend/cpu_isa.h.
#include "dfw/backend/cpu_isa.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <cstring>

#include "dnnl_gemm.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace dfw {
namespace {

#if defined(__x86_64__) || defined(__i386__)
struct Regs {
  unsigned a = 0, b = 0, c = 0, d = 0;
};

Regs CpuId(unsigned leaf, unsigned sub) {
  Regs r;
  if (__get_cpuid_count(leaf, sub, &r.a, &r.b, &r.c, &r.d) == 0) return Regs{};
  return r;
}

unsigned long long Xcr0() {
  unsigned lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<unsigned long long>(hi) << 32) | lo;
}

bool Bit(unsigned v, int b) { return ((v >> b) & 1u) != 0; }

CpuIsa Detect() {
  CpuIsa isa;
  const Regs l1 = CpuId(1, 0);
  isa.sse41 = Bit(l1.c, 19);
  // The OS must save the wide registers (XCR0) before the instructions are usable.
  const unsigned long long xcr0 = Bit(l1.c, 27) ? Xcr0() : 0;
  const bool os_avx = (xcr0 & 0x6) == 0x6, os_avx512 = os_avx && (xcr0 & 0xe0) == 0xe0;
  const bool os_amx = (xcr0 & 0x60000) == 0x60000;
  const Regs l7 = CpuId(7, 0), l7s1 = CpuId(7, 1);
  isa.fma = os_avx && Bit(l1.c, 12);
  isa.avx2 = os_avx && Bit(l7.b, 5);
  isa.avx512f = os_avx512 && Bit(l7.b, 16);
  isa.avx512bw = os_avx512 && Bit(l7.b, 30);
  isa.avx512_vnni = os_avx512 && Bit(l7.c, 11);
  isa.avx_vnni = os_avx && Bit(l7s1.a, 4);
  isa.avx512_bf16 = os_avx512 && Bit(l7s1.a, 5);
  isa.amx_bf16 = os_amx && Bit(l7.d, 22);
  isa.amx_int8 = os_amx && Bit(l7.d, 25);
  char brand[49] = {};
  if (CpuId(0x80000000u, 0).a >= 0x80000004u) {
    for (unsigned i = 0; i < 3; ++i) {
      const Regs r = CpuId(0x80000002u + i, 0);
      std::memcpy(brand + 16 * i, &r, 16);
    }
  }
  isa.cpu_model = brand;
  while (!isa.cpu_model.empty() && isa.cpu_model.front() == ' ') isa.cpu_model.erase(0, 1);
  return isa;
}
#else
CpuIsa Detect() { return CpuIsa{}; }
#endif

}  // namespace

std::string CpuIsa::Flags() const {
  std::string s;
  auto add = [&s](bool on, const char* name) {
    if (on) s += (s.empty() ? "" : " ") + std::string(name);
  };
  add(avx2, "avx2");
  add(fma, "fma");
  add(avx512f, "avx512f");
  add(avx512bw, "avx512bw");
  add(avx512_vnni, "avx512_vnni");
  add(avx_vnni, "avx_vnni");
  add(avx512_bf16, "avx512_bf16");
  add(amx_bf16, "amx_bf16");
  add(amx_int8, "amx_int8");
  if (s.empty()) s = sse41 ? "sse4.1" : "baseline x86-64";
  return s;
}

std::string CpuIsa::Describe() const { return Flags() + "; oneDNN " + (onednn_isa.empty() ? "unknown" : onednn_isa); }

const CpuIsa& DetectCpuIsa() {
  static const CpuIsa isa = [] {
    CpuIsa i = Detect();
    i.onednn_isa = cpu_dnnl::EffectiveIsaName();
    const dnnl::cpu_isa e = dnnl::get_effective_cpu_isa();
    i.onednn_bf16 = e == dnnl::cpu_isa::avx512_core_bf16 || e == dnnl::cpu_isa::avx512_core_amx;
    return i;
  }();
  return isa;
}

Status CheckLinearDTypeOn(const CpuIsa& isa, LinearDType dtype) {
  const std::string has = " (this one has: " + isa.Describe() + ")";
  switch (dtype) {
    case LinearDType::kFloat32:
      return Status::OK();
    case LinearDType::kBFloat16:
      if (!isa.avx512_bf16 && !isa.amx_bf16) {
        return Unimplemented("dtype 'bfloat16' needs a CPU with avx512_bf16 or amx_bf16" + has);
      }
      if (!isa.onednn_bf16) {
        return Unimplemented(
            "dtype 'bfloat16' needs oneDNN to dispatch to avx512_core_bf16 or avx512_core_amx (is "
            "ONEDNN_MAX_CPU_ISA lowering it?)" + has);
      }
      return Status::OK();
    case LinearDType::kInt8:
      if (!isa.sse41) return Unimplemented("dtype 'int8' needs a CPU with sse4.1 (oneDNN's u8s8 matmul)" + has);
      return Status::OK();
  }
  return InvalidArgument("unknown dtype " + std::to_string(static_cast<int>(dtype)));
}

bool CpuIsa::onednn_vnni() const {
  if (onednn_isa.empty()) return has_vnni();
  return onednn_isa == "avx2_vnni" || onednn_isa == "avx512_core_vnni" || onednn_isa == "avx512_core_bf16" ||
         onednn_isa == "avx512_core_amx";
}

int CpuIsa::Level() const {
  if (amx_bf16 || amx_int8) return 4;
  if (avx512f && (avx512_vnni || avx512_bf16)) return 3;
  if (avx512f) return 2;
  if (avx2 && fma) return 1;
  return 0;
}

}  // namespace dfw
