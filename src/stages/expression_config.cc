#include "expression_config.h"

#include <algorithm>
#include <cctype>
#include <string_view>

#include <fmt/format.h>

#include "dfw/common/file.h"
#include "dfw/stages/config.h"
#include "python_callable.h"

namespace dfw::stages_internal {

Result<ExprLanguage> ConfigLanguage(const StageConfig& c) {
  ASSIGN_OR_RETURN(std::string lang, ConfigString(c, "language", std::string("generic")));
  if (lang == "generic") return ExprLanguage::kGeneric;
  if (lang == "python") return ExprLanguage::kPython;
  if (lang == "java" || lang == "javascript" || lang == "sql" || lang == "calcite") {
    return Unimplemented(fmt::format("{}: transform '{}' ({}): language '{}' is valid Beam YAML but is not supported "
                                     "by dfworker; use language: python (expression subset) or no language",
                                     NodeLocation(c, c.config["language"]), c.name, c.type, lang));
  }
  return ConfigKeyError(c, "language", "unknown language '" + lang + "'; allowed: python, generic (or omit it)");
}

namespace {

bool IsIdentStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool IsIdentChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

}  // namespace

Result<std::string> LambdaToExpression(const std::string& text) {
  auto trim = [](std::string_view v) {
    while (!v.empty() && std::isspace(static_cast<unsigned char>(v.front()))) v.remove_prefix(1);
    while (!v.empty() && std::isspace(static_cast<unsigned char>(v.back()))) v.remove_suffix(1);
    return v;
  };
  std::string_view src = trim(text);
  if (src.substr(0, 4) == "def " || src.find("\ndef ") != std::string_view::npos || src.substr(0, 7) == "import " ||
      src.substr(0, 5) == "from ") {
    return Unimplemented("only a one-expression 'lambda NAME: EXPR' is supported (no def, import or statements: "
                         "such callables run in CPython)");
  }
  if (src.substr(0, 6) != "lambda" || src.size() < 7 || !(std::isspace(static_cast<unsigned char>(src[6])) || src[6] == ':')) {
    return InvalidArgument("expected 'lambda NAME: EXPR'");
  }
  std::size_t colon = src.find(':');
  if (colon == std::string_view::npos) return InvalidArgument("'lambda' without ':'");
  std::string_view params = trim(src.substr(6, colon - 6));
  if (params.empty()) return InvalidArgument("a lambda here takes one parameter, the row (got none)");
  if (params.find(',') != std::string_view::npos) {
    return InvalidArgument("a lambda here takes one parameter, the row (got '" + std::string(params) + "')");
  }
  if (!IsIdentStart(params.front()) || !std::all_of(params.begin(), params.end(), IsIdentChar)) {
    return InvalidArgument("lambda parameter '" + std::string(params) + "' is not a name");
  }
  std::string_view body = trim(src.substr(colon + 1));
  if (body.empty()) return InvalidArgument("the lambda has no body");
  if (body.find('\n') != std::string_view::npos || body.find(';') != std::string_view::npos) {
    return Unimplemented("only a one-expression lambda body is supported (no statements)");
  }
  // NAME.field → field, outside string literals; any other use of NAME is refused.
  std::string out;
  for (std::size_t i = 0; i < body.size();) {
    char c = body[i];
    if (c == '\'' || c == '"') {
      std::size_t j = i + 1;
      while (j < body.size() && body[j] != c) j += body[j] == '\\' ? 2 : 1;
      j = std::min(j + 1, body.size());
      out.append(body.substr(i, j - i));
      i = j;
      continue;
    }
    if (IsIdentStart(c) && (i == 0 || !IsIdentChar(body[i - 1]))) {
      std::size_t j = i;
      while (j < body.size() && IsIdentChar(body[j])) ++j;
      std::string_view word = body.substr(i, j - i);
      if (word == params && (i == 0 || body[i - 1] != '.')) {
        std::size_t k = j;
        while (k < body.size() && body[k] == ' ') ++k;
        if (k < body.size() && body[k] == '.' && k + 1 < body.size() && IsIdentStart(body[k + 1])) {
          i = k + 1;  // drop "NAME." and keep the field name
          continue;
        }
        return Unimplemented("the lambda uses '" + std::string(params) + "' other than as " + std::string(params) +
                             ".field, which only CPython runs");
      }
      out.append(word);
      i = j;
      continue;
    }
    out.push_back(c);
    ++i;
  }
  return out;
}

namespace {

constexpr std::size_t kMaxUdfFileBytes = std::size_t{16} << 20;

// {callable: TEXT} or {path: FILE.py, name: FUNCTION}: the lambda subset when it compiles the
// callable, else CPython (python_callable.h).
Result<std::unique_ptr<CompiledExpression>> CompileCallableNode(const ConfigNode& node, const std::string& where,
                                                                ExprLanguage language) {
  for (const ConfigEntry& kv : node.entries()) {
    const std::string key = kv.key.Scalar();
    if (key != "callable" && key != "path" && key != "name" && key != "output_type") {
      return InvalidArgument(where + ": unknown key '" + key +
                             "' beside a callable; allowed: callable, or path and name, and output_type");
    }
  }
  if (node["callable"].IsDefined()) {
    if (!node["callable"].IsScalar()) return InvalidArgument(where + ": 'callable' must be a string of Python source");
    const std::string text = node["callable"].Scalar();
    std::unique_ptr<CompiledExpression> fast;
    Result<std::string> body = LambdaToExpression(text);
    if (body.ok()) {
      auto compiled = CompileExpression(*body, ExprLanguage::kPython);
      if (compiled.ok()) fast = std::move(compiled).value();
    }
    if (language != ExprLanguage::kPython) {
      if (fast != nullptr) return fast;
      return InvalidArgument(where + ": callable '" + text + "' needs language: python");
    }
    auto made = MakePythonExpression(std::move(fast), {PythonForm::kCallable, text, "", text});
    if (!made.ok()) return Status(made.status().code(), where + ": callable: " + made.status().message());
    return made;
  }
  if (language != ExprLanguage::kPython) return InvalidArgument(where + ": a 'path'/'name' UDF needs language: python");
  if (!node["path"].IsScalar() || !node["name"].IsScalar()) {
    return InvalidArgument(where + ": a Python file UDF needs both 'path' (a .py file) and 'name' (its function)");
  }
  const std::string path = node["path"].Scalar();
  const std::string name = node["name"].Scalar();
  if (!path.ends_with(".py")) return InvalidArgument(where + ": File \"" + path + "\" is not a valid .py file.");
  Result<std::string> text = ReadWholeFile(path, kMaxUdfFileBytes);
  if (!text.ok()) return Status(text.status().code(), where + ": path: " + text.status().message());
  auto made = MakePythonExpression(nullptr, {PythonForm::kModule, *text, name, path + ":" + name});
  if (!made.ok()) return Status(made.status().code(), where + ": " + path + ": " + made.status().message());
  return made;
}

// `output_type:` beside an expression or a callable: a JSON-schema type name (or {type: NAME}), or
// Beam's `bytes`; "" when absent.
Result<std::string> OutputType(const ConfigNode& node, const std::string& where) {
  if (!node["output_type"].IsDefined()) return std::string();
  const ConfigNode* t = &node["output_type"];
  if (t->IsMap() && (*t)["type"].IsScalar()) t = &(*t)["type"];
  if (!t->IsScalar()) return InvalidArgument(where + ": output_type must be a JSON-schema type name");
  std::string type = t->Scalar();
  static const char* kTypes[] = {"string", "integer", "number", "boolean", "array", "object", "null", "bytes"};
  for (const char* k : kTypes) {
    if (type == k) return type;
  }
  return InvalidArgument(where + ": output_type '" + type +
                         "' is not one of string, integer, number, boolean, array, object, null, bytes");
}

}  // namespace

Result<ConfiguredExpression> CompileConfigExpression(const StageConfig& c, const ConfigNode& node,
                                                     const std::string& what, ExprLanguage language) {
  std::string where = fmt::format("{}: transform '{}' ({}): {}", NodeLocation(c, node), c.name, c.type, what);
  ConfiguredExpression out;
  std::string source;
  if (node.IsScalar()) {
    source = node.Scalar();
  } else if (node.IsMap() && (node["callable"].IsDefined() || node["path"].IsDefined() || node["name"].IsDefined())) {
    ASSIGN_OR_RETURN(out.expr, CompileCallableNode(node, where, language));
    ASSIGN_OR_RETURN(out.output_type, OutputType(node, where));
    return out;
  } else if (node.IsMap()) {
    for (const ConfigEntry& kv : node.entries()) {
      std::string key = kv.key.Scalar();
      if (key != "expression" && key != "output_type") {
        return InvalidArgument(where + ": unknown key '" + key + "'; allowed: expression, output_type");
      }
    }
    if (!node["expression"].IsDefined() || !node["expression"].IsScalar()) {
      return InvalidArgument(where + ": a mapping needs 'expression: <text>'");
    }
    source = node["expression"].Scalar();
    ASSIGN_OR_RETURN(out.output_type, OutputType(node, where));
  } else {
    return InvalidArgument(where + ": expected an expression string");
  }
  auto compiled = CompileExpression(source, language);
  if (language == ExprLanguage::kPython) {
    // What the subset does not compile runs in CPython, which then reports any syntax error.
    auto made = MakePythonExpression(compiled.ok() ? std::move(compiled).value() : nullptr,
                                     {PythonForm::kExpression, source, "", source});
    if (!made.ok()) return Status(made.status().code(), where + ": '" + source + "': " + made.status().message());
    out.expr = std::move(made).value();
    return out;
  }
  if (!compiled.ok()) return Status(compiled.status().code(), where + ": '" + source + "': " + compiled.status().message());
  out.expr = std::move(compiled).value();
  return out;
}

std::string CheckOutputType(const Value& v, const std::string& t) {
  if (t.empty()) return "";
  bool ok = (t == "string" && v.is_string()) || (t == "integer" && v.is_int()) || (t == "number" && v.is_number()) ||
            (t == "boolean" && v.is_bool()) || (t == "array" && v.is_list()) || (t == "object" && v.is_row()) ||
            (t == "null" && v.is_null()) || (t == "bytes" && v.is_bytes());
  if (ok) return "";
  return fmt::format("output_type is {} but the expression returned {} ({})", t, v.TypeName(), v.ToJson());
}

}  // namespace dfw::stages_internal
