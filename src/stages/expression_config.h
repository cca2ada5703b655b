// Reading expressions out of a transform's config (beam-yaml.md §6): `language`, and each
// expression given as a string, as {expression: ..., output_type: ...}, as a callable
// {callable: "lambda row: row.x * 2"} (any Python Beam takes: a def, imports, a dotted name), or as
// a Python file UDF {path: udf.py, name: fn}. Python runs in the compiled expression subset when
// it compiles it and in CPython otherwise (python_callable.h). Other languages are valid Beam YAML
// that dfworker refuses with a sentence.
#pragma once

#include <memory>
#include <string>

#include "dfw/common/status.h"
#include "dfw/record/expression.h"
#include "dfw/stages/stage.h"

namespace dfw::stages_internal {

// `language:` absent or "generic" = kGeneric, "python" = kPython; java/javascript/sql/calcite are
// kUnimplemented; anything else kInvalidArgument listing the allowed values.
Result<ExprLanguage> ConfigLanguage(const StageConfig& c);

struct ConfiguredExpression {
  std::unique_ptr<CompiledExpression> expr;
  std::string output_type;  // JSON-schema type name from `output_type`, "" when not declared
};

// The body of `lambda NAME: EXPR` with every NAME.field written as field, ready for the expression
// compiler (the fast path). kInvalidArgument: not a lambda, no or two parameters, empty body;
// kUnimplemented: def/import/statements, or NAME used other than as NAME.field (CPython's to run).
Result<std::string> LambdaToExpression(const std::string& text);

// Compiles `node` (the value of config key `what`, e.g. "fields.n_words" or "keep").
Result<ConfiguredExpression> CompileConfigExpression(const StageConfig& c, const ConfigNode& node,
                                                     const std::string& what, ExprLanguage language);

// "" when `v` matches the JSON-schema type (string, integer, number, boolean, array, object, null),
// else a message naming both.
std::string CheckOutputType(const Value& v, const std::string& output_type);

}  // namespace dfw::stages_internal
