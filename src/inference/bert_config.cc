// config.json of a Hugging Face BertModel → BertConfig, with errors that say what is supported.
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "dfw/inference/bert_encoder.h"

namespace dfw {
namespace {

Status ReadPositiveInt(const nlohmann::json& j, const char* key, const std::string& origin, int& out) {
  auto it = j.find(key);
  if (it == j.end()) return InvalidArgument("'" + origin + "': missing \"" + key + "\"");
  if (!it->is_number_integer() || it->get<int64_t>() < 1 || it->get<int64_t>() > (1 << 24)) {
    return InvalidArgument("'" + origin + "': \"" + key + "\" must be a positive integer, got " + it->dump());
  }
  out = static_cast<int>(it->get<int64_t>());
  return Status::OK();
}

Result<Activation> ParseHiddenAct(const nlohmann::json& j, const std::string& origin) {
  auto it = j.find("hidden_act");
  if (it == j.end()) return Activation::kGelu;  // BertConfig's default
  const std::string name = it->is_string() ? it->get<std::string>() : it->dump();
  if (name == "gelu") return Activation::kGelu;
  if (name == "gelu_new" || name == "gelu_pytorch_tanh") return Activation::kGeluTanh;
  if (name == "relu") return Activation::kRelu;
  return InvalidArgument("'" + origin + "': unsupported \"hidden_act\" '" + name +
                         "'; supported: gelu, gelu_new, gelu_pytorch_tanh, relu");
}

Status CheckArchitecture(const nlohmann::json& j, const std::string& origin) {
  auto type = j.find("model_type");
  if (type != j.end() && *type != "bert") {
    return InvalidArgument("'" + origin + "': unsupported \"model_type\" " + type->dump() +
                           "; this encoder runs BERT models (model_type \"bert\", e.g. all-MiniLM-L6-v2)");
  }
  auto archs = j.find("architectures");
  if (archs != j.end() && !archs->is_null()) {
    if (!archs->is_array()) return InvalidArgument("'" + origin + "': \"architectures\" must be a list");
    for (const auto& a : *archs) {
      if (!a.is_string() || a.get<std::string>().rfind("Bert", 0) != 0) {
        return InvalidArgument("'" + origin + "': unsupported architecture " + a.dump() +
                               "; supported: BertModel (and Bert* heads, whose encoder is used)");
      }
    }
  }
  if (type == j.end() && (archs == j.end() || archs->is_null())) {
    return InvalidArgument("'" + origin + "': neither \"model_type\" nor \"architectures\" says this is a BERT model");
  }
  auto pos = j.find("position_embedding_type");
  if (pos != j.end() && !pos->is_null() && *pos != "absolute") {
    return InvalidArgument("'" + origin + "': unsupported \"position_embedding_type\" " + pos->dump() +
                           "; supported: absolute");
  }
  return Status::OK();
}

}  // namespace

Result<BertConfig> BertConfig::Parse(const std::string& json_text, const std::string& origin) {
  nlohmann::json j = nlohmann::json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return InvalidArgument("'" + origin + "' is not a JSON object");
  RETURN_IF_ERROR(CheckArchitecture(j, origin));
  BertConfig c;
  RETURN_IF_ERROR(ReadPositiveInt(j, "vocab_size", origin, c.vocab_size));
  RETURN_IF_ERROR(ReadPositiveInt(j, "hidden_size", origin, c.hidden_size));
  RETURN_IF_ERROR(ReadPositiveInt(j, "num_hidden_layers", origin, c.num_hidden_layers));
  RETURN_IF_ERROR(ReadPositiveInt(j, "num_attention_heads", origin, c.num_attention_heads));
  RETURN_IF_ERROR(ReadPositiveInt(j, "intermediate_size", origin, c.intermediate_size));
  RETURN_IF_ERROR(ReadPositiveInt(j, "max_position_embeddings", origin, c.max_position_embeddings));
  RETURN_IF_ERROR(ReadPositiveInt(j, "type_vocab_size", origin, c.type_vocab_size));
  if (c.hidden_size % c.num_attention_heads != 0) {
    return InvalidArgument("'" + origin + "': hidden_size " + std::to_string(c.hidden_size) +
                           " is not a multiple of num_attention_heads " + std::to_string(c.num_attention_heads));
  }
  auto eps = j.find("layer_norm_eps");
  if (eps != j.end()) {
    if (!eps->is_number() || eps->get<double>() <= 0 || eps->get<double>() > 1) {
      return InvalidArgument("'" + origin + "': \"layer_norm_eps\" must be a number in (0, 1], got " + eps->dump());
    }
    c.layer_norm_eps = eps->get<float>();
  }
  ASSIGN_OR_RETURN(c.hidden_act, ParseHiddenAct(j, origin));
  return c;
}

Result<BertConfig> BertConfig::Load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("cannot open model config '" + path + "'");
  std::ostringstream ss;
  ss << in.rdbuf();
  return Parse(ss.str(), path);
}

}  // namespace dfw
