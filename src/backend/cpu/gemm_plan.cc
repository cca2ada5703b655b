// The calibration behind GemmPlan; see gemm_plan.h for what is measured and why.
#include "gemm_plan.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <vector>

#include "dfw/backend/cpu_isa.h"
#include "dfw/common/file.h"
#include "dfw/common/file_lock.h"
#include "dnnl_gemm.h"
#include "openblas_api.h"

namespace dfw::cpu_gemm {
namespace {

constexpr long kSmallMnk = 1L << 18;
constexpr double kOneDnnMargin = 0.95;  // oneDNN's time must be <= 95% of OpenBLAS's
// Attention's FLOPs per linear-layer FLOP in a MiniLM layer at 128 tokens: per token, QKᵀ and PV
// are 2 x 2·128·384 against 2·384·(1152 + 384 + 2·1536) for the four linear layers.
constexpr double kAttentionFlopShare = (2.0 * 2 * 128 * 384) / (2.0 * 384 * (1152 + 384 + 2 * 1536));

// Best of `reps` wall times (seconds) after three untimed warm-ups: a oneDNN matmul's first calls
// in a process are slow (JIT, then ~3x the steady time for the next one or two while its buffers
// are first touched: 25, 8, 3.8, then 2.6 ms on 256 x 1152 x 384 here).
double BestSeconds(const std::function<bool()>& run, int reps) {
  for (int i = 0; i < 3; ++i) {
    if (!run()) return -1;
  }
  double best = 1e30;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    if (!run()) return -1;
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

std::vector<float> Filled(std::size_t n) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<float>(static_cast<int>(i % 17) - 8) * 0.0625f;
  return v;
}

GemmPlan Measure(int threads) {
  GemmPlan plan;
  plan.threads = threads;
  Result<const cpu_blas::OpenBlasApi*> blas = cpu_blas::OpenBlas();
  if (!blas.ok()) {
    plan.error = blas.status().message();
    return plan;
  }
  const auto sgemm = (*blas)->sgemm;
  plan.openblas_core = (*blas)->get_corename();
  plan.openblas_generic = OpenBlasIsGeneric();
  const auto start = std::chrono::steady_clock::now();
  cpu_dnnl::DnnlGemmOptions options;
  options.threads = [threads] { return threads; };
  auto dnnl = cpu_dnnl::DnnlGemm::Make(std::move(options));
  if (!dnnl.ok()) {
    plan.error = dnnl.status().message();
    return plan;
  }
  cpu_dnnl::DnnlGemm& d = **dnnl;
  std::string error;
  auto ran = [&error](const Result<bool>& r) {
    if (r.ok() && *r) return true;
    if (error.empty()) error = r.ok() ? "no primitive for the calibration shape" : r.status().message();
    return false;
  };

  // kLarge: a Linear with bias, QKV-like. 256 rows keep the calibration short; 1024 rows were tried
  // and took twice as long without agreeing better with BM_Linear's 4096-row figures.
  const int m = 256, n = 1152, k = 384;
  const std::vector<float> x = Filled(std::size_t{m} * k), w = Filled(std::size_t{n} * k), bias = Filled(n);
  std::vector<float> y(std::size_t{m} * n);
  auto blas_large = [&] {
    for (int i = 0; i < m; ++i) std::copy(bias.begin(), bias.end(), y.begin() + std::size_t{n} * i);
    sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.f, x.data(), k, w.data(), k, 1.f, y.data(), n);
    return true;
  };
  // oneDNN is timed on the weights layout the backend would give it (cpu_dnnl::LinearWeightsLayout:
  // a [k x n] copy below AVX-512, oneDNN's blocked layout on AVX-512 and up); the values do not
  // matter, only the layout.
  const cpu_dnnl::WeightsLayout layout = cpu_dnnl::LinearWeightsLayout();
  std::shared_ptr<const cpu_dnnl::BlockedWeights> blocked;
  if (layout == cpu_dnnl::WeightsLayout::kBlocked) {
    auto made = d.BlockWeights(w.data(), n, k);
    if (made.ok()) blocked = *std::move(made);
  }
  auto dnnl_large = [&] {
    if (blocked != nullptr) return ran(d.Linear(x.data(), *blocked, bias.data(), y.data(), m, Activation::kNone));
    return ran(d.Linear(x.data(), w.data(), bias.data(), y.data(), m, n, k, Activation::kNone,
                        layout == cpu_dnnl::WeightsLayout::kKn));
  };
  // kBatched: attention scores QKᵀ, 8 sequences x 12 heads x (128 x 128 x 32), Q and K column
  // slices of a fused [tokens x 3·384] QKV buffer, scores [batch][head][128][128].
  const int batch = 8, heads = 12, s = 128, dh = 32, h3 = 3 * heads * dh;
  const int64_t seq_stride = int64_t{s} * h3, score_head = int64_t{s} * s, score_stride = score_head * heads;
  const std::vector<float> qkv = Filled(std::size_t(seq_stride * batch));
  std::vector<float> sc(std::size_t(score_stride * batch));
  const float* keys = qkv.data() + heads * dh;
  auto blas_batched = [&] {
    for (int b = 0; b < batch; ++b) {
      for (int hd = 0; hd < heads; ++hd) {
        sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, s, s, dh, 1.f, qkv.data() + b * seq_stride + hd * dh, h3,
                    keys + b * seq_stride + hd * dh, h3, 0.f, sc.data() + b * score_stride + hd * score_head, s);
      }
    }
    return true;
  };
  auto dnnl_batched = [&] {
    return ran(d.GemmHeadsBatched(false, true, s, s, dh, 1.f, qkv.data(), h3, seq_stride, dh, keys, h3, seq_stride, dh,
                                  0.f, sc.data(), s, score_stride, score_head, batch, heads));
  };
  // oneDNN first: OpenBLAS's pool threads spin for a long while after a call (its THREAD_TIMEOUT,
  // ~0.1 s), which would take CPUs from whatever runs next; libgomp's spin after a team is short.
  // Every oneDNN timing before any OpenBLAS one (no alternation: OpenBLAS's spinning pool would
  // slow the oneDNN call after it); best of five, so one descheduled thread on a shared machine
  // costs a repetition, not the decision.
  // kSmall: a 1 x 384 x 128 product (one row through a narrow layer; pooling's shape).
  const int sn = 384, sk = 128;
  const std::vector<float> sx = Filled(sk), sw = Filled(std::size_t{sn} * sk);
  std::vector<float> sy(sn);
  auto blas_small = [&] {
    sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, 1, sn, sk, 1.f, sx.data(), sk, sw.data(), sk, 0.f, sy.data(), sn);
    return true;
  };
  auto dnnl_small = [&] { return ran(d.Gemm(false, true, 1, sn, sk, 1.f, sx.data(), sk, sw.data(), sk, 0.f, sy.data(), sn)); };
  const double td_large = BestSeconds(dnnl_large, 5);
  const double td_small = error.empty() ? BestSeconds(dnnl_small, 5) : -1;
  const double td_batched = error.empty() ? BestSeconds(dnnl_batched, 5) : -1;
  const double flop_small = 2.0 * sn * sk;
  const double flop_large = 2.0 * m * n * k, flop_batched = 2.0 * s * s * dh * batch * heads;
  if (error.empty()) plan.onednn_small_gflops = flop_small / td_small / 1e9;
  // A generic OpenBLAS core is not timed where oneDNN runs: every class goes to oneDNN whatever
  // the figures (its SSE3 kernels took ~100 of the calibration's ~130 ms; OpenBLAS figures 0).
  if (!(plan.openblas_generic && error.empty())) {
    plan.openblas_large_gflops = flop_large / BestSeconds(blas_large, 5) / 1e9;
    plan.openblas_batched_gflops = flop_batched / BestSeconds(blas_batched, 5) / 1e9;
    plan.openblas_small_gflops = flop_small / BestSeconds(blas_small, 5) / 1e9;
  }
  if (error.empty()) {
    plan.onednn_large_gflops = flop_large / td_large / 1e9;
    plan.onednn_batched_gflops = flop_batched / td_batched / 1e9;
  }
  plan.error = error;
  if (error.empty()) {
    plan.onednn_large = plan.openblas_large_gflops <= kOneDnnMargin * plan.onednn_large_gflops;
    plan.onednn_batched = plan.openblas_batched_gflops <= kOneDnnMargin * plan.onednn_batched_gflops;
    if (threads > 1) {  // one library for both (header): the one with the shorter encoder layer
      auto layer = [](double linear_gflops, double batched_gflops) {
        return 1.0 / linear_gflops + kAttentionFlopShare / batched_gflops;
      };
      plan.onednn_large = plan.onednn_batched =
          layer(plan.onednn_large_gflops, plan.onednn_batched_gflops) <=
          kOneDnnMargin * layer(plan.openblas_large_gflops, plan.openblas_batched_gflops);
    }
    // Small products: oneDNN only without a team to wake (gemm_plan.h).
    plan.onednn_small = threads == 1 && plan.openblas_small_gflops <= kOneDnnMargin * plan.onednn_small_gflops;
    if (plan.openblas_generic) plan.onednn_large = plan.onednn_batched = plan.onednn_small = true;
  }
  plan.calibration_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return plan;
}

}  // namespace

