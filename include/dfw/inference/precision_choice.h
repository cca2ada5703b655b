// ChoosePrecision: which LinearDType a model runs in when its handler says `dtype: auto`.
//
// Precision is the backend's choice, made per model and CPU at load: every dtype the backend runs
// on this machine (InferenceBackend::CheckLinearDType) is timed on the model's own calibration
// batch (one warm-up, then the best of `reps` runs) and compared with float32's output on the same
// batch; the fastest that keeps the task's tolerance wins, float32 (always acceptable) unless
// another is at least 5% faster. The handler states only the tolerance:
//   embeddings  each row's cosine to float32 >= 0.999 (bfloat16) / 0.995 (int8);
//   classifiers every row's argmax unchanged and max |p - p_float32| <= 1e-3 (probabilities).
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
};

// What was measured for one dtype.
struct PrecisionCandidate {
  LinearDType dtype = LinearDType::kFloat32;
  std::string refused;      // non-empty: not run (the backend's reason, e.g. the missing ISA)
  double seconds = 0;       // best time of the calibration batch
  double agreement = 1;     // kEmbedding: min cosine; kClassifier: max |p - p_float32|
  double mean_cosine = 1;   // kEmbedding only
  bool argmax_same = true;  // kClassifier only
  bool passed = false;      // within the tolerance (float32 always)
};

struct PrecisionChoice {
  LinearDType dtype = LinearDType::kFloat32;
  PrecisionTolerance::Kind kind = PrecisionTolerance::Kind::kEmbedding;
  std::vector<PrecisionCandidate> candidates;  // in the order tried: float32, bfloat16, int8
  bool from_cache = false;  // read (from this process's memo or the job's file), not measured
  // "bfloat16 (float32 40.1 ms; bfloat16 11.9 ms, min cosine 0.99981; int8 8.0 ms, min cosine
  // 0.99120 < 0.995, rejected)".
  std::string Describe() const;
  const PrecisionCandidate* Find(LinearDType d) const;
  // For metrics (Model::LoadFigures): "linear_dtype_bits" (32, 16, 8) and, per dtype measured,
  // "precision_<dtype>_micro_secs" and "precision_<dtype>_min_cosine_ppm" (embeddings) or
  // "precision_<dtype>_max_prob_diff_ppm" (classifiers).
  std::vector<std::pair<std::string, int64_t>> Figures() const;
};

// How to run the model being chosen for.
struct PrecisionProbe {
  std::function<Status(LinearDType)> check;         // can the backend run it here (the ISA)
  std::function<Status(LinearDType)> use;           // switch the model to it (prepare weights)
  std::function<Result<std::vector<float>>()> run;  // the calibration batch: rows x width floats
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
};

// Chooses and leaves the model switched to the choice (probe.use). Errors from the probe's use and
// run for float32 are returned; a reduced dtype whose use or run fails is recorded as refused.
Result<PrecisionChoice> ChoosePrecision(const PrecisionProbe& probe, const PrecisionChoiceOptions& options);

// The file text of a cached decision, and back (nullopt for anything else, or another key).
std::string EncodePrecisionChoice(const PrecisionChoice& choice, const std::string& key);
std::optional<PrecisionChoice> DecodePrecisionChoice(const std::string& text, const std::string& key);

}  // namespace dfw
