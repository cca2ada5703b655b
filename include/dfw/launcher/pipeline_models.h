// The dry run's view of the pipeline: load it with the pipeline module (every check the run does
// at load time) and list the models its RunInference transforms need, sized from the safetensors
// headers alone (the weights are never read, so a sparse multi-GiB file costs one small read).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "dfw/options/diagnostic.h"
#include "dfw/pipeline/spec.h"
#include "dfw/plan/plan.h"
#include "dfw/stages/stage.h"

namespace dfw {

// Where a model comes from (what `run` needs to start model hosts for shared copies).
struct ModelSource {
  std::string weights_path;  // the resolved .safetensors file (relative paths as the run resolves them)
  std::string handler_type;  // model_handler.type
};

struct PipelineModels {
  std::vector<ModelRequirement> models;  // one per RunInference transform, in pipeline order
  std::vector<ModelSource> sources;      // one per entry of `models`, same order
  // Errors found loading the pipeline or sizing a model (codes "pipeline-invalid", "model-invalid");
  // each message starts with file:line:col. Empty when everything loaded.
  std::vector<Diagnostic> diagnostics;
  // The pipeline as loaded (so callers such as the dry run's bundle preview do not parse it again);
  // empty when it did not load.
  std::optional<PipelineSpec> spec;
};

// `yaml` is the text of `path` (already read by the caller). Model paths are resolved as the run
// resolves them (relative to the working directory). Never throws.
//
// Copies policy per transform, from model_handler.config (Beam's rule): `model_copies: k` → k shared
// copies per worker (it wins over large_model, as in Beam); `large_model: true` → one shared copy;
// otherwise one copy per SDK process.
//
// `checks`: kFull (what `run` needs: every model file there and agreeing); kConfigOnly (the plan and
// the dry run): the same checks, except that a handler which can plan from config.json alone
// (text generation) accepts a model directory without its weights file — its model is then sized
// from the config and `diagnostics` carries a "model-weights-absent" warning for it.
PipelineModels LoadPipelineModels(const std::string& path, const std::string& yaml,
                                  ModelChecks checks = ModelChecks::kFull);

}  // namespace dfw