GemmClass ClassOf(int m, int n, int k, int batch) {
  if (static_cast<long>(m) * n * k * std::max(1, batch) < kSmallMnk) return GemmClass::kSmall;
  return batch > 1 ? GemmClass::kBatched : GemmClass::kLarge;
}

std::string GemmPlan::Describe() const {
  auto lib = [](bool onednn) { return onednn ? "oneDNN" : "OpenBLAS"; };
  if (!error.empty()) return "all OpenBLAS (oneDNN not measured: " + error + ")";
  const std::string how = from_cache ? std::string("by another process of the job (shared calibration file)")
                                     : fmt::format("in {:.0f} ms", calibration_ms);
  if (openblas_generic) {
    return fmt::format(
        "OpenBLAS core {} is generic on this CPU: every product on oneDNN; linear: oneDNN ({:.1f} GFLOP/s), "
        "attention: oneDNN ({:.1f}), small: oneDNN ({:.1f}); OpenBLAS not timed; calibrated at {} thread{} {}",
        openblas_core, onednn_large_gflops, onednn_batched_gflops, onednn_small_gflops, threads, threads == 1 ? "" : "s",
        how);
  }
  return fmt::format(
      "linear: {} (oneDNN {:.1f} vs OpenBLAS {:.1f} GFLOP/s), attention: {} (oneDNN {:.1f} vs OpenBLAS {:.1f}), "
      "small: {} (oneDNN {:.1f} vs OpenBLAS {:.1f}); calibrated at {} thread{} {}",
      lib(onednn_large), onednn_large_gflops, openblas_large_gflops, lib(onednn_batched), onednn_batched_gflops,
      openblas_batched_gflops, lib(onednn_small), onednn_small_gflops, openblas_small_gflops, threads,
      threads == 1 ? "" : "s", how);
}

