#include <string>

#include <nlohmann/json.hpp>

#include "dfw/python/python.h"
#include "python/runtime_internal.h"

namespace dfw::python {
namespace {

Result<std::string> RenderWith(std::string_view mode, std::string_view path, std::string_view source,
                               std::string_view variables_json) {
  ASSIGN_OR_RETURN(python_internal::Embedded * py, python_internal::Interpreter());
  Result<std::string> out = py->Render(mode, path, source, variables_json);
  if (!out.ok() && out.status().message().find("No module named 'jinja2'") != std::string::npos) {
    return Unavailable("Jinja2 is not installed for the Python that dfworker runs: install the Debian package "
                       "python3-jinja2 (apt-get install -y python3-jinja2)");
  }
  return out;
}

}  // namespace

Result<std::string> RenderPipelineTemplate(std::string_view path, std::string_view source, std::string_view variables_json,
                                           const std::vector<std::pair<std::string, std::string>>& string_variables) {
  // The variables' text travels as a string, read by Python's json module: a document nested
  // 40,000 deep is Python's RecursionError there, not a C++ parser's stack.
  nlohmann::json request = {{"json", std::string(variables_json)}, {"overrides", nlohmann::json::object()}};
  for (const auto& [name, value] : string_variables) request["overrides"][name] = value;
  return RenderWith("pipeline", path, source, request.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

Result<std::string> RenderChatTemplate(std::string_view name, std::string_view source, std::string_view variables_json) {
  return RenderWith("chat", name, source, variables_json);
}

}  // namespace dfw::python
