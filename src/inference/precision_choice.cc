// The dtype choice behind `dtype: auto`; see precision_choice.h for the rules.
#include "dfw/inference/precision_choice.h"

#include "dfw/common/file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

namespace dfw {
namespace {

constexpr double kMargin = 0.95;  // a lower precision must take <= 95% of the best time so far

void CompareEmbeddings(const std::vector<float>& ref, const std::vector<float>& got, int width, PrecisionCandidate& c) {
  const std::size_t rows = ref.size() / static_cast<std::size_t>(width);
  double min_cos = 1, sum_cos = 0;
  for (std::size_t r = 0; r < rows; ++r) {
    double dot = 0, na = 0, nb = 0;
    for (int j = 0; j < width; ++j) {
      const double a = ref[r * width + j], b = got[r * width + j];
      dot += a * b, na += a * a, nb += b * b;
    }
    const double cos = na == 0 && nb == 0 ? 1.0 : (na == 0 || nb == 0 ? 0.0 : dot / std::sqrt(na * nb));
    min_cos = std::min(min_cos, cos);
    sum_cos += cos;
  }
  c.agreement = min_cos;
  c.mean_cosine = rows > 0 ? sum_cos / static_cast<double>(rows) : 1;
}

void CompareProbabilities(const std::vector<float>& ref, const std::vector<float>& got, int width,
                          PrecisionCandidate& c) {
  const std::size_t rows = ref.size() / static_cast<std::size_t>(width);
  double max_diff = 0;
  bool same = true;
  for (std::size_t r = 0; r < rows; ++r) {
    const float* a = ref.data() + r * width;
    const float* b = got.data() + r * width;
    same = same && std::max_element(a, a + width) - a == std::max_element(b, b + width) - b;
    for (int j = 0; j < width; ++j) max_diff = std::max(max_diff, std::fabs(double(a[j]) - b[j]));
  }
  c.agreement = max_diff;
  c.argmax_same = same;
}

bool Passes(const PrecisionTolerance& t, const PrecisionCandidate& c) {
  if (c.dtype == LinearDType::kFloat32) return true;
  if (t.kind == PrecisionTolerance::Kind::kClassifier) return c.argmax_same && c.agreement <= t.max_prob_diff;
  return c.agreement >= (c.dtype == LinearDType::kBFloat16 ? t.min_cosine_bf16 : t.min_cosine_int8);
}

double Bound(const PrecisionTolerance& t, LinearDType d) {
  if (t.kind == PrecisionTolerance::Kind::kClassifier) return t.max_prob_diff;
  return d == LinearDType::kBFloat16 ? t.min_cosine_bf16 : t.min_cosine_int8;
}

// One dtype: switch, warm up, time; the last run's output is returned for the comparison.
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
  return out;
}

Result<PrecisionChoice> Measure(const PrecisionProbe& probe, const PrecisionChoiceOptions& o) {
  Clock& clock = o.clock != nullptr ? *o.clock : *SystemClock();
  PrecisionChoice choice;
  choice.kind = o.tolerance.kind;
  PrecisionCandidate f32;
  f32.dtype = LinearDType::kFloat32;
  ASSIGN_OR_RETURN(const std::vector<float> ref, Measure(probe, clock, o.reps, f32));
  if (probe.width < 1 || ref.size() % static_cast<std::size_t>(probe.width) != 0) {
    return InvalidArgument("precision probe: " + std::to_string(ref.size()) + " floats are not rows of " +
                           std::to_string(probe.width));
  }
  f32.passed = true;
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
      if (o.tolerance.kind == PrecisionTolerance::Kind::kClassifier) {
        CompareProbabilities(ref, *out, probe.width, c);
      } else {
        CompareEmbeddings(ref, *out, probe.width, c);
      }
      c.passed = Passes(o.tolerance, c);
    }
    choice.candidates.push_back(c);
  }
  std::size_t best = 0;
  for (std::size_t i = 1; i < choice.candidates.size(); ++i) {
    const PrecisionCandidate& c = choice.candidates[i];
    if (c.passed && c.refused.empty() && c.seconds <= kMargin * choice.candidates[best].seconds) best = i;
  }
  choice.dtype = choice.candidates[best].dtype;
  return choice;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

const PrecisionCandidate* PrecisionChoice::Find(LinearDType d) const {
  for (const PrecisionCandidate& c : candidates) {
    if (c.dtype == d) return &c;
  }
  return nullptr;
}

