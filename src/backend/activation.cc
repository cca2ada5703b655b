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

}  // namespace dfw
