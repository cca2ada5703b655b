// text-classification and zero-shot-classification results, and every task's argument parsing.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "inference/handlers/hf_tasks.h"

namespace dfw {
namespace {

Status BadArg(const std::string& task, const std::string& key, const Value& v, const std::string& allowed) {
  return InvalidArgument("task '" + task + "': argument '" + key + "' = " + v.ToJson() + " is not allowed; " + allowed);
}

Result<std::vector<std::string>> StringList(const std::string& task, const std::string& key, const Value& v) {
  std::vector<std::string> out;
  if (v.is_string()) return std::vector<std::string>{v.as_string()};
  if (!v.is_list()) return BadArg(task, key, v, "expected a string or a list of strings");
  for (const Value& e : v.as_list()) {
    if (!e.is_string()) return BadArg(task, key, v, "expected a list of strings");
    out.push_back(e.as_string());
  }
  return out;
}

// Indices of `scores` from highest to lowest (ties keep index order).
std::vector<std::size_t> Descending(const std::vector<double>& scores) {
  std::vector<std::size_t> order(scores.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return scores[a] > scores[b]; });
  return order;
}

std::string Trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\n\r"), e = s.find_last_not_of(" \t\n\r");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

}  // namespace

void SoftmaxInPlace(std::span<double> x) {
  if (x.empty()) return;
  const double m = *std::max_element(x.begin(), x.end());
  double sum = 0;
  for (double& v : x) sum += (v = std::exp(v - m));
  for (double& v : x) v /= sum;
}

Result<HfTaskArgs> ParseHfTaskArgs(const std::string& task, const Row& args) {
  HfTaskArgs a;
  std::vector<std::string> allowed;
  if (task == "text-classification") allowed = {"top_k", "function_to_apply"};
  if (task == "token-classification") allowed = {"aggregation_strategy", "ignore_labels"};
  if (task == "fill-mask") allowed = {"top_k", "targets"};
  if (task == "zero-shot-classification") allowed = {"candidate_labels", "hypothesis_template", "multi_label"};
  if (task == "feature-extraction") allowed = {};
  for (const Field& f : args.fields()) {
    const Value& v = f.value;
    const std::string& k = f.name;
    if (std::find(allowed.begin(), allowed.end(), k) == allowed.end()) {
      std::string list;
      for (const auto& s : allowed) list += (list.empty() ? "" : ", ") + s;
      return InvalidArgument("task '" + task + "': argument '" + k + "' is not supported; supported: " +
                             (list.empty() ? "none" : list));
    }
    if (k == "top_k") {
      a.top_k_given = true;
      if (v.is_null() && task == "text-classification") continue;  // all labels
      if (!v.is_int() || v.as_int() < 1 || v.as_int() > 1000000) return BadArg(task, k, v, "expected a positive integer");
      a.top_k = static_cast<int>(v.as_int());
    } else if (k == "function_to_apply") {
      const std::string s = v.is_string() ? v.as_string() : "";
      if (s == "softmax") a.function_to_apply = ScoreFunction::kSoftmax;
      else if (s == "sigmoid") a.function_to_apply = ScoreFunction::kSigmoid;
      else if (s == "none") a.function_to_apply = ScoreFunction::kNone;
      else return BadArg(task, k, v, "allowed: softmax, sigmoid, none");
    } else if (k == "aggregation_strategy") {
      std::string s = v.is_string() ? v.as_string() : "";
      std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      if (s == "none") a.aggregation = Aggregation::kNone;
      else if (s == "simple") a.aggregation = Aggregation::kSimple;
      else if (s == "first") a.aggregation = Aggregation::kFirst;
      else if (s == "average") a.aggregation = Aggregation::kAverage;
      else if (s == "max") a.aggregation = Aggregation::kMax;
      else return BadArg(task, k, v, "allowed: none, simple, first, average, max");
    } else if (k == "ignore_labels") {
      ASSIGN_OR_RETURN(a.ignore_labels, StringList(task, k, v));
    } else if (k == "targets") {
      ASSIGN_OR_RETURN(a.targets, StringList(task, k, v));
      if (a.targets.empty()) return BadArg(task, k, v, "at least one target must be provided");
    } else if (k == "candidate_labels") {
      if (v.is_string()) {  // "a, b, c", as transformers splits it
        std::string s = v.as_string();
        for (std::size_t pos = 0; pos <= s.size();) {
          const std::size_t comma = std::min(s.find(',', pos), s.size());
          if (std::string t = Trim(s.substr(pos, comma - pos)); !t.empty()) a.candidate_labels.push_back(t);
          pos = comma + 1;
        }
      } else {
        ASSIGN_OR_RETURN(a.candidate_labels, StringList(task, k, v));
      }
      if (a.candidate_labels.empty()) return BadArg(task, k, v, "give at least one label");
    } else if (k == "hypothesis_template") {
      if (!v.is_string() || v.as_string().find("{}") == std::string::npos) {
        return BadArg(task, k, v, "expected a string with '{}' where the label goes");
      }
      a.hypothesis_template = v.as_string();
    } else if (k == "multi_label") {
      if (!v.is_bool()) return BadArg(task, k, v, "expected true or false");
      a.multi_label = v.as_bool();
    }
  }
  if (task == "zero-shot-classification" && a.candidate_labels.empty()) {
    return InvalidArgument("task 'zero-shot-classification' needs 'candidate_labels' (in inference_args or load_pipeline_args)");
  }
  if (task == "fill-mask" && !a.top_k) a.top_k = 5;
  return a;
}

