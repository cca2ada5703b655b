// RunInference with Beam's HuggingFacePipelineModelHandler, spelled as Beam YAML spells it
// (apache_beam/yaml/yaml_ml.py): model_handler.config keys task, model, preprocess, postprocess,
// device, inference_fn, load_pipeline_args (plus Beam's batching keys), and inference_args on the
// transform. What the inference layer needs becomes ModelHandlerOptions; the callables stay here,
// in the stage, compiled once.
#pragma once

#include <memory>
#include <string>

#include "dfw/common/status.h"
#include "dfw/inference/model_handler.h"
#include "dfw/record/expression.h"
#include "dfw/stages/stage.h"

namespace dfw::stages_internal {

struct HfPipelineStageConfig {
  // `preprocess`: row → the pipeline's input (Beam requires it for this handler).
  std::unique_ptr<CompiledExpression> preprocess;
  std::string preprocess_shown;  // as the user wrote it, for error messages
  // `postprocess`: PredictionResult (a row: example, inference, model_id) → the inference field;
  // null keeps the PredictionResult, as Beam's default.
  std::unique_ptr<CompiledExpression> postprocess;
  std::string postprocess_shown;
};

// Reads model_handler.config (`hc`) and the transform's inference_args into `h` (model_path =
// `model`, device, batching, extra = {task, pipeline_args}) and returns the callables. Errors are
// config errors naming the key: `task` without `model` (no hub download here), inference_fn (a
// Python function), an unknown key (with the allowed ones), a callable that is not a lambda.
Result<std::shared_ptr<HfPipelineStageConfig>> ParseHfPipelineConfig(const StageConfig& c, const ConfigNode& hc,
                                                                     ModelHandlerOptions& h);

}  // namespace dfw::stages_internal
