// ParseJsonText (dfw/common/json_text.h).
#include "dfw/common/json_text.h"

#include "dfw/common/strings.h"

namespace dfw {

Result<nlohmann::json> ParseJsonText(const std::string& path, const std::string& text) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    std::string why = e.what();
    // "[json.exception.parse_error.101] parse error at line 1, column 2: syntax error ..." -> the reason.
    if (const std::size_t colon = why.find(": ", why.find("parse error")); colon != std::string::npos) why = why.substr(colon + 2);
    return InvalidArgument(path + ":" + JsonLineColumn(text, e.byte) + ": not JSON: " + why);
  }
}

}  // namespace dfw
