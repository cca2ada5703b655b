// DistilBERT and RoBERTa on the BERT encoder: config fields, tensor names and position ids.
#include "inference/encoders/encoder_families.h"

#include <string>

namespace dfw {
namespace {

const char* kSupportedTypes = "bert, distilbert, roberta, xlm-roberta, modernbert";

// DistilBERT's names for BERT's per-layer tensors ("attention.self.query" → "attention.q_lin").
std::string DistilLayerName(const std::string& rest) {
  static const std::pair<const char*, const char*> kMap[] = {
      {"attention.self.query.", "attention.q_lin."},     {"attention.self.key.", "attention.k_lin."},
      {"attention.self.value.", "attention.v_lin."},     {"attention.output.dense.", "attention.out_lin."},
      {"attention.output.LayerNorm.", "sa_layer_norm."}, {"intermediate.dense.", "ffn.lin1."},
      {"output.dense.", "ffn.lin2."},                    {"output.LayerNorm.", "output_layer_norm."},
  };
  for (const auto& [from, to] : kMap) {
    const std::string f = from;
    if (rest.rfind(f, 0) == 0) return to + rest.substr(f.size());
  }
  return rest;
}

}  // namespace

Status ReadPositiveConfigInt(const nlohmann::json& j, const char* key, const std::string& origin, int& out) {
  auto it = j.find(key);
  if (it == j.end()) return InvalidArgument("'" + origin + "': missing \"" + key + "\"");
  if (!it->is_number_integer() || it->get<int64_t>() < 1 || it->get<int64_t>() > (1 << 24)) {
    return InvalidArgument("'" + origin + "': \"" + key + "\" must be a positive integer, got " + it->dump());
  }
  out = static_cast<int>(it->get<int64_t>());
  return Status::OK();
}

Status ReadEncoderSizes(const nlohmann::json& j, const std::string& origin, BertConfig& c) {
  RETURN_IF_ERROR(ReadPositiveConfigInt(j, "vocab_size", origin, c.vocab_size));
  RETURN_IF_ERROR(ReadPositiveConfigInt(j, "hidden_size", origin, c.hidden_size));
  RETURN_IF_ERROR(ReadPositiveConfigInt(j, "num_hidden_layers", origin, c.num_hidden_layers));
  RETURN_IF_ERROR(ReadPositiveConfigInt(j, "num_attention_heads", origin, c.num_attention_heads));
  RETURN_IF_ERROR(ReadPositiveConfigInt(j, "intermediate_size", origin, c.intermediate_size));
  return ReadPositiveConfigInt(j, "max_position_embeddings", origin, c.max_position_embeddings);
}

Status ReadEpsilon(const nlohmann::json& j, const char* key, const std::string& origin, float& out) {
  auto eps = j.find(key);
  if (eps == j.end() || eps->is_null()) return Status::OK();
  if (!eps->is_number() || !(eps->get<double>() >= 1e-30) || eps->get<double>() > 1) {
    return InvalidArgument("'" + origin + "': \"" + key + "\" must be a number in [1e-30, 1], got " + eps->dump());
  }
  out = eps->get<float>();
  return Status::OK();
}

Result<EncoderFamily> EncoderFamilyOf(const std::string& model_type, const std::string& origin) {
  if (model_type == "bert") return EncoderFamily::kBert;
  if (model_type == "distilbert") return EncoderFamily::kDistilBert;
  if (model_type == "roberta" || model_type == "xlm-roberta") return EncoderFamily::kRoberta;
  if (model_type == "modernbert") return EncoderFamily::kModernBert;
  return InvalidArgument("'" + origin + "': unsupported \"model_type\" \"" + model_type + "\"; supported: " + kSupportedTypes);
}

Result<EncoderFamily> EncoderFamilyOfArchitecture(const std::string& a, const std::string& origin) {
  if (a.rfind("DistilBert", 0) == 0) return EncoderFamily::kDistilBert;
  if (a.rfind("XLMRoberta", 0) == 0 || a.rfind("Roberta", 0) == 0) return EncoderFamily::kRoberta;
  if (a.rfind("ModernBert", 0) == 0) return EncoderFamily::kModernBert;
  if (a.rfind("Bert", 0) == 0) return EncoderFamily::kBert;
  return InvalidArgument("'" + origin + "': unsupported architecture \"" + a +
                         "\"; supported: Bert*, DistilBert*, Roberta*, XLMRoberta*, ModernBert* (the encoder and its heads)");
}

Result<BertConfig> ParseDistilBertConfig(const nlohmann::json& j, const std::string& origin, BertConfig c) {
  RETURN_IF_ERROR(ReadPositiveConfigInt(j, "vocab_size", origin, c.vocab_size));
  RETURN_IF_ERROR(ReadPositiveConfigInt(j, "dim", origin, c.hidden_size));
  RETURN_IF_ERROR(ReadPositiveConfigInt(j, "n_layers", origin, c.num_hidden_layers));
  RETURN_IF_ERROR(ReadPositiveConfigInt(j, "n_heads", origin, c.num_attention_heads));
  RETURN_IF_ERROR(ReadPositiveConfigInt(j, "hidden_dim", origin, c.intermediate_size));
  RETURN_IF_ERROR(ReadPositiveConfigInt(j, "max_position_embeddings", origin, c.max_position_embeddings));
  c.type_vocab_size = 0;
  c.layer_norm_eps = 1e-12f;  // DistilBERT's LayerNorms are built with eps 1e-12
  if (c.hidden_size % c.num_attention_heads != 0) {
    return InvalidArgument("'" + origin + "': dim " + std::to_string(c.hidden_size) + " is not a multiple of n_heads " +
                           std::to_string(c.num_attention_heads));
  }
  const std::string act = j.contains("activation") && j["activation"].is_string() ? j["activation"].get<std::string>() : "gelu";
  if (act == "gelu") {
    c.hidden_act = Activation::kGelu;
  } else if (act == "relu") {
    c.hidden_act = Activation::kRelu;
  } else {
    return InvalidArgument("'" + origin + "': unsupported \"activation\" '" + act + "'; supported: gelu, relu");
  }
  return c;
}

namespace {

Status ReadModernBool(const nlohmann::json& j, const char* key, const std::string& origin, bool& out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return Status::OK();
  if (!it->is_boolean()) return InvalidArgument("'" + origin + "': \"" + key + "\" must be true or false, got " + it->dump());
  out = it->get<bool>();
  return Status::OK();
}

Result<Activation> ReadModernActivation(const nlohmann::json& j, const char* key, const std::string& origin) {
  auto it = j.find(key);
  const std::string name = it == j.end() || it->is_null() ? "gelu" : it->is_string() ? it->get<std::string>() : it->dump();
  if (name == "gelu") return Activation::kGelu;
  if (name == "gelu_new" || name == "gelu_pytorch_tanh") return Activation::kGeluTanh;
  if (name == "relu") return Activation::kRelu;
  return InvalidArgument("'" + origin + "': unsupported \"" + key + "\" '" + name +
                         "'; supported: gelu, gelu_new, gelu_pytorch_tanh, relu");
}

// A RoPE theta from transformers 5's rope_parameters[type].rope_theta, else transformers 4's
// global_rope_theta / local_rope_theta; only the default RoPE type.
Status ReadModernRopeTheta(const nlohmann::json& j, const char* type, const char* v4_key, const std::string& origin, float& out) {
  auto params = j.find("rope_parameters");
  if (params != j.end() && params->is_object() && params->contains(type)) {
    const nlohmann::json& p = (*params)[type];
    if (p.contains("rope_type") && p["rope_type"] != "default") {
      return InvalidArgument("'" + origin + "': rope_parameters." + type + ".rope_type " + p["rope_type"].dump() +
                             " is not supported; supported: default");
    }
    if (p.contains("rope_theta")) {
      if (!p["rope_theta"].is_number() || p["rope_theta"].get<double>() <= 0) {
        return InvalidArgument("'" + origin + "': rope_parameters." + type + ".rope_theta must be a positive number");
      }
      out = p["rope_theta"].get<float>();
      return Status::OK();
    }
  }
  if (j.contains("rope_scaling") && !j["rope_scaling"].is_null()) {
    return InvalidArgument("'" + origin + "': \"rope_scaling\" is not supported for modernbert (default RoPE only)");
  }
  auto v4 = j.find(v4_key);
  if (v4 != j.end() && !v4->is_null()) {
    if (!v4->is_number() || v4->get<double>() <= 0) return InvalidArgument("'" + origin + "': \"" + v4_key + "\" must be a positive number");
    out = v4->get<float>();
  }
  return Status::OK();
}

}  // namespace

Result<BertConfig> ParseModernBertConfig(const nlohmann::json& j, const std::string& origin, BertConfig c) {
  RETURN_IF_ERROR(ReadEncoderSizes(j, origin, c));
  if (c.hidden_size % c.num_attention_heads != 0 || (c.hidden_size / c.num_attention_heads) % 2 != 0) {
    return InvalidArgument("'" + origin + "': hidden_size " + std::to_string(c.hidden_size) +
                           " must be num_attention_heads x an even head size (RoPE rotates pairs)");
  }
  c.type_vocab_size = 0;
  c.layer_norm_eps = 1e-5f;
  RETURN_IF_ERROR(ReadEpsilon(j, "norm_eps", origin, c.layer_norm_eps));
  ModernBertFields& m = c.modern;
  RETURN_IF_ERROR(ReadModernBool(j, "norm_bias", origin, m.norm_bias));
  RETURN_IF_ERROR(ReadModernBool(j, "attention_bias", origin, m.attention_bias));
  RETURN_IF_ERROR(ReadModernBool(j, "mlp_bias", origin, m.mlp_bias));
  RETURN_IF_ERROR(ReadModernBool(j, "classifier_bias", origin, m.classifier_bias));
  RETURN_IF_ERROR(ReadModernBool(j, "decoder_bias", origin, m.decoder_bias));
  ASSIGN_OR_RETURN(c.hidden_act, ReadModernActivation(j, "hidden_activation", origin));
  ASSIGN_OR_RETURN(m.classifier_act, ReadModernActivation(j, "classifier_activation", origin));
  RETURN_IF_ERROR(ReadModernRopeTheta(j, "full_attention", "global_rope_theta", origin, m.global_rope_theta));
  RETURN_IF_ERROR(ReadModernRopeTheta(j, "sliding_attention", "local_rope_theta", origin, m.local_rope_theta));
  if (j.contains("local_attention")) RETURN_IF_ERROR(ReadPositiveConfigInt(j, "local_attention", origin, m.local_attention));
  auto pooling = j.find("classifier_pooling");
  if (pooling != j.end() && !pooling->is_null()) {
    if (*pooling != "cls" && *pooling != "mean") {
      return InvalidArgument("'" + origin + "': unsupported \"classifier_pooling\" " + pooling->dump() + "; supported: cls, mean");
    }
    m.mean_pooling = *pooling == "mean";
  }
  // layer_types (transformers 5) or global_attn_every_n_layers (4): which layers see every token.
  m.sliding.assign(static_cast<std::size_t>(c.num_hidden_layers), 0);
  auto types = j.find("layer_types");
  if (types != j.end() && !types->is_null()) {
    if (!types->is_array() || types->size() != static_cast<std::size_t>(c.num_hidden_layers)) {
      return InvalidArgument("'" + origin + "': \"layer_types\" must list one type per layer");
    }
    for (std::size_t i = 0; i < types->size(); ++i) {
      const nlohmann::json& t = (*types)[i];
      if (t != "full_attention" && t != "sliding_attention") {
        return InvalidArgument("'" + origin + "': layer_types[" + std::to_string(i) + "] " + t.dump() +
                               "; supported: full_attention, sliding_attention");
      }
      m.sliding[i] = t == "sliding_attention";
    }
  } else {
    int every = 3;
    if (j.contains("global_attn_every_n_layers")) RETURN_IF_ERROR(ReadPositiveConfigInt(j, "global_attn_every_n_layers", origin, every));
    for (int i = 0; i < c.num_hidden_layers; ++i) m.sliding[static_cast<std::size_t>(i)] = i % every != 0;
  }
  return c;
}

Status ApplyRobertaPositions(const nlohmann::json& j, const std::string& origin, BertConfig& c) {
  auto pad = j.find("pad_token_id");
  const int64_t pad_id = pad != j.end() && pad->is_number_integer() ? pad->get<int64_t>() : 1;
  if (pad_id < 0 || pad_id + 2 >= c.max_position_embeddings) {
    return InvalidArgument("'" + origin + "': pad_token_id " + std::to_string(pad_id) +
                           " leaves no positions below max_position_embeddings " + std::to_string(c.max_position_embeddings));
  }
  c.position_offset = static_cast<int>(pad_id) + 1;
  return Status::OK();
}

std::string BertEncoder::TensorName(const std::string& prefix, const std::string& bert_name) const {
  if (config_.family != EncoderFamily::kDistilBert) return prefix + bert_name;
  const std::string layer = "encoder.layer.";
  if (bert_name.rfind(layer, 0) != 0) return prefix + bert_name;  // embeddings.* are named alike
  const std::size_t dot = bert_name.find('.', layer.size());
  const std::string index = bert_name.substr(layer.size(), dot - layer.size());
  return prefix + "transformer.layer." + index + "." + DistilLayerName(bert_name.substr(dot + 1));
}

}  // namespace dfw
