// The logits processors, the token choice, and the continuous-batching engine.
#include "dfw/inference/generation.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <limits>
#include <numeric>
#include <string>
#include <thread>

#include "dfw/common/stop_request.h"
#include "dfw/common/test_hooks.h"

namespace dfw {
namespace {

uint64_t SplitMix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

constexpr float kMasked = -std::numeric_limits<float>::infinity();

// softmax of x into p (double), max-shifted; masked entries get 0.
void Softmax(std::span<const float> x, std::vector<double>& p) {
  p.resize(x.size());
  float best = kMasked;
  for (float v : x) best = std::max(best, v);
  double sum = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    p[i] = x[i] == kMasked ? 0.0 : std::exp(static_cast<double>(x[i]) - best);
    sum += p[i];
  }
  for (double& v : p) v /= sum;
}

}  // namespace

double CounterUniform(uint64_t seed, uint64_t key, uint64_t sequence, uint64_t step) {
  const uint64_t h = SplitMix(SplitMix(SplitMix(SplitMix(seed) ^ key) ^ sequence) ^ step);
  return static_cast<double>(h >> 11) * 0x1.0p-53;
}

int32_t ChooseToken(std::span<float> logits, std::span<const int32_t> context, const GenerationParams& p, bool mask_eos,
                    double uniform) {
  const std::size_t v = logits.size();
  if (p.repetition_penalty != 1.0) {
    const float penalty = static_cast<float>(p.repetition_penalty);
    std::vector<int32_t> seen(context.begin(), context.end());
    std::sort(seen.begin(), seen.end());
    seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
    for (int32_t id : seen) {
      if (id < 0 || static_cast<std::size_t>(id) >= v) continue;
      float& s = logits[static_cast<std::size_t>(id)];
      s = s < 0 ? s * penalty : s / penalty;
    }
  }
  if (mask_eos) {
    for (int32_t id : p.eos_token_ids) {
      if (id >= 0 && static_cast<std::size_t>(id) < v) logits[static_cast<std::size_t>(id)] = kMasked;
    }
  }
  if (!p.do_sample) {
    return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  }
  if (p.temperature != 1.0) {
    const float t = static_cast<float>(p.temperature);
    for (float& s : logits) s = s / t;
  }
  if (p.top_k > 0 && static_cast<std::size_t>(p.top_k) < v) {
    std::vector<float> sorted(logits.begin(), logits.end());
    std::nth_element(sorted.begin(), sorted.begin() + (p.top_k - 1), sorted.end(), std::greater<float>());
    const float kth = sorted[static_cast<std::size_t>(p.top_k - 1)];
    for (float& s : logits) {
      if (s < kth) s = kMasked;
    }
  }
  std::vector<double> probs;
  if (p.top_p < 1.0) {
    // transformers: ascending sort, cumulative softmax, drop entries whose cumulative mass is
    // <= 1 - top_p, always keeping the most likely token.
    std::vector<int32_t> order(v);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return logits[static_cast<std::size_t>(a)] < logits[static_cast<std::size_t>(b)]; });
    Softmax(logits, probs);
    double cum = 0;
    for (std::size_t i = 0; i + 1 < v; ++i) {
      const std::size_t id = static_cast<std::size_t>(order[i]);
      cum += probs[id];
      if (cum <= 1.0 - p.top_p) logits[id] = kMasked;
    }
  }
  if (p.min_p > 0) {
    Softmax(logits, probs);
    const double top = *std::max_element(probs.begin(), probs.end());
    for (std::size_t i = 0; i < v; ++i) {
      if (probs[i] < p.min_p * top && probs[i] < top) logits[i] = kMasked;
    }
  }
  Softmax(logits, probs);
  double cum = 0;
  int32_t last = 0;
  for (std::size_t i = 0; i < v; ++i) {
    if (probs[i] <= 0) continue;
    last = static_cast<int32_t>(i);
    cum += probs[i];
    if (uniform < cum) return last;
  }
  return last;  // rounding left the draw past the total: the last possible token
}

// ---------------------------------------------------------------- engine

GenerationEngine::GenerationEngine(DecoderModel* model, EngineOptions options)
    : model_(model), options_(options), cache_(model->config(), options.kv_cache_bytes) {}

