#include "dfw/launcher/pipeline_models.h"

#include "dfw/stages/run_inference.h"

#include <algorithm>
#include <map>
#include <optional>

#include "dfw/common/strings.h"
#include "dfw/inference/mlp_handler.h"
#include "dfw/inference/model_handler.h"
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

// The handler each RunInference transform's load-time check made, by the transform's position in
// the file (names are made unique only after the checks): the plan reads its estimates from it, so
// each model's files are opened once (the header read of the check).
using CheckedHandlers = std::map<std::pair<int, int>, std::unique_ptr<ModelHandler>>;

// The loader has already checked the RunInference config (types, model files, config vs header);
// this reads the stage's typed options for what the plan needs.
Result<ModelRequirement> ModelOf(const StageConfig& cfg, const std::string& yaml, ModelChecks checks,
                                 CheckedHandlers& checked, ModelSource& source) {
  ASSIGN_OR_RETURN(RunInferenceConfig ri, DescribeRunInference(cfg));
  ModelRequirement m;
  m.name = cfg.name;
  auto files = ResolveModelFiles(ri.handler.model_path);
  if (!files.ok()) return cfg.ConfigError(files.status().message());
  std::unique_ptr<ModelHandler> handler;
  if (auto it = checked.find({cfg.line, cfg.column}); it != checked.end() && it->second != nullptr) {
    handler = std::move(it->second);
  } else {
    ASSIGN_OR_RETURN(handler, CheckRunInferenceHandler(cfg, checks));
  }
  const std::optional<WorkspaceEstimate> ws = handler->EstimateWorkspace();
  if (ws && ws->weight_bytes) {
    // The handler knows the weights as its device holds them (or there is no file yet).
    m.bytes = *ws->weight_bytes;
    m.bytes_how = ws->weight_how;
    m.weights_absent = ws->weights_absent;
  } else if (const std::optional<uint64_t> read = handler->header_loaded_bytes()) {
    m.bytes = *read;  // the header the check read
  } else {
    auto bytes = ModelBytesFromHeader(files->weights_path);
    if (!bytes.ok()) return cfg.ConfigError(bytes.status().message());
    m.bytes = *bytes;
  }
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
  if (ws) {
    m.workspace = WorkspaceSize(ws->bytes, ws->how);
    if (const std::optional<KvCacheEstimate>& kv = ws->kv_cache) {
      m.kv_cache = KvCacheRequirement{kv->bytes_per_token, kv->bytes_per_token_how, kv->context_tokens, kv->context_how,
                                      kv->block_tokens, kv->max_sequences, kv->cache_bytes, kv->cache_bytes_given,
                                      kv->activation_bytes, kv->activation_how};
    }
  }
  if (std::optional<WorkEstimate> work = handler->EstimateWork()) {
    m.work = ModelWork{work->flops_per_record, work->activation_bytes_per_record, std::max<int64_t>(1, work->batch_size),
                       work->dtype, work->default_efficiency, work->how, work->weight_reads_per_record};
  }
  return m;
}

// The built-in stages as LoadPipelineModels checks them: RunInference's check is the stage's own
// (CheckRunInferenceHandler, kFull or kConfigOnly) and keeps the handler it made in `checked`.
StageRegistry RegistryFor(ModelChecks checks, CheckedHandlers& checked) {
  StageRegistry full;
  RegisterBuiltinStages(full);
  StageRegistry out;
  for (const std::string& type : full.Types()) {
    StageTypeInfo info = *full.Find(type);
    if (type == "RunInference") {
      info.check = [checks, &checked](const StageConfig& cfg) -> Status {
        ASSIGN_OR_RETURN(std::unique_ptr<ModelHandler> handler, CheckRunInferenceHandler(cfg, checks));
        checked[{cfg.line, cfg.column}] = std::move(handler);
        return Status::OK();
      };
    }
    (void)out.Register(std::move(info));  // the names come from one registry: no duplicates
  }
  return out;
}

}  // namespace

PipelineModels LoadPipelineModels(const std::string& path, const std::string& yaml, ModelChecks checks) {
  PipelineModels out;
  CheckedHandlers checked;
  const StageRegistry registry = RegistryFor(checks, checked);
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
        return ModelOf(t.config, yaml, checks, checked, source);
      } catch (const std::exception& e) {
        return t.config.ConfigError(e.what());
      }
    }();
    if (model.ok()) {
      if (model->weights_absent) {
        Diagnostic d = Error("model-weights-absent",
                             t.config.file + ":" + std::to_string(t.config.line) + ":" + std::to_string(t.config.column) +
                                 ": transform '" + t.config.name + "' (RunInference): model_path '" + source.weights_path +
                                 "' is absent; the model is planned from config.json alone",
                             "the plan needs config.json only; `dfworker run` needs the weights (model.safetensors)");
        d.severity = Severity::kWarning;
        out.diagnostics.push_back(std::move(d));
      }
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
