// ChoosePrecision: which LinearDType a model runs in when its handler says `dtype: auto`.
//
// Precision is the backend's choice, made per model and CPU at load: every dtype the backend runs
// on this machine (InferenceBackend::CheckLinearDType) is timed on the model's own calibration
// batch (one warm-up, then the best of `reps` runs; the dtypes within 2x of the fastest then timed
// again in two rounds of turns, each keeping its best) and compared with float32's output on the
// calibration rows (PrecisionProbe::run_all when given: a wider set than the timed batch); the
// fastest that keeps the task's tolerance on every row wins, float32 (always acceptable) unless
// another is at least 5% faster. The handler states only the tolerance:
//   embeddings  each row's cosine to float32 >= 0.999 (bfloat16) / 0.995 (int8);
//   classifiers every row's argmax unchanged and max |p - p_float32| <= 1e-3 (probabilities).
// With token-count buckets (PrecisionChoiceOptions::bucket_limits, PrecisionProbe::row_tokens) the
// rule is applied per bucket: a dtype that keeps the tolerance on long rows but not on short ones
// (where [CLS]/[SEP] dominate a mean-pooled embedding) runs the long rows only, and the short ones
// run the fastest dtype that keeps it there. A bucket without calibration rows takes the choice of
// the nearest shorter bucket that has some (else the nearest longer one).
// With a cache path, the decision is kept in a file keyed by the model and the CPU (the caller's
// cache_key), written once under an exclusive lock so that the SDK processes of a job measure once:
// the others wait for the lock, read the decision and only switch their model to it. A per-user
// copy (shared_cache_path, same key) lets later jobs on the same machine read it too.
//
// In one process the decision is also kept by cache_key, so two stages or lanes of the same model
// agree (without a key every call measures).
// The clock and the probe are injected, so tests choose with made-up timings, ISAs and outputs.
// Threading: one call at a time per probe; different processes coordinate through the cache file.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "dfw/backend/backend.h"
#include "dfw/common/status.h"
#include "dfw/inference/batch_elements.h"

