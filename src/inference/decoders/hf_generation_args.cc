#include "inference/decoders/hf_generation_args.h"


#include <climits>

#include "dfw/common/file.h"
#include "dfw/common/json_text.h"
#include "dfw/tokenizers/tokenizer.h"

namespace dfw::hf_generation {
namespace {

using nlohmann::json;


// transformers' TextGenerationPipeline._default_generation_config (transformers 5.x,
// pipelines/text_generation.py): applied for keys neither the call nor generation_config.json set.
constexpr int kPipelineMaxNewTokens = 256;
constexpr bool kPipelineDoSample = true;
constexpr double kPipelineTemperature = 0.7;


const std::vector<std::string> kGenerationKeys = {
    "max_new_tokens", "max_length", "min_new_tokens", "do_sample", "temperature", "top_k", "top_p", "min_p",
    "repetition_penalty", "eos_token_id", "pad_token_id", "bos_token_id", "num_return_sequences"};
const std::vector<std::string> kPipelineKeys = {"return_full_text", "return_text", "return_tensors", "stop_sequence",
                                                "stop_strings", "clean_up_tokenization_spaces", "skip_special_tokens",
                                                "continue_final_message", "add_special_tokens", "prefix", "dtype",
                                                "torch_dtype", "device_map", "trust_remote_code"};
const std::vector<std::string> kEngineKeys = {"seed", "max_num_seqs", "max_num_batched_tokens", "kv_cache_memory_bytes"};

std::string Joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

Result<int64_t> IntArg(const Value& v, const std::string& name, int64_t lo, int64_t hi) {
  if (!v.is_int() || v.as_int() < lo || v.as_int() > hi) {
    return InvalidArgument("text-generation: '" + name + "' must be an integer in [" + std::to_string(lo) + ", " +
                           std::to_string(hi) + "], got " + v.ToJson());
  }
  return v.as_int();
}
Result<double> NumberArg(const Value& v, const std::string& name) {
  if (!v.is_number()) return InvalidArgument("text-generation: '" + name + "' must be a number, got " + v.ToJson());
  return v.is_int() ? static_cast<double>(v.as_int()) : v.as_float();
}
Result<bool> BoolArg(const Value& v, const std::string& name) {
  if (!v.is_bool()) return InvalidArgument("text-generation: '" + name + "' must be true or false, got " + v.ToJson());
  return v.as_bool();
}
Result<std::vector<int32_t>> IdsArg(const Value& v, const std::string& name, int vocab) {
  std::vector<int32_t> ids;
  auto one = [&](const Value& x) -> Status {
    if (!x.is_int() || x.as_int() < 0 || x.as_int() >= vocab) {
      return InvalidArgument("text-generation: '" + name + "' must be a token id (0.." + std::to_string(vocab - 1) +
                             ") or a list of them, got " + v.ToJson());
    }
    ids.push_back(static_cast<int32_t>(x.as_int()));
    return Status::OK();
  };
  if (v.is_list()) {
    for (const Value& x : v.as_list()) RETURN_IF_ERROR(one(x));
  } else {
    RETURN_IF_ERROR(one(v));
  }
  return ids;
}

}  // namespace

Result<std::string> ReadOptionalFile(const std::string& path, const FileKind& kind) {
  ASSIGN_OR_RETURN(std::optional<std::string> text, ReadFileIfPresent(path, kind));
  return text ? std::move(*text) : std::string();
}

const std::vector<std::string>& GenerationKeys() { return kGenerationKeys; }
const std::vector<std::string>& PipelineKeys() { return kPipelineKeys; }
const std::vector<std::string>& EngineKeys() { return kEngineKeys; }
const std::vector<std::string>& AllArgumentNames() {
  static const std::vector<std::string> all = [] {
    std::vector<std::string> v = kGenerationKeys;
    v.insert(v.end(), kPipelineKeys.begin(), kPipelineKeys.end());
    v.insert(v.end(), kEngineKeys.begin(), kEngineKeys.end());
    return v;
  }();
  return all;
}

// generation_config.json as a Row of the keys this task reads (others are ignored, as a model's
// generation config often carries keys for other decoding modes).
Result<Row> ReadGenerationConfig(const std::string& path) {
  Row r;
  ASSIGN_OR_RETURN(const std::string text, ReadOptionalFile(path, kGenerationConfigFile));
  if (text.empty()) return r;
  const json j = json::parse(text, nullptr, false);
  if (!j.is_object()) return InvalidArgument("'" + path + "' is not a JSON object");
  RETURN_IF_ERROR(CheckJsonDepth(j, path));
  for (const std::string& k : kGenerationKeys) {
    auto it = j.find(k);
    if (it == j.end() || it->is_null()) continue;
    Value v;
    if (it->is_boolean()) {
      v = Value::Bool(it->get<bool>());
    } else if (it->is_number_integer()) {
      ASSIGN_OR_RETURN(int64_t n, JsonIntIn(*it, INT64_MIN, INT64_MAX, "'" + path + "': \"" + k + "\""));
      v = Value::Int(n);
    } else if (it->is_number()) {
      v = Value::Float(it->get<double>());
    } else if (it->is_array()) {
      List l;
      for (const json& x : *it) {
        if (!x.is_number_integer()) return InvalidArgument("'" + path + "': \"" + k + "\" must be a list of ids");
        ASSIGN_OR_RETURN(int64_t n, JsonIntIn(x, INT64_MIN, INT64_MAX, "'" + path + "': an id of \"" + k + "\""));
        l.push_back(Value::Int(n));
      }
      v = Value::FromList(std::move(l));
    } else {
      return InvalidArgument("'" + path + "': unexpected \"" + k + "\" " + it->dump());
    }
    r.Append(k, std::move(v));
  }
  return r;
}

// A special token's text from tokenizer_config.json (a string, or {content: …}).
std::string SpecialToken(const json& tc, const char* key) {
  if (!tc.is_object()) return "";
  auto it = tc.find(key);
  if (it == tc.end()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content") && (*it)["content"].is_string()) return (*it)["content"].get<std::string>();
  return "";
}

Status ApplyArguments(const Row& gen_config, const Row& args, TextGenSettings& s) {
  // What the call and the model's generation config set (the call wins), then the pipeline's
  // defaults for what neither set, then GenerationConfig's global defaults.
  Row set = gen_config;
  for (const Field& f : args.fields()) {
    if (Value* v = set.FindMutable(f.name); v != nullptr) {
      *v = f.value;
    } else {
      set.Append(f.name, f.value);
    }
  }
  const int vocab = s.config.vocab_size;
  GenerationParams& p = s.params;
  p.eos_token_ids = s.config.eos_token_ids;
  p.do_sample = kPipelineDoSample;
  if (const Value* v = set.Find("do_sample"); v != nullptr) {
    ASSIGN_OR_RETURN(p.do_sample, BoolArg(*v, "do_sample"));
  }
  p.temperature = 1.0;
  if (p.do_sample && set.Find("temperature") == nullptr) p.temperature = kPipelineTemperature;
  p.top_k = 50;
  p.top_p = 1.0;
  if (const Value* v = set.Find("max_length")) {
    ASSIGN_OR_RETURN(int64_t n, IntArg(*v, "max_length", 1, 1 << 24));
    s.max_length = static_cast<int>(n);
  }
  if (const Value* v = set.Find("max_new_tokens")) {
    ASSIGN_OR_RETURN(int64_t n, IntArg(*v, "max_new_tokens", 0, 1 << 24));
    p.max_new_tokens = static_cast<int>(n);
    s.max_new_tokens_set = true;
  } else if (set.Find("max_length") == nullptr) {
    p.max_new_tokens = kPipelineMaxNewTokens;
    s.max_new_tokens_set = true;
  }
  for (const Field& f : set.fields()) {
    const std::string& k = f.name;
    const Value& v = f.value;
    if (k == "min_new_tokens") {
      ASSIGN_OR_RETURN(int64_t n, IntArg(v, k, 0, 1 << 24));
      p.min_new_tokens = static_cast<int>(n);
    } else if (k == "temperature") {
      ASSIGN_OR_RETURN(p.temperature, NumberArg(v, k));
      if (p.do_sample && !(p.temperature > 0)) {
        return InvalidArgument("text-generation: 'temperature' (=" + v.ToJson() + ") must be strictly positive when sampling");
      }
    } else if (k == "top_k") {
      ASSIGN_OR_RETURN(int64_t n, IntArg(v, k, 0, 1 << 30));
      p.top_k = static_cast<int>(n);
    } else if (k == "top_p") {
      ASSIGN_OR_RETURN(p.top_p, NumberArg(v, k));
      if (!(p.top_p > 0 && p.top_p <= 1)) return InvalidArgument("text-generation: 'top_p' must be in (0, 1], got " + v.ToJson());
    } else if (k == "min_p") {
      ASSIGN_OR_RETURN(p.min_p, NumberArg(v, k));
      if (!(p.min_p >= 0 && p.min_p <= 1)) return InvalidArgument("text-generation: 'min_p' must be in [0, 1], got " + v.ToJson());
    } else if (k == "repetition_penalty") {
      ASSIGN_OR_RETURN(p.repetition_penalty, NumberArg(v, k));
      if (!(p.repetition_penalty > 0)) {
        return InvalidArgument("text-generation: 'repetition_penalty' must be a strictly positive number, got " + v.ToJson());
      }
    } else if (k == "eos_token_id") {
      ASSIGN_OR_RETURN(p.eos_token_ids, IdsArg(v, k, vocab));
    } else if (k == "pad_token_id" || k == "bos_token_id") {
      ASSIGN_OR_RETURN(std::vector<int32_t> ignored, IdsArg(v, k, vocab));  // checked; no effect without padding
      (void)ignored;
    } else if (k == "num_return_sequences") {
      ASSIGN_OR_RETURN(int64_t n, IntArg(v, k, 1, 1024));
      p.num_return_sequences = static_cast<int>(n);
    } else if (k == "return_full_text" || k == "return_text") {
      ASSIGN_OR_RETURN(bool b, BoolArg(v, k));
      if (k == "return_full_text") s.return_full_text = b;
    } else if (k == "return_tensors") {
      ASSIGN_OR_RETURN(s.return_tensors, BoolArg(v, k));
    } else if (k == "stop_strings") {
      return InvalidArgument("text-generation: 'stop_strings' is refused by transformers' pipeline (it does not pass the "
                             "tokenizer to generate()); use 'stop_sequence', which the pipeline turns into stop strings");
    } else if (k == "stop_sequence") {
      if (v.is_string()) {
        s.stop.push_back(v.as_string());
      } else if (v.is_list()) {
        for (const Value& x : v.as_list()) {
          if (!x.is_string() || x.as_string().empty()) return InvalidArgument("text-generation: '" + k + "' must be strings, got " + v.ToJson());
          s.stop.push_back(x.as_string());
        }
      } else {
        return InvalidArgument("text-generation: '" + k + "' must be a string or a list of strings, got " + v.ToJson());
      }
      if (!s.stop.empty() && s.stop.back().empty()) return InvalidArgument("text-generation: '" + k + "' must not be empty");
    } else if (k == "clean_up_tokenization_spaces") {
      ASSIGN_OR_RETURN(bool b, BoolArg(v, k));
      const_cast<HfTokenizer&>(*s.tokenizer).set_clean_up_tokenization_spaces(b);
    } else if (k == "skip_special_tokens") {
      ASSIGN_OR_RETURN(s.skip_special_tokens, BoolArg(v, k));
    } else if (k == "continue_final_message") {
      ASSIGN_OR_RETURN(bool b, BoolArg(v, k));
      s.continue_final_message = b;
    } else if (k == "add_special_tokens") {
      ASSIGN_OR_RETURN(bool b, BoolArg(v, k));
      s.add_special_tokens = b;
    } else if (k == "prefix") {
      if (!v.is_string()) return InvalidArgument("text-generation: 'prefix' must be a string, got " + v.ToJson());
      s.prefix = v.as_string();
    } else if (k == "dtype" || k == "torch_dtype") {
      if (!v.is_string()) return InvalidArgument("text-generation: '" + k + "' must be a string, got " + v.ToJson());
      const std::string d = v.as_string().starts_with("torch.") ? v.as_string().substr(6) : v.as_string();
      if (d == "float32" || d == "auto") {
        s.dtype = LinearDType::kFloat32;
      } else if (d == "bfloat16") {
        s.dtype = LinearDType::kBFloat16;
      } else {
        return InvalidArgument("text-generation: '" + k + "' '" + v.as_string() + "' is not supported; supported: float32, auto (float32), bfloat16");
      }
    } else if (k == "device_map" || k == "trust_remote_code") {
      // Loading options with no meaning for one local directory on one device.
    } else if (k == "seed") {
      ASSIGN_OR_RETURN(int64_t n, IntArg(v, k, 0, INT64_MAX));
      p.seed = static_cast<uint64_t>(n);
      s.seed_given = true;
    } else if (k == "max_num_seqs") {
      ASSIGN_OR_RETURN(int64_t n, IntArg(v, k, 1, 4096));
      s.engine.max_sequences = static_cast<int>(n);
    } else if (k == "max_num_batched_tokens") {
      ASSIGN_OR_RETURN(int64_t n, IntArg(v, k, 1, 1 << 20));
      s.engine.max_step_tokens = static_cast<int>(n);
    } else if (k == "kv_cache_memory_bytes") {
      ASSIGN_OR_RETURN(int64_t n, IntArg(v, k, 1, int64_t{1} << 46));
      s.engine.kv_cache_bytes = static_cast<uint64_t>(n);
    } else if (k != "do_sample" && k != "max_length" && k != "max_new_tokens") {
      return InvalidArgument("text-generation: unknown argument '" + k + "'; supported: " + Joined(AllArgumentNames()));
    }
  }
  if (!p.do_sample && p.num_return_sequences > 1) {
    return InvalidArgument("text-generation: greedy decoding (do_sample false) does not support num_return_sequences " +
                           std::to_string(p.num_return_sequences) + " (transformers refuses it too; set do_sample: true)");
  }
  if (p.min_new_tokens > 0 && p.eos_token_ids.empty()) p.min_new_tokens = 0;  // nothing to mask
  return Status::OK();
}


}  // namespace dfw::hf_generation
