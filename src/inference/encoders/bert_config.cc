// config.json of a Hugging Face BERT-family model → BertConfig, with errors that say what is supported.
#include <string>

#include <nlohmann/json.hpp>

#include "dfw/common/file.h"
#include "dfw/common/json_text.h"
#include "dfw/inference/bert_encoder.h"
#include "inference/encoders/encoder_families.h"

namespace dfw {
namespace {

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

// The family config.json names (model_type, else the architecture's prefix), and the
// architecture; anything else is refused naming what is supported.
Status CheckArchitecture(const nlohmann::json& j, const std::string& origin, BertConfig& c) {
  auto type = j.find("model_type");
  if (type != j.end() && type->is_null()) type = j.end();
  auto archs = j.find("architectures");
  if (archs != j.end() && !archs->is_null() && !archs->is_array()) {
    return InvalidArgument("'" + origin + "': \"architectures\" must be a list");
  }
  if (archs != j.end() && archs->is_array() && !archs->empty() && (*archs)[0].is_string()) {
    c.architecture = (*archs)[0].get<std::string>();
  }
  if (type != j.end()) {
    ASSIGN_OR_RETURN(c.family, EncoderFamilyOf(type->is_string() ? type->get<std::string>() : type->dump(), origin));
    c.model_type = type->get<std::string>();
  } else if (!c.architecture.empty()) {
    ASSIGN_OR_RETURN(c.family, EncoderFamilyOfArchitecture(c.architecture, origin));
  } else {
    return InvalidArgument("'" + origin + "': neither \"model_type\" nor \"architectures\" says which model this is");
  }
  if (archs != j.end() && archs->is_array()) {
    for (const auto& a : *archs) {
      if (!a.is_string()) return InvalidArgument("'" + origin + "': unsupported architecture " + a.dump());
      ASSIGN_OR_RETURN(EncoderFamily f, EncoderFamilyOfArchitecture(a.get<std::string>(), origin));
      if (f != c.family) {
        return InvalidArgument("'" + origin + "': architecture " + a.dump() + " does not match model_type \"" + c.model_type + "\"");
      }
    }
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
  RETURN_IF_ERROR(CheckJsonDepth(j, origin));
  BertConfig c;
  RETURN_IF_ERROR(CheckArchitecture(j, origin, c));
  if (c.family == EncoderFamily::kDistilBert) return ParseDistilBertConfig(j, origin, std::move(c));
  if (c.family == EncoderFamily::kModernBert) return ParseModernBertConfig(j, origin, std::move(c));
  RETURN_IF_ERROR(ReadEncoderSizes(j, origin, c));
  RETURN_IF_ERROR(ReadPositiveConfigInt(j, "type_vocab_size", origin, c.type_vocab_size));
  if (c.hidden_size % c.num_attention_heads != 0) {
    return InvalidArgument("'" + origin + "': hidden_size " + std::to_string(c.hidden_size) +
                           " is not a multiple of num_attention_heads " + std::to_string(c.num_attention_heads));
  }
  RETURN_IF_ERROR(ReadEpsilon(j, "layer_norm_eps", origin, c.layer_norm_eps));
  ASSIGN_OR_RETURN(c.hidden_act, ParseHiddenAct(j, origin));
  if (c.family == EncoderFamily::kRoberta) RETURN_IF_ERROR(ApplyRobertaPositions(j, origin, c));
  return c;
}

Result<BertConfig> BertConfig::Load(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, ReadWholeFile(path, kModelConfigFile));
  return Parse(text, path);
}

}  // namespace dfw