namespace dfw {

struct PrecisionTolerance {
  enum class Kind { kEmbedding, kClassifier };
  Kind kind = Kind::kEmbedding;
  double min_cosine_bf16 = 0.999;  // kEmbedding: the worst row's cosine to float32
  double min_cosine_int8 = 0.995;
  double max_prob_diff = 1e-3;     // kClassifier: the largest |p - p_float32| over every output
  // kEmbedding: the cosine to float32 every row must keep in `d` (float32: 0, always kept).
  double MinCosine(LinearDType d) const;
};

// What was measured for one dtype.
struct PrecisionCandidate {
  LinearDType dtype = LinearDType::kFloat32;
  std::string refused;      // non-empty: not run (the backend's reason, e.g. the missing ISA)
  double seconds = 0;       // best time of the calibration batch
  double agreement = 1;     // kEmbedding: min cosine; kClassifier: max |p - p_float32|
  double mean_cosine = 1;   // kEmbedding only
  bool argmax_same = true;  // kClassifier only
  bool passed = false;      // within the tolerance on every row (float32 always)
  // Per token-count bucket (PrecisionChoice::bucket_limits), empty without buckets: the bucket's
  // agreement (as `agreement`: min cosine or max |p - p_float32|; 1 / 0 for a bucket without
  // rows), its row count and whether every row of it kept the tolerance.
  std::vector<double> bucket_agreement;
  std::vector<int> bucket_rows;
  std::vector<uint8_t> bucket_passed;
};

struct PrecisionChoice {
  // The longest bucket's dtype (the whole model's without buckets): what the model is left in.
  LinearDType dtype = LinearDType::kFloat32;
  // Upper token counts (inclusive, ascending) of every bucket but the last, which takes the rest;
  // bucket_dtypes has one dtype per bucket. Both empty: `dtype` for every row.
  std::vector<int> bucket_limits;
  std::vector<LinearDType> bucket_dtypes;
  PrecisionTolerance::Kind kind = PrecisionTolerance::Kind::kEmbedding;
  PrecisionTolerance tolerance;  // what the candidates were judged by (kind as above)
  std::vector<PrecisionCandidate> candidates;  // in the order tried: float32, bfloat16, int8
  bool from_cache = false;  // read (from this process's memo or the job's file), not measured
  // "bfloat16 (float32 40.1 ms; bfloat16 11.9 ms, min cosine 0.99981; int8 8.0 ms, min cosine
  // 0.99120 < 0.995, rejected)".
  std::string Describe() const;
  const PrecisionCandidate* Find(LinearDType d) const;
  // The bucket a row of `tokens` falls in (0 without buckets), and the dtype it runs in.
  std::size_t BucketOf(int tokens) const;
  LinearDType DTypeFor(int tokens) const;
  // "2-5 tokens", "49+ tokens" (bucket_limits[b - 1] + 1 up to bucket_limits[b]); "" without buckets.
  std::string BucketName(std::size_t b) const;
  // For metrics (Model::LoadFigures): "linear_dtype_bits" (32, 16, 8; once per distinct bucket
  // dtype, so a model that runs two shows as mixed) and, per dtype measured,
  // "precision_<dtype>_micro_secs" and "precision_<dtype>_min_cosine_ppm" (embeddings) or
  // "precision_<dtype>_max_prob_diff_ppm" (classifiers).
  std::vector<std::pair<std::string, int64_t>> Figures() const;
};

// How to run the model being chosen for.
struct PrecisionProbe {
  std::function<Status(LinearDType)> check;         // can the backend run it here (the ISA)
  std::function<Status(LinearDType)> use;           // switch the model to it (prepare weights)
  std::function<Result<std::vector<float>>()> run;  // the timed calibration batch: rows x width floats
  // Optional: the rows whose accuracy is judged (rows x width floats, run once per dtype); unset,
  // `run`'s output is judged. Lets a wide set (one token to the maximum length, many scripts) be
  // checked without timing all of it.
  std::function<Result<std::vector<float>>()> run_all;
  // The token count of each judged row (with PrecisionChoiceOptions::bucket_limits); empty: no buckets.
  std::vector<int> row_tokens;
  int width = 0;                                    // floats per output row (> 0)
};

struct PrecisionChoiceOptions {
  PrecisionTolerance tolerance;
  std::vector<LinearDType> candidates = {LinearDType::kFloat32, LinearDType::kBFloat16, LinearDType::kInt8};
  Clock* clock = nullptr;  // nullptr: SystemClock()
  int reps = 3;            // timed runs per dtype after one warm-up
  std::string cache_path;  // "": measure, keep nothing
  // A per-user file of the same decision (UserCacheDir), read when the job's file has none and
  // written after a measurement: later jobs on this machine skip the measurement. "": none.
  std::string shared_cache_path;
  std::string cache_key;   // what the decision depends on: model identity, CPU, threads
  // Token-count buckets (PrecisionChoice::bucket_limits); used only with probe.row_tokens.
  std::vector<int> bucket_limits;
};

// Chooses and leaves the model switched to the choice (probe.use). Errors from the probe's use and
// run for float32 are returned; a reduced dtype whose use or run fails is recorded as refused.
Result<PrecisionChoice> ChoosePrecision(const PrecisionProbe& probe, const PrecisionChoiceOptions& options);

// Row by row, `got` against `ref` (rows x width floats each): cosine (kEmbedding; 1 for two zero
// rows) or max |p - p_ref| (kClassifier, with `argmax_same` per row filled when not null).
std::vector<double> RowAgreement(std::span<const float> ref, std::span<const float> got, int width,
                                 PrecisionTolerance::Kind kind, std::vector<uint8_t>* argmax_same = nullptr);

// The next safer dtype after `d` that `can_run` accepts: int8 -> bfloat16 -> float32 (float32
// stays float32). For a run-time check that found `d` outside the tolerance.
LinearDType SaferDType(LinearDType d, const std::function<Status(LinearDType)>& can_run);

// The file text of a cached decision, and back (nullopt for anything else, or another key).
std::string EncodePrecisionChoice(const PrecisionChoice& choice, const std::string& key);
std::optional<PrecisionChoice> DecodePrecisionChoice(const std::string& text, const std::string& key);

}  // namespace dfw