namespace {

constexpr std::chrono::milliseconds kPlanLockWait{5000};
constexpr std::size_t kPlanFileMaxBytes = 4096;  // one line of figures

std::mutex& CacheMutex() {
  static std::mutex mu;
  return mu;
}
std::string& CachePath() {
  static std::string path;
  return path;
}

// The first line of the plan file; "" when it cannot be read (the plan is then measured again).
std::string ReadPlanLine(const std::string& path) {
  Result<std::string> text = ReadWholeFile(path, kPlanFileMaxBytes);
  if (!text.ok()) return "";
  return text->substr(0, text->find('\n'));
}

// The shared plan for `threads` at `base`: read it, or measure it and write it, under the lock
// (FileLock), so that N processes starting together measure once rather than N times on the same
// CPUs (which also skews what they measure). Measuring takes about a second; a holder that does
// not let go within kPlanLockWait (stopped) is not waited for: this process measures alone.
GemmPlan SharedPlan(const std::string& base, int threads) {
  const std::string path = base + "-t" + std::to_string(threads);
  const FileLock lock = FileLock::TryFor(path + ".lock", kPlanLockWait);
  if (auto cached = lock.held() ? DecodePlan(ReadPlanLine(path)) : std::nullopt; cached && cached->threads == threads) {
    return *cached;
  }
  GemmPlan plan = Measure(threads);
  // Never seen half-written; a file that cannot be written only means the next process measures.
  if (lock.held() && plan.error.empty()) (void)WriteFileAtomically(path, EncodePlan(plan) + "\n", /*sync=*/false, kOutputFileMode);
  return plan;
}

}  // namespace

