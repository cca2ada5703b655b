// The dtype choice behind `dtype: auto`; see precision_choice.h for the rules.
#include "dfw/inference/precision_choice.h"

#include "dfw/common/file.h"
#include "dfw/common/file_lock.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <mutex>

namespace dfw {
namespace {

constexpr double kMargin = 0.95;  // a lower precision must take <= 95% of the best time so far
// Candidates within kCloseTimes of the fastest are timed again in turns (RetimeInTurns).
constexpr int kTurnRounds = 2;
constexpr double kCloseTimes = 2.0;
// The measuring of another process of the job is waited for this long at most (FileLock).
constexpr std::chrono::milliseconds kPrecisionLockWait{120'000};
constexpr std::size_t kPrecisionCacheMaxBytes = kMiB;  // one choice and its figures

bool RowKeepsTolerance(const PrecisionTolerance& t, LinearDType d, double agreement, bool argmax_same) {
  if (d == LinearDType::kFloat32) return true;
  if (t.kind == PrecisionTolerance::Kind::kClassifier) return argmax_same && agreement <= t.max_prob_diff;
  return agreement >= t.MinCosine(d);
}

double Bound(const PrecisionTolerance& t, LinearDType d) {
  return t.kind == PrecisionTolerance::Kind::kClassifier ? t.max_prob_diff : t.MinCosine(d);
}

// Fills the candidate's figures from the judged rows, overall and per bucket.
void JudgeRows(const PrecisionTolerance& t, const std::vector<float>& ref, const std::vector<float>& got, int width,
           const std::vector<int>& row_tokens, const PrecisionChoice& buckets, PrecisionCandidate& c) {
  const bool embedding = t.kind == PrecisionTolerance::Kind::kEmbedding;
  std::vector<uint8_t> same;
  const std::vector<double> rows = RowAgreement(ref, got, width, t.kind, &same);
  const std::size_t nb = buckets.bucket_limits.empty() ? 0 : buckets.bucket_limits.size() + 1;
  c.bucket_agreement.assign(nb, embedding ? 1.0 : 0.0);
  c.bucket_rows.assign(nb, 0);
  c.bucket_passed.assign(nb, 1);
  double worst = embedding ? 1.0 : 0.0, sum = 0;
  bool all_same = true, all_pass = true;
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const double a = rows[r];
    worst = embedding ? std::min(worst, a) : std::max(worst, a);
    sum += a;
    all_same = all_same && same[r];
    const bool pass = RowKeepsTolerance(t, c.dtype, a, same[r] != 0);
    all_pass = all_pass && pass;
    if (nb == 0 || r >= row_tokens.size()) continue;
    const std::size_t b = buckets.BucketOf(row_tokens[r]);
    double& ba = c.bucket_agreement[b];
    ba = c.bucket_rows[b] == 0 ? a : (embedding ? std::min(ba, a) : std::max(ba, a));
    ++c.bucket_rows[b];
    if (!pass) c.bucket_passed[b] = 0;
  }
  c.agreement = worst;
  c.mean_cosine = embedding && !rows.empty() ? sum / static_cast<double>(rows.size()) : 1;
  c.argmax_same = all_same;
  c.passed = all_pass;
}

// One dtype: switch, warm up, time; the output judged is returned (run_all's when the probe has it).
Result<std::vector<float>> Measure(const PrecisionProbe& probe, Clock& clock, int reps, PrecisionCandidate& c) {
  RETURN_IF_ERROR(probe.use(c.dtype));
  ASSIGN_OR_RETURN(std::vector<float> out, probe.run());
  double best = 1e300;
  for (int i = 0; i < std::max(1, reps); ++i) {
    const double t0 = clock.NowSecs();
    ASSIGN_OR_RETURN(out, probe.run());
    best = std::min(best, clock.NowSecs() - t0);
  }
  c.seconds = best;
  if (probe.run_all) return probe.run_all();
  return out;
}

// The candidates whose times are close (within 2x of the fastest) timed again in turns, A B
// A B, each keeping its best: a burst on the machine during one candidate's own measurement (the
// job's other SDK process loading its model on the sibling hyperthread) skewed the choice. Measured
// on all-MiniLM-L6-v2 (AMX): int8 17.8 ms in one calibration, 27.6 ms in the next, bfloat16 21.3-21.4
// ms both times, so `auto` ran int8 in one job and bfloat16 in the next. Each turn switches the
// model (untimed) and runs it once untimed before the timed run.
Status RetimeInTurns(const PrecisionProbe& probe, Clock& clock, std::vector<PrecisionCandidate>& cs) {
  double fastest = 1e300;
  for (const PrecisionCandidate& c : cs) {
    if (c.refused.empty()) fastest = std::min(fastest, c.seconds);
  }
  std::vector<PrecisionCandidate*> close;
  for (PrecisionCandidate& c : cs) {
    if (c.refused.empty() && c.seconds <= kCloseTimes * fastest) close.push_back(&c);
  }
  if (close.size() < 2) return Status::OK();
  for (int round = 0; round < kTurnRounds; ++round) {
    for (PrecisionCandidate* c : close) {
      RETURN_IF_ERROR(probe.use(c->dtype));
      RETURN_IF_ERROR(probe.run().status());
      const double t0 = clock.NowSecs();
      RETURN_IF_ERROR(probe.run().status());
      c->seconds = std::min(c->seconds, clock.NowSecs() - t0);
    }
  }
  return Status::OK();
}

// The fastest candidate (by the margin rule) that `passes`; float32 (index 0) when none other does.
template <typename Passes>
std::size_t FastestPassing(const std::vector<PrecisionCandidate>& cs, Passes passes) {
  std::size_t best = 0;
  for (std::size_t i = 1; i < cs.size(); ++i) {
    const PrecisionCandidate& c = cs[i];
    if (c.refused.empty() && passes(c) && c.seconds <= kMargin * cs[best].seconds) best = i;
  }
  return best;
}

Result<PrecisionChoice> Measure(const PrecisionProbe& probe, const PrecisionChoiceOptions& o) {
  Clock& clock = o.clock != nullptr ? *o.clock : *SystemClock();
  PrecisionChoice choice;
  choice.kind = o.tolerance.kind;
  choice.tolerance = o.tolerance;
  if (!probe.row_tokens.empty()) choice.bucket_limits = o.bucket_limits;
  PrecisionCandidate f32;
  f32.dtype = LinearDType::kFloat32;
  ASSIGN_OR_RETURN(const std::vector<float> ref, Measure(probe, clock, o.reps, f32));
  if (probe.width < 1 || ref.size() % static_cast<std::size_t>(probe.width) != 0) {
    return InvalidArgument("precision probe: " + std::to_string(ref.size()) + " floats are not rows of " +
                           std::to_string(probe.width));
  }
  const std::size_t rows = ref.size() / static_cast<std::size_t>(probe.width);
  if (!probe.row_tokens.empty() && probe.row_tokens.size() != rows) {
    return InvalidArgument("precision probe: " + std::to_string(probe.row_tokens.size()) + " token counts for " +
                           std::to_string(rows) + " rows");
  }
  JudgeRows(o.tolerance, ref, ref, probe.width, probe.row_tokens, choice, f32);
  choice.candidates.push_back(f32);
  for (LinearDType d : o.candidates) {
    if (d == LinearDType::kFloat32) continue;
    PrecisionCandidate c;
    c.dtype = d;
    if (Status s = probe.check(d); !s.ok()) {
      c.refused = s.message();
    } else if (auto out = Measure(probe, clock, o.reps, c); !out.ok()) {
      c.refused = out.status().message();
    } else if (out->size() != ref.size()) {
      c.refused = "calibration output has " + std::to_string(out->size()) + " floats, float32 " + std::to_string(ref.size());
    } else {
      JudgeRows(o.tolerance, ref, *out, probe.width, probe.row_tokens, choice, c);
    }
    choice.candidates.push_back(c);
  }
  RETURN_IF_ERROR(RetimeInTurns(probe, clock, choice.candidates));
  const auto& cs = choice.candidates;
  if (choice.bucket_limits.empty()) {
    choice.dtype = cs[FastestPassing(cs, [](const PrecisionCandidate& c) { return c.passed; })].dtype;
    return choice;
  }
  // Per bucket; an empty bucket follows the nearest shorter one with rows (else the nearest longer).
  const std::size_t nb = choice.bucket_limits.size() + 1;
  std::vector<int> chosen(nb, -1);
  for (std::size_t b = 0; b < nb; ++b) {
    if (cs[0].bucket_rows[b] == 0) continue;
    chosen[b] = static_cast<int>(FastestPassing(cs, [b](const PrecisionCandidate& c) { return c.bucket_passed[b] != 0; }));
  }
  for (std::size_t b = 1; b < nb; ++b) {
    if (chosen[b] < 0) chosen[b] = chosen[b - 1];
  }
  for (std::size_t b = nb - 1; b-- > 0;) {
    if (chosen[b] < 0) chosen[b] = chosen[b + 1];
  }
  for (std::size_t b = 0; b < nb; ++b) choice.bucket_dtypes.push_back(cs[std::max(chosen[b], 0)].dtype);
  choice.dtype = choice.bucket_dtypes.back();
  return choice;
}

// A cache file's text; "" when it cannot be read (the choice is then measured again).
std::string ReadCacheFile(const std::string& path) {
  Result<std::string> text = ReadWholeFile(path, kPrecisionCacheMaxBytes);
  return text.ok() ? std::move(text).value() : std::string();
}

}  // namespace

double PrecisionTolerance::MinCosine(LinearDType d) const {
  return d == LinearDType::kFloat32 ? 0.0 : d == LinearDType::kBFloat16 ? min_cosine_bf16 : min_cosine_int8;
}

std::vector<double> RowAgreement(std::span<const float> ref, std::span<const float> got, int width,
                                 PrecisionTolerance::Kind kind, std::vector<uint8_t>* argmax_same) {
  const std::size_t w = static_cast<std::size_t>(std::max(width, 1));
  const std::size_t rows = std::min(ref.size(), got.size()) / w;
  std::vector<double> out(rows);
  if (argmax_same != nullptr) argmax_same->assign(rows, 1);
  for (std::size_t r = 0; r < rows; ++r) {
    const float* a = ref.data() + r * w;
    const float* b = got.data() + r * w;
    if (kind == PrecisionTolerance::Kind::kClassifier) {
      double diff = 0;
      for (std::size_t j = 0; j < w; ++j) diff = std::max(diff, std::fabs(double(a[j]) - b[j]));
      out[r] = diff;
      if (argmax_same != nullptr) (*argmax_same)[r] = std::max_element(a, a + w) - a == std::max_element(b, b + w) - b;
      continue;
    }
    double dot = 0, na = 0, nb = 0;
    for (std::size_t j = 0; j < w; ++j) dot += double(a[j]) * b[j], na += double(a[j]) * a[j], nb += double(b[j]) * b[j];
    out[r] = na == 0 && nb == 0 ? 1.0 : (na == 0 || nb == 0 ? 0.0 : dot / std::sqrt(na * nb));
  }
  return out;
}

LinearDType SaferDType(LinearDType d, const std::function<Status(LinearDType)>& can_run) {
  if (d == LinearDType::kInt8 && can_run && can_run(LinearDType::kBFloat16).ok()) return LinearDType::kBFloat16;
  return LinearDType::kFloat32;
}

std::size_t PrecisionChoice::BucketOf(int tokens) const {
  return static_cast<std::size_t>(std::lower_bound(bucket_limits.begin(), bucket_limits.end(), tokens) -
                                  bucket_limits.begin());
}

LinearDType PrecisionChoice::DTypeFor(int tokens) const {
  if (bucket_dtypes.empty()) return dtype;
  return bucket_dtypes[std::min(BucketOf(tokens), bucket_dtypes.size() - 1)];
}

std::string PrecisionChoice::BucketName(std::size_t b) const {
  if (bucket_limits.empty()) return "";
  b = std::min(b, bucket_limits.size());  // past the last limit: the open bucket
  const int lo = b == 0 ? 1 : bucket_limits[b - 1] + 1;
  if (b >= bucket_limits.size()) return std::to_string(lo) + "+ tokens";
  return std::to_string(lo) + "-" + std::to_string(bucket_limits[b]) + " tokens";
}

const PrecisionCandidate* PrecisionChoice::Find(LinearDType d) const {
  for (const PrecisionCandidate& c : candidates) {
    if (c.dtype == d) return &c;
  }
  return nullptr;
}

std::vector<std::pair<std::string, int64_t>> PrecisionChoice::Figures() const {
  std::vector<std::pair<std::string, int64_t>> out;
  std::vector<LinearDType> run = bucket_dtypes.empty() ? std::vector<LinearDType>{dtype} : bucket_dtypes;
  std::sort(run.begin(), run.end());
  run.erase(std::unique(run.begin(), run.end()), run.end());
  for (LinearDType d : run) out.emplace_back("linear_dtype_bits", LinearDTypeBits(d));
  for (const PrecisionCandidate& c : candidates) {
    if (!c.refused.empty()) continue;
    const std::string p = "precision_" + std::string(LinearDTypeName(c.dtype));
    out.emplace_back(p + "_micro_secs", std::llround(c.seconds * 1e6));
    if (c.dtype == LinearDType::kFloat32) continue;
    out.emplace_back(p + (kind == PrecisionTolerance::Kind::kEmbedding ? "_min_cosine_ppm" : "_max_prob_diff_ppm"),
                     std::llround(c.agreement * 1e6));
  }
  return out;
}

std::string PrecisionChoice::Describe() const {
  const PrecisionTolerance& t = tolerance;
  std::string s(LinearDTypeName(dtype));
  bool mixed = false;
  for (LinearDType d : bucket_dtypes) mixed = mixed || d != dtype;
  if (mixed) {  // "int8 for 6+ tokens, bfloat16 for 1-5 tokens"
    s += " for";
    for (std::size_t b = 0; b < bucket_dtypes.size(); ++b) {
      if (bucket_dtypes[b] == dtype) s += " " + BucketName(b) + ",";
    }
    s.back() = ';';
    for (std::size_t b = 0; b < bucket_dtypes.size(); ++b) {
      if (bucket_dtypes[b] != dtype) s += " " + std::string(LinearDTypeName(bucket_dtypes[b])) + " for " + BucketName(b) + ",";
    }
    s.pop_back();
  }
  s += " (";
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const PrecisionCandidate& c = candidates[i];
    s += (i ? "; " : "") + std::string(LinearDTypeName(c.dtype));
    if (!c.refused.empty()) {
      s += " not run: " + c.refused;
      continue;
    }
    s += fmt::format(" {:.1f} ms", c.seconds * 1e3);
    if (c.dtype == LinearDType::kFloat32) continue;
    if (kind == PrecisionTolerance::Kind::kEmbedding) {
      s += fmt::format(", cosine to float32 min {:.5f} mean {:.5f}", c.agreement, c.mean_cosine);
      if (!c.passed) s += fmt::format(" < {}", Bound(t, c.dtype));
    } else {
      s += fmt::format(", max |p - p_float32| {:.2e}, argmax {}", c.agreement, c.argmax_same ? "same" : "CHANGED");
    }
    if (!c.bucket_agreement.empty() && !c.passed) {  // where it failed: "by tokens 1-5 0.99120 <, 6-16 0.99702"
      s += " (by bucket:";
      for (std::size_t b = 0; b < c.bucket_agreement.size(); ++b) {
        if (c.bucket_rows[b] == 0) continue;
        s += fmt::format(" {} {:.5f}{},", BucketName(b), c.bucket_agreement[b], c.bucket_passed[b] ? "" : " FAILS");
      }
      s.back() = ')';
    } else if (!c.passed) {
      s += ", rejected";
    }
  }
  return s + (from_cache ? "; decided earlier for this model and CPU, by this or another process of the job or an earlier job on this machine)" : ")");
}

