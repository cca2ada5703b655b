// Builtin functions: len str int float bool round abs min max sum any all sorted list.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "record/expression_ast.h"

namespace dfw::expr {
namespace {

enum Builtin : uint8_t { kLen, kStr, kInt, kFloat, kBool, kRound, kAbs, kMin, kMax, kSum, kAny, kAll, kSorted, kList };


// The items of an iterable: a list borrowed as is; a str's characters and a row's field names copied.
struct Items {
  const List* list = nullptr;
  List owned;
};

Status GetItems(const Value& v, EvalContext& ctx, Items& out) {
  if (v.is_list()) {
    out.list = &v.as_list();
    return Status::OK();
  }
  if (v.is_string()) {
    const std::string& s = v.as_string();
    RETURN_IF_ERROR(ctx.Charge(s.size() * sizeof(Value)));
    std::vector<std::size_t> off = CodePointOffsets(s);
    for (std::size_t i = 0; i + 1 < off.size(); ++i) out.owned.push_back(Value::String(s.substr(off[i], off[i + 1] - off[i])));
  } else if (v.is_row()) {
    for (const Field& f : v.as_row().fields()) out.owned.push_back(Value::String(f.name));
  } else {
    return EvalError("TypeError: '" + PyType(v) + "' object is not iterable");
  }
  out.list = &out.owned;
  return Status::OK();
}

Result<int64_t> FloatToInt(double d) {
  if (std::isnan(d)) return EvalError("ValueError: cannot convert float NaN to integer");
  if (std::isinf(d)) return EvalError("OverflowError: cannot convert float infinity to integer");
  if (d >= 9223372036854775808.0 || d < -9223372036854775808.0)
    return EvalError("OverflowError: " + PyRepr(Value::Float(d)) + " does not fit in a 64-bit int");
  return static_cast<int64_t>(d);
}

std::string_view TrimPy(std::string_view s) {
  auto ws = [](char c) { return c == ' ' || (c >= '\t' && c <= '\r'); };
  while (!s.empty() && ws(s.front())) s.remove_prefix(1);
  while (!s.empty() && ws(s.back())) s.remove_suffix(1);
  return s;
}

// Removes underscores that sit between two digits; false when one sits anywhere else.
bool StripUnderscores(std::string_view s, std::string* out) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '_') { *out += s[i]; continue; }
    if (i == 0 || i + 1 == s.size() || !std::isdigit(static_cast<unsigned char>(s[i - 1])) ||
        !std::isdigit(static_cast<unsigned char>(s[i + 1])))
      return false;
  }
  return true;
}

