// Text-generation speed on the CPU backend, against the memory-bandwidth bound that every decoder
// engine (llama.cpp, vLLM on a GPU) meets at batch 1: each decode step reads every weight once, so
// tokens/s ≤ memory bandwidth ÷ weight bytes per step. Prints one JSON line per measurement.
//
//   DFW_DECODER_DIR=DIR inference_generation_bench [--threads N] [--rounds R] [--new_tokens T]
//                                                 [--prompt P] [--batches 1,4,16] [--dtype float32|bfloat16]
//                                                 [--skinny_rows R]  (steps of <= R rows on the streaming kernels)
//
// Measured, in alternating rounds (batches interleaved, each round all of them):
//   bandwidth   read-only streaming over a 1 GiB buffer with N threads (best of 3): the bound's input
//   prefill     one prompt of P tokens through the model (tokens/s)
//   decode B    B sequences of P-token prompts, T new tokens each, greedy, continuous batching:
//               generated tokens / decode time (prefill time excluded), and the ratio of batch-1 speed
//               to the bound
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "dfw/backend/registry.h"
#include "dfw/common/logging.h"
#include "dfw/inference/decoder_config.h"
#include "dfw/inference/decoder_model.h"
#include "dfw/inference/generation.h"
#include "dfw/inference/safetensors.h"

namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point a) { return std::chrono::duration<double>(Clock::now() - a).count(); }

// Bytes/s of a read-only pass over `buf` split across `threads` (the best of `tries`).
double ReadBandwidth(const std::vector<float>& buf, int threads, int tries) {
  double best = 0;
  for (int t = 0; t < tries; ++t) {
    std::vector<double> sums(static_cast<std::size_t>(threads));
    const auto start = Clock::now();
    std::vector<std::thread> pool;
    const std::size_t chunk = buf.size() / static_cast<std::size_t>(threads);
    for (int i = 0; i < threads; ++i) {
      pool.emplace_back([&, i] {
        // Four 16-byte vector accumulators (GCC vector extensions: SSE on any x86-64), enough
        // independent adds to keep the loads, not the adds, the limit.
        typedef float v4 __attribute__((vector_size(16)));
        const v4* p = reinterpret_cast<const v4*>(buf.data() + static_cast<std::size_t>(i) * chunk);
        v4 a0 = {}, a1 = {}, a2 = {}, a3 = {};
        for (std::size_t k = 0; k + 4 <= chunk / 4; k += 4) {
          a0 += p[k];
          a1 += p[k + 1];
          a2 += p[k + 2];
          a3 += p[k + 3];
        }
        const v4 a = a0 + a1 + a2 + a3;
        sums[static_cast<std::size_t>(i)] = static_cast<double>(a[0] + a[1] + a[2] + a[3]);
      });
    }
    for (auto& th : pool) th.join();
    const double secs = Seconds(start);
    if (std::accumulate(sums.begin(), sums.end(), 0.0) == 12345.678) std::puts("");  // keep the reads
    best = std::max(best, static_cast<double>(buf.size() * sizeof(float)) / secs);
  }
  return best;
}

