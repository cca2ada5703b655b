// fill-mask as transformers' pipeline returns it: the top_k candidates (or targets) per mask
// token, each with its score, id, decoded token and the decoded sequence with it filled in.
#include <algorithm>

#include "inference/handlers/hf_tasks.h"

namespace dfw {

Value FillMaskResult(const TokenEncoding& enc, std::span<const int> masks, std::span<const float> mask_logits, int vocab,
                     std::span<const int32_t> targets, const HfTaskArgs& args, const HfTokenizer& tok, int32_t pad_id) {
  const bool single = masks.size() == 1;
  List rows;
  for (std::size_t m = 0; m < masks.size(); ++m) {
    std::vector<double> p(mask_logits.begin() + static_cast<std::ptrdiff_t>(m) * vocab,
                          mask_logits.begin() + static_cast<std::ptrdiff_t>(m + 1) * vocab);
    SoftmaxInPlace(p);
    std::vector<int32_t> cand;
    if (targets.empty()) {
      for (int i = 0; i < vocab; ++i) cand.push_back(i);
    } else {
      cand.assign(targets.begin(), targets.end());
    }
    std::stable_sort(cand.begin(), cand.end(), [&](int32_t a, int32_t b) { return p[static_cast<std::size_t>(a)] > p[static_cast<std::size_t>(b)]; });
    const std::size_t k = std::min<std::size_t>(cand.size(), static_cast<std::size_t>(args.top_k.value_or(5)));
    List row;
    for (std::size_t j = 0; j < k; ++j) {
      const int32_t id = cand[j];
      std::vector<int32_t> ids;
      for (std::size_t t = 0; t < enc.size(); ++t) {
        const int32_t v = static_cast<int>(t) == masks[m] ? id : enc.ids[t];
        if (v != pad_id) ids.push_back(v);
      }
      const int32_t one[] = {id};
      Row r;
      r.Append("score", Value::Float(p[static_cast<std::size_t>(id)]));
      r.Append("token", Value::Int(id));
      r.Append("token_str", Value::String(tok.Decode(one, false)));
      r.Append("sequence", Value::String(tok.Decode(ids, single)));
      row.push_back(Value::FromRow(std::move(r)));
    }
    if (single) return Value::FromList(std::move(row));
    rows.push_back(Value::FromList(std::move(row)));
  }
  return Value::FromList(std::move(rows));
}

}  // namespace dfw
