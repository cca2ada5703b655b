// Fuzzes the reading of a cached `dtype: auto` decision (DecodePrecisionChoice, the file another
// process or an earlier job wrote): any input must decode or give nothing, and a decoded choice
// must be one the handlers can route rows by.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "dfw/inference/precision_choice.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto choice = dfw::DecodePrecisionChoice(text, "k");
  if (!choice.has_value()) return 0;
  const dfw::PrecisionChoice& c = *choice;
  if (!c.bucket_dtypes.empty() &&
      (c.bucket_dtypes.size() != c.bucket_limits.size() + 1 || c.bucket_dtypes.back() != c.dtype)) {
    std::abort();  // a bucket without a dtype, or a model left in another dtype than its longest bucket's
  }
  for (std::size_t i = 0; i < c.bucket_limits.size(); ++i) {
    if (c.bucket_limits[i] < 1 || (i > 0 && c.bucket_limits[i] <= c.bucket_limits[i - 1])) std::abort();
  }
  for (const dfw::PrecisionCandidate& k : c.candidates) {
    if (k.bucket_rows.size() != k.bucket_agreement.size() || k.bucket_passed.size() != k.bucket_agreement.size()) {
      std::abort();
    }
  }
  for (int tokens : {0, 1, 5, 8, 9, 64, 65, 100000}) (void)c.DTypeFor(tokens);
  for (std::size_t b = 0; b <= c.bucket_limits.size(); ++b) (void)c.BucketName(b);
  (void)c.Describe();
  (void)c.Figures();
  (void)dfw::EncodePrecisionChoice(c, "k");
  return 0;
}
