// GemmPlan: which library (OpenBLAS or oneDNN) runs each class of matrix product on this CPU, for
// the CPU backend's default path (CpuGemmPath::kAuto).
//
// Chosen by a short calibration (70-300 ms on a 2-vCPU machine, once per process and BLAS thread
// count, at the first kAuto product that is not small) rather than by a table: the winner depends
// on the CPU and on how OpenBLAS was told to run on it (OPENBLAS_CORETYPE=Haswell on an AVX-512
// machine halves OpenBLAS's rate, while oneDNN dispatches on the real CPU; on an AVX2-only CPU the
// two are within noise of each other for the linear layers), and no table written on one machine
// knows either. Each class is timed on a representative encoder shape, best of five after three
// warm-ups, oneDNN first (gemm_plan.cc says why); oneDNN is chosen only when it is at least 5%
// faster, so ties keep the reference library.
//
// An OpenBLAS that runs a generic core on this CPU (openblas_get_corename() is an SSE-era family,
// Prescott, Core2, Nehalem, ..., on a CPU with AVX2 or AVX-512: OpenBLAS 0.3.21 does not know
// Sapphire Rapids and falls back to Prescott, 16-17 GFLOP/s against oneDNN's 94-150 on one core)
// is never chosen: every class, small included, goes to oneDNN, without a measurement.
//
// Classes:
//   kSmall   m·n·k·batch < 2^18 for the whole call (tiny test shapes, one short sequence's
//            pooling): timed on 1 x 384 x 128; oneDNN only with one thread and 5% faster (or when
//            OpenBLAS is generic), else OpenBLAS, which runs these on the calling thread (its own
//            multithreading threshold). A batched call counts its whole work: it is one oneDNN
//            primitive launch however small each product (attention at 64 tokens is 384 products
//            of 64 x 64 x 32). Measured (bench/backend_gemm_bench.cc, BM_SmallGemm, 1 x 384 x 128):
//            oneDNN is faster on an idle machine but, with a 2-thread OpenMP team on a loaded one,
//            each call waits for the second thread's time slice (milliseconds for microseconds of
//            work), while OpenBLAS never wakes its pool for these.
//   kLarge   Linear layers and large plain GEMMs; timed on 256 x 1152 x 384 (Linear with bias).
//   kBatched GemmStridedBatched / GemmHeadsBatched with more than one matrix (attention's QKᵀ
//            and PV over every head of a batch); timed on QKᵀ for 8 sequences x 12 heads of
//            128 x 128 x 32, strided in a fused QKV buffer as the encoder lays it out.
// With more than one thread, both classes use one library: OpenBLAS's pool and oneDNN's OpenMP
// team each spin-wait after a call, so alternating between them within a layer would keep up to
// twice the CPUs busy. The library is the one with the shorter MiniLM layer at 128 tokens
// (linear time + attention time from the two measured rates; attention is 5.6% of the FLOPs but,
// at half the rate on OpenBLAS, about a fifth of its time), again with the 5% margin.
#pragma once

#include <optional>
#include <string>

namespace dfw::cpu_gemm {

enum class GemmClass { kSmall, kLarge, kBatched };

GemmClass ClassOf(int m, int n, int k, int batch);

struct GemmPlan {
  int threads = 1;               // BLAS/OpenMP threads the plan was measured with
  bool onednn_large = false;     // kLarge runs on oneDNN
  bool onednn_batched = false;   // kBatched runs on oneDNN
  bool onednn_small = false;     // kSmall runs on oneDNN
  bool openblas_generic = false; // OpenBLAS's core is generic for this CPU: every class on oneDNN
  std::string openblas_core;     // openblas_get_corename()
  double openblas_large_gflops = 0, onednn_large_gflops = 0;
  double openblas_batched_gflops = 0, onednn_batched_gflops = 0;
  double openblas_small_gflops = 0, onednn_small_gflops = 0;
  double calibration_ms = 0;
  bool from_cache = false;  // read from the shared calibration file (SetCpuGemmPlanCache), not measured here
  std::string error;  // non-empty when oneDNN could not be measured (the plan is then all OpenBLAS)

  bool OnOneDnn(GemmClass c) const {
    return c == GemmClass::kLarge ? onednn_large : c == GemmClass::kBatched ? onednn_batched : onednn_small;
  }
  // "linear: oneDNN 61.2 vs OpenBLAS 50.1 GFLOP/s; attention: ...; small: OpenBLAS".
  std::string Describe() const;
};

// The plan for `threads` (the current OpenBLAS pool size), measured on first request and then kept
// for the life of the process. Safe to call from several threads (one measures, the others wait).
// With a cache path set (SetCpuGemmPlanCache, dfw/backend/registry.h), processes share one
// measurement: the first measures under an exclusive lock and writes it, the rest read it.
const GemmPlan& CalibratedPlan(int threads);

// True when this OpenBLAS runs a generic (SSE-era) core on a CPU with AVX2 or wider (no
// measurement; computed once). The kAuto path then sends every product to oneDNN.
bool OpenBlasIsGeneric();
// The rule behind it, for tests: `core` as openblas_get_corename() spells it.
bool IsGenericCoreFor(const std::string& core, bool cpu_has_avx2);

// The cache file's text: "dfw-gemm-plan 2 <threads> <onednn_large> <onednn_batched> <onednn_small>
// <6 GFLOP/s>";
// nullopt for anything else (the plan is then measured again).
std::string EncodePlan(const GemmPlan& plan);
void SetPlanCachePath(const std::string& path);  // see SetCpuGemmPlanCache
std::string PlanCachePath();
std::optional<GemmPlan> DecodePlan(const std::string& text);

}  // namespace dfw::cpu_gemm
