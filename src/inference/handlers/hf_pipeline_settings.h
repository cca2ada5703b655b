// What HuggingFacePipelineModelHandler reads from a model directory before any weight is loaded.
#pragma once

#include <memory>
#include <string>

#include "dfw/inference/bert_encoder.h"
#include "dfw/tokenizers/tokenizer.h"
#include "dfw/inference/model_handler.h"
#include "inference/encoders/hf_heads.h"
#include "inference/handlers/hf_tasks.h"

namespace dfw {

struct HfPipelineSettings {
  std::string dir;        // the resolved model directory
  std::string task;       // canonical name (aliases resolved)
  BertConfig config;
  HeadKind head = HeadKind::kNone;
  HfLabels labels;
  HfTaskArgs args;
  std::shared_ptr<const HfTokenizer> tokenizer;
  int max_tokens = 0;     // longest encoding the encoder takes (inputs are truncated to it)
  std::vector<int32_t> target_ids;  // fill-mask targets as ids
  int32_t mask_id = -1, pad_id = -1;
  // transformers' pipeline(torch_dtype=...) / (dtype=...) from load_pipeline_args: the Linear
  // layers' precision (the encoder's norms, attention and softmax stay float32). float32 when not
  // given, as transformers loads a pipeline; "auto" is the checkpoint's torch_dtype.
  LinearDType linear_dtype = LinearDType::kFloat32;
  std::string dtype_how;  // "torch_dtype: bfloat16" / "" when not given
};

Result<HfPipelineSettings> ReadHfPipelineSettings(const ModelHandlerOptions& options);

}  // namespace dfw