Result<Value> ToInt(const Value& v) {
  if (IsIntLike(v)) return Value::Int(IntOf(v));
  if (v.is_float()) {
    ASSIGN_OR_RETURN(int64_t i, FloatToInt(std::trunc(v.as_float())));
    return Value::Int(i);
  }
  if (!v.is_string())
    return EvalError("TypeError: int() argument must be a string or a real number, not '" + PyType(v) + "'");
  std::string_view s = TrimPy(v.as_string());
  std::string digits;
  bool ok = StripUnderscores(s, &digits) && !digits.empty();
  std::size_t start = ok && (digits[0] == '+' || digits[0] == '-') ? 1 : 0;
  ok = ok && digits.size() > start && std::all_of(digits.begin() + static_cast<std::ptrdiff_t>(start), digits.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
  if (!ok) return EvalError("ValueError: invalid literal for int() with base 10: " + PyRepr(v));
  errno = 0;
  long long r = std::strtoll(digits.c_str(), nullptr, 10);
  if (errno == ERANGE) return EvalError("OverflowError: int(" + PyRepr(v) + ") does not fit in 64 bits (ints here are int64)");
  return Value::Int(r);
}

Result<Value> ToFloat(const Value& v) {
  if (IsIntLike(v)) return Value::Float(static_cast<double>(IntOf(v)));
  if (v.is_float()) return v;
  if (!v.is_string()) return EvalError("TypeError: float() argument must be a string or a real number, not '" + PyType(v) + "'");
  std::string_view s = TrimPy(v.as_string());
  std::string t;
  for (char c : s) t += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::string_view body = t;
  if (!body.empty() && (body[0] == '+' || body[0] == '-')) body.remove_prefix(1);
  if (body == "inf" || body == "infinity" || body == "nan") {
    double d = body == "nan" ? NAN : INFINITY;
    return Value::Float(t[0] == '-' ? -d : d);
  }
  std::string clean;
  bool ok = StripUnderscores(t, &clean) && !body.empty();
  // Only digits, one '.', and an exponent: no hex floats or other strtod extensions.
  ok = ok && clean.find_first_not_of("0123456789.e+-") == std::string::npos && clean.find("x") == std::string::npos;
  char* end = nullptr;
  double d = ok ? std::strtod(clean.c_str(), &end) : 0;
  if (!ok || end != clean.c_str() + clean.size() || clean.empty())
    return EvalError("ValueError: could not convert string to float: " + PyRepr(v));
  return Value::Float(d);
}

Result<Value> Round(const Value& x, const Value* nd) {
  if (!x.is_number() && !x.is_bool()) return EvalError("TypeError: type " + PyType(x) + " doesn't define __round__ method");
  if (nd != nullptr && !nd->is_null() && !IsIntLike(*nd))
    return EvalError("TypeError: '" + PyType(*nd) + "' object cannot be interpreted as an integer");
  bool has_nd = nd != nullptr && !nd->is_null();
  if (IsIntLike(x)) {
    int64_t v = IntOf(x);
    if (!has_nd || IntOf(*nd) >= 0) return Value::Int(v);
    int64_t e = -IntOf(*nd);
    if (e >= 19) return Value::Int(0);
    int64_t p = 1;
    for (int64_t i = 0; i < e; ++i) p *= 10;
    int64_t q = v / p, r = v % p;
    if (r < 0) { r += p; q -= 1; }  // floor division
    if (2 * static_cast<__int128>(r) > p || (2 * static_cast<__int128>(r) == p && (q & 1))) ++q;
    __int128 out = static_cast<__int128>(q) * p;
    if (out > INT64_MAX || out < INT64_MIN) return EvalError("OverflowError: round() result does not fit in 64 bits");
    return Value::Int(static_cast<int64_t>(out));
  }
  double d = x.as_float();
  if (!has_nd) {
    ASSIGN_OR_RETURN(int64_t i, FloatToInt(std::nearbyint(d)));  // ties to even, like Python
    return Value::Int(i);
  }
  int64_t n = IntOf(*nd);
  if (!std::isfinite(d) || n > 323) return Value::Float(d);
  if (n < -308) return Value::Float(std::copysign(0.0, d));
  if (n >= 0) {
    // printf rounds the exact binary value half-to-even, which is what CPython's dtoa does.
    int len = std::snprintf(nullptr, 0, "%.*f", static_cast<int>(n), d);
    std::string buf(static_cast<std::size_t>(len) + 1, '\0');
    std::snprintf(buf.data(), buf.size(), "%.*f", static_cast<int>(n), d);
    return Value::Float(std::strtod(buf.c_str(), nullptr));
  }
  double p = std::pow(10.0, static_cast<double>(-n));
  return Value::Float(std::nearbyint(d / p) * p);
}

Result<Value> MinMax(bool is_max, const Value* const* args, int nargs, EvalContext& ctx) {
  Items items;
  List spread;
  if (nargs == 1) {
    RETURN_IF_ERROR(GetItems(*args[0], ctx, items));
  } else {
    for (int i = 0; i < nargs; ++i) spread.push_back(*args[i]);
    items.list = &spread;
  }
  const List& l = *items.list;
  if (l.empty()) return EvalError(std::string("ValueError: ") + (is_max ? "max" : "min") + "() iterable argument is empty");
  const Value* best = &l[0];
  for (std::size_t i = 1; i < l.size(); ++i) {
    ASSIGN_OR_RETURN(bool better, is_max ? PyLess(*best, l[i]) : PyLess(l[i], *best));
    if (better) best = &l[i];
  }
  return *best;
}

Result<Value> Sorted(const Value& v, const Value* reverse, EvalContext& ctx) {
  Items items;
  RETURN_IF_ERROR(GetItems(v, ctx, items));
  RETURN_IF_ERROR(ctx.Charge(items.list->size() * sizeof(Value)));
  List out = *items.list;
  bool rev = reverse != nullptr && IsTruthy(*reverse);
  Status error;
  // After the first TypeError every comparison answers false, which keeps the comparator
  // deterministic (and the sort memory-safe); the error is reported once the sort returns.
  std::stable_sort(out.begin(), out.end(), [&](const Value& a, const Value& b) {
    if (!error.ok()) return false;
    Result<bool> r = rev ? PyLess(b, a) : PyLess(a, b);
    if (!r.ok()) { error = r.status(); return false; }
    return *r;
  });
  RETURN_IF_ERROR(error);
  return Value::FromList(std::move(out));
}

}  // namespace

