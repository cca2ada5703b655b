// The architecture of an MLP model directory, read from its config.json (Hugging Face style: the
// weights are in model.safetensors beside it).
//
//   {
//     "model_type": "mlp",
//     "input_dim": 30,
//     "layers": [ {"name": "fc1", "out_features": 64, "activation": "relu"},
//                 {"name": "fc2", "out_features": 2, "activation": "none", "bias": true} ],
//     "output": "softmax",            // or "none" (raw scores / regression)
//     "labels": ["malignant", "benign"]  // optional, one per output
//   }
//
// Layer i computes y = act(x · Wᵀ + b) with W = "<name>.weight" of shape [out_features, in_features]
// (PyTorch nn.Linear layout) and b = "<name>.bias" of shape [out_features] (absent when "bias": false).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "dfw/backend/backend.h"
#include "dfw/common/status.h"

namespace dfw {

struct MlpLayerConfig {
  std::string name;            // weight prefix
  int64_t in_features = 0;     // previous layer's out_features (input_dim for the first)
  int64_t out_features = 0;    // >= 1
  Activation activation = Activation::kNone;
  bool bias = true;            // "<name>.bias" expected
};

struct MlpConfig {
  int64_t input_dim = 0;  // features per example, >= 1
  std::vector<MlpLayerConfig> layers;  // at least one
  bool softmax = false;                // "output": "softmax"
  std::vector<std::string> labels;     // empty or one per output
  int64_t output_dim() const { return layers.empty() ? 0 : layers.back().out_features; }
};

// Parses config.json text; `origin` (the file name) prefixes every error.
Result<MlpConfig> ParseMlpConfig(std::string_view json_text, std::string_view origin);
Result<MlpConfig> LoadMlpConfig(const std::string& path);

// "relu", "gelu", "gelu_new"/"gelu_tanh"/"gelu_pytorch_tanh", "tanh", "sigmoid", "none"/"linear".
Result<Activation> ParseActivation(std::string_view name);

}  // namespace dfw