ScoreFunction DefaultScoreFunction(const HfLabels& l) {
  if (l.problem_type == "multi_label_classification" || l.id2label.size() == 1) return ScoreFunction::kSigmoid;
  return ScoreFunction::kSoftmax;
}

Value TextClassificationResult(std::span<const float> logits, const HfLabels& labels, const HfTaskArgs& args) {
  std::vector<double> s(logits.begin(), logits.end());
  switch (args.function_to_apply.value_or(DefaultScoreFunction(labels))) {
    case ScoreFunction::kSoftmax: SoftmaxInPlace(s); break;
    case ScoreFunction::kSigmoid:
      for (double& v : s) v = 1.0 / (1.0 + std::exp(-v));
      break;
    case ScoreFunction::kNone: break;
  }
  std::size_t n = s.size();
  if (!args.top_k_given) n = 1;
  else if (args.top_k) n = std::min<std::size_t>(n, static_cast<std::size_t>(*args.top_k));
  List out;
  for (std::size_t i : Descending(s)) {
    if (out.size() >= n) break;
    Row r;
    r.Append("label", Value::String(labels.id2label[i]));
    r.Append("score", Value::Float(s[i]));
    out.push_back(Value::FromRow(std::move(r)));
  }
  return Value::FromList(std::move(out));
}

Value ZeroShotResult(const std::string& text, std::span<const float> logits, int num_nli, const HfLabels& labels,
                     const HfTaskArgs& args) {
  // transformers' entailment id: the first label2id entry whose name starts with "entail", else -1 (the last).
  int entail = -1;
  for (const auto& [name, id] : labels.label2id) {
    std::string lower = name;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (lower.rfind("entail", 0) == 0) {
      entail = id;
      break;
    }
  }
  const int e = entail < 0 ? num_nli - 1 : entail;
  const int contra = entail == 0 ? num_nli - 1 : 0;  // -1 (the last) when entailment is 0
  const std::size_t n = args.candidate_labels.size();
  std::vector<double> scores(n);
  auto at = [&](std::size_t label, int k) { return static_cast<double>(logits[label * static_cast<std::size_t>(num_nli) + static_cast<std::size_t>(k)]); };
  if (args.multi_label || n == 1) {
    for (std::size_t i = 0; i < n; ++i) {
      double pair[2] = {at(i, contra), at(i, e)};
      SoftmaxInPlace(pair);
      scores[i] = pair[1];
    }
  } else {
    for (std::size_t i = 0; i < n; ++i) scores[i] = at(i, e);
    SoftmaxInPlace(scores);
  }
  List names, values;
  for (std::size_t i : Descending(scores)) {
    names.push_back(Value::String(args.candidate_labels[i]));
    values.push_back(Value::Float(scores[i]));
  }
  Row r;
  r.Append("sequence", Value::String(text));
  r.Append("labels", Value::FromList(std::move(names)));
  r.Append("scores", Value::FromList(std::move(values)));
  return Value::FromRow(std::move(r));
}

}  // namespace dfw
