// Beam YAML's HuggingFacePipelineModelHandler config → ModelHandlerOptions + compiled callables.
#include "hf_pipeline_config.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "dfw/common/strings.h"
#include "dfw/inference/hf_model_dir.h"
#include "dfw/stages/config.h"
#include "expression_config.h"

namespace dfw::stages_internal {
namespace {

const std::vector<std::string>& AllowedKeys() {
  static const std::vector<std::string> keys = {
      "task", "model", "preprocess", "postprocess", "device", "inference_fn", "load_pipeline_args", "min_batch_size",
      "max_batch_size", "max_batch_duration_secs", "max_batch_weight", "large_model", "model_copies", "model_id", "blas_threads"};
  return keys;
}

// Beam/transformers device spellings → dfworker's CPU | GPU.
Result<std::string> DeviceOf(const Value& v) {
  if (v.is_int()) return std::string(v.as_int() < 0 ? "CPU" : "GPU");  // pipeline(device=-1 | 0 | 1 …)
  if (!v.is_string()) return InvalidArgument("expected CPU, GPU, cuda, cuda:N, cpu or a device index");
  std::string s = v.as_string();
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (s == "cpu") return std::string("CPU");
  if (s == "gpu" || s == "cuda" || s.rfind("cuda:", 0) == 0) return std::string("GPU");
  return InvalidArgument("'" + v.as_string() + "' is not a device; allowed: CPU, GPU, cuda, cuda:N, cpu, -1, 0, 1 …");
}

}  // namespace

Result<std::shared_ptr<HfPipelineStageConfig>> ParseHfPipelineConfig(const StageConfig& c, const ConfigNode& hc,
                                                                     ModelHandlerOptions& h) {
  auto err = [&](const ConfigNode& at, const std::string& msg) {
    return c.ConfigError(NodeLocation(c, at) + ": model_handler HuggingFacePipelineModelHandler: " + msg);
  };
  if (!hc.IsMap()) return ConfigKeyError(c, "model_handler", "'config' must be a mapping");
  for (const ConfigEntry& kv : hc.entries()) {
    const std::string key = kv.key.Scalar();
    if (std::find(AllowedKeys().begin(), AllowedKeys().end(), key) == AllowedKeys().end()) {
      return err(kv.key, "unknown config key '" + key + "'" + DidYouMeanSuffix(key, AllowedKeys()) +
                             "; allowed: " + Join(AllowedKeys()));
    }
  }
  if (hc["inference_fn"].IsDefined()) {
    return Unimplemented(NodeLocation(c, hc["inference_fn"]) + ": transform '" + c.name +
                         "' (RunInference): model_handler HuggingFacePipelineModelHandler: 'inference_fn' is a Python "
                         "function, which dfworker cannot run; leave it out (the pipeline is called with inference_args)");
  }
  const Value task = hc["task"].IsDefined() ? ConfigToValue(hc["task"]) : Value();
  const Value model = hc["model"].IsDefined() ? ConfigToValue(hc["model"]) : Value();
  if (!task.is_null() && !task.is_string()) return err(hc["task"], "'task' must be a string");
  if (model.is_null()) {
    return err(task.is_null() ? hc : hc["task"],
               task.is_null() ? std::string("'task' or 'model' is required, and dfworker needs 'model'")
                              : "task '" + task.as_string() + "' without 'model': Beam would download the task's default " +
                                    "hub model; dfworker downloads nothing, so 'model' must name a local model directory " +
                                    "(config.json, model.safetensors, tokenizer.json) or a hub id already in the local " +
                                    "Hugging Face cache");
  }
  if (!model.is_string()) return err(hc["model"], "'model' must be a string (a directory or a hub id)");
  // The directory (a hub id resolved in the local cache) for the handler and the plan; the
  // PredictionResult's model_id stays what the user wrote. An unresolvable one is kept as given:
  // the handler refuses it naming where it looked.
  h.model_id = model.as_string();
  // A relative directory is the job's (StageConfig::base_dir); a name that is no directory there
  // stays as written: a hub id.
  std::string local = ResolveConfigPath(c, model.as_string());
  std::error_code ec;
  if (local != model.as_string() && !std::filesystem::is_directory(local, ec)) local = model.as_string();
  auto dir = ResolveHfModelDir(local, HfCacheEnvFromProcess());
  h.model_path = dir.ok() ? *dir : model.as_string();
  if (!task.is_null()) h.extra.Append("task", task);
  if (hc["device"].IsDefined()) {
    auto d = DeviceOf(ConfigToValue(hc["device"]));
    if (!d.ok()) return err(hc["device"], "'device': " + d.status().message());
    h.device = *d;
  }
  // load_pipeline_args, then the transform's inference_args over them: transformers routes both
  // to the same parameters.
  Row args;
  for (const ConfigNode* node : {&hc["load_pipeline_args"], &c.config["inference_args"]}) {
    if (!node->IsDefined()) continue;
    const Value v = ConfigToValue(*node);
    if (!v.is_row()) return err(*node, "'load_pipeline_args' and 'inference_args' must be mappings");
    for (const Field& f : v.as_row().fields()) args.Set(f.name, f.value);
  }
  h.extra.Append("pipeline_args", Value::FromRow(std::move(args)));
  auto out = std::make_shared<HfPipelineStageConfig>();
  if (!hc["preprocess"].IsDefined()) {
    return err(hc, "'preprocess' is required (Beam's handler has no default): e.g. preprocess: {callable: 'lambda row: row.text'}");
  }
  ASSIGN_OR_RETURN(ConfiguredExpression pre, CompileConfigExpression(c, hc["preprocess"], "preprocess", ExprLanguage::kPython));
  out->preprocess = std::move(pre.expr);
  auto shown = [](const ConfigNode& n, const CompiledExpression& e) {
    return n.IsMap() && n["callable"].IsScalar() ? n["callable"].Scalar() : e.source();
  };
  out->preprocess_shown = shown(hc["preprocess"], *out->preprocess);
  if (hc["postprocess"].IsDefined()) {
    ASSIGN_OR_RETURN(ConfiguredExpression post, CompileConfigExpression(c, hc["postprocess"], "postprocess", ExprLanguage::kPython));
    out->postprocess = std::move(post.expr);
    out->postprocess_shown = shown(hc["postprocess"], *out->postprocess);
  }
  h.input_field = "preprocess";  // the example is the preprocess result, not a field
  return out;
}

}  // namespace dfw::stages_internal
