// What the planner asks of a RunInference transform without running it.
#pragma once

#include <optional>

#include "dfw/common/status.h"
#include "dfw/inference/model_handler.h"
#include "dfw/stages/stage.h"

namespace dfw {

// The workspace one copy of the transform's model needs for its largest batch, from its config
// (the handler is made, no weights are loaded; nullopt when the handler cannot say). Config errors
// are the transform's own (kInvalidArgument naming it).
Result<std::optional<WorkspaceEstimate>> EstimateRunInferenceWorkspace(const StageConfig& config);

}  // namespace dfw
