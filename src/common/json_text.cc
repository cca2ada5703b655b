// ParseJsonText (dfw/common/json_text.h).
#include "dfw/common/json_text.h"

#include <utility>
#include <vector>

#include "dfw/common/strings.h"

namespace dfw {

Result<nlohmann::json> ParseJsonText(const std::string& path, const std::string& text) {
  try {
    nlohmann::json j = nlohmann::json::parse(text);
    RETURN_IF_ERROR(CheckJsonDepth(j, path));
    return j;
  } catch (const nlohmann::json::parse_error& e) {
    std::string why = e.what();
    // "[json.exception.parse_error.101] parse error at line 1, column 2: syntax error ..." -> the reason.
    if (const std::size_t colon = why.find(": ", why.find("parse error")); colon != std::string::npos) why = why.substr(colon + 2);
    return InvalidArgument(path + ":" + JsonLineColumn(text, e.byte) + ": not JSON: " + why);
  }
}

Status CheckJsonDepth(const nlohmann::json& j, const std::string& origin, int max_depth) {
  std::vector<std::pair<const nlohmann::json*, int>> stack = {{&j, 1}};
  while (!stack.empty()) {
    auto [v, depth] = stack.back();
    stack.pop_back();
    if (!v->is_structured()) continue;
    if (depth > max_depth) {
      return InvalidArgument("'" + origin + "' nests arrays/objects more than " + std::to_string(max_depth) +
                             " levels deep; dfworker refuses such a file (a real one nests far less)");
    }
    for (const nlohmann::json& child : *v) {
      if (child.is_structured()) stack.emplace_back(&child, depth + 1);
    }
  }
  return Status::OK();
}

Result<int64_t> JsonIntIn(const nlohmann::json& v, int64_t lo, int64_t hi, const std::string& what) {
  auto refuse = [&] {
    std::string shown = v.is_structured() ? std::string(v.is_array() ? "a list" : "an object") : v.dump();
    return InvalidArgument(what + " must be an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " + shown);
  };
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (hi < 0 || u > static_cast<uint64_t>(hi) || static_cast<int64_t>(u) < lo) return refuse();
    return static_cast<int64_t>(u);
  }
  if (v.is_number_integer()) {
    const int64_t i = v.get<int64_t>();
    if (i < lo || i > hi) return refuse();
    return i;
  }
  return refuse();
}

}  // namespace dfw
