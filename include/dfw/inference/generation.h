// Generation: what transformers' generate() does with next-token logits (the logits processors and
// warpers, greedy or sampled choice, stopping), and the engine that runs many sequences through a
// DecoderModel at once.
//
// The engine is continuous batching over a paged KV cache, as vLLM schedules it: up to
// max_sequences sequences are active; each step feeds every active sequence's next token (decode)
// plus prompt chunks of newly admitted sequences (prefill, at most max_step_tokens rows per step);
// a sequence that finishes frees its cache blocks and a waiting one joins in the next step. When
// the cache runs out of blocks mid-generation, the most recently admitted sequence is preempted
// (its blocks freed, its prompt and tokens so far recomputed later), so nothing is lost.
//
// Sampling is reproducible: each sequence draws from its own counter-based stream keyed by
// (seed, the request's key, the sequence's index, the step), so the tokens it gets do not depend
// on which other sequences share its steps, on preemption, or on how many processes run the job.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "dfw/common/status.h"
#include "dfw/inference/decoder_model.h"

namespace dfw {

// transformers' generation parameters that this engine implements (GenerationConfig names).
struct GenerationParams {
  int max_new_tokens = 256;
  int min_new_tokens = 0;
  bool do_sample = true;
  double temperature = 0.7;
  int top_k = 50;         // 0: off
  double top_p = 1.0;     // 1: off
  double min_p = 0.0;     // 0: off
  double repetition_penalty = 1.0;  // 1: off
  std::vector<int32_t> eos_token_ids;
  int num_return_sequences = 1;
  uint64_t seed = 0;
};

// Applies transformers' logits processors in its order — repetition penalty (over `context`:
// prompt and generated ids), then for sampling temperature, top-k, top-p, min-p — and picks the
// next token: argmax (greedy; the lowest id on ties, as torch.argmax) or a draw with `uniform` in
// [0, 1) from the softmax. `min_new_tokens` not reached: the EOS ids are masked first.
// `logits` is modified (scratch).
int32_t ChooseToken(std::span<float> logits, std::span<const int32_t> context, const GenerationParams& p, bool mask_eos,
                    double uniform);

// The uniform draw for (seed, key, sequence, step): splitmix64-mixed counters, 53-bit mantissa.
double CounterUniform(uint64_t seed, uint64_t key, uint64_t sequence, uint64_t step);

struct GenerationRequest {
  std::vector<int32_t> prompt;  // token ids (at least one)
  const GenerationParams* params = nullptr;
  uint64_t key = 0;  // distinguishes requests' random streams (e.g. a hash of the prompt)
  // Called after each new token with the tokens generated so far; true stops the sequence (stop
  // strings). May be empty.
  std::function<bool(std::span<const int32_t> generated)> stop;
};

struct GeneratedSequence {
  std::vector<int32_t> tokens;  // generated ids (EOS included when it stopped on one)
  std::string finish_reason;    // "eos", "length", "stop"
};

struct GenerationStats {
  int64_t steps = 0;
  int64_t prefill_tokens = 0;
  int64_t generated_tokens = 0;
  int64_t preemptions = 0;
  int64_t max_active = 0;
  double prefill_seconds = 0;  // steps that fed only prompt rows... or any prompt rows (their share)
  double decode_seconds = 0;
  std::vector<double> time_to_first_token_s;  // per sequence, from the start of Run
};

struct EngineOptions {
  int max_sequences = 16;     // active at once
  int max_step_tokens = 512;  // rows per step (prefill chunks are cut to fit)
  uint64_t kv_cache_bytes = uint64_t{256} << 20;
};

class GenerationEngine {
 public:
  GenerationEngine(DecoderModel* model, EngineOptions options);

  // Generates for every request (num_return_sequences sequences each); `out[i]` holds request i's
  // sequences in order. A request whose prompt plus one token cannot fit the whole KV cache is
  // kResourceExhausted naming the sizes (CheckFits says so before Run).
  Status Run(std::span<const GenerationRequest> requests, std::vector<std::vector<GeneratedSequence>>& out,
             GenerationStats& stats);

  // OK when a sequence of `tokens` tokens fits the KV cache on its own.
  Status CheckFits(int tokens) const;
  const EngineOptions& options() const { return options_; }

 private:
  DecoderModel* model_;
  EngineOptions options_;
  PagedKvCache cache_;
};

}  // namespace dfw
