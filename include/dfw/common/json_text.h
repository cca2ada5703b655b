// A JSON document of a file the user names (a bench result, a GPU-efficiency file), parsed with
// the parse error as `path:line:col: not JSON: reason`.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "dfw/common/status.h"

namespace dfw {

Result<nlohmann::json> ParseJsonText(const std::string& path, const std::string& text);

}  // namespace dfw
