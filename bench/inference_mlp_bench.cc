// Raw speed of the pieces RunInference stands on: OpenBLAS sgemm (GFLOP/s) and the MLP handler
// called directly (rows/s) on a model big enough to be compute-bound.
//
// The compute-bound model (written to a temp dir at start): 64 → 2048 → 2048 → 16, ReLU, softmax;
// ~4.36 M weights, ~8.7 MFLOP per row for 64 input and 16 output numbers, so compute per row is
// far above the JSON a pipeline reads and writes per row.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "dfw/backend/registry.h"
#include "dfw/inference/mlp_handler.h"
#include "bench_main.h"

namespace dfw {
namespace {

constexpr int kInputDim = 64;
constexpr int kHidden = 2048;
constexpr int kOutputs = 16;

void BM_Sgemm(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  auto backend = MakeCpuBackend();
  std::vector<float> a(n * n, 0.5f), b(n * n, 0.25f), c(n * n);
  for (auto _ : state) {
    (void)backend->Gemm(false, true, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
    benchmark::DoNotOptimize(c.data());
  }
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * n * n * n, benchmark::Counter::kIsIterationInvariantRate,
                                                 benchmark::Counter::kIs1000);
}
BENCHMARK(BM_Sgemm)->Arg(256)->Arg(512)->Arg(1024)->UseRealTime();

// Writes the benchmark model once; returns its directory. With $DFW_BENCH_MODEL_DIR set the model
// is written there and kept (scripts/bench_inference.sh runs the pipeline on the same model).
const std::string& BenchModelDir() {
  static const char* keep = std::getenv("DFW_BENCH_MODEL_DIR");
  static const std::string dir = [] {
    std::string path = keep != nullptr && *keep != '\0'
                           ? std::string(keep)
                           : (std::filesystem::temp_directory_path() / ("dfw-bench-mlp-" + std::to_string(::getpid()))).string();
    std::filesystem::create_directories(path);
    const std::vector<std::pair<int, int>> layers = {{kInputDim, kHidden}, {kHidden, kHidden}, {kHidden, kOutputs}};
    std::mt19937 rng(1);
    std::normal_distribution<float> dist(0.0f, 0.05f);
    std::string header = "{", data;
    std::string cfg = R"({"model_type":"mlp","input_dim":)" + std::to_string(kInputDim) + R"(,"output":"softmax","layers":[)";
    for (std::size_t i = 0; i < layers.size(); ++i) {
      const auto [in, out] = layers[i];
      const std::string name = "fc" + std::to_string(i + 1);
      for (const auto& [suffix, count, shape] :
           {std::tuple{".weight", in * out, "[" + std::to_string(out) + "," + std::to_string(in) + "]"},
            std::tuple{".bias", out, "[" + std::to_string(out) + "]"}}) {
        std::vector<float> v(count);
        for (float& x : v) x = dist(rng);
        const std::size_t begin = data.size();
        data.append(reinterpret_cast<const char*>(v.data()), v.size() * 4);
        header += (header.size() > 1 ? "," : "") + std::string("\"") + name + suffix + "\":{\"dtype\":\"F32\",\"shape\":" +
                  shape + ",\"data_offsets\":[" + std::to_string(begin) + "," + std::to_string(data.size()) + "]}";
      }
      cfg += (i ? "," : "") + std::string(R"({"name":")") + name + R"(","out_features":)" + std::to_string(out) +
             R"(,"activation":")" + (i + 1 < layers.size() ? "relu" : "none") + "\"}";
    }
    header += "}";
    while (header.size() % 8) header += ' ';
    std::string len(8, '\0');
    for (int i = 0; i < 8; ++i) len[i] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
    std::ofstream(path + "/model.safetensors", std::ios::binary) << len << header << data;
    std::ofstream(path + "/config.json") << cfg << "]}";
    if (keep == nullptr || *keep == '\0') std::atexit([] { std::filesystem::remove_all(BenchModelDir()); });
    return path;
  }();
  return dir;
}

// A loaded model and a batch of state.range(0) random rows for it.
struct DirectModel {
  std::unique_ptr<Model> model;
  std::vector<Value> examples;
  std::vector<const Value*> ptrs;
  std::vector<Value> preds;
  Status Run() {
    preds.clear();
    return model->RunInference(ptrs, preds);
  }
};

Result<DirectModel> LoadDirect(int batch, unsigned seed) {
  ModelHandlerOptions o;
  o.model_path = BenchModelDir();
  o.input_field = "x";
  ASSIGN_OR_RETURN(auto handler, MakeModelHandler(kMlpHandlerType, o));
  DirectModel d;
  ASSIGN_OR_RETURN(d.model, handler->LoadModel({}));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(-1, 1);
  for (int r = 0; r < batch; ++r) {
    List xs;
    for (int j = 0; j < kInputDim; ++j) xs.push_back(Value::Float(dist(rng)));
    d.examples.push_back(Value::FromList(std::move(xs)));
  }
  for (const Value& v : d.examples) d.ptrs.push_back(&v);
  return d;
}

void SetRates(benchmark::State& state, double rows_per_iteration) {
  state.counters["rows/s"] = benchmark::Counter(rows_per_iteration, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["GFLOP/s"] = benchmark::Counter(
      2.0 * rows_per_iteration * (double{kInputDim} * kHidden + double{kHidden} * kHidden + double{kHidden} * kOutputs),
      benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}

// One model called directly, the BLAS pool as the process has it (every CPU by default).
void BM_MlpHandlerRaw(benchmark::State& state) {
  const int batch = static_cast<int>(state.range(0));
  auto d = LoadDirect(batch, 2);
  if (!d.ok()) return state.SkipWithError(d.status().ToString().c_str());
  for (auto _ : state) {
    if (!d->Run().ok()) return state.SkipWithError("inference failed");
    benchmark::DoNotOptimize(d->preds.data());
  }
  SetRates(state, batch);
}
BENCHMARK(BM_MlpHandlerRaw)->Arg(64)->Arg(256)->Arg(1024)->UseRealTime();

// The other way to run the model directly: one loaded model per CPU, one BLAS thread each, each
// iteration one batch on every model at once (what the pipeline's inference lanes do,
// dfw/backend/registry.h). rows/s counts the rows of all models.
void BM_MlpHandlerRawLanes(benchmark::State& state) {
  const int batch = static_cast<int>(state.range(0));
  const int lanes = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int before = BlasThreads();
  (void)SetBlasThreads(1);
  std::vector<DirectModel> models;
  for (int i = 0; i < lanes; ++i) {
    auto d = LoadDirect(batch, 2 + static_cast<unsigned>(i));
    if (!d.ok()) return state.SkipWithError(d.status().ToString().c_str());
    models.push_back(std::move(d).value());
  }
  std::vector<int> ok(static_cast<std::size_t>(lanes), 1);
  for (auto _ : state) {
    std::vector<std::thread> threads;
    for (int i = 0; i < lanes; ++i) {
      threads.emplace_back([&, i] { ok[static_cast<std::size_t>(i)] &= models[static_cast<std::size_t>(i)].Run().ok(); });
    }
    for (auto& t : threads) t.join();
  }
  (void)SetBlasThreads(before);
  for (int v : ok) {
    if (!v) return state.SkipWithError("inference failed");
  }
  state.SetLabel(std::to_string(lanes) + " lanes");
  SetRates(state, static_cast<double>(batch) * lanes);
}
BENCHMARK(BM_MlpHandlerRawLanes)->Arg(256)->UseRealTime();

}  // namespace
}  // namespace dfw

DFW_BENCHMARK_MAIN();
