// config.json of a decoder-only model → DecoderConfig, with transformers' per-family defaults and
// refusals that name what is supported. Reads both spellings of RoPE settings: transformers 5's
// `rope_parameters` {rope_type, rope_theta, …} and transformers 4's `rope_theta` + `rope_scaling`.
#include "dfw/inference/decoder_config.h"

#include <climits>
#include <cmath>

#include <nlohmann/json.hpp>

#include "dfw/common/file.h"
#include "dfw/common/json_text.h"
#include "inference/encoders/encoder_families.h"

namespace dfw {
namespace {

using nlohmann::json;

struct FamilyName {
  DecoderFamily family;
  const char* model_type;
  const char* architecture;
};
constexpr FamilyName kFamilies[] = {
    {DecoderFamily::kLlama, "llama", "LlamaForCausalLM"},       {DecoderFamily::kQwen2, "qwen2", "Qwen2ForCausalLM"},
    {DecoderFamily::kMistral, "mistral", "MistralForCausalLM"}, {DecoderFamily::kGemma, "gemma", "GemmaForCausalLM"},
    {DecoderFamily::kGemma2, "gemma2", "Gemma2ForCausalLM"},    {DecoderFamily::kGpt2, "gpt2", "GPT2LMHeadModel"},
};

std::string SupportedList() {
  std::string s;
  for (const auto& f : kFamilies) s += (s.empty() ? "" : ", ") + std::string(f.architecture) + " (" + f.model_type + ")";
  return s;
}

// A JSON value that is absent or null reads as "not given".
const json* Given(const json& j, const char* key) {
  auto it = j.find(key);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

Status ReadOptionalInt(const json& j, const char* key, const std::string& origin, int& out) {
  if (Given(j, key) == nullptr) return Status::OK();
  return ReadPositiveConfigInt(j, key, origin, out);
}

Status ReadNumber(const json& j, const char* key, const std::string& origin, double lo, double hi, double& out) {
  const json* v = Given(j, key);
  if (v == nullptr) return Status::OK();
  if (!v->is_number() || !(v->get<double>() > lo) || v->get<double>() > hi) {
    return InvalidArgument("'" + origin + "': \"" + key + "\" must be a number in (" + std::to_string(lo) + ", " +
                           std::to_string(hi) + "], got " + v->dump());
  }
  out = v->get<double>();
  return Status::OK();
}

// A norm's epsilon as the float32 the kernels add: one below float32's range would be 0, and a
// constant row would then divide by zero.
Status NormEpsilon(double eps, const char* key, const std::string& origin, float& out) {
  out = static_cast<float>(eps);
  if (!(out > 0.f)) return InvalidArgument("'" + origin + "': \"" + key + "\" is too small for float32 (it would be 0), got " + std::to_string(eps));
  return Status::OK();
}

Status ReadBool(const json& j, const char* key, const std::string& origin, bool& out) {
  const json* v = Given(j, key);
  if (v == nullptr) return Status::OK();
  if (!v->is_boolean()) return InvalidArgument("'" + origin + "': \"" + key + "\" must be true or false, got " + v->dump());
  out = v->get<bool>();
  return Status::OK();
}

Result<DecoderActivation> ParseActivation(const std::string& name, const char* key, const std::string& origin) {
  if (name == "silu" || name == "swish") return DecoderActivation::kSilu;
  if (name == "gelu_pytorch_tanh" || name == "gelu_new" || name == "gelu_fast") return DecoderActivation::kGeluTanh;
  if (name == "gelu") return DecoderActivation::kGelu;
  return InvalidArgument("'" + origin + "': unsupported \"" + key + "\" '" + name +
                         "'; supported: silu, gelu_pytorch_tanh, gelu_new, gelu_fast, gelu");
}

Status ReadActivation(const json& j, const char* key, const std::string& origin, DecoderConfig& c) {
  const json* v = Given(j, key);
  if (v == nullptr) return Status::OK();
  if (!v->is_string()) return InvalidArgument("'" + origin + "': \"" + key + "\" must be a string, got " + v->dump());
  ASSIGN_OR_RETURN(c.act, ParseActivation(v->get<std::string>(), key, origin));
  return Status::OK();
}

// rope_parameters (transformers 5) or rope_theta + rope_scaling (transformers 4).
Status ReadRope(const json& j, const std::string& origin, DecoderConfig& c) {
  RETURN_IF_ERROR(ReadNumber(j, "rope_theta", origin, 0, 1e12, c.rope_theta));
  const json* params = Given(j, "rope_parameters");
  const json* scaling = params != nullptr ? params : Given(j, "rope_scaling");
  if (scaling == nullptr) return Status::OK();
  const char* key = params != nullptr ? "rope_parameters" : "rope_scaling";
  if (!scaling->is_object()) return InvalidArgument("'" + origin + "': \"" + key + "\" must be an object, got " + scaling->dump());
  RETURN_IF_ERROR(ReadNumber(*scaling, "rope_theta", origin, 0, 1e12, c.rope_theta));
  const json* type = Given(*scaling, "rope_type");
  if (type == nullptr) type = Given(*scaling, "type");
  const std::string t = type == nullptr ? "default" : type->is_string() ? type->get<std::string>() : type->dump();
  RopeScaling& r = c.rope_scaling;
  if (t == "default") {
    r.kind = RopeScaling::Kind::kNone;
  } else if (t == "linear" || t == "llama3") {
    r.kind = t == "linear" ? RopeScaling::Kind::kLinear : RopeScaling::Kind::kLlama3;
    if (Given(*scaling, "factor") == nullptr) return InvalidArgument("'" + origin + "': " + key + " '" + t + "' needs \"factor\"");
    RETURN_IF_ERROR(ReadNumber(*scaling, "factor", origin, 0, 1e6, r.factor));
    if (r.kind == RopeScaling::Kind::kLlama3) {
      RETURN_IF_ERROR(ReadNumber(*scaling, "low_freq_factor", origin, 0, 1e6, r.low_freq_factor));
      RETURN_IF_ERROR(ReadNumber(*scaling, "high_freq_factor", origin, 0, 1e6, r.high_freq_factor));
      RETURN_IF_ERROR(ReadOptionalInt(*scaling, "original_max_position_embeddings", origin, r.original_max_position_embeddings));
      if (!(r.high_freq_factor > r.low_freq_factor)) {
        return InvalidArgument("'" + origin + "': llama3 rope scaling needs high_freq_factor > low_freq_factor");
      }
    }
  } else {
    return InvalidArgument("'" + origin + "': unsupported " + key + " type '" + t + "'; supported: default, linear, llama3");
  }
  double partial = 1.0;
  RETURN_IF_ERROR(ReadNumber(*scaling, "partial_rotary_factor", origin, 0, 1, partial));
  RETURN_IF_ERROR(ReadNumber(j, "partial_rotary_factor", origin, 0, 1, partial));
  if (partial != 1.0) return InvalidArgument("'" + origin + "': partial_rotary_factor " + std::to_string(partial) + " is not supported (1 only)");
  return Status::OK();
}

// Which layers use the sliding window: `layer_types` when the file has it, else the family's rule.
Status ReadSlidingLayers(const json& j, const std::string& origin, DecoderConfig& c) {
  c.sliding.assign(static_cast<std::size_t>(c.num_layers), false);
  if (const json* w = Given(j, "sliding_window"); w != nullptr) {
    RETURN_IF_ERROR(ReadPositiveConfigInt(j, "sliding_window", origin, c.sliding_window));
  }
  bool use = c.family == DecoderFamily::kMistral || c.family == DecoderFamily::kGemma2;
  if (c.family == DecoderFamily::kQwen2) RETURN_IF_ERROR(ReadBool(j, "use_sliding_window", origin, use));
  if (const json* types = Given(j, "layer_types"); types != nullptr) {
    if (!types->is_array() || types->size() != static_cast<std::size_t>(c.num_layers)) {
      return InvalidArgument("'" + origin + "': \"layer_types\" must list one type per layer (" + std::to_string(c.num_layers) + ")");
    }
    for (std::size_t l = 0; l < types->size(); ++l) {
      const json& t = (*types)[l];
      if (t == "sliding_attention") {
        c.sliding[l] = true;
      } else if (t != "full_attention") {
        return InvalidArgument("'" + origin + "': unsupported layer type " + t.dump() + "; supported: full_attention, sliding_attention");
      }
    }
  } else if (use && c.family == DecoderFamily::kGemma2) {
    for (int l = 0; l < c.num_layers; l += 2) c.sliding[static_cast<std::size_t>(l)] = true;
  } else if (use && c.family == DecoderFamily::kQwen2) {
    int max_window_layers = c.num_layers;
    RETURN_IF_ERROR(ReadOptionalInt(j, "max_window_layers", origin, max_window_layers));
    for (int l = max_window_layers; l < c.num_layers; ++l) c.sliding[static_cast<std::size_t>(l)] = true;
  } else if (use) {
    c.sliding.assign(c.sliding.size(), true);
  }
  bool any = false;
  for (bool s : c.sliding) any = any || s;
  if (any && c.sliding_window == 0) return InvalidArgument("'" + origin + "': sliding-window layers but no \"sliding_window\"");
  if (!any) c.sliding_window = 0;
  return Status::OK();
}

Status ReadTokenIds(const json& j, const std::string& origin, DecoderConfig& c) {
  // Ids as written, checked against vocab_size before they are narrowed (2^40 is not id 0).
  auto id_of = [&](const json& v, const char* key) -> Result<int64_t> {
    ASSIGN_OR_RETURN(int64_t id, JsonIntIn(v, 0, INT32_MAX, "'" + origin + "': \"" + std::string(key) + "\""));
    if (id >= c.vocab_size) {
      return InvalidArgument("'" + origin + "': " + key + " " + std::to_string(id) + " is outside the vocabulary (vocab_size " +
                             std::to_string(c.vocab_size) + ")");
    }
    return id;
  };
  if (const json* b = Given(j, "bos_token_id"); b != nullptr && !b->is_array()) {
    ASSIGN_OR_RETURN(int64_t v, id_of(*b, "bos_token_id"));
    c.bos_token_id = static_cast<int32_t>(v);
  }
  if (const json* e = Given(j, "eos_token_id"); e != nullptr) {
    if (e->is_number_integer()) {
      ASSIGN_OR_RETURN(int64_t v, id_of(*e, "eos_token_id"));
      c.eos_token_ids.push_back(static_cast<int32_t>(v));
    } else if (e->is_array()) {
      for (const json& x : *e) {
        if (!x.is_number_integer()) return InvalidArgument("'" + origin + "': \"eos_token_id\" must be an id or a list of ids, got " + e->dump());
        ASSIGN_OR_RETURN(int64_t v, id_of(x, "eos_token_id"));
        c.eos_token_ids.push_back(static_cast<int32_t>(v));
      }
    } else {
      return InvalidArgument("'" + origin + "': \"eos_token_id\" must be an id or a list of ids, got " + e->dump());
    }
  }
  return Status::OK();
}

Status ParseGpt2(const json& j, const std::string& origin, DecoderConfig& c) {
  RETURN_IF_ERROR(ReadPositiveConfigInt(j, "vocab_size", origin, c.vocab_size));
  RETURN_IF_ERROR(ReadPositiveConfigInt(j, "n_embd", origin, c.hidden_size));
  RETURN_IF_ERROR(ReadPositiveConfigInt(j, "n_layer", origin, c.num_layers));
  RETURN_IF_ERROR(ReadPositiveConfigInt(j, "n_head", origin, c.num_heads));
  RETURN_IF_ERROR(ReadPositiveConfigInt(j, "n_positions", origin, c.max_position_embeddings));
  c.intermediate_size = 4 * c.hidden_size;
  RETURN_IF_ERROR(ReadOptionalInt(j, "n_inner", origin, c.intermediate_size));
  if (c.hidden_size % c.num_heads != 0) {
    return InvalidArgument("'" + origin + "': n_embd " + std::to_string(c.hidden_size) + " is not a multiple of n_head " +
                           std::to_string(c.num_heads));
  }
  c.num_kv_heads = c.num_heads;
  c.head_dim = c.hidden_size / c.num_heads;
  double eps = 1e-5;
  RETURN_IF_ERROR(ReadNumber(j, "layer_norm_epsilon", origin, 0, 1, eps));
  RETURN_IF_ERROR(NormEpsilon(eps, "layer_norm_epsilon", origin, c.norm_eps));
  c.act = DecoderActivation::kGeluTanh;
  RETURN_IF_ERROR(ReadActivation(j, "activation_function", origin, c));
  c.tie_word_embeddings = true;
  RETURN_IF_ERROR(ReadBool(j, "tie_word_embeddings", origin, c.tie_word_embeddings));
  bool scale = true, by_layer = false, upcast = false;
  RETURN_IF_ERROR(ReadBool(j, "scale_attn_weights", origin, scale));
  RETURN_IF_ERROR(ReadBool(j, "scale_attn_by_inverse_layer_idx", origin, by_layer));
  RETURN_IF_ERROR(ReadBool(j, "reorder_and_upcast_attn", origin, upcast));
  if (!scale || by_layer) {
    return InvalidArgument("'" + origin + "': GPT-2 attention scaling other than 1/sqrt(head_dim) (scale_attn_weights false or "
                           "scale_attn_by_inverse_layer_idx true) is not supported");
  }
  (void)upcast;  // same arithmetic in float32, which is what this engine computes in
  c.qkv_bias = c.o_bias = c.mlp_bias = true;
  c.query_scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  c.sliding.assign(static_cast<std::size_t>(c.num_layers), false);
  return Status::OK();
}

Status ParseLlamaLike(const json& j, const std::string& origin, DecoderConfig& c) {
  RETURN_IF_ERROR(ReadPositiveConfigInt(j, "vocab_size", origin, c.vocab_size));
  RETURN_IF_ERROR(ReadPositiveConfigInt(j, "hidden_size", origin, c.hidden_size));
  RETURN_IF_ERROR(ReadPositiveConfigInt(j, "intermediate_size", origin, c.intermediate_size));
  RETURN_IF_ERROR(ReadPositiveConfigInt(j, "num_hidden_layers", origin, c.num_layers));
  RETURN_IF_ERROR(ReadPositiveConfigInt(j, "num_attention_heads", origin, c.num_heads));
  RETURN_IF_ERROR(ReadPositiveConfigInt(j, "max_position_embeddings", origin, c.max_position_embeddings));
  c.num_kv_heads = c.num_heads;
  RETURN_IF_ERROR(ReadOptionalInt(j, "num_key_value_heads", origin, c.num_kv_heads));
  if (c.num_heads % c.num_kv_heads != 0) {
    return InvalidArgument("'" + origin + "': num_attention_heads " + std::to_string(c.num_heads) +
                           " is not a multiple of num_key_value_heads " + std::to_string(c.num_kv_heads));
  }
  const bool gemma = c.family == DecoderFamily::kGemma || c.family == DecoderFamily::kGemma2;
  if (Given(j, "head_dim") != nullptr) {
    RETURN_IF_ERROR(ReadPositiveConfigInt(j, "head_dim", origin, c.head_dim));
  } else if (gemma) {
    c.head_dim = 256;  // GemmaConfig's default
  } else {
    if (c.hidden_size % c.num_heads != 0) {
      return InvalidArgument("'" + origin + "': hidden_size " + std::to_string(c.hidden_size) +
                             " is not a multiple of num_attention_heads and no head_dim is given");
    }
    c.head_dim = c.hidden_size / c.num_heads;
  }
  if (c.head_dim % 2 != 0) return InvalidArgument("'" + origin + "': head_dim " + std::to_string(c.head_dim) + " is odd (RoPE rotates pairs)");
  double eps = 1e-6;
  RETURN_IF_ERROR(ReadNumber(j, "rms_norm_eps", origin, 0, 1, eps));
  RETURN_IF_ERROR(NormEpsilon(eps, "rms_norm_eps", origin, c.norm_eps));
  c.act = gemma ? DecoderActivation::kGeluTanh : DecoderActivation::kSilu;
  RETURN_IF_ERROR(ReadActivation(j, gemma && Given(j, "hidden_activation") != nullptr ? "hidden_activation" : "hidden_act", origin, c));
  c.tie_word_embeddings = gemma;
  RETURN_IF_ERROR(ReadBool(j, "tie_word_embeddings", origin, c.tie_word_embeddings));
  bool attention_bias = false;
  RETURN_IF_ERROR(ReadBool(j, "attention_bias", origin, attention_bias));
  c.qkv_bias = attention_bias || c.family == DecoderFamily::kQwen2;
  c.o_bias = attention_bias;
  RETURN_IF_ERROR(ReadBool(j, "mlp_bias", origin, c.mlp_bias));
  if (const json* tp = Given(j, "pretraining_tp"); tp != nullptr && *tp != 1) {
    (void)tp;  // transformers ignores it at inference (it only splits the same products)
  }
  RETURN_IF_ERROR(ReadRope(j, origin, c));
  c.query_scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  if (gemma) {
    c.scale_embeddings = true;
    c.norm_plus_one = true;
  }
  if (c.family == DecoderFamily::kGemma2) {
    c.sandwich_norms = true;
    double q = c.head_dim, attn_cap = 0, final_cap = 0;
    RETURN_IF_ERROR(ReadNumber(j, "query_pre_attn_scalar", origin, 0, 1e9, q));
    RETURN_IF_ERROR(ReadNumber(j, "attn_logit_softcapping", origin, 0, 1e9, attn_cap));
    RETURN_IF_ERROR(ReadNumber(j, "final_logit_softcapping", origin, 0, 1e9, final_cap));
    c.query_scale = static_cast<float>(1.0 / std::sqrt(q));
    c.attn_logit_softcap = static_cast<float>(attn_cap);
    c.final_logit_softcap = static_cast<float>(final_cap);
  }
  return ReadSlidingLayers(j, origin, c);
}

}  // namespace

std::string_view DecoderFamilyName(DecoderFamily f) {
  for (const auto& n : kFamilies) {
    if (n.family == f) return n.model_type;
  }
  return "?";
}

const std::vector<std::string>& SupportedDecoderArchitectures() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto& f : kFamilies) v.emplace_back(f.architecture);
    return v;
  }();
  return names;
}

