// PipelineSpec: a loaded, wired and checked Beam YAML pipeline (beam-yaml.md §1-2, §7).
#pragma once

#include <string>
#include <vector>

#include "dfw/common/status.h"
#include "dfw/stages/stage.h"

namespace dfw {

// One consumed output of transform `from`: its main output, its error output when `error`, or
// its named output `outputs[tag]` when `tag` >= 0 (Partition's `Name.out_name`).
struct InputRef {
  int from = 0;        // index into PipelineSpec::transforms
  bool error = false;  // the transform's error_handling output
  int tag = -1;        // >= 0: index into the producer's TransformSpec::outputs
};

// One entry of a `resource_hints:` mapping (Beam YAML), as written. The loader checks the structure
// (known key, scalar value); the options module reads the values (dfw/options/parse.h), so a hint in
// the file gets the same grammar and rules as --resource_hints.
struct ResourceHintSpec {
  std::string key;    // "accelerator", "min_ram" or "cpu_count"
  std::string value;  // the scalar as written
  int line = 0;       // 1-based position of the value
  int column = 0;
};

struct TransformSpec {
  StageConfig config;           // name, type, config node, location, error handling
  StageTraits traits;           // from the registry
  std::vector<InputRef> inputs; // several = implicit flatten
  // Named outputs besides the main and error outputs, as the config declares them (Partition's
  // `outputs` and `unknown_output`); a stage emits to outputs[k] with StageOutput::EmitTo(k, row).
  std::vector<std::string> outputs;
  std::vector<ResourceHintSpec> resource_hints;  // the transform's own `resource_hints:`, in file order
};

struct PipelineSpec {
  std::string file;                       // path it was loaded from ("<string>" for LoadPipelineString)
  std::vector<TransformSpec> transforms;  // topologically sorted: inputs come before consumers
  std::vector<ResourceHintSpec> resource_hints;  // `pipeline: resource_hints:` (they apply to every transform)
};

// Loads and checks a pipeline. Every error is kInvalidArgument (or kUnimplemented for valid Beam
// YAML that dfworker does not support) and starts with "file:line:column: ".
Result<PipelineSpec> LoadPipelineFile(const std::string& path, const StageRegistry& registry);
// `base_dir`: the directory the transforms' relative paths (inputs, outputs, models) resolve against
// (StageConfig::base_dir); "" = this process's working directory.
Result<PipelineSpec> LoadPipelineString(const std::string& yaml, const StageRegistry& registry,
                                        const std::string& file_name = "<string>", const std::string& base_dir = "");

}  // namespace dfw
