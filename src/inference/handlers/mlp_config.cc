#include "dfw/inference/mlp_config.h"

#include <nlohmann/json.hpp>

#include "dfw/common/file.h"
#include "dfw/common/json_text.h"
#include "dfw/common/strings.h"

namespace dfw {
namespace {

const std::vector<std::pair<std::string, Activation>>& ActivationNames() {
  static const std::vector<std::pair<std::string, Activation>> names = {
      {"none", Activation::kNone},        {"linear", Activation::kNone},           {"relu", Activation::kRelu},
      {"gelu", Activation::kGelu},        {"gelu_new", Activation::kGeluTanh},     {"gelu_tanh", Activation::kGeluTanh},
      {"gelu_pytorch_tanh", Activation::kGeluTanh}, {"tanh", Activation::kTanh}, {"sigmoid", Activation::kSigmoid},
  };
  return names;
}

Status CheckKeys(const nlohmann::json& obj, const std::vector<std::string>& allowed, const std::string& where) {
  for (const auto& [key, unused] : obj.items()) {
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      return InvalidArgument(where + ": unknown key '" + key + "'" + DidYouMeanSuffix(key, allowed) +
                             "; allowed: " + Join(allowed));
    }
  }
  return Status::OK();
}

Result<int64_t> PositiveInt(const nlohmann::json& obj, const char* key, const std::string& where) {
  if (!obj.contains(key)) return InvalidArgument(where + ": missing \"" + key + "\"");
  const auto& v = obj[key];
  if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > (int64_t{1} << 24)) {
    return InvalidArgument(where + ": \"" + key + "\" must be an integer in [1, 16777216], got " + v.dump());
  }
  return v.get<int64_t>();
}

Result<MlpConfig> ParseRoot(const nlohmann::json& root, const std::string& origin) {
  if (!root.is_object()) return InvalidArgument(origin + ": must be a JSON object");
  RETURN_IF_ERROR(CheckKeys(root, {"model_type", "input_dim", "layers", "output", "labels"}, origin));
  const std::string type = root.value("model_type", "");
  if (type != "mlp") {
    return InvalidArgument(origin + ": \"model_type\" is '" + type + "'; this handler supports 'mlp'");
  }
  MlpConfig cfg;
  ASSIGN_OR_RETURN(cfg.input_dim, PositiveInt(root, "input_dim", origin));
  if (!root.contains("layers") || !root["layers"].is_array() || root["layers"].empty()) {
    return InvalidArgument(origin + ": \"layers\" must be a non-empty array");
  }
  int64_t in = cfg.input_dim;
  for (std::size_t i = 0; i < root["layers"].size(); ++i) {
    const auto& l = root["layers"][i];
    const std::string where = origin + ": layers[" + std::to_string(i) + "]";
    if (!l.is_object()) return InvalidArgument(where + ": must be an object");
    RETURN_IF_ERROR(CheckKeys(l, {"name", "out_features", "activation", "bias"}, where));
    MlpLayerConfig layer;
    if (!l.contains("name") || !l["name"].is_string() || l["name"].get<std::string>().empty()) {
      return InvalidArgument(where + ": \"name\" must be a non-empty string (the weight prefix)");
    }
    layer.name = l["name"].get<std::string>();
    layer.in_features = in;
    ASSIGN_OR_RETURN(layer.out_features, PositiveInt(l, "out_features", where));
    if (l.contains("activation")) {
      if (!l["activation"].is_string()) return InvalidArgument(where + ": \"activation\" must be a string");
      auto act = ParseActivation(l["activation"].get<std::string>());
      if (!act.ok()) return act.status().WithContext(where);
      layer.activation = *act;
    }
    if (l.contains("bias")) {
      if (!l["bias"].is_boolean()) return InvalidArgument(where + ": \"bias\" must be true or false");
      layer.bias = l["bias"].get<bool>();
    }
    in = layer.out_features;
    cfg.layers.push_back(std::move(layer));
  }
  const std::string output = root.value("output", "none");
  if (output != "softmax" && output != "none") {
    return InvalidArgument(origin + ": \"output\" is '" + output + "'; allowed: softmax, none");
  }
  cfg.softmax = output == "softmax";
  if (root.contains("labels")) {
    const auto& labels = root["labels"];
    if (!labels.is_array()) return InvalidArgument(origin + ": \"labels\" must be an array of strings");
    for (const auto& s : labels) {
      if (!s.is_string()) return InvalidArgument(origin + ": \"labels\" must be an array of strings");
      cfg.labels.push_back(s.get<std::string>());
    }
    if (static_cast<int64_t>(cfg.labels.size()) != cfg.output_dim()) {
      return InvalidArgument(origin + ": " + std::to_string(cfg.labels.size()) + " labels for " +
                             std::to_string(cfg.output_dim()) + " outputs");
    }
  }
  return cfg;
}

}  // namespace

Result<Activation> ParseActivation(std::string_view name) {
  std::vector<std::string> allowed;
  for (const auto& [n, act] : ActivationNames()) {
    if (n == name) return act;
    allowed.push_back(n);
  }
  return InvalidArgument("unknown activation '" + std::string(name) + "'" +
                         DidYouMeanSuffix(std::string(name), allowed) + "; allowed: " + Join(allowed));
}

Result<MlpConfig> ParseMlpConfig(std::string_view json_text, std::string_view origin) {
  const std::string where(origin);
  try {
    const nlohmann::json root = nlohmann::json::parse(json_text.begin(), json_text.end());
    RETURN_IF_ERROR(CheckJsonDepth(root, where));
    return ParseRoot(root, where);
  } catch (const nlohmann::json::exception& e) {
    return InvalidArgument(where + ": not valid JSON: " + e.what());
  }
}

Result<MlpConfig> LoadMlpConfig(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, ReadWholeFile(path, kModelConfigFile));
  return ParseMlpConfig(text, "model config '" + path + "'");
}

}  // namespace dfw
