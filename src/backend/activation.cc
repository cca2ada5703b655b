// Names of the backend interface's enums (compiled into the CUDA library too).
#include "dfw/backend/backend.h"

namespace dfw {

std::string_view ActivationName(Activation a) {
  switch (a) {
    case Activation::kNone: return "none";
    case Activation::kRelu: return "relu";
    case Activation::kGelu: return "gelu";
    case Activation::kGeluTanh: return "gelu_tanh";
    case Activation::kTanh: return "tanh";
    case Activation::kSigmoid: return "sigmoid";
  }
  return "unknown";
}

std::string_view LinearDTypeName(LinearDType d) {
  switch (d) {
    case LinearDType::kFloat32: return "float32";
    case LinearDType::kBFloat16: return "bfloat16";
    case LinearDType::kInt8: return "int8";
  }
  return "unknown";
}

Result<LinearDType> ParseLinearDType(std::string_view name) {
  for (LinearDType d : {LinearDType::kFloat32, LinearDType::kBFloat16, LinearDType::kInt8}) {
    if (name == LinearDTypeName(d)) return d;
  }
  return InvalidArgument("unknown dtype '" + std::string(name) + "'; allowed: float32, bfloat16, int8");
}

}  // namespace dfw
