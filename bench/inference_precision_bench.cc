// Sentence-embedding throughput of the BERT encoder with its Linear layers in each LinearDType
// (float32, bfloat16, int8) on the CPU backend's default GEMM path, and each one's agreement with
// float32 over the same sentences (min / mean cosine of the pooled, normalised embeddings). The
// model comes from $DFW_MINILM_DIR (scripts/fetch_minilm.sh; default: the tiny test model), the
// sentences from $DFW_BENCH_SENTENCES (one per line) else a built-in varied set. Run through
// scripts/bench_precision.sh, which alternates the dtypes (random interleaving, repetitions).
//
// Arg: dtype (0 float32, 1 bfloat16, 2 int8). A dtype this CPU cannot run is skipped with the
// backend's reason (the missing ISA). Counters: sentences/s, min_cosine and mean_cosine to float32.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
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
  return BenchSentences({"search", "retrieval", "embedding", "vector", "model",  "sentence", "query", "document",
                         "semantic", "similarity", "résumé", "café", "the", "of", "don't", "GPU", "pipeline", "is"},
                        256, 60);
}

// One backend and encoder; the dtype is switched per benchmark (weights re-prepared untimed).
struct Fixture {
  std::unique_ptr<InferenceBackend> backend = MakeCpuBackend();
  std::unique_ptr<SafetensorsFile> weights;
  std::unique_ptr<BertEncoder> encoder;
  std::vector<std::vector<int32_t>> ids;
  std::vector<std::span<const int32_t>> seqs;
  std::vector<float> reference;  // float32 embeddings
  std::map<LinearDType, std::pair<double, double>> agreement;  // min, mean cosine to float32
  std::string error;

  Fixture() {
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
    for (const auto& s : Sentences()) {
      ids.emplace_back();
      if (!tok->Encode(s, kMaxSeq, ids.back()).ok()) ids.back() = {tok->cls_id(), tok->sep_id()};
    }
    seqs.assign(ids.begin(), ids.end());
    reference = Run();
  }

  std::vector<float> Run() {
    std::vector<float> out(seqs.size() * static_cast<std::size_t>(encoder->hidden_size()));
    if (!encoder->EncodeMany(seqs, out, true).ok()) error = "encode failed";
    return out;
  }

  // Switches to `d` and, the first time, measures its agreement with float32.
  Status Use(LinearDType d) {
    RETURN_IF_ERROR(encoder->SetLinearDType(d));
    if (agreement.count(d) == 0) {
      const std::vector<float> got = Run();
      const int h = encoder->hidden_size();
      double worst = 1, sum = 0;
      for (std::size_t r = 0; r < seqs.size(); ++r) {
        double dot = 0, na = 0, nb = 0;
        for (int j = 0; j < h; ++j) {
          const double a = reference[r * h + j], b = got[r * h + j];
          dot += a * b, na += a * a, nb += b * b;
        }
        const double c = dot / std::sqrt(na * nb);
        worst = std::min(worst, c);
        sum += c;
      }
      agreement[d] = {worst, sum / static_cast<double>(seqs.size())};
    }
    return Status::OK();
  }
};

Fixture& Get() {
  static Fixture f;
  return f;
}

void BM_EmbedDType(benchmark::State& state) {
  Fixture& f = Get();
  const LinearDType d = state.range(0) == 1 ? LinearDType::kBFloat16
                        : state.range(0) == 2 ? LinearDType::kInt8
                                              : LinearDType::kFloat32;
  if (!f.error.empty()) {
    state.SkipWithError(f.error.c_str());
    return;
  }
  if (Status s = f.Use(d); !s.ok()) {
    state.SkipWithError(s.ToString().c_str());
    return;
  }
  std::vector<float> out(f.seqs.size() * static_cast<std::size_t>(f.encoder->hidden_size()));
  for (auto _ : state) {
    if (!f.encoder->EncodeMany(f.seqs, out, true).ok()) state.SkipWithError("encode failed");
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(f.seqs.size()));
  state.SetLabel(std::string(LinearDTypeName(d)));
  state.counters["min_cosine"] = f.agreement[d].first;
  state.counters["mean_cosine"] = f.agreement[d].second;
}
BENCHMARK(BM_EmbedDType)->ArgName("dtype")->DenseRange(0, 2)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace dfw

DFW_BENCHMARK_MAIN();
