// sgemm GFLOP/s of the CPU backend's GEMM paths (OpenBLAS, oneDNN, the calibrated default) on the
// products of a MiniLM-shaped encoder (hidden 384, 12 heads of 32, intermediate 1536; read from
// scripts/make_bert_shaped.py / all-MiniLM-L6-v2's config) at batch 32 x 128 tokens = 4096 rows,
// next to oneDNN's own dnnl_sgemm on the same shape. Run through scripts/bench_gemm.sh.
//
// Args: path (0 openblas, 1 onednn, 2 auto, 3 dnnl_sgemm), threads (the BLAS/OpenMP count).
#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <oneapi/dnnl/dnnl.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "backend/cpu/dnnl_gemm.h"
#include "bench_main.h"
#include "dfw/backend/registry.h"

namespace dfw {
namespace {

constexpr int kHidden = 384, kInter = 1536, kHeads = 12, kHeadDim = 32, kBatch = 32, kSeq = 128;
constexpr int kTokens = kBatch * kSeq;

const char* PathName(int64_t p) {
  return p == 0 ? "openblas" : p == 1 ? "onednn" : p == 2 ? "auto" : "dnnl_sgemm";
}

// description() runs the auto path's calibration now, outside the timed loop.
std::unique_ptr<InferenceBackend> BackendFor(int64_t p) {
  auto backend = MakeCpuBackend(p == 1 ? CpuGemmPath::kOneDnn : p == 2 ? CpuGemmPath::kAuto : CpuGemmPath::kOpenBlas);
  benchmark::DoNotOptimize(backend->description());
  return backend;
}

// dnnl_sgemm's OpenMP team follows the calling thread's omp_set_num_threads (the backend sets it
// itself before each oneDNN call); looked up in the process, where libdnnl loaded libgomp.
void SetOmpThreads(int threads) {
  using SetFn = void (*)(int);
  if (auto set = reinterpret_cast<SetFn>(::dlsym(RTLD_DEFAULT, "omp_set_num_threads"))) set(threads);
}

std::vector<float> Data(std::size_t n) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<float>(static_cast<int>(i % 23) - 11) * 0.01f;
  return v;
}

// A Linear layer y[m x n] = x[m x k] · w[n x k]ᵀ + bias (the encoder's call), or dnnl_sgemm's NT.
void BM_Linear(benchmark::State& state) {
  const int m = static_cast<int>(state.range(0)), n = static_cast<int>(state.range(1)),
            k = static_cast<int>(state.range(2));
  const int64_t path = state.range(3);
  const int before = BlasThreads();
  (void)SetBlasThreads(static_cast<int>(state.range(4)));
  SetOmpThreads(static_cast<int>(state.range(4)));
  auto backend = BackendFor(path);
  const std::vector<float> x = Data(std::size_t(m) * k), w = Data(std::size_t(n) * k), bias = Data(n);
  std::vector<float> y(std::size_t(m) * n);
  for (auto _ : state) {
    if (path == 3) {
      // dnnl_sgemm is row-major (oneDNN >= 1.0): y = x · wᵀ, no bias.
      if (dnnl_sgemm('N', 'T', m, n, k, 1.f, x.data(), k, w.data(), k, 0.f, y.data(), n) != dnnl_success) {
        state.SkipWithError("dnnl_sgemm failed");
      }
    } else if (!backend->Linear(x.data(), w.data(), bias.data(), y.data(), m, n, k, Activation::kNone).ok()) {
      state.SkipWithError("linear failed");
    }
    benchmark::DoNotOptimize(y.data());
  }
  state.SetLabel(PathName(path));
  state.counters["GFLOPs"] =
      benchmark::Counter(2.0 * m * n * k * static_cast<double>(state.iterations()) / 1e9, benchmark::Counter::kIsRate);
  (void)SetBlasThreads(before);
}

void LinearArgs(benchmark::internal::Benchmark* b) {
  b->ArgNames({"m", "n", "k", "path", "threads"});
  for (auto [n, k] : {std::pair{kHidden, kHidden}, std::pair{3 * kHidden, kHidden}, std::pair{kInter, kHidden},
                      std::pair{kHidden, kInter}}) {
    for (int threads : {1, 2}) {
      for (int path : {0, 1, 2, 3}) b->Args({kTokens, n, k, path, threads});
    }
  }
}
BENCHMARK(BM_Linear)->Apply(LinearArgs)->UseRealTime()->Unit(benchmark::kMillisecond);

// Two inference lanes, as the runner uses them on a 2-CPU worker: two threads, each with its own
// backend, each running the FFN-in Linear (4096 x 1536 x 384) with BLAS threads = 1. Aggregate
// GFLOP/s should be about twice BM_Linear's 1-thread figure (no oversubscription: each lane's
// oneDNN call runs on its own thread alone) and at least its 2-thread one.
void BM_LinearTwoLanes(benchmark::State& state) {
  const int64_t path = state.range(0);
  const int m = kTokens, n = kInter, k = kHidden;
  const int before = BlasThreads();
  (void)SetBlasThreads(1);
  struct Lane {
    std::unique_ptr<InferenceBackend> backend;
    std::vector<float> x, w, bias, y;
  };
  Lane lanes[2];
  for (Lane& l : lanes) {
    l.backend = BackendFor(path);
    l.x = Data(std::size_t(m) * k), l.w = Data(std::size_t(n) * k), l.bias = Data(n), l.y.resize(std::size_t(m) * n);
  }
  std::atomic<bool> failed{false};
  for (auto _ : state) {
    std::vector<std::thread> threads;
    for (Lane& l : lanes) {
      threads.emplace_back([&l, &failed, m, n, k] {
        if (!l.backend->Linear(l.x.data(), l.w.data(), l.bias.data(), l.y.data(), m, n, k, Activation::kNone).ok()) {
          failed = true;
        }
      });
    }
    for (std::thread& t : threads) t.join();
  }
  if (failed) state.SkipWithError("linear failed");
  state.SetLabel(PathName(path));
  state.counters["GFLOPs"] = benchmark::Counter(2 * 2.0 * m * n * k * static_cast<double>(state.iterations()) / 1e9,
                                                benchmark::Counter::kIsRate);
  (void)SetBlasThreads(before);
}
BENCHMARK(BM_LinearTwoLanes)->ArgName("path")->Arg(0)->Arg(1)->UseRealTime()->Unit(benchmark::kMillisecond);

// Attention: scores = Q·Kᵀ per head over the batch (seq x seq x head_dim, 32 sequences), strided
// in the fused QKV buffer as the encoder lays it out, in one GemmHeadsBatched call as the encoder
// makes it.
void BM_AttentionScores(benchmark::State& state) {
  const int64_t path = state.range(0);
  const int before = BlasThreads();
  (void)SetBlasThreads(static_cast<int>(state.range(1)));
  auto backend = BackendFor(path);
  const int h3 = 3 * kHidden;
  const std::vector<float> qkv = Data(std::size_t(kTokens) * h3);
  std::vector<float> scores(std::size_t(kBatch) * kHeads * kSeq * kSeq);
  const int64_t seq_stride = int64_t{kSeq} * h3, score_stride = int64_t{kHeads} * kSeq * kSeq;
  for (auto _ : state) {
    if (!backend
             ->GemmHeadsBatched(false, true, kSeq, kSeq, kHeadDim, 1.f, qkv.data(), h3, seq_stride, kHeadDim,
                                qkv.data() + kHidden, h3, seq_stride, kHeadDim, 0.f, scores.data(), kSeq, score_stride,
                                int64_t{kSeq} * kSeq, kBatch, kHeads)
             .ok()) {
      state.SkipWithError("batched gemm failed");
    }
    benchmark::DoNotOptimize(scores.data());
  }
  state.SetLabel(PathName(path));
  state.counters["GFLOPs"] = benchmark::Counter(2.0 * kSeq * kSeq * kHeadDim * kHeads * kBatch *
                                                    static_cast<double>(state.iterations()) / 1e9,
                                                benchmark::Counter::kIsRate);
  (void)SetBlasThreads(before);
}
BENCHMARK(BM_AttentionScores)
    ->ArgNames({"path", "threads"})
    ->ArgsProduct({{0, 1, 2}, {1, 2}})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// A small product below the kSmall threshold (m·n·k < 2^18): the pooling shape, 1 x 384 x 128,
// run on both libraries to check that leaving these on OpenBLAS is right.
// A MiniLM Linear layer (2400 rows: 32 sentences x 75 tokens) with prepared weights in each
// LinearDType on the default path, one thread (args: dtype 0 float32 / 1 bfloat16 / 2 int8, n, k).
// GFLOP/s counts the float32 work (2·m·n·k) whatever the dtype.
void BM_LinearDType(benchmark::State& state) {
  const LinearDType dtype = state.range(0) == 1 ? LinearDType::kBFloat16
                            : state.range(0) == 2 ? LinearDType::kInt8
                                                  : LinearDType::kFloat32;
  const int m = 2400, n = static_cast<int>(state.range(1)), k = static_cast<int>(state.range(2));
  if (!SetBlasThreads(1).ok()) state.SkipWithError("cannot set 1 BLAS thread");
  auto backend = BackendFor(2);
  const std::vector<float> x(std::size_t(m) * k, 0.25f), w(std::size_t(n) * k, 0.125f), bias(n, 0.5f);
  std::vector<float> y(std::size_t(m) * n);
  auto prepared = backend->PrepareLinear(w.data(), n, k, dtype);
  if (!prepared.ok()) {
    state.SkipWithError(prepared.status().ToString().c_str());
    return;
  }
  for (auto _ : state) {
    if (!backend->Linear(x.data(), **prepared, bias.data(), y.data(), m, Activation::kNone).ok()) {
      state.SkipWithError("Linear failed");
    }
    benchmark::DoNotOptimize(y.data());
  }
  state.SetLabel(std::string(LinearDTypeName(dtype)));
  state.counters["GFLOPs"] =
      benchmark::Counter(2.0 * m * n * k * static_cast<double>(state.iterations()) / 1e9, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_LinearDType)
    ->ArgNames({"dtype", "n", "k"})
    ->ArgsProduct({{0, 1, 2}, {1536}, {384}})
    ->Args({0, 384, 1536})->Args({1, 384, 1536})->Args({2, 384, 1536})
    ->UseRealTime()->Unit(benchmark::kMillisecond);

// A MiniLM encoder's four Linear products (QKV, attention output, FFN up with GELU, FFN down) over
// six layers of distinct weights (about 21 MB: cold in cache, as in a forward pass), m rows each,
// on the default path with one thread, the weights either as nn.Linear stores them (arg layout 0:
// Linear(x, w)) or prepared once (1: PrepareLinear float32, which copies them into the layout
// oneDNN runs faster here, cpu_dnnl::LinearWeightsLayout: [k x n] below AVX-512, oneDNN's blocked
// layout on AVX-512 and up). Run it with ONEDNN_MAX_CPU_ISA=AVX2, or under scripts/as-cpu.sh avx2,
// to see the AVX2 path on a newer CPU.
void BM_LinearWeightsLayout(benchmark::State& state) {
  const int64_t layout = state.range(0);
  const int m = static_cast<int>(state.range(1));
  if (!SetBlasThreads(1).ok()) state.SkipWithError("cannot set 1 BLAS thread");
  auto backend = BackendFor(2);
  struct Product {
    int n, k;
    Activation act;
  };
  const Product products[] = {{3 * kHidden, kHidden, Activation::kNone},
                              {kHidden, kHidden, Activation::kNone},
                              {kInter, kHidden, Activation::kGelu},
                              {kHidden, kInter, Activation::kNone}};
  std::vector<std::vector<float>> weights;
  std::vector<std::unique_ptr<PreparedLinear>> prepared;
  for (int layer = 0; layer < 6; ++layer) {
    for (const Product& p : products) {
      weights.push_back(Data(std::size_t(p.n) * p.k));
      weights.back()[layer] += 0.5f;  // distinct tensors
      auto made = backend->PrepareLinear(weights.back().data(), p.n, p.k, LinearDType::kFloat32);
      if (!made.ok()) {
        state.SkipWithError(made.status().ToString().c_str());
        return;
      }
      prepared.push_back(std::move(*made));
    }
  }
  const std::vector<float> x = Data(std::size_t(m) * kInter), bias = Data(kInter);
  std::vector<float> y(std::size_t(m) * kInter);
  double flops = 0;
  for (auto _ : state) {
    for (std::size_t i = 0; i < prepared.size(); ++i) {
      const Product& p = products[i % 4];
      const Status s = layout == 0 ? backend->Linear(x.data(), weights[i].data(), bias.data(), y.data(), m, p.n, p.k, p.act)
                                   : backend->Linear(x.data(), *prepared[i], bias.data(), y.data(), m, p.act);
      if (!s.ok()) state.SkipWithError(s.ToString().c_str());
      flops += 2.0 * m * p.n * p.k;
    }
    benchmark::DoNotOptimize(y.data());
  }
  const cpu_dnnl::WeightsLayout copy = cpu_dnnl::LinearWeightsLayout();
  state.SetLabel(layout == 0 || prepared[0]->bytes() == 0 ? (layout == 0 ? "nn.Linear [n x k]" : "prepared: no copy here")
                 : copy == cpu_dnnl::WeightsLayout::kKn  ? "prepared: [k x n] copy"
                                                         : "prepared: oneDNN's blocked copy");
  state.counters["GFLOPs"] = benchmark::Counter(flops / 1e9, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_LinearWeightsLayout)
    ->ArgNames({"layout", "m"})
    ->ArgsProduct({{0, 1}, {128, 256}})
    ->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_SmallGemm(benchmark::State& state) {
  const int64_t path = state.range(0);
  auto backend = BackendFor(path);
  const std::vector<float> a = Data(kSeq), b = Data(std::size_t(kSeq) * kHidden);
  std::vector<float> c(kHidden);
  for (auto _ : state) {
    if (!backend->Gemm(false, false, 1, kHidden, kSeq, 1.f, a.data(), kSeq, b.data(), kHidden, 0.f, c.data(), kHidden)
             .ok()) {
      state.SkipWithError("gemm failed");
    }
    benchmark::DoNotOptimize(c.data());
  }
  state.SetLabel(PathName(path));
  state.counters["GFLOPs"] = benchmark::Counter(2.0 * kSeq * kHidden * static_cast<double>(state.iterations()) / 1e9,
                                                benchmark::Counter::kIsRate);
}
BENCHMARK(BM_SmallGemm)->ArgName("path")->Arg(0)->Arg(1)->UseRealTime();

}  // namespace
}  // namespace dfw

DFW_BENCHMARK_MAIN();
