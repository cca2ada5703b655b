// Compiles arbitrary bytes as a def callable (CompileCallable) and calls it on a fixed row. Any
// outcome but a crash, a hang, a leak or a sanitizer report is fine: the step, recursion, memory
// and regex limits must stop every input.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "dfw/record/expression.h"

namespace {

const dfw::Row& FixedRow() {
  static const dfw::Row row = [] {
    dfw::Row inner;
    inner.Append("y", dfw::Value::String("deep"));
    dfw::Row r;
    r.Append("a", dfw::Value::Int(3));
    r.Append("b", dfw::Value::Float(-4.5));
    r.Append("plant", dfw::Value::String("\xf0\x9f\x8d\x93, Strawberry, perennial"));
    r.Append("s", dfw::Value::String("  Hello W\xc3\xb6rld \xff "));
    r.Append("n", dfw::Value());
    r.Append("xs", dfw::Value::FromList({dfw::Value::Int(1), dfw::Value::String("a"), dfw::Value::Float(2.5)}));
    r.Append("nested", dfw::Value::FromRow(inner));
    return r;
  }();
  return row;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 4096) return 0;  // long inputs only slow the fuzzer down
  std::string_view src(reinterpret_cast<const char*>(data), size);
  auto compiled = dfw::CompileCallable(src);
  if (!compiled.ok()) return 0;
  auto v = (*compiled)->Evaluate(FixedRow());
  bool small = v.ok() && !(v->is_string() && v->as_string().size() > (1u << 16)) &&
               !(v->is_list() && v->as_list().size() > (1u << 12));
  if (small) (void)v->ToJson();
  return 0;
}
