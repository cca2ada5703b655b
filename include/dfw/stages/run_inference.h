// What the planner asks of a RunInference transform without running it.
#pragma once

#include <memory>
#include <optional>

#include "dfw/common/status.h"
#include "dfw/inference/model_handler.h"
#include "dfw/stages/stage.h"

namespace dfw {

// The workspace one copy of the transform's model needs for its largest batch, from its config
// (the handler is made, no weights are loaded; nullopt when the handler cannot say). Config errors
// are the transform's own (kInvalidArgument naming it).
Result<std::optional<WorkspaceEstimate>> EstimateRunInferenceWorkspace(const StageConfig& config);
// The work of one record of the transform's model (the handler is made, no weights are loaded).
Result<std::optional<WorkEstimate>> EstimateRunInferenceWork(const StageConfig& config);

// A RunInference transform's options, parsed and checked as the stage parses them (no model files
// are read): what the plan and the launcher read instead of the YAML.
struct RunInferenceConfig {
  std::string handler_type;     // model_handler.type
  ModelHandlerOptions handler;  // model_handler.config (model path, device, copies, batching)
  // Where the model's device is decided, 1-based: the `device:` value when given, else the transform.
  int device_line = 0;
  int device_column = 0;
};
Result<RunInferenceConfig> DescribeRunInference(const StageConfig& config);

// The load-time check of a RunInference transform, returning the handler it made (no weights
// loaded): kFull is the loader's check (the model files exist and agree, the batching options
// hold); kConfigOnly lets a handler that can plan from config.json alone accept a model directory
// without its weights. The plan reads its estimates from this handler instead of making another.
Result<std::unique_ptr<ModelHandler>> CheckRunInferenceHandler(const StageConfig& config, ModelChecks checks);

}  // namespace dfw