const std::vector<CallSpec>& Builtins() {
  static const std::vector<CallSpec> kSpecs = {
      {"len", 1, 1, {}},         {"str", 0, 1, {"object"}},  {"int", 0, 1, {}},   {"float", 0, 1, {}},
      {"bool", 0, 1, {}},        {"round", 1, 2, {"number", "ndigits"}},       {"abs", 1, 1, {}},
      {"min", 1, kMaxCallArgs, {}}, {"max", 1, kMaxCallArgs, {}}, {"sum", 1, 2, {"iterable", "start"}},
      {"any", 1, 1, {}},         {"all", 1, 1, {}},          {"sorted", 1, 2, {"iterable", "reverse"}},
      {"list", 0, 1, {}}};
  return kSpecs;
}

Result<Value> CallBuiltin(uint8_t fn, const Value* const* args, int nargs, EvalContext& ctx) {
  const Value* a = nargs > 0 ? args[0] : nullptr;
  switch (static_cast<Builtin>(fn)) {
    case kLen:
      if (a->is_string()) return Value::Int(static_cast<int64_t>(CodePointCount(a->as_string())));
      if (a->is_list()) return Value::Int(static_cast<int64_t>(a->as_list().size()));
      if (a->is_row()) return Value::Int(static_cast<int64_t>(a->as_row().size()));
      return EvalError("TypeError: object of type '" + PyType(*a) + "' has no len()");
    case kStr: return a == nullptr ? Value::String("") : a->is_string() ? *a : Value::String(PyStr(*a));
    case kInt: return a == nullptr ? Value::Int(0) : ToInt(*a);
    case kFloat: return a == nullptr ? Value::Float(0.0) : ToFloat(*a);
    case kBool: return Value::Bool(a != nullptr && IsTruthy(*a));
    case kRound: return Round(*a, nargs > 1 ? args[1] : nullptr);
    case kAbs:
      if (a->is_float()) return Value::Float(std::fabs(a->as_float()));
      if (IsIntLike(*a)) {
        int64_t v = IntOf(*a);
        if (v == INT64_MIN) return EvalError("OverflowError: abs(" + std::to_string(v) + ") does not fit in 64 bits");
        return Value::Int(v < 0 ? -v : v);
      }
      return EvalError("TypeError: bad operand type for abs(): '" + PyType(*a) + "'");
    case kMin: return MinMax(false, args, nargs, ctx);
    case kMax: return MinMax(true, args, nargs, ctx);
    case kSum: {
      const Value* start = nargs > 1 ? args[1] : nullptr;
      if (start != nullptr && start->is_string()) return EvalError("TypeError: sum() can't sum strings [use ''.join(seq) instead]");
      Items items;
      RETURN_IF_ERROR(GetItems(*a, ctx, items));
      Value acc = start != nullptr ? *start : Value::Int(0);
      for (const Value& v : *items.list) {
        ASSIGN_OR_RETURN(acc, BinaryOp(Op::kAdd, acc, v, ctx));
      }
      return acc;
    }
    case kAny:
    case kAll: {
      Items items;
      RETURN_IF_ERROR(GetItems(*a, ctx, items));
      bool want = fn == kAny;
      for (const Value& v : *items.list)
        if (IsTruthy(v) == want) return Value::Bool(want);
      return Value::Bool(!want);
    }
    case kSorted: return Sorted(*a, nargs > 1 ? args[1] : nullptr, ctx);
    case kList: {
      if (a == nullptr) return Value::FromList({});
      Items items;
      RETURN_IF_ERROR(GetItems(*a, ctx, items));
      return items.list == &items.owned ? Value::FromList(std::move(items.owned)) : *a;
    }
  }
  return Internal("unknown builtin");
}

}  // namespace dfw::expr
