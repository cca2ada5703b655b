#include "dfw/launcher/pipeline_models.h"

#include "dfw/stages/run_inference.h"

#include <algorithm>
#include <optional>

#include "dfw/common/strings.h"
#include "dfw/inference/mlp_handler.h"
#include "dfw/inference/safetensors.h"
#include "dfw/pipeline/fused_stages.h"
#include "dfw/pipeline/spec.h"
#include "dfw/stages/stage.h"

namespace dfw {
namespace {

Diagnostic Error(const char* code, std::string message, std::string help) {
  Diagnostic d;
  d.severity = Severity::kError;
  d.code = code;
  d.message = std::move(message);
  d.help = std::move(help);
  return d;
}

// Line `line` (1-based) of `text`, without its newline ("" when out of range).
std::string LineOf(const std::string& text, int line) {
  std::size_t begin = 0;
  for (int i = 1; i < line; ++i) {
    begin = text.find('\n', begin);
    if (begin == std::string::npos) return "";
    ++begin;
  }
  const std::size_t end = text.find('\n', begin);
  return text.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
}

// Where the model's device is set (the `device:` value when given, else the transform itself).
Origin ModelOrigin(const StageConfig& cfg, const RunInferenceConfig& ri, const std::string& yaml) {
  Origin origin;
  origin.where = cfg.file + ":" + std::to_string(ri.device_line) + ":" + std::to_string(ri.device_column);
  origin.text = LineOf(yaml, ri.device_line);
  origin.value_offset = ri.device_column > 0 && static_cast<std::size_t>(ri.device_column - 1) <= origin.text.size()
                            ? static_cast<std::size_t>(ri.device_column - 1)
                            : 0;
  return origin;
}

// The loader has already checked the RunInference config (types, model files, config vs header);
// this reads the stage's typed options for what the plan needs.
Result<ModelRequirement> ModelOf(const StageConfig& cfg, const std::string& yaml, ModelSource& source) {
  ASSIGN_OR_RETURN(RunInferenceConfig ri, DescribeRunInference(cfg));
  ModelRequirement m;
  m.name = cfg.name;
  auto files = ResolveModelFiles(ri.handler.model_path);
  if (!files.ok()) return cfg.ConfigError(files.status().message());
  auto bytes = ModelBytesFromHeader(files->weights_path);
  if (!bytes.ok()) return cfg.ConfigError(bytes.status().message());
  m.bytes = *bytes;
  source.weights_path = files->weights_path;
  source.handler_type = ri.handler_type;
  m.device = ri.handler.device;
  if (ri.handler.model_copies) {
    m.policy = CopiesPolicy::kModelCopies;
    m.model_copies = static_cast<int>(std::min<int64_t>(ModelCopies(ri.handler), 1 << 20));
  } else if (ri.handler.large_model) {
    m.policy = CopiesPolicy::kLargeModel;
  }
  m.origin = ModelOrigin(cfg, ri, yaml);
  ASSIGN_OR_RETURN(std::optional<WorkspaceEstimate> ws, EstimateRunInferenceWorkspace(cfg));
  if (ws) m.workspace = WorkspaceSize(ws->bytes, ws->how);
  ASSIGN_OR_RETURN(std::optional<WorkEstimate> work, EstimateRunInferenceWork(cfg));
  if (work) {
    m.work = ModelWork{work->flops_per_record, work->activation_bytes_per_record, std::max<int64_t>(1, work->batch_size),
                       work->dtype, work->default_efficiency, work->how};
  }
  return m;
}

}  // namespace

PipelineModels LoadPipelineModels(const std::string& path, const std::string& yaml) {
  PipelineModels out;
  StageRegistry registry;
  RegisterBuiltinStages(registry);
  Result<PipelineSpec> spec = [&]() -> Result<PipelineSpec> {
    try {
      return LoadPipelineString(yaml, registry, path);
    } catch (const std::exception& e) {  // the loader promises a Status; keep that promise here too
      return InvalidArgument(path + ": " + e.what());
    }
  }();
  if (!spec.ok()) {
    out.diagnostics.push_back(Error("pipeline-invalid", spec.status().message(),
                                    "fix the pipeline file; --dry_run checks it exactly as the run loads it"));
    return out;
  }
  // Cut at its Combines the way the run will (a transform fed from both sides of one is refused).
  FuseOptions fuse;
  fuse.committed_dir = [](int) { return std::string("/"); };
  if (Result<std::vector<FusedStage>> stages = FuseStages(*spec, fuse); !stages.ok()) {
    out.diagnostics.push_back(Error("pipeline-invalid", stages.status().message(),
                                    "read the Combine's output after it (a Flatten of its input and output cannot run)"));
    return out;
  }
  for (const TransformSpec& t : spec->transforms) {
    if (t.config.type != "RunInference") continue;
    ModelSource source;
    auto model = [&]() -> Result<ModelRequirement> {
      try {
        return ModelOf(t.config, yaml, source);
      } catch (const std::exception& e) {
        return t.config.ConfigError(e.what());
      }
    }();
    if (model.ok()) {
      out.models.push_back(std::move(model).value());
      out.sources.push_back(std::move(source));
    } else {
      out.diagnostics.push_back(Error("model-invalid", model.status().message(),
                                      "model_path must name a readable safetensors model (config.json + model.safetensors)"));
    }
  }
  out.spec = std::move(spec).value();
  return out;
}

}  // namespace dfw