std::vector<int> ParseList(const std::string& s) {
  std::vector<int> out;
  std::size_t i = 0;
  while (i < s.size()) {
    std::size_t j = s.find(',', i);
    if (j == std::string::npos) j = s.size();
    out.push_back(std::atoi(s.substr(i, j - i).c_str()));
    i = j + 1;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace dfw;
  (void)InitLogging("warning", "bench");
  int threads = 2, rounds = 3, new_tokens = 32, prompt_len = 32, skinny_rows = 8;
  std::vector<int> batches = {1, 4, 16};
  std::string dtype_name = "float32";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--threads") threads = std::atoi(v.c_str());
    else if (k == "--rounds") rounds = std::atoi(v.c_str());
    else if (k == "--new_tokens") new_tokens = std::atoi(v.c_str());
    else if (k == "--prompt") prompt_len = std::atoi(v.c_str());
    else if (k == "--batches") batches = ParseList(v);
    else if (k == "--dtype") dtype_name = v;
    else if (k == "--skinny_rows") skinny_rows = std::atoi(v.c_str());
    else {
      std::fprintf(stderr, "unknown flag %s\n", k.c_str());
      return 2;
    }
  }
  const char* dir = std::getenv("DFW_DECODER_DIR");
  if (dir == nullptr) {
    std::fprintf(stderr, "set DFW_DECODER_DIR to a decoder model directory (scripts/make_bench_decoder.py)\n");
    return 2;
  }
  auto dtype = ParseLinearDType(dtype_name);
  auto config = DecoderConfig::Load(std::string(dir) + "/config.json");
  auto file = config.ok() ? SafetensorsFile::Open(std::string(dir) + "/model.safetensors") : config.status();
  if (!dtype.ok() || !config.ok() || !file.ok()) {
    std::fprintf(stderr, "%s\n", (!dtype.ok() ? dtype.status() : !config.ok() ? config.status() : file.status()).ToString().c_str());
    return 2;
  }
  if (Status s = SetBlasThreads(threads); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return 2;
  }
  auto backend = MakeCpuBackend();
  auto model = DecoderModel::Load(*config, **file, backend.get(), *dtype, skinny_rows);
  if (!model.ok()) {
    std::fprintf(stderr, "%s\n", model.status().ToString().c_str());
    return 2;
  }
  const double streamed = static_cast<double>((*model)->streamed_weight_bytes());
  std::vector<float> buf((std::size_t{1} << 30) / sizeof(float), 1.0f);
  GenerationParams p;
  p.do_sample = false;
  p.max_new_tokens = new_tokens;
  p.eos_token_ids.clear();  // every sequence runs its full length
  std::vector<std::vector<int32_t>> prompts;
  for (int s = 0; s < *std::max_element(batches.begin(), batches.end()); ++s) {
    std::vector<int32_t> ids;
    for (int t = 0; t < prompt_len; ++t) ids.push_back(static_cast<int32_t>((s * 7919 + t * 104729) % config->vocab_size));
    prompts.push_back(std::move(ids));
  }
  std::printf("{\"what\": \"setup\", \"model\": \"%s\", \"parameters\": %llu, \"weight_bytes_per_step\": %.0f, \"dtype\": \"%s\", "
              "\"threads\": %d, \"backend\": \"%s\"}\n",
              dir, static_cast<unsigned long long>(config->ParameterCount()), streamed, dtype_name.c_str(), threads,
              backend->description().c_str());
  {
    // Warm-up: the first product of a process calibrates the CPU backend's GEMM path, and first
    // shapes build their oneDNN primitives; neither belongs in a round's figures.
    EngineOptions eo;
    eo.max_sequences = 2;
    GenerationEngine engine(model->get(), eo);
    GenerationParams w = p;
    w.max_new_tokens = 2;
    std::vector<GenerationRequest> reqs(2);
    for (int s = 0; s < 2; ++s) {
      reqs[static_cast<std::size_t>(s)].prompt = prompts[0];
      reqs[static_cast<std::size_t>(s)].params = &w;
    }
    std::vector<std::vector<GeneratedSequence>> out;
    GenerationStats stats;
    (void)engine.Run(reqs, out, stats);
  }
  for (int round = 0; round < rounds; ++round) {
    const double bw = ReadBandwidth(buf, threads, 3);
    std::printf("{\"what\": \"bandwidth\", \"round\": %d, \"bytes_per_s\": %.0f, \"decode_limit_tokens_per_s\": %.2f}\n", round, bw,
                bw / streamed);
    // Rotate the order each round so no batch size always runs first.
    std::vector<int> order = batches;
    std::rotate(order.begin(), order.begin() + (round % static_cast<int>(order.size())), order.end());
    for (int b : order) {
      EngineOptions eo;
      eo.max_sequences = b;
      eo.max_step_tokens = std::max(512, prompt_len * b);
      eo.kv_cache_bytes = config->KvBytesPerToken(sizeof(float)) * static_cast<uint64_t>(b) *
                          static_cast<uint64_t>(prompt_len + new_tokens + 2 * PagedKvCache::kBlockTokens);
      GenerationEngine engine(model->get(), eo);
      std::vector<GenerationRequest> reqs(static_cast<std::size_t>(b));
      for (int s = 0; s < b; ++s) {
        reqs[static_cast<std::size_t>(s)].prompt = prompts[static_cast<std::size_t>(s)];
        reqs[static_cast<std::size_t>(s)].params = &p;
        reqs[static_cast<std::size_t>(s)].key = static_cast<uint64_t>(s);
      }
      std::vector<std::vector<GeneratedSequence>> out;
      GenerationStats stats;
      const auto start = Clock::now();
      if (Status s = engine.Run(reqs, out, stats); !s.ok()) {
        std::fprintf(stderr, "%s\n", s.ToString().c_str());
        return 1;
      }
      const double total = Seconds(start);
      // Decode time: the steps after each sequence's first token (steps with prompt rows are
      // counted as prefill by their share of rows).
      const double decode_tokens = static_cast<double>(stats.generated_tokens - b);
      const double tps = decode_tokens / std::max(stats.decode_seconds, 1e-9);
      std::printf("{\"what\": \"decode\", \"round\": %d, \"batch\": %d, \"tokens_per_s\": %.2f, \"prefill_tokens_per_s\": %.1f, "
                  "\"steps\": %lld, \"seconds\": %.3f, \"vs_bandwidth_limit\": %.3f}\n",
                  round, b, tps, static_cast<double>(stats.prefill_tokens) / std::max(stats.prefill_seconds, 1e-9),
                  static_cast<long long>(stats.steps), total, b == 1 ? tps / (bw / streamed) : 0.0);
      std::fflush(stdout);
    }
  }
  return 0;
}
