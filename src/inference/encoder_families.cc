// DistilBERT and RoBERTa on the BERT encoder: config fields, tensor names and position ids.
#include "encoder_families.h"

#include <string>

namespace dfw {
namespace {

const char* kSupportedTypes = "bert, distilbert, roberta, xlm-roberta";

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

Result<EncoderFamily> EncoderFamilyOf(const std::string& model_type, const std::string& origin) {
  if (model_type == "bert") return EncoderFamily::kBert;
  if (model_type == "distilbert") return EncoderFamily::kDistilBert;
  if (model_type == "roberta" || model_type == "xlm-roberta") return EncoderFamily::kRoberta;
  return InvalidArgument("'" + origin + "': unsupported \"model_type\" \"" + model_type + "\"; supported: " + kSupportedTypes);
}

Result<EncoderFamily> EncoderFamilyOfArchitecture(const std::string& a, const std::string& origin) {
  if (a.rfind("DistilBert", 0) == 0) return EncoderFamily::kDistilBert;
  if (a.rfind("XLMRoberta", 0) == 0 || a.rfind("Roberta", 0) == 0) return EncoderFamily::kRoberta;
  if (a.rfind("Bert", 0) == 0) return EncoderFamily::kBert;
  return InvalidArgument("'" + origin + "': unsupported architecture \"" + a +
                         "\"; supported: Bert*, DistilBert*, Roberta*, XLMRoberta* (the encoder and its heads)");
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
