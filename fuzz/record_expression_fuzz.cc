// Compiles arbitrary bytes as a Python expression (and as a generic one) and evaluates the result
// on a fixed row. Any outcome but a crash, a hang or a sanitizer report is fine.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "dfw/record/expression.h"

namespace {

const dfw::Row& FixedRow() {
  static const dfw::Row row = [] {
    dfw::Row inner;
    inner.Append("y", dfw::Value::String("deep"));
    dfw::Row nested;
    nested.Append("x", dfw::Value::Int(1));
    nested.Append("inner", dfw::Value::FromRow(inner));
    dfw::Row r;
    r.Append("a", dfw::Value::Int(3));
    r.Append("b", dfw::Value::Float(-4.5));
    r.Append("s", dfw::Value::String("  Hello W\xc3\xb6rld \xff "));
    r.Append("n", dfw::Value());
    r.Append("flag", dfw::Value::Bool(true));
    r.Append("big", dfw::Value::Int(INT64_MAX));
    r.Append("xs", dfw::Value::FromList({dfw::Value::Int(1), dfw::Value::String("a"), dfw::Value::Float(2.5)}));
    r.Append("nested", dfw::Value::FromRow(nested));
    return r;
  }();
  return row;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view src(reinterpret_cast<const char*>(data), size);
  for (dfw::ExprLanguage lang : {dfw::ExprLanguage::kPython, dfw::ExprLanguage::kGeneric}) {
    auto compiled = dfw::CompileExpression(src, lang);
    if (!compiled.ok()) continue;
    auto v = (*compiled)->Evaluate(FixedRow());
    // Serialising exercises str/list results; multi-megabyte results (a legal 'x' * 10**7) only
    // slow the fuzzer down in value.cc, which has its own tests.
    bool small = v.ok() && !(v->is_string() && v->as_string().size() > (1u << 16)) &&
                 !(v->is_list() && v->as_list().size() > (1u << 12));
    if (small) (void)v->ToJson();
  }
  return 0;
}
