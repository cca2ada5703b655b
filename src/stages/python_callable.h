// The callable hand-off (design.md "The user's Python"): a Python expression or callable runs in
// the compiled expression subset (dfw/record/expression.h) when that compiles it, and in CPython
// (dfw/python/python.h) otherwise. A row the subset fails on is handed to CPython as well, so every
// answer, error included, is CPython's (fuzz/python_expression_diff_fuzz.cc keeps the two equal).
#pragma once

#include <memory>
#include <string>

#include "dfw/common/status.h"
#include "dfw/record/expression.h"

namespace dfw::stages_internal {

// How the Python side names its function (dfw/python/python.h Function::From*).
enum class PythonForm { kExpression, kCallable, kModule };

struct PythonSource {
  PythonForm form = PythonForm::kExpression;
  std::string text;   // the expression, the callable's text, or the module file's source
  std::string name;   // kModule: the function's name
  std::string shown;  // what source() reports (the user's text; for kModule "path:name")
};

// With `fast` (what the subset compiled): the subset evaluates, CPython takes the rows it fails on
// (started on first need; where it cannot start, the subset's error stands). Without: CPython only,
// compiled now, so a syntax error or a missing libpython is this call's error (kUnavailable
// names the package to install).
Result<std::unique_ptr<CompiledExpression>> MakePythonExpression(std::unique_ptr<CompiledExpression> fast, PythonSource source);

}  // namespace dfw::stages_internal