namespace {

// Decisions made in this process, by cache key: two stages (or lanes) running the same model on
// the same CPU agree, rather than each following its own timing noise.
struct Memo {
  std::mutex mu;
  std::map<std::string, PrecisionChoice> choices;
};
Memo& ProcessMemo() {
  static Memo memo;
  return memo;
}

Result<PrecisionChoice> ChooseUncached(const PrecisionProbe& probe, const PrecisionChoiceOptions& o);

}  // namespace

Result<PrecisionChoice> ChoosePrecision(const PrecisionProbe& probe, const PrecisionChoiceOptions& o) {
  if (!probe.check || !probe.use || !probe.run) return InvalidArgument("precision probe: check, use and run are required");
  if (o.cache_key.empty()) return ChooseUncached(probe, o);
  Memo& memo = ProcessMemo();
  std::lock_guard<std::mutex> lock(memo.mu);  // one measurement at a time in a process
  if (auto it = memo.choices.find(o.cache_key); it != memo.choices.end() && probe.use(it->second.dtype).ok()) {
    PrecisionChoice c = it->second;
    c.from_cache = true;
    return c;
  }
  ASSIGN_OR_RETURN(PrecisionChoice choice, ChooseUncached(probe, o));
  memo.choices[o.cache_key] = choice;
  return choice;
}