Status GenerationEngine::CheckFits(int tokens) const {
  const int need = PagedKvCache::BlocksFor(tokens);
  if (need > cache_.max_blocks()) {
    return ResourceExhausted("a sequence of " + std::to_string(tokens) + " tokens needs " + std::to_string(need) +
                             " KV-cache blocks of " + std::to_string(PagedKvCache::kBlockTokens) + " tokens (" +
                             std::to_string(cache_.block_bytes()) + " B each); the cache holds " +
                             std::to_string(cache_.max_blocks()) + " (" + std::to_string(options_.kv_cache_bytes) + " B)");
  }
  return Status::OK();
}

namespace {

struct Sequence {
  std::size_t request = 0;
  int index = 0;  // which of the request's return sequences
  int cache_id = -1;
  std::vector<int32_t> tokens;  // prompt + generated
  std::size_t prompt = 0;
  int cached = 0;               // tokens whose K/V are in the cache
  bool first_token_seen = false;
  uint64_t admitted = 0;        // admission order, for preemption
};

}  // namespace

Status GenerationEngine::Run(std::span<const GenerationRequest> requests, std::vector<std::vector<GeneratedSequence>>& out,
                             GenerationStats& stats) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  out.assign(requests.size(), {});
  std::deque<Sequence> waiting;
  for (std::size_t r = 0; r < requests.size(); ++r) {
    const GenerationRequest& q = requests[r];
    if (q.params == nullptr || q.prompt.empty()) return InvalidArgument("generation request " + std::to_string(r) + " has no prompt");
    RETURN_IF_ERROR(CheckFits(static_cast<int>(q.prompt.size()) + 1));
    out[r].resize(static_cast<std::size_t>(std::max(1, q.params->num_return_sequences)));
    for (int i = 0; i < std::max(1, q.params->num_return_sequences); ++i) {
      Sequence s;
      s.request = r;
      s.index = i;
      s.tokens = q.prompt;
      s.prompt = q.prompt.size();
      waiting.push_back(std::move(s));
    }
  }
  std::vector<Sequence> active;
  std::vector<DecoderRow> rows;
  std::vector<std::size_t> logit_owner;  // active index per logits row
  std::vector<float> logits;
  uint64_t admissions = 0;
  const int vocab = model_->config().vocab_size;

  // Test hook DFW_TEST_DECODE_STEP_SLEEP="MS:FILE": each step sleeps MS and the first creates FILE,
  // so a real-process test can stop a generation that outlasts the launcher's grace period.
  int step_sleep_ms = 0;
  std::string step_started_file;
  if (auto hook = test_hooks::Get("DECODE_STEP_SLEEP"); hook && hook->find(':') != std::string::npos) {
    step_sleep_ms = std::atoi(hook->substr(0, hook->find(':')).c_str());
    step_started_file = hook->substr(hook->find(':') + 1);
  }
  auto release = [&](Sequence& s) {
    if (s.cache_id >= 0) cache_.Release(s.cache_id);
    s.cache_id = -1;
    s.cached = 0;
  };
  while (!waiting.empty() || !active.empty()) {
    // A stop request (the launcher's SIGUSR2 when the job is asked to stop) ends the call between
    // two steps: the bundle is not committed and runs again on --resume.
    if (StopRequested() != 0) return StoppedStatus("text generation stopped between decode steps");
    if (step_sleep_ms > 0) {
      if (!step_started_file.empty()) std::ofstream(step_started_file) << "started\n";
      step_started_file.clear();
      std::this_thread::sleep_for(std::chrono::milliseconds(step_sleep_ms));
    }
    // Admit waiting sequences while there is room: a slot, and blocks for the whole of what it
    // has (prompt and any tokens from before a preemption) plus the next token.
    while (!waiting.empty() && static_cast<int>(active.size()) < options_.max_sequences) {
      Sequence& s = waiting.front();
      const int id = cache_.AddSequence();
      if (!cache_.Reserve(id, static_cast<int>(s.tokens.size()) + 1)) {
        cache_.Release(id);
        break;
      }
      s.cache_id = id;
      s.admitted = admissions++;
      active.push_back(std::move(s));
      waiting.pop_front();
    }
    if (active.empty()) return Internal("generation: no sequence could be admitted to the KV cache");
    stats.max_active = std::max<int64_t>(stats.max_active, static_cast<int64_t>(active.size()));
    // Decode rows first (one per sequence past its prompt), then prompt chunks in admission order.
    rows.clear();
    logit_owner.clear();
    int budget = options_.max_step_tokens;
    int64_t prefill_rows = 0;
    std::vector<int> fed(active.size(), 0);  // rows of each active sequence in this step
    for (int pass = 0; pass < 2; ++pass) {
      for (std::size_t a = 0; a < active.size(); ++a) {
        Sequence& s = active[a];
        const int pending = static_cast<int>(s.tokens.size()) - s.cached;
        const bool decode = pending == 1;
        if ((pass == 0) != decode || budget <= 0) continue;
        const int take = std::min(pending, budget);
        for (int t = 0; t < take; ++t) {
          DecoderRow row;
          row.seq = s.cache_id;
          row.position = s.cached + t;
          row.token = s.tokens[static_cast<std::size_t>(row.position)];
          row.logits = t == pending - 1;
          if (row.logits) logit_owner.push_back(a);
          rows.push_back(row);
        }
        fed[a] = take;
        if (!decode) prefill_rows += take;
        budget -= take;
      }
    }
    const auto step_start = Clock::now();
    logits.clear();
    RETURN_IF_ERROR(model_->Step(rows, cache_, logits));
    const double step_s = std::chrono::duration<double>(Clock::now() - step_start).count();
    ++stats.steps;
    stats.prefill_tokens += prefill_rows;
    const double prefill_share = rows.empty() ? 0 : static_cast<double>(prefill_rows) / static_cast<double>(rows.size());
    stats.prefill_seconds += step_s * prefill_share;
    stats.decode_seconds += step_s * (1 - prefill_share);
    for (std::size_t a = 0; a < active.size(); ++a) active[a].cached += fed[a];
    // Choose each next token; finish or grow each sequence.
    std::vector<bool> finished(active.size(), false);
    for (std::size_t i = 0; i < logit_owner.size(); ++i) {
      Sequence& s = active[logit_owner[i]];
      const GenerationRequest& q = requests[s.request];
      const GenerationParams& p = *q.params;
      const std::size_t generated = s.tokens.size() - s.prompt;
      std::span<float> row(logits.data() + i * static_cast<std::size_t>(vocab), static_cast<std::size_t>(vocab));
      const double u = p.do_sample ? CounterUniform(p.seed, q.key, static_cast<uint64_t>(s.index), generated) : 0.0;
      const int32_t next = ChooseToken(row, s.tokens, p, static_cast<int>(generated) < p.min_new_tokens, u);
      s.tokens.push_back(next);
      ++stats.generated_tokens;
      if (!s.first_token_seen) {
        s.first_token_seen = true;
        stats.time_to_first_token_s.push_back(std::chrono::duration<double>(Clock::now() - start).count());
      }
      const std::span<const int32_t> gen(s.tokens.data() + s.prompt, s.tokens.size() - s.prompt);
      std::string reason;
      if (std::find(p.eos_token_ids.begin(), p.eos_token_ids.end(), next) != p.eos_token_ids.end()) {
        reason = "eos";
      } else if (q.stop && q.stop(gen)) {
        reason = "stop";
      } else if (static_cast<int>(gen.size()) >= p.max_new_tokens) {
        reason = "length";
      }
      if (!reason.empty()) {
        GeneratedSequence& g = out[s.request][static_cast<std::size_t>(s.index)];
        g.tokens.assign(gen.begin(), gen.end());
        g.finish_reason = reason;
        finished[logit_owner[i]] = true;
      }
    }
    std::vector<Sequence> still;
    for (std::size_t a = 0; a < active.size(); ++a) {
      if (finished[a]) {
        release(active[a]);
      } else {
        still.push_back(std::move(active[a]));
      }
    }
    active.swap(still);
    // Blocks for each sequence's next token; when the pool is dry, preempt the newest.
    for (std::size_t a = 0; a < active.size();) {
      Sequence& s = active[a];
      if (cache_.Reserve(s.cache_id, static_cast<int>(s.tokens.size()) + 1)) {
        ++a;
        continue;
      }
      auto newest = std::max_element(active.begin(), active.end(),
                                     [](const Sequence& x, const Sequence& y) { return x.admitted < y.admitted; });
      if (active.size() == 1) {
        return ResourceExhausted("the KV cache (" + std::to_string(options_.kv_cache_bytes) + " B) cannot hold one sequence of " +
                                 std::to_string(s.tokens.size() + 1) + " tokens");
      }
      release(*newest);
      ++stats.preemptions;
      waiting.push_front(std::move(*newest));
      active.erase(newest);
      a = 0;  // indices moved; re-check from the start (reserved ones are no-ops)
    }
  }
  return Status::OK();
}

}  // namespace dfw