std::vector<std::pair<std::string, int64_t>> PrecisionChoice::Figures() const {
  std::vector<std::pair<std::string, int64_t>> out;
  out.emplace_back("linear_dtype_bits", LinearDTypeBits(dtype));
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
  PrecisionTolerance t;
  t.kind = kind;
  std::string s = std::string(LinearDTypeName(dtype)) + " (";
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
      if (!c.passed) s += fmt::format(" < {}, rejected", Bound(t, c.dtype));
    } else {
      s += fmt::format(", max |p - p_float32| {:.2e}, argmax {}", c.agreement, c.argmax_same ? "same" : "CHANGED");
      if (!c.passed) s += ", rejected";
    }
  }
  return s + (from_cache ? "; decided earlier for this model and CPU, by this or another process of the job or an earlier job on this machine)" : ")");
}

std::string EncodePrecisionChoice(const PrecisionChoice& choice, const std::string& key) {
  std::string s = fmt::format("dfw-precision 1 {} {}\nkey {}\n", LinearDTypeName(choice.dtype),
                              choice.kind == PrecisionTolerance::Kind::kClassifier ? "classifier" : "embedding", key);
  for (const PrecisionCandidate& c : choice.candidates) {
    s += fmt::format("candidate {} {} {:.9g} {:.9g} {:.9g} {} {}\n", LinearDTypeName(c.dtype), c.refused.empty() ? 0 : 1,
                     c.seconds, c.agreement, c.mean_cosine, c.argmax_same ? 1 : 0, c.passed ? 1 : 0);
  }
  return s;
}

std::optional<PrecisionChoice> DecodePrecisionChoice(const std::string& text, const std::string& key) {
  std::istringstream in(text);
  std::string magic, dtype, kind, line;
  int version = 0;
  if (!(in >> magic >> version >> dtype >> kind) || magic != "dfw-precision" || version != 1) return std::nullopt;
  std::getline(in, line);
  if (!std::getline(in, line) || line != "key " + key) return std::nullopt;
  PrecisionChoice choice;
  auto d = ParseLinearDType(dtype);
  if (!d.ok() || (kind != "classifier" && kind != "embedding")) return std::nullopt;
  choice.dtype = *d;
  choice.kind = kind == "classifier" ? PrecisionTolerance::Kind::kClassifier : PrecisionTolerance::Kind::kEmbedding;
  choice.from_cache = true;
  while (std::getline(in, line)) {
    std::istringstream row(line);
    std::string word, name;
    int refused = 0, same = 0, passed = 0;
    PrecisionCandidate c;
    if (!(row >> word >> name >> refused >> c.seconds >> c.agreement >> c.mean_cosine >> same >> passed) ||
        word != "candidate") {
      return std::nullopt;
    }
    auto cd = ParseLinearDType(name);
    if (!cd.ok()) return std::nullopt;
    c.dtype = *cd;
    if (refused) c.refused = "refused in the measuring process";
    c.argmax_same = same == 1;
    c.passed = passed == 1;
    choice.candidates.push_back(c);
  }
  return choice;
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
  // Read or measure-and-write under the lock. The holder measures for a few seconds (longer on a
  // loaded machine); one that never lets go is not waited for past ~120 s: this process then
  // measures alone.
  const int lock = ::open((o.cache_path + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  bool locked = false;
  for (int i = 0; lock >= 0 && i < 24000; ++i) {
    if (::flock(lock, LOCK_EX | LOCK_NB) == 0) {
      locked = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  // Never seen half-written (a temporary file per writer, then rename); a file that cannot be
  // written only means the next reader measures again.
  auto write = [&](const std::string& path, const PrecisionChoice& c) {
    (void)WriteFileAtomically(path, EncodePrecisionChoice(c, o.cache_key), /*sync=*/false);
  };
  std::optional<PrecisionChoice> cached = locked ? DecodePrecisionChoice(ReadAll(o.cache_path), o.cache_key) : std::nullopt;
  if (cached && probe.use(cached->dtype).ok()) {
    if (lock >= 0) ::close(lock);
    return *cached;
  }
  // An earlier job on this machine decided for the same key: the job's file gets it for the other
  // processes, and nothing is measured.
  if (locked && !o.shared_cache_path.empty()) {
    std::optional<PrecisionChoice> earlier = DecodePrecisionChoice(ReadAll(o.shared_cache_path), o.cache_key);
    if (earlier && probe.use(earlier->dtype).ok()) {
      write(o.cache_path, *earlier);
      ::close(lock);
      return *earlier;
    }
  }
  Result<PrecisionChoice> choice = Measure(probe, o);
  if (choice.ok() && locked) {
    write(o.cache_path, *choice);
    if (!o.shared_cache_path.empty()) write(o.shared_cache_path, *choice);
  }
  if (lock >= 0) ::close(lock);  // releases the flock
  if (!choice.ok()) return choice.status();
  RETURN_IF_ERROR(probe.use(choice->dtype));
  return choice;
}

}  // namespace
}  // namespace dfw
