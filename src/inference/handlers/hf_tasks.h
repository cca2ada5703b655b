// The task layer of HuggingFacePipelineModelHandler: what transformers' pipelines return for one
// input, from the model's logits (the contract users see, so its shapes and key order are
// transformers' own). Each task parses its own arguments (load_pipeline_args + inference_args) at
// load, so a bad or unsupported one is an invalid-invocation error naming it.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "dfw/common/status.h"
#include "dfw/tokenizers/tokenizer.h"
#include "dfw/record/value.h"

namespace dfw {

// config.json's labels: id2label by index, label2id in file order, problem_type.
struct HfLabels {
  std::vector<std::string> id2label;
  std::vector<std::pair<std::string, int>> label2id;
  std::string problem_type;
};

enum class ScoreFunction : uint8_t { kSoftmax, kSigmoid, kNone };
enum class Aggregation : uint8_t { kNone, kSimple, kFirst, kAverage, kMax };

struct HfTaskArgs {
  // text-classification
  bool top_k_given = false;     // legacy shape (one dict per input) when false
  std::optional<int> top_k;     // nullopt with top_k_given: all labels
  std::optional<ScoreFunction> function_to_apply;  // nullopt: transformers' default for the model
  // token-classification
  Aggregation aggregation = Aggregation::kNone;
  std::vector<std::string> ignore_labels = {"O"};
  // fill-mask (top_k above; default 5)
  std::vector<std::string> targets;
  // zero-shot-classification
  std::vector<std::string> candidate_labels;
  std::string hypothesis_template = "This example is {}.";
  bool multi_label = false;
};

// The arguments of `task` from `args` (a row of name → value); an unknown name or a bad value is
// kInvalidArgument naming it and what the task accepts.
Result<HfTaskArgs> ParseHfTaskArgs(const std::string& task, const Row& args);

// transformers' default function for text-classification on this model.
ScoreFunction DefaultScoreFunction(const HfLabels& labels);

// text-classification: the pipeline's result for one text from its logits.
Value TextClassificationResult(std::span<const float> logits, const HfLabels& labels, const HfTaskArgs& args);

// zero-shot-classification: `logits` holds one row of NLI logits per candidate label.
Value ZeroShotResult(const std::string& text, std::span<const float> logits, int num_nli_labels, const HfLabels& labels,
                     const HfTaskArgs& args);

// token-classification: `logits` is tokens × num_labels for `enc` (the encoding of `text`).
Value TokenClassificationResult(const std::string& text, const TokenEncoding& enc, std::span<const float> logits,
                                const HfLabels& labels, const HfTaskArgs& args, const HfTokenizer& tok);

// fill-mask: `mask_logits` holds vocab_size logits per [MASK] position of `enc`, in order;
// `target_ids` restricts the candidates (empty: all).
Value FillMaskResult(const TokenEncoding& enc, std::span<const int> mask_positions, std::span<const float> mask_logits,
                     int vocab_size, std::span<const int32_t> target_ids, const HfTaskArgs& args, const HfTokenizer& tok,
                     int32_t pad_id);

// Softmax of `x` in place (max-shifted, as numpy/torch do).
void SoftmaxInPlace(std::span<double> x);

}  // namespace dfw
