// The built-in model handler types (src/inference/builtin_handlers.cc): the one file that names
// every concrete handler, so the handler base (model_handler.cc) names none of them.
#pragma once

#include <vector>

#include "dfw/inference/model_handler.h"

namespace dfw {

// One entry per built-in handler type, in the order ModelHandlerTypes() lists them; the table of
// model_handler.cc starts from this list, and RegisterModelHandlerType adds to it.
std::vector<ModelHandlerTypeInfo> BuiltinModelHandlerTypes();

}  // namespace dfw
