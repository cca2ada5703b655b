#include "expression_config.h"

#include <fmt/format.h>

#include "dfw/stages/config.h"

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

Result<ConfiguredExpression> CompileConfigExpression(const StageConfig& c, const YAML::Node& node,
                                                     const std::string& what, ExprLanguage language) {
  std::string where = fmt::format("{}: transform '{}' ({}): {}", NodeLocation(c, node), c.name, c.type, what);
  ConfiguredExpression out;
  std::string source;
  if (node.IsScalar()) {
    source = node.Scalar();
  } else if (node.IsMap()) {
    for (const char* udf : {"callable", "path", "name"}) {
      if (node[udf].IsDefined()) {
        return Unimplemented(where + ": '" + udf + "' UDFs are valid Beam YAML but are not supported by dfworker; "
                             "write a Python expression instead ({expression: ...} or a plain string)");
      }
    }
    for (const auto& kv : node) {
      std::string key = kv.first.Scalar();
      if (key != "expression" && key != "output_type") {
        return InvalidArgument(where + ": unknown key '" + key + "'; allowed: expression, output_type");
      }
    }
    if (!node["expression"].IsDefined() || !node["expression"].IsScalar()) {
      return InvalidArgument(where + ": a mapping needs 'expression: <text>'");
    }
    source = node["expression"].Scalar();
    if (node["output_type"].IsDefined()) {
      YAML::Node t = node["output_type"];
      if (t.IsMap() && t["type"].IsScalar()) t = t["type"];
      if (!t.IsScalar()) return InvalidArgument(where + ": output_type must be a JSON-schema type name");
      out.output_type = t.Scalar();
      static const char* kTypes[] = {"string", "integer", "number", "boolean", "array", "object", "null"};
      bool known = false;
      for (const char* k : kTypes) known = known || out.output_type == k;
      if (!known) {
        return InvalidArgument(where + ": output_type '" + out.output_type +
                               "' is not one of string, integer, number, boolean, array, object, null");
      }
    }
  } else {
    return InvalidArgument(where + ": expected an expression string");
  }
  auto compiled = CompileExpression(source, language);
  if (!compiled.ok()) {
    return Status(compiled.status().code(), where + ": '" + source + "': " + compiled.status().message());
  }
  out.expr = std::move(compiled).value();
  return out;
}

std::string CheckOutputType(const Value& v, const std::string& t) {
  if (t.empty()) return "";
  bool ok = (t == "string" && v.is_string()) || (t == "integer" && v.is_int()) || (t == "number" && v.is_number()) ||
            (t == "boolean" && v.is_bool()) || (t == "array" && v.is_list()) || (t == "object" && v.is_row()) ||
            (t == "null" && v.is_null());
  if (ok) return "";
  return fmt::format("output_type is {} but the expression returned {} ({})", t, v.TypeName(), v.ToJson());
}

}  // namespace dfw::stages_internal
