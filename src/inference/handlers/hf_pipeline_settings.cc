// HuggingFacePipelineModelHandler's load-time reading: task, model directory, config.json labels,
// tokenizer, head, arguments; everything a refusal can be about is checked here.
#include <algorithm>
#include <climits>

#include <nlohmann/json.hpp>

#include "dfw/common/file.h"
#include "dfw/common/json_text.h"
#include "dfw/inference/hf_model_dir.h"
#include "dfw/inference/hf_pipeline_handler.h"
#include "inference/handlers/hf_pipeline_settings.h"

namespace dfw {
namespace {

// The file's JSON value (null when the file is absent; discarded when it is not JSON, as a
// malformed optional file was always ignored). A FIFO, device, folder or oversized file is an error.
Result<nlohmann::json> ReadJsonIfPresent(const std::string& path, const FileKind& kind) {
  ASSIGN_OR_RETURN(std::optional<std::string> text, ReadFileIfPresent(path, kind));
  if (!text) return nlohmann::json();
  nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
  RETURN_IF_ERROR(CheckJsonDepth(j, path));
  return j;
}

// transformers' task aliases.
std::string CanonicalTask(const std::string& t) {
  if (t == "sentiment-analysis") return "text-classification";
  if (t == "ner") return "token-classification";
  return t;
}

HeadKind HeadFor(const std::string& task) {
  if (task == "text-classification" || task == "zero-shot-classification") return HeadKind::kSequenceClassification;
  if (task == "token-classification") return HeadKind::kTokenClassification;
  if (task == "fill-mask") return HeadKind::kMaskedLm;
  return HeadKind::kNone;
}

Result<HfLabels> ReadLabels(const nlohmann::json& j, const std::string& origin) {
  HfLabels l;
  l.problem_type = j.value("problem_type", nlohmann::json()).is_string() ? j["problem_type"].get<std::string>() : "";
  auto id2 = j.find("id2label");
  int n = 2;  // PretrainedConfig's default num_labels
  if (j.contains("num_labels") && j["num_labels"].is_number_integer()) {
    ASSIGN_OR_RETURN(int64_t v, JsonIntIn(j["num_labels"], 1, 1 << 20, "'" + origin + "': \"num_labels\""));
    n = static_cast<int>(v);
  }
  if (id2 != j.end() && id2->is_object() && !id2->empty()) {
    n = static_cast<int>(id2->size());
    l.id2label.resize(static_cast<std::size_t>(n));
    for (const auto& [k, v] : id2->items()) {
      char* end = nullptr;
      const long i = std::strtol(k.c_str(), &end, 10);
      if (end == k.c_str() || *end != '\0' || i < 0 || i >= n || !v.is_string()) {
        return InvalidArgument("'" + origin + "': id2label must map 0.." + std::to_string(n - 1) + " to names, got " + id2->dump());
      }
      l.id2label[static_cast<std::size_t>(i)] = v.get<std::string>();
    }
  } else {
    for (int i = 0; i < n; ++i) l.id2label.push_back("LABEL_" + std::to_string(i));
  }
  auto l2i = j.find("label2id");
  if (l2i != j.end() && l2i->is_object() && !l2i->empty()) {
    for (const auto& [k, v] : l2i->items()) {
      if (v.is_number_integer()) {
        ASSIGN_OR_RETURN(int64_t id, JsonIntIn(v, 0, INT32_MAX, "'" + origin + "': label2id of '" + k + "'"));
        l.label2id.emplace_back(k, static_cast<int>(id));
      }
    }
  } else {
    for (int i = 0; i < n; ++i) l.label2id.emplace_back(l.id2label[static_cast<std::size_t>(i)], i);
  }
  return l;
}

}  // namespace

const std::vector<std::string>& HfPipelineTasks() {
  static const std::vector<std::string> tasks = {"text-classification", "sentiment-analysis", "token-classification", "ner",
                                                 "fill-mask", "feature-extraction", "zero-shot-classification",
                                                 "text-generation"};
  return tasks;
}

Result<HfPipelineSettings> ReadHfPipelineSettings(const ModelHandlerOptions& o) {
  HfPipelineSettings s;
  const Value* task = o.extra.Find("task");
  const Value* args = o.extra.Find("pipeline_args");
  std::string all;
  for (const auto& t : HfPipelineTasks()) all += (all.empty() ? "" : ", ") + t;
  if (task != nullptr && !task->is_string()) return InvalidArgument("'task' must be a string; supported: " + all);
  if (task != nullptr &&
      std::find(HfPipelineTasks().begin(), HfPipelineTasks().end(), task->as_string()) == HfPipelineTasks().end()) {
    return InvalidArgument("task '" + task->as_string() + "' is not supported; supported: " + all);
  }
  ASSIGN_OR_RETURN(s.dir, ResolveHfModelDir(o.model_path, HfCacheEnvFromProcess()));
  const std::string cfg_path = s.dir + "/config.json";
  ASSIGN_OR_RETURN(s.config, BertConfig::Load(cfg_path));
  ASSIGN_OR_RETURN(s.head, HeadKindOf(s.config.architecture));
  // No task: the one the model's head implies, as transformers infers it from the hub metadata.
  s.task = task != nullptr ? CanonicalTask(task->as_string())
           : s.head == HeadKind::kSequenceClassification ? "text-classification"
           : s.head == HeadKind::kTokenClassification    ? "token-classification"
           : s.head == HeadKind::kMaskedLm               ? "fill-mask"
                                                         : "feature-extraction";
  const HeadKind need = HeadFor(s.task);
  if (need != HeadKind::kNone && s.head != need) {
    return InvalidArgument("task '" + s.task + "' needs a *" + HeadKindName(need) + " model; '" + s.dir + "' is " +
                           (s.config.architecture.empty() ? "a bare encoder" : "\"" + s.config.architecture + "\""));
  }
  ASSIGN_OR_RETURN(const nlohmann::json cfg, ReadJsonIfPresent(cfg_path, kModelConfigFile));
  try {
    ASSIGN_OR_RETURN(s.labels, ReadLabels(cfg, cfg_path));
  } catch (const nlohmann::json::exception& e) {
    return InvalidArgument("'" + cfg_path + "': unexpected JSON value (" + std::string(e.what()) + ")");
  }
  // The model's precision is a pipeline() argument, not a task argument: taken out before those.
  Row task_args = args != nullptr && args->is_row() ? args->as_row() : Row();
  Row rest;
  for (const Field& f : task_args.fields()) {
    if (f.name != "torch_dtype" && f.name != "dtype") {
      rest.Append(f.name, f.value);
      continue;
    }
    if (!s.dtype_how.empty()) return InvalidArgument("give one of 'torch_dtype' and 'dtype' (transformers' old and new names), not both");
    const std::string v = f.value.is_string() ? f.value.as_string() : f.value.ToJson();
    std::string name = v.rfind("torch.", 0) == 0 ? v.substr(6) : v;
    if (name == "auto") {
      const auto it = cfg.is_object() ? cfg.find("torch_dtype") : cfg.end();
      name = it != cfg.end() && it->is_string() && it->get<std::string>() == "bfloat16" ? "bfloat16" : "float32";
    }
    if (name == "float32" || name == "float") {
      s.linear_dtype = LinearDType::kFloat32;
    } else if (name == "bfloat16") {
      s.linear_dtype = LinearDType::kBFloat16;
    } else if (name == "float16" || name == "half") {
      return Unimplemented("'" + f.name + "': " + v + " is not run here (the CPU backend has no float16 path); "
                           "bfloat16 (the same width, float32's range) is, where the CPU has AVX512-BF16 or AMX");
    } else {
      return InvalidArgument("'" + f.name + "': " + v + " is not a dtype dfworker runs; allowed: float32, bfloat16, auto");
    }
    s.dtype_how = f.name + ": " + v;
  }
  ASSIGN_OR_RETURN(s.args, ParseHfTaskArgs(s.task, rest));
  const std::string tok_path = s.dir + "/tokenizer.json";
  auto tok = HfTokenizer::Load(tok_path);
  if (!tok.ok()) {
    if (tok.status().code() == StatusCode::kNotFound) {
      return InvalidArgument("'" + s.dir + "' has no tokenizer.json (dfworker builds the tokenizer from it; save the "
                             "tokenizer with a transformers fast tokenizer's save_pretrained)");
    }
    return tok.status();
  }
  std::unique_ptr<HfTokenizer> t = std::move(tok).value();
  ASSIGN_OR_RETURN(const nlohmann::json tc, ReadJsonIfPresent(s.dir + "/tokenizer_config.json", kTokenizerConfigFile));
  if (tc.is_object() && tc.contains("clean_up_tokenization_spaces") && tc["clean_up_tokenization_spaces"].is_boolean()) {
    t->set_clean_up_tokenization_spaces(tc["clean_up_tokenization_spaces"].get<bool>());
  }
  auto special = [&](const char* key, const char* fallback) -> int32_t {
    std::string name = fallback;
    if (tc.is_object() && tc.contains(key) && tc[key].is_string()) name = tc[key].get<std::string>();
    return t->TokenToId(name).value_or(-1);
  };
  const bool wordpiece = t->model_type() == "WordPiece";
  s.mask_id = special("mask_token", wordpiece ? "[MASK]" : "<mask>");
  s.pad_id = special("pad_token", wordpiece ? "[PAD]" : "<pad>");
  if (s.task == "fill-mask" && s.mask_id < 0) return InvalidArgument("'" + tok_path + "' has no mask token");
  for (const std::string& target : s.args.targets) {
    std::optional<int32_t> id = t->TokenToId(target);
    if (!id) {  // transformers: the first token of the target's own tokenization
      TokenEncoding e;
      RETURN_IF_ERROR(t->Encode(target, std::nullopt, 0, e));
      for (std::size_t i = 0; i < e.size() && !id; ++i) {
        if (e.sequence[i] >= 0) id = e.ids[i];
      }
    }
    if (id && std::find(s.target_ids.begin(), s.target_ids.end(), *id) == s.target_ids.end()) s.target_ids.push_back(*id);
  }
  if (!s.args.targets.empty() && s.target_ids.empty()) return InvalidArgument("fill-mask: no target has a token in the vocabulary");
  std::sort(s.target_ids.begin(), s.target_ids.end());
  s.tokenizer = std::move(t);
  s.max_tokens = s.config.max_position_embeddings - s.config.position_offset;
  return s;
}

}  // namespace dfw
