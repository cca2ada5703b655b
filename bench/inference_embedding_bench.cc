// Sentence-embedding throughput of the BERT encoder on the CPU backend, and the sgemm rate that
// bounds it. The model comes from $DFW_MINILM_DIR (scripts/fetch_minilm.sh; default: the tiny
// test model); the sentences from $DFW_BENCH_SENTENCES (one per line, as scripts/bench_embeddings.sh
// writes them for PyTorch too), else a built-in varied set. Run through scripts/bench_embeddings.sh.
//
// Args: grouped (length-sorted batches), path (the CPU backend's GEMM path: 0 auto, the default;
// 1 openblas; 2 onednn). scripts/bench_gemm.sh alternates the paths.
//
// Counters: sentences/s (items_per_second), padded_tokens / real_tokens per batch (padding waste),
// GFLOP/sentence (real tokens only, the work a perfect padding-free run would do).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "dfw/backend/registry.h"
#include "dfw/inference/bert_encoder.h"
#include "dfw/inference/safetensors.h"
#include "dfw/tokenizers/wordpiece_tokenizer.h"
#include "bench_main.h"
#include "bench_sentences.h"

namespace dfw {
namespace {

constexpr int kBatch = 32;
constexpr int kMaxSeq = 128;

std::vector<std::string> Sentences() {
  return BenchSentences({"search", "retrieval", "embedding", "vector", "model", "sentence", "query", "document",
                         "semantic", "similarity", "résumé", "café", "日本", "😀", "—", "don't", "GPU", "pipeline"},
                        512, 90);
}

struct Fixture {
  std::unique_ptr<InferenceBackend> backend;
  std::unique_ptr<SafetensorsFile> weights;
  std::unique_ptr<BertEncoder> encoder;
  std::vector<std::string> sentences = Sentences();
  std::unique_ptr<WordPieceTokenizer> tokenizer;
  std::vector<std::vector<int32_t>> ids;
  std::vector<std::span<const int32_t>> seqs;
  int64_t real_tokens = 0;
  std::string error;

