// Compiles arbitrary bytes as a Python expression (and as a generic one) and evaluates the result
// on a fixed row. Any outcome but a crash, a hang or a sanitizer report is fine. Then evaluates it
// over a batch of two alternating rows (the column-at-a-time path) and traps when a row's result
// differs from its own evaluation.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

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

// A second layout: the fixed row's names in another order, other types, fields missing.
const dfw::Row& OtherRow() {
  static const dfw::Row row = [] {
    dfw::Row r;
    r.Append("s", dfw::Value::Int(-2));
    r.Append("b", dfw::Value::String("b"));
    r.Append("a", dfw::Value::Float(0.5));
    r.Append("xs", dfw::Value::FromList({}));
    r.Append("flag", dfw::Value());
    return r;
  }();
  return row;
}

// The same value, kind for kind (1 is not 1.0, NaN is NaN), compared without formatting (results
// may be tens of megabytes).
bool Same(const dfw::Value& a, const dfw::Value& b) {
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case dfw::Value::Kind::kFloat:
      return (std::isnan(a.as_float()) && std::isnan(b.as_float())) || a.as_float() == b.as_float();
    case dfw::Value::Kind::kList: {
      const dfw::List& x = a.as_list();
      const dfw::List& y = b.as_list();
      if (x.size() != y.size()) return false;
      for (std::size_t i = 0; i < x.size(); ++i) {
        if (!Same(x[i], y[i])) return false;
      }
      return true;
    }
    case dfw::Value::Kind::kRow: {
      const auto& x = a.as_row().fields();
      const auto& y = b.as_row().fields();
      if (x.size() != y.size()) return false;
      for (std::size_t i = 0; i < x.size(); ++i) {
        if (x[i].name != y[i].name || !Same(x[i].value, y[i].value)) return false;
      }
      return true;
    }
    default:
      return a == b;
  }
}

bool Same(const dfw::Result<dfw::Value>& a, const dfw::Result<dfw::Value>& b) {
  if (a.ok() != b.ok()) return false;
  return a.ok() ? Same(*a, *b) : a.status().message() == b.status().message();
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
    std::vector<dfw::Row> batch;
    for (int i = 0; i < 8; ++i) batch.push_back(i % 2 ? OtherRow() : FixedRow());
    std::vector<dfw::Result<dfw::Value>> got;
    (*compiled)->EvaluateBatch(batch.data(), batch.size(), got);
    if (got.size() != batch.size()) __builtin_trap();
    for (std::size_t i = 0; i < batch.size(); ++i) {
      if (!Same(got[i], (*compiled)->Evaluate(batch[i]))) __builtin_trap();
    }
  }
  return 0;
}
