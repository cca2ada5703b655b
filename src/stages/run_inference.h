// RunInference as a building block for stages that wrap it (MLTransform).
#pragma once

#include <memory>

#include "dfw/common/status.h"
#include "dfw/stages/stage.h"

namespace dfw::stages_internal {

// The RunInference stage for `config` (type RunInference; its `config:` as RunInference takes it):
// models loaded, as the registry's factory makes it.
Result<std::unique_ptr<Stage>> MakeRunInferenceStage(const StageConfig& config);
// The load-time check of the same (no weights loaded).
Status CheckRunInferenceConfig(const StageConfig& config);
// The config alone (ModelChecks::kConfigOnly): no model file is opened.
Status CheckRunInferenceOptions(const StageConfig& config);

}  // namespace dfw::stages_internal
