// HuggingFacePipelineModelHandler with `task: text-generation`: transformers' TextGenerationPipeline
// on a decoder-only model (DecoderConfig families), generating with the continuous-batching engine.
//
// Example: a string (the prompt), or a chat — a list of {role, content} rows — rendered with the
// model's chat template (tokenizer_config.json `chat_template` or chat_template.jinja, jinja2 with
// trim_blocks and lstrip_blocks as transformers renders it). Prediction: what
// `pipeline("text-generation", model)(example, **args)` returns for it: a list of
// num_return_sequences rows {generated_text: …} (a string: the prompt and its continuation, or the
// continuation alone with return_full_text false; for a chat: the messages plus the new assistant
// message), or {generated_token_ids: […]} with return_tensors.
//
// Generation arguments (load_pipeline_args, then inference_args over them) are transformers' names;
// unset ones come from generation_config.json, then the pipeline's own defaults (transformers 5:
// max_new_tokens 256, do_sample true, temperature 0.7), then GenerationConfig's.
#pragma once

#include <memory>
#include <string>

#include "dfw/inference/model_handler.h"

namespace dfw {

// The generation keys this task accepts in pipeline arguments (for messages and the export).
const std::vector<std::string>& TextGenerationArgumentNames();
// The ones that are dfworker's own (Beam's pipeline would not accept them): the export drops them.
const std::vector<std::string>& TextGenerationEngineArgumentNames();

// `dir` is the resolved model directory. Reads config.json, generation_config.json,
// tokenizer.json / tokenizer_config.json and the safetensors header; checks every argument and the
// weights' names and shapes (nothing is loaded). Refusals are kInvalidArgument naming the value.
Result<std::unique_ptr<ModelHandler>> MakeHfTextGenerationHandler(ModelHandlerOptions options, const std::string& dir);

}  // namespace dfw