bool LooksLikeDecoderConfig(std::string_view json_text) {
  const json j = json::parse(json_text, nullptr, false);
  if (!j.is_object()) return false;
  if (const json* archs = Given(j, "architectures"); archs != nullptr && archs->is_array() && !archs->empty() &&
                                                     (*archs)[0].is_string()) {
    const std::string a = (*archs)[0].get<std::string>();
    const std::string_view causal = "ForCausalLM";
    return a == "GPT2LMHeadModel" || (a.size() > causal.size() && a.compare(a.size() - causal.size(), causal.size(), causal) == 0);
  }
  if (const json* type = Given(j, "model_type"); type != nullptr && type->is_string()) {
    for (const auto& f : kFamilies) {
      if (*type == f.model_type) return true;
    }
  }
  return false;
}

Result<DecoderConfig> DecoderConfig::Parse(std::string_view json_text, const std::string& origin) {
  const json j = json::parse(json_text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return InvalidArgument("'" + origin + "' is not a JSON object");
  RETURN_IF_ERROR(CheckJsonDepth(j, origin));
  DecoderConfig c;
  try {
    const json* type = Given(j, "model_type");
    const json* archs = Given(j, "architectures");
    if (archs != nullptr && !archs->is_array()) return InvalidArgument("'" + origin + "': \"architectures\" must be a list");
    if (archs != nullptr && !archs->empty()) {
      if (!(*archs)[0].is_string()) return InvalidArgument("'" + origin + "': unsupported architecture " + (*archs)[0].dump());
      c.architecture = (*archs)[0].get<std::string>();
    }
    const FamilyName* found = nullptr;
    for (const auto& f : kFamilies) {
      if ((type != nullptr && *type == f.model_type) || (type == nullptr && c.architecture == f.architecture)) found = &f;
    }
    if (found == nullptr) {
      return InvalidArgument("'" + origin + "': unsupported decoder model " +
                             (type != nullptr ? "type " + type->dump() : "architecture \"" + c.architecture + "\"") +
                             "; supported: " + SupportedList());
    }
    if (!c.architecture.empty() && c.architecture != found->architecture) {
      return InvalidArgument("'" + origin + "': architecture \"" + c.architecture + "\" is not a text-generation head of model_type \"" +
                             found->model_type + "\"; supported: " + SupportedList());
    }
    c.family = found->family;
    c.model_type = found->model_type;
    if (c.architecture.empty()) c.architecture = found->architecture;
    if (c.family == DecoderFamily::kGpt2) {
      RETURN_IF_ERROR(ParseGpt2(j, origin, c));
    } else {
      RETURN_IF_ERROR(ParseLlamaLike(j, origin, c));
    }
    if (const json* d = Given(j, "torch_dtype") != nullptr ? Given(j, "torch_dtype") : Given(j, "dtype"); d != nullptr) {
      if (!d->is_string() || (*d != "float32" && *d != "bfloat16" && *d != "float16")) {
        return InvalidArgument("'" + origin + "': unsupported dtype " + d->dump() + "; supported: float32, bfloat16, float16");
      }
      c.torch_dtype = d->get<std::string>();
    }
    RETURN_IF_ERROR(ReadTokenIds(j, origin, c));
  } catch (const json::exception& e) {
    return InvalidArgument("'" + origin + "': unexpected JSON value (" + std::string(e.what()) + ")");
  }
  return c;
}

Result<DecoderConfig> DecoderConfig::Load(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, ReadWholeFile(path, kModelConfigFile));
  return Parse(text, path);
}