  explicit Fixture(CpuGemmPath path) : backend(MakeCpuBackend(path)) {
    benchmark::DoNotOptimize(backend->description());  // the auto path calibrates now, not in a timed batch
    const char* env = std::getenv("DFW_MINILM_DIR");
    const std::string dir = env ? env : "testdata/tiny_bert";  // run from the repository root
    auto tok = WordPieceTokenizer::Load(dir);
    auto config = BertConfig::Load(dir + "/config.json");
    auto w = SafetensorsFile::Open(dir + "/model.safetensors");
    if (!tok.ok() || !config.ok() || !w.ok()) {
      error = "cannot load " + dir;
      return;
    }
    weights = std::move(*w);
    BertEncoderOptions o;
    o.max_batch = kBatch;
    o.max_seq_length = kMaxSeq;
    auto e = BertEncoder::Make(*config, *weights, backend.get(), o);
    if (!e.ok()) {
      error = e.status().ToString();
      return;
    }
    encoder = std::move(*e);
    tokenizer = std::make_unique<WordPieceTokenizer>(std::move(*tok));
    for (const auto& s : sentences) {
      ids.emplace_back();
      if (!tokenizer->Encode(s, kMaxSeq, ids.back()).ok()) ids.back() = {tokenizer->cls_id(), tokenizer->sep_id()};
      real_tokens += static_cast<int64_t>(ids.back().size());
    }
    seqs.assign(ids.begin(), ids.end());
  }
};

CpuGemmPath PathArg(int64_t arg) {
  return arg == 1 ? CpuGemmPath::kOpenBlas : arg == 2 ? CpuGemmPath::kOneDnn : CpuGemmPath::kAuto;
}

// One fixture per GEMM path, built on first use (the auto path calibrates then).
Fixture& Get(CpuGemmPath path = CpuGemmPath::kAuto) {
  static std::unique_ptr<Fixture> fixtures[3];
  std::unique_ptr<Fixture>& f = fixtures[static_cast<int>(path)];
  if (f == nullptr) f = std::make_unique<Fixture>(path);
  return *f;
}

void BM_Embed(benchmark::State& state) {
  Fixture& f = Get(PathArg(state.range(1)));
  if (!f.error.empty()) {
    state.SkipWithError(f.error.c_str());
    return;
  }
  const bool grouped = state.range(0) != 0;
  std::vector<float> out(f.seqs.size() * static_cast<std::size_t>(f.encoder->hidden_size()));
  for (auto _ : state) {
    if (!f.encoder->EncodeMany(f.seqs, out, grouped).ok()) state.SkipWithError("encode failed");
    benchmark::DoNotOptimize(out.data());
  }
  // Padded tokens the encoder actually ran (batches of kBatch in the order EncodeMany uses).
  std::vector<std::size_t> len;
  for (const auto& s : f.seqs) len.push_back(s.size());
  if (grouped) std::stable_sort(len.begin(), len.end());
  double padded = 0, flops_padded = 0;
  for (std::size_t i = 0; i < len.size(); i += kBatch) {
    const std::size_t n = std::min<std::size_t>(kBatch, len.size() - i);
    const std::size_t longest = *std::max_element(len.begin() + i, len.begin() + i + n);
    padded += static_cast<double>(n * longest);
    flops_padded += BertEncoder::Flops(f.encoder->config(), static_cast<int>(n), static_cast<int>(longest));
  }
  double flops_real = 0;
  for (std::size_t l : len) flops_real += BertEncoder::Flops(f.encoder->config(), 1, static_cast<int>(l));
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(f.seqs.size()));
  state.SetLabel(f.backend->description());  // the BLAS build and its thread count
  state.counters["padding_ratio"] = padded / static_cast<double>(f.real_tokens);
  state.counters["GFLOP_per_sentence"] = flops_real / 1e9 / static_cast<double>(len.size());
  state.counters["GFLOPs_padded"] =
      benchmark::Counter(flops_padded * static_cast<double>(state.iterations()) / 1e9, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Embed)
    ->ArgNames({"grouped", "path"})
    ->ArgsProduct({{1, 0}, {0, 1, 2}})
    ->Unit(benchmark::kMillisecond)->UseRealTime();

// Tokenizing the same sentences (BM_Embed starts from token ids; PyTorch and ONNX Runtime timings in
// scripts/bench_embeddings.sh include their tokenizer, so the script charges ours with this too).
void BM_Tokenize(benchmark::State& state) {
  Fixture& f = Get();
  if (!f.error.empty()) {
    state.SkipWithError(f.error.c_str());
    return;
  }
  std::vector<int32_t> ids;
  for (auto _ : state) {
    for (const std::string& s : f.sentences) {
      if (!f.tokenizer->Encode(s, kMaxSeq, ids).ok()) state.SkipWithError("tokenize failed");
      benchmark::DoNotOptimize(ids.data());
    }
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(f.sentences.size()));
}
BENCHMARK(BM_Tokenize)->Unit(benchmark::kMillisecond)->UseRealTime();

// The encoder's dominant GEMM shape (tokens × intermediate × hidden for MiniLM at batch 32 × ~64).
void BM_Sgemm(benchmark::State& state) {
  const int m = static_cast<int>(state.range(0)), n = static_cast<int>(state.range(1)),
            k = static_cast<int>(state.range(2));
  auto backend = MakeCpuBackend();
  std::vector<float> a(static_cast<std::size_t>(m) * k, 0.5f), b(static_cast<std::size_t>(n) * k, 0.25f),
      c(static_cast<std::size_t>(m) * n);
  for (auto _ : state) {
    if (!backend->Gemm(false, true, m, n, k, 1.f, a.data(), k, b.data(), k, 0.f, c.data(), n).ok()) {
      state.SkipWithError("gemm failed");
    }
    benchmark::DoNotOptimize(c.data());
  }
  state.counters["GFLOPs"] =
      benchmark::Counter(2.0 * m * n * k * static_cast<double>(state.iterations()) / 1e9, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Sgemm)->Args({2048, 1536, 384})->Args({2048, 384, 1536})->Args({2048, 1152, 384})
    ->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace dfw

DFW_BENCHMARK_MAIN();
