#include "dfw/template/pipeline_file.h"

#include <nlohmann/json.hpp>

namespace dfw::tmpl {
namespace {

// Offset of the first line that is neither blank nor a '#' comment (Beam's strip_leading_comments).
std::size_t BodyStart(std::string_view text) {
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    end = end == std::string_view::npos ? text.size() : end + 1;
    const std::string_view line = text.substr(pos, end - pos);
    const std::size_t first = line.find_first_not_of(" \t\r\n\f\v");
    if (first != std::string_view::npos && line[first] != '#') break;
    pos = end;
  }
  return pos;
}

}  // namespace

Result<Value> ParseJinjaVariables(std::string_view json) {
  nlohmann::json j = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return InvalidArgument("--jinja_variables: not valid JSON: '" + std::string(json) + "'");
  if (!j.is_object()) return InvalidArgument("--jinja_variables: expected a JSON object such as '{\"K\": 3}', got '" + std::string(json) + "'");
  return Value::FromJson(j);
}

bool HasTemplateSyntax(std::string_view text) {
  const std::string_view body = text.substr(BodyStart(text));
  for (std::size_t i = body.find('{'); i != std::string_view::npos && i + 1 < body.size(); i = body.find('{', i + 1)) {
    if (body[i + 1] == '{' || body[i + 1] == '%' || body[i + 1] == '#') return true;
  }
  return false;
}

Result<std::string> RenderPipelineFile(const std::string& path, std::string_view text, const Value& variables,
                                       const TemplateLimits& limits) {
  if (!HasTemplateSyntax(text)) return std::string(text);
  const std::size_t start = BodyStart(text);
  std::string source;
  for (std::size_t i = 0; i < start; ++i) {
    if (text[i] == '\n') source += '\n';
  }
  source.append(text.substr(start));
  RenderOptions options;
  const std::size_t slash = path.rfind('/');
  options.search_paths.push_back(slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash));
  options.limits = limits;
  return RenderTemplate(source, path, variables, options);
}

}  // namespace dfw::tmpl