uint64_t DecoderConfig::ParameterCount() const {
  const uint64_t h = static_cast<uint64_t>(hidden_size), v = static_cast<uint64_t>(vocab_size);
  const uint64_t q = static_cast<uint64_t>(num_heads) * static_cast<uint64_t>(head_dim);
  const uint64_t kv = static_cast<uint64_t>(num_kv_heads) * static_cast<uint64_t>(head_dim);
  const uint64_t inter = static_cast<uint64_t>(intermediate_size);
  uint64_t layer = h * (q + 2 * kv) + q * h + (qkv_bias ? q + 2 * kv : 0) + (o_bias ? h : 0);
  const bool gpt2 = family == DecoderFamily::kGpt2;
  layer += gpt2 ? 2 * h * inter + inter + h : 3 * h * inter + (mlp_bias ? 2 * inter + h : 0);
  const uint64_t norms_per_layer = sandwich_norms ? 4 : 2;
  layer += norms_per_layer * h * (gpt2 ? 2 : 1);
  uint64_t total = static_cast<uint64_t>(num_layers) * layer + v * h + h * (gpt2 ? 2 : 1);
  if (gpt2) total += static_cast<uint64_t>(max_position_embeddings) * h;
  if (!tie_word_embeddings) total += v * h;
  return total;
}

uint64_t DecoderConfig::SavedBytesPerValue() const { return torch_dtype == "float32" ? 4 : 2; }

}  // namespace dfw