namespace {

Result<PrecisionChoice> ChooseUncached(const PrecisionProbe& probe, const PrecisionChoiceOptions& o) {
  if (o.cache_path.empty()) {
    ASSIGN_OR_RETURN(PrecisionChoice choice, Measure(probe, o));
    RETURN_IF_ERROR(probe.use(choice.dtype));
    return choice;
  }
  // Read or measure-and-write under the lock (FileLock). The holder measures for a few seconds
  // (longer on a loaded machine); one that never lets go is not waited for past
  // kPrecisionLockWait: this process then measures alone.
  const FileLock lock = FileLock::TryFor(o.cache_path + ".lock", kPrecisionLockWait);
  const bool locked = lock.held();
  // Never seen half-written (a temporary file per writer, then rename); a file that cannot be
  // written only means the next reader measures again.
  auto write = [&](const std::string& path, const PrecisionChoice& c) {
    (void)WriteFileAtomically(path, EncodePrecisionChoice(c, o.cache_key), /*sync=*/false);
  };
  std::optional<PrecisionChoice> cached = locked ? DecodePrecisionChoice(ReadCacheFile(o.cache_path), o.cache_key) : std::nullopt;
  if (cached && probe.use(cached->dtype).ok()) return *cached;
  // An earlier job on this machine decided for the same key: the job's file gets it for the other
  // processes, and nothing is measured.
  if (locked && !o.shared_cache_path.empty()) {
    std::optional<PrecisionChoice> earlier = DecodePrecisionChoice(ReadCacheFile(o.shared_cache_path), o.cache_key);
    if (earlier && probe.use(earlier->dtype).ok()) {
      write(o.cache_path, *earlier);
      return *earlier;
    }
  }
  Result<PrecisionChoice> choice = Measure(probe, o);
  if (choice.ok() && locked) {
    write(o.cache_path, *choice);
    if (!o.shared_cache_path.empty()) write(o.shared_cache_path, *choice);
  }
  if (!choice.ok()) return choice.status();
  RETURN_IF_ERROR(probe.use(choice->dtype));
  return choice;
}

}  // namespace
}  // namespace dfw
