// PipelineSpec: a loaded, wired and checked Beam YAML pipeline (beam-yaml.md §1-2, §7).
#pragma once

#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "dfw/common/status.h"
#include "dfw/stages/stage.h"

namespace dfw {

// One consumed output: the main output of transform `from`, or its error output when `error`.
struct InputRef {
  int from = 0;        // index into PipelineSpec::transforms
  bool error = false;  // the transform's error_handling output
};

struct TransformSpec {
  StageConfig config;           // name, type, config node, location, error handling
  StageTraits traits;           // from the registry
  std::vector<InputRef> inputs; // several = implicit flatten
};

struct PipelineSpec {
  std::string file;                       // path it was loaded from ("<string>" for LoadPipelineString)
  std::vector<TransformSpec> transforms;  // topologically sorted: inputs come before consumers
  YAML::Node options;                     // top-level `options:` (Null when absent); the options module reads it
};

// Loads and checks a pipeline. Every error is kInvalidArgument (or kUnimplemented for valid Beam
// YAML that dfworker does not support) and starts with "file:line:column: ".
Result<PipelineSpec> LoadPipelineFile(const std::string& path, const StageRegistry& registry);
Result<PipelineSpec> LoadPipelineString(const std::string& yaml, const StageRegistry& registry,
                                        const std::string& file_name = "<string>");

}  // namespace dfw
