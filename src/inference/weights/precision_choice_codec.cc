// The cache file text of a `dtype: auto` decision (precision_choice.h), version 2:
//
//   dfw-precision 2 <dtype> <embedding|classifier> <min_cosine_bf16> <min_cosine_int8> <max_prob_diff>
//   key <cache key>
//   buckets <n limits> <limit>... <n+1 dtypes> <dtype>...      (n = 0: one dtype for every row)
//   candidate <dtype> <refused 0|1> <seconds> <agreement> <mean cosine> <argmax same> <passed>
//             <n buckets> (<agreement> <rows> <passed>)...
//
// A version-1 file (no buckets) reads as nothing, so it is measured again.
#include "dfw/inference/precision_choice.h"

#include <fmt/format.h>

#include <sstream>

namespace dfw {
namespace {

constexpr int kCodecVersion = 2;
constexpr std::size_t kMaxBuckets = 64;  // a file claiming more is not ours

}  // namespace

std::string EncodePrecisionChoice(const PrecisionChoice& choice, const std::string& key) {
  const PrecisionTolerance& t = choice.tolerance;
  std::string s = fmt::format("dfw-precision {} {} {} {:.9g} {:.9g} {:.9g}\nkey {}\n", kCodecVersion,
                              LinearDTypeName(choice.dtype),
                              choice.kind == PrecisionTolerance::Kind::kClassifier ? "classifier" : "embedding",
                              t.min_cosine_bf16, t.min_cosine_int8, t.max_prob_diff, key);
  s += fmt::format("buckets {}", choice.bucket_limits.size());
  for (int l : choice.bucket_limits) s += fmt::format(" {}", l);
  s += fmt::format(" {}", choice.bucket_dtypes.size());
  for (LinearDType d : choice.bucket_dtypes) s += fmt::format(" {}", LinearDTypeName(d));
  s += "\n";
  for (const PrecisionCandidate& c : choice.candidates) {
    s += fmt::format("candidate {} {} {:.9g} {:.9g} {:.9g} {} {} {}", LinearDTypeName(c.dtype), c.refused.empty() ? 0 : 1,
                     c.seconds, c.agreement, c.mean_cosine, c.argmax_same ? 1 : 0, c.passed ? 1 : 0,
                     c.bucket_agreement.size());
    for (std::size_t b = 0; b < c.bucket_agreement.size(); ++b) {
      s += fmt::format(" {:.9g} {} {}", c.bucket_agreement[b], c.bucket_rows[b], c.bucket_passed[b] ? 1 : 0);
    }
    s += "\n";
  }
  return s;
}

std::optional<PrecisionChoice> DecodePrecisionChoice(const std::string& text, const std::string& key) {
  std::istringstream in(text);
  std::string magic, dtype, kind, line;
  int version = 0;
  PrecisionChoice choice;
  PrecisionTolerance& t = choice.tolerance;
  if (!(in >> magic >> version) || magic != "dfw-precision" || version != kCodecVersion) return std::nullopt;
  if (!(in >> dtype >> kind >> t.min_cosine_bf16 >> t.min_cosine_int8 >> t.max_prob_diff)) return std::nullopt;
  std::getline(in, line);
  if (!std::getline(in, line) || line != "key " + key) return std::nullopt;
  auto d = ParseLinearDType(dtype);
  if (!d.ok() || (kind != "classifier" && kind != "embedding")) return std::nullopt;
  choice.dtype = *d;
  choice.kind = kind == "classifier" ? PrecisionTolerance::Kind::kClassifier : PrecisionTolerance::Kind::kEmbedding;
  t.kind = choice.kind;
  choice.from_cache = true;
  std::string word;
  std::size_t n = 0;
  if (!(in >> word >> n) || word != "buckets" || n > kMaxBuckets) return std::nullopt;
  choice.bucket_limits.resize(n);
  for (std::size_t i = 0; i < choice.bucket_limits.size(); ++i) {  // ascending token counts >= 1
    int& l = choice.bucket_limits[i];
    if (!(in >> l) || l < 1 || (i > 0 && l <= choice.bucket_limits[i - 1])) return std::nullopt;
  }
  if (!(in >> n) || (n != 0 && n != choice.bucket_limits.size() + 1)) return std::nullopt;
  for (std::size_t i = 0; i < n; ++i) {
    std::string name;
    if (!(in >> name)) return std::nullopt;
    auto bd = ParseLinearDType(name);
    if (!bd.ok()) return std::nullopt;
    choice.bucket_dtypes.push_back(*bd);
  }
  if (!choice.bucket_dtypes.empty() && choice.bucket_dtypes.back() != choice.dtype) return std::nullopt;
  std::getline(in, line);
  while (std::getline(in, line)) {
    std::istringstream row(line);
    std::string name;
    int refused = 0, same = 0, passed = 0;
    std::size_t nb = 0;
    PrecisionCandidate c;
    if (!(row >> word >> name >> refused >> c.seconds >> c.agreement >> c.mean_cosine >> same >> passed >> nb) ||
        word != "candidate" || nb > kMaxBuckets) {
      return std::nullopt;
    }
    // A candidate's figures are per bucket of this choice, or none (a file another writer damaged
    // could name more buckets than the choice has: it is measured again).
    if (nb != 0 && nb != choice.bucket_limits.size() + 1) return std::nullopt;
    for (std::size_t b = 0; b < nb; ++b) {
      double a = 0;
      int rows = 0, ok = 0;
      if (!(row >> a >> rows >> ok)) return std::nullopt;
      c.bucket_agreement.push_back(a);
      c.bucket_rows.push_back(rows);
      c.bucket_passed.push_back(ok == 1 ? 1 : 0);
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

}  // namespace dfw
