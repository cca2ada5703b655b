// Jinja2's filters (`x | name(args)`) and tests (`x is name`) that templates here may use.
// Errors carry no file:line (the evaluator adds it).
#pragma once

#include <string>

#include "dfw/template/value.h"

namespace dfw::tmpl {

// `default`/`d` sees an Undefined input; every other filter refuses one.
Result<Value> ApplyFilter(const std::string& name, const Value& input, const ValueList& args, const ValueDict& kwargs,
                          std::size_t max_string_bytes);
Result<bool> ApplyTest(const std::string& name, const Value& input, const ValueList& args);

}  // namespace dfw::tmpl
