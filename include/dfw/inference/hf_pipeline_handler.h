// HuggingFacePipelineModelHandler: Beam's local-model handler (apache_beam.ml.inference.
// huggingface_inference), run here on the BERT-family encoder with transformers' task layer.
//
// model_handler:
//   type: HuggingFacePipelineModelHandler
//   config:
//     task: text-classification      # text-classification (alias sentiment-analysis),
//                                    # token-classification (alias ner), fill-mask,
//                                    # feature-extraction, zero-shot-classification
//     model: DIR or ORG/NAME         # a local directory, or a hub id found in the local Hugging
//                                    # Face cache (never downloaded; see hf_model_dir.h)
//     preprocess: {callable: "lambda row: row.text"}   # row → the pipeline's input (a string)
//     postprocess: {callable: ...}   # optional: PredictionResult → the inference field
//     device: CPU | GPU | cuda | -1 | 0 …
//     load_pipeline_args: {...}      # pipeline(...) arguments (aggregation_strategy, …)
//     inference_fn: …                # refused: a Python function
//   inference_args: {...}            # on RunInference: pipeline call arguments (top_k, …)
// The stage (src/stages) turns that into ModelHandlerOptions: model_path = `model`, extra =
// {task, pipeline_args (load_pipeline_args, then inference_args over them)}.
//
// Example: a string. Prediction: what transformers' `pipeline(task, model)(example, **args)`
// returns for that one string. The model directory holds config.json (a Bert*, DistilBert*,
// Roberta* or XLMRoberta* architecture), model.safetensors (F32) and tokenizer.json.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "dfw/inference/model_handler.h"

namespace dfw {

inline constexpr std::string_view kHfPipelineHandlerType = "HuggingFacePipelineModelHandler";

// The tasks this handler runs, as transformers names them (aliases included).
const std::vector<std::string>& HfPipelineTasks();

// Handler-specific keys of ModelHandlerOptions::extra: "task", "pipeline_args".
const std::vector<std::string>& HfPipelineHandlerKeys();

// Reads config.json, tokenizer.json and the safetensors header, checks task, architecture, head,
// arguments and shapes; weights are not loaded. Every refusal is kInvalidArgument naming the value
// and what is supported.
Result<std::unique_ptr<ModelHandler>> MakeHfPipelineHandler(ModelHandlerOptions options);

}  // namespace dfw
