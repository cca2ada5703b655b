// Differential: the compiled expression subset (dfw/record/expression.h, the fast path) against
// CPython (dfw/python/python.h, the reference). The input bytes drive a small generator of Python
// expressions over a row whose values also come from the bytes. Whenever the fast path compiles an
// expression and returns a value, CPython must return the same value of the same type; where the
// fast path fails a row, the row goes to CPython (stages' hand-off), so only successes are judged.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "dfw/python/python.h"
#include "dfw/record/expression.h"

// The embedded interpreter keeps its objects until the process ends, by design.
extern "C" const char* __lsan_default_suppressions() { return "leak:libpython3.11\nleak:libdfw_python\n"; }

namespace {

class Bytes {
 public:
  Bytes(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  uint8_t Next() { return at_ < size_ ? data_[at_++] : 0; }
  int Pick(int n) { return Next() % n; }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t at_ = 0;
};

const char* kFields[] = {"a", "b", "s", "flag", "xs", "n", "ts", "by"};
const char* kStrings[] = {"''", "'x'", "'Hello World'", "' pad '", "'a,b,,c'", "'ä'", "'10'", "'-3.5'"};
const char* kBinary[] = {"+", "-", "*", "/", "//", "%", "**", "==", "!=", "<", "<=", ">", ">=", "and", "or", "in"};
const char* kCalls[] = {"len", "str", "int", "float", "round", "abs", "bool"};
const char* kMethods[] = {"lower()", "upper()", "strip()", "split()", "split(',')", "startswith('H')", "endswith('d')",
                          "replace('l', 'L')"};

std::string Expr(Bytes& in, int depth) {
  const int choice = depth >= 4 ? in.Pick(3) : in.Pick(10);
  switch (choice) {
    case 0: return kFields[in.Pick(8)];
    case 1: return std::to_string(static_cast<int>(in.Next()) - 128);
    case 2: return in.Pick(2) ? kStrings[in.Pick(8)] : std::to_string((static_cast<int>(in.Next()) - 128) / 8.0);
    case 3: return "(" + Expr(in, depth + 1) + " " + kBinary[in.Pick(16)] + " " + Expr(in, depth + 1) + ")";
    case 4: return std::string(in.Pick(2) ? "-" : "not ") + Expr(in, depth + 1);
    case 5: return "(" + Expr(in, depth + 1) + " if " + Expr(in, depth + 1) + " else " + Expr(in, depth + 1) + ")";
    case 6: return std::string(kCalls[in.Pick(7)]) + "(" + Expr(in, depth + 1) + ")";
    case 7: return std::string(in.Pick(2) ? "min" : "max") + "(" + Expr(in, depth + 1) + ", " + Expr(in, depth + 1) + ")";
    case 8: return Expr(in, depth + 1) + "." + kMethods[in.Pick(8)];
    default: return Expr(in, depth + 1) + "[" + std::to_string(in.Pick(7) - 3) + (in.Pick(2) ? ":]" : "]");
  }
}

dfw::Row MakeRow(Bytes& in) {
  dfw::Row r;
  r.AppendNull("a") = dfw::Value::Int(static_cast<int64_t>(static_cast<int8_t>(in.Next())) * (in.Pick(2) ? 1 : 1000003));
  r.AppendNull("b") = dfw::Value::Float((static_cast<int>(in.Next()) - 128) / 4.0);
  const std::string literal = kStrings[in.Pick(8)];
  r.AppendNull("s") = dfw::Value::String(literal.substr(1, literal.size() - 2));  // without its quotes
  r.AppendNull("flag") = dfw::Value::Bool(in.Pick(2) == 1);
  r.AppendNull("xs") = dfw::Value::FromList({dfw::Value::Int(in.Pick(5)), dfw::Value::String("a"), dfw::Value::Float(2.5)});
  r.AppendNull("n") = dfw::Value();
  // Beam's value types: a Timestamp (whole or fractional seconds, either sign) and bytes.
  r.AppendNull("ts") = dfw::Value::Timestamp((static_cast<int64_t>(in.Next()) - 128) * (in.Pick(2) ? 1000000 : 250001));
  r.AppendNull("by") = dfw::Value::Bytes(in.Pick(2) ? std::string("a'\0\xff", 4) : std::string("x\"y"));
  return r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Bytes in(data, size);
  const dfw::Row row = MakeRow(in);
  const std::string source = Expr(in, 0);
  auto fast = dfw::CompileExpression(source, dfw::ExprLanguage::kPython);
  if (!fast.ok()) return 0;  // CPython's alone
  dfw::Result<dfw::Value> want_fast = (*fast)->Evaluate(row);
  if (!want_fast.ok()) return 0;  // handed to CPython
  if (want_fast->is_string() && want_fast->as_string().size() > (1u << 16)) return 0;
  auto py = dfw::python::Function::FromExpression(source);
  if (!py.ok()) {
    std::fprintf(stderr, "CPython did not compile '%s' that the fast path did: %s\n", source.c_str(), py.status().message().c_str());
    std::abort();
  }
  dfw::Result<dfw::Value> got = (*py)->CallRow(row);
  const std::string fast_text = std::string(want_fast->TypeName()) + " " + want_fast->ToJson();
  const std::string py_text = got.ok() ? std::string(got->TypeName()) + " " + got->ToJson() : "error " + got.status().message();
  if (fast_text != py_text) {
    std::fprintf(stderr, "'%s' on %s: fast path %s, CPython %s\n", source.c_str(), dfw::Value::FromRow(row).ToJson().c_str(),
                 fast_text.c_str(), py_text.c_str());
    std::abort();
  }
  return 0;
}