void SetPlanCachePath(const std::string& path) {
  std::lock_guard<std::mutex> lock(CacheMutex());
  CachePath() = path;
}

std::string PlanCachePath() {
  std::lock_guard<std::mutex> lock(CacheMutex());
  return CachePath();
}

std::string EncodePlan(const GemmPlan& p) {
  return fmt::format("dfw-gemm-plan 2 {} {} {} {} {:.3f} {:.3f} {:.3f} {:.3f} {:.3f} {:.3f}", p.threads,
                     p.onednn_large ? 1 : 0, p.onednn_batched ? 1 : 0, p.onednn_small ? 1 : 0, p.openblas_large_gflops,
                     p.onednn_large_gflops, p.openblas_batched_gflops, p.onednn_batched_gflops, p.openblas_small_gflops,
                     p.onednn_small_gflops);
}

bool IsGenericCoreFor(const std::string& core, bool cpu_has_avx2) {
  if (!cpu_has_avx2) return false;  // an SSE-era kernel is what such a CPU runs best anyway
  std::string c;
  for (char ch : core) c += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  for (const char* sse_era : {"prescott", "katmai", "coppermine", "northwood", "banias", "core2", "penryn", "dunnington",
                              "nehalem", "atom", "athlon", "opteron", "barcelona", "bobcat", "generic", "unknown"}) {
    if (c.rfind(sse_era, 0) == 0) return true;
  }
  return c.empty();
}

bool OpenBlasIsGeneric() {
  // An OpenBLAS that cannot load runs nothing: as a generic core, every class goes to oneDNN.
  static const bool generic = [] {
    Result<const cpu_blas::OpenBlasApi*> blas = cpu_blas::OpenBlas();
    return !blas.ok() || IsGenericCoreFor((*blas)->get_corename(), DetectCpuIsa().avx2);
  }();
  return generic;
}

std::optional<GemmPlan> DecodePlan(const std::string& text) {
  std::istringstream in(text);
  std::string magic;
  int version = 0, large = -1, batched = -1, small = -1;
  GemmPlan p;
  if (!(in >> magic >> version >> p.threads >> large >> batched >> small >> p.openblas_large_gflops >>
        p.onednn_large_gflops >> p.openblas_batched_gflops >> p.onednn_batched_gflops >> p.openblas_small_gflops >>
        p.onednn_small_gflops)) {
    return std::nullopt;
  }
  std::string rest;
  auto flag = [](int v) { return v == 0 || v == 1; };
  if (magic != "dfw-gemm-plan" || version != 2 || p.threads < 1 || !flag(large) || !flag(batched) || !flag(small) ||
      (in >> rest)) {
    return std::nullopt;
  }
  p.onednn_large = large == 1;
  p.onednn_batched = batched == 1;
  p.onednn_small = small == 1;
  if (Result<const cpu_blas::OpenBlasApi*> blas = cpu_blas::OpenBlas(); blas.ok()) p.openblas_core = (*blas)->get_corename();
  p.openblas_generic = OpenBlasIsGeneric();
  p.from_cache = true;
  return p;
}

const GemmPlan& CalibratedPlan(int threads) {
  static std::mutex mu;
  static std::map<int, std::unique_ptr<GemmPlan>> plans;  // never erased: references stay valid
  std::lock_guard<std::mutex> lock(mu);
  std::unique_ptr<GemmPlan>& p = plans[threads];
  if (p == nullptr) {
    std::string cache;
    {
      std::lock_guard<std::mutex> cache_lock(CacheMutex());
      cache = CachePath();
    }
    p = std::make_unique<GemmPlan>(cache.empty() ? Measure(threads) : SharedPlan(cache, threads));
    // Once per thread count and process: what the default path chose, and why.
    spdlog::info("cpu backend GEMM plan: {}", p->Describe());
  }
  return *p;
}

}  // namespace dfw::cpu_gemm
