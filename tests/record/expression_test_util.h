// Test helpers for the expression tests: rows written as JSON, results compared as JSON.
#pragma once

#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "dfw/record/expression.h"
#include "dfw/record/value.h"

namespace dfw::testing {

inline Value ValueFromJson(const nlohmann::ordered_json& j) {
  if (j.is_null()) return Value();
  if (j.is_boolean()) return Value::Bool(j.get<bool>());
  if (j.is_number_integer()) return Value::Int(j.get<int64_t>());
  if (j.is_number()) return Value::Float(j.get<double>());
  if (j.is_string()) return Value::String(j.get<std::string>());
  if (j.is_array()) {
    List items;
    for (const auto& e : j) items.push_back(ValueFromJson(e));
    return Value::FromList(std::move(items));
  }
  Row row;
  for (const auto& [k, v] : j.items()) row.Append(k, ValueFromJson(v));
  return Value::FromRow(std::move(row));
}

// `json` must be an object; field order is kept.
inline Row RowFromJson(const std::string& json) {
  return ValueFromJson(nlohmann::ordered_json::parse(json)).as_row();
}

// The row most tests evaluate against.
inline Row SampleRow() {
  return RowFromJson(R"({"a": 3, "b": 4.5, "s": "  Hello World  ", "t": "abc", "n": null, "flag": true,
      "xs": [1, 2, 3], "words": ["b", "a", "c"], "nested": {"x": 1, "inner": {"y": "deep"}}, "empty": "",
      "zero": 0, "neg": -7, "big": 9223372036854775807, "small": -9223372036854775808, "u": "h\u00e9llo w\u00f6rld",
      "csv": "x,y,,z", "label": "spam"})");
}

// Compiles and evaluates; the result as compact JSON, or "error: <message>".
inline std::string Eval(const std::string& source, const Row& row, ExprLanguage lang = ExprLanguage::kPython) {
  auto compiled = CompileExpression(source, lang);
  if (!compiled.ok()) return "compile error: " + compiled.status().message();
  auto v = (*compiled)->Evaluate(row);
  if (!v.ok()) return "error: " + v.status().message();
  return v->ToJson();
}

}  // namespace dfw::testing
