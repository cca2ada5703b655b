// Arithmetic, bitwise and comparison operators with Python 3 semantics over int64 and double.
// bool behaves as an int (True + 1 == 2), as in Python.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "record/expression_ast.h"

namespace dfw::expr {
namespace {


Status Unsupported(Op op, const Value& a, const Value& b) {
  return InvalidArgument("TypeError: unsupported operand type(s) for " + std::string(OpText(op)) + ": '" +
                         std::string(PyTypeName(a)) + "' and '" + std::string(PyTypeName(b)) + "'");
}

Status Overflow(Op op, int64_t a, int64_t b) {
  return InvalidArgument("OverflowError: integer result of " + std::to_string(a) + " " + std::string(OpText(op)) + " " +
                         std::to_string(b) + " does not fit in 64 bits (ints here are int64)");
}

Result<Value> IntPow(int64_t base, int64_t exp) {
  if (exp < 0) {
    if (base == 0) return InvalidArgument("ZeroDivisionError: 0.0 cannot be raised to a negative power");
    return Value::Float(std::pow(static_cast<double>(base), static_cast<double>(exp)));
  }
  int64_t result = 1, b = base, e = exp;
  while (e > 0) {
    if ((e & 1) && __builtin_mul_overflow(result, b, &result)) return Overflow(Op::kPow, base, exp);
    e >>= 1;
    if (e > 0 && __builtin_mul_overflow(b, b, &b)) return Overflow(Op::kPow, base, exp);
  }
  return Value::Int(result);
}

Result<Value> FloatPow(double a, double b) {
  if (a == 0.0 && b < 0) return InvalidArgument("ZeroDivisionError: 0.0 cannot be raised to a negative power");
  if (a < 0 && std::isfinite(a) && std::isfinite(b) && b != std::floor(b))
    return InvalidArgument("ValueError: negative number cannot be raised to a fractional power (complex results are not supported)");
  double r = std::pow(a, b);
  if (std::isinf(r) && std::isfinite(a) && std::isfinite(b)) return InvalidArgument("OverflowError: result of ** is too large for a float");
  return Value::Float(r);
}

// CPython's float divmod: the remainder takes the divisor's sign.
void FloatDivMod(double a, double b, double* div, double* mod) {
  double m = std::fmod(a, b);
  double d = (a - m) / b;
  if (m != 0.0) {
    if ((b < 0) != (m < 0)) {
      m += b;
      d -= 1.0;
    }
  } else {
    m = std::copysign(0.0, b);
  }
  double fd;
  if (d != 0.0) {
    fd = std::floor(d);
    if (d - fd > 0.5) fd += 1.0;
  } else {
    fd = std::copysign(0.0, a / b);
  }
  *div = fd;
  *mod = m;
}

Result<Value> Repeat(const Value& seq, int64_t n, EvalContext& ctx) {
  if (n < 0) n = 0;
  std::size_t unit = seq.is_string() ? seq.as_string().size() : seq.as_list().size() * sizeof(Value);
  if (unit > 0 && n > 0) {
    std::size_t bytes = static_cast<uint64_t>(n) > static_cast<uint64_t>(kEvalBudgetBytes) / unit + 1
                            ? static_cast<std::size_t>(kEvalBudgetBytes) + 1
                            : unit * static_cast<std::size_t>(n);
    RETURN_IF_ERROR(ctx.Charge(bytes));
  }
  auto count = static_cast<std::size_t>(n);
  if (seq.is_string()) {
    const std::string& s = seq.as_string();
    if (s.size() == 1) return Value::String(std::string(count, s[0]));
    std::string out;
    out.reserve(s.size() * count);
    if (count > 0) out = s;
    while (out.size() < s.size() * count) out.append(out, 0, std::min(out.size(), s.size() * count - out.size()));
    return Value::String(std::move(out));
  }
  const List& l = seq.as_list();
  if (l.empty()) return Value::FromList({});  // [] * 10**12 is [] at once, not 10**12 empty inserts
  List out;
  out.reserve(l.size() * count);
  for (std::size_t i = 0; i < count; ++i) out.insert(out.end(), l.begin(), l.end());
  return Value::FromList(std::move(out));
}

Result<Value> IntBinary(Op op, int64_t x, int64_t y) {
  int64_t r;
  switch (op) {
    case Op::kAdd: if (__builtin_add_overflow(x, y, &r)) return Overflow(op, x, y); return Value::Int(r);
    case Op::kSub: if (__builtin_sub_overflow(x, y, &r)) return Overflow(op, x, y); return Value::Int(r);
    case Op::kMul: if (__builtin_mul_overflow(x, y, &r)) return Overflow(op, x, y); return Value::Int(r);
    case Op::kDiv:
      if (y == 0) return InvalidArgument("ZeroDivisionError: division by zero");
      return Value::Float(static_cast<double>(x) / static_cast<double>(y));
    case Op::kFloorDiv:
    case Op::kMod: {
      if (y == 0) return InvalidArgument(op == Op::kMod ? "ZeroDivisionError: integer modulo by zero" : "ZeroDivisionError: integer division or modulo by zero");
      if (y == -1) {  // avoids INT64_MIN / -1
        if (op == Op::kMod) return Value::Int(0);
        if (x == std::numeric_limits<int64_t>::min()) return Overflow(op, x, y);
        return Value::Int(-x);
      }
      int64_t q = x / y, m = x % y;
      if (m != 0 && ((m < 0) != (y < 0))) {
        m += y;
        q -= 1;
      }
      return Value::Int(op == Op::kMod ? m : q);
    }
    case Op::kPow: return IntPow(x, y);
    case Op::kBitAnd: return Value::Int(x & y);
    case Op::kBitOr: return Value::Int(x | y);
    case Op::kBitXor: return Value::Int(x ^ y);
    case Op::kShl:
    case Op::kShr:
      if (y < 0) return InvalidArgument("ValueError: negative shift count");
      if (op == Op::kShr) return Value::Int(y >= 63 ? (x < 0 ? -1 : 0) : x >> y);
      if (x == 0) return Value::Int(0);
      if (y >= 63 || (x > 0 ? x > (std::numeric_limits<int64_t>::max() >> y) : x < (std::numeric_limits<int64_t>::min() >> y)))
        return Overflow(op, x, y);
      return Value::Int(static_cast<int64_t>(static_cast<uint64_t>(x) << y));
    default: return Internal("not an int operator");
  }
}

Result<Value> FloatBinary(Op op, double x, double y) {
  switch (op) {
    case Op::kAdd: return Value::Float(x + y);
    case Op::kSub: return Value::Float(x - y);
    case Op::kMul: return Value::Float(x * y);
    case Op::kDiv:
      if (y == 0.0) return InvalidArgument("ZeroDivisionError: float division by zero");
      return Value::Float(x / y);
    case Op::kFloorDiv:
    case Op::kMod: {
      if (y == 0.0) return InvalidArgument(op == Op::kMod ? "ZeroDivisionError: float modulo by zero" : "ZeroDivisionError: float floor division by zero");
      double d, m;
      FloatDivMod(x, y, &d, &m);
      return Value::Float(op == Op::kMod ? m : d);
    }
    case Op::kPow: return FloatPow(x, y);
    default: return Internal("not a float operator");
  }
}

}  // namespace

Result<Value> BinaryOp(Op op, const Value& a, const Value& b, EvalContext& ctx) {
  if (IsNum(a) && IsNum(b)) {
    bool bitwise = op == Op::kBitAnd || op == Op::kBitOr || op == Op::kBitXor || op == Op::kShl || op == Op::kShr;
    if (IsIntLike(a) && IsIntLike(b)) {
      if (a.is_bool() && b.is_bool() && (op == Op::kBitAnd || op == Op::kBitOr || op == Op::kBitXor)) {
        bool x = a.as_bool(), y = b.as_bool();
        return Value::Bool(op == Op::kBitAnd ? (x && y) : op == Op::kBitOr ? (x || y) : (x != y));
      }
      return IntBinary(op, IntOf(a), IntOf(b));
    }
    if (bitwise) return Unsupported(op, a, b);
    return FloatBinary(op, FloatOf(a), FloatOf(b));
  }
  if (op == Op::kAdd) {
    if (a.is_string() && b.is_string()) {
      RETURN_IF_ERROR(ctx.Charge(a.as_string().size() + b.as_string().size()));
      std::string s;
      s.reserve(a.as_string().size() + b.as_string().size());
      s += a.as_string();
      s += b.as_string();
      return Value::String(std::move(s));
    }
    if (a.is_list() && b.is_list()) {
      RETURN_IF_ERROR(ctx.Charge((a.as_list().size() + b.as_list().size()) * sizeof(Value)));
      List l;
      l.reserve(a.as_list().size() + b.as_list().size());
      l.insert(l.end(), a.as_list().begin(), a.as_list().end());
      l.insert(l.end(), b.as_list().begin(), b.as_list().end());
      return Value::FromList(std::move(l));
    }
    if (a.is_string() || a.is_list())
      return InvalidArgument("TypeError: can only concatenate " + std::string(PyTypeName(a)) + " (not \"" +
                             std::string(PyTypeName(b)) + "\") to " + std::string(PyTypeName(a)));
  }
  if (op == Op::kMul) {
    const Value* seq = (a.is_string() || a.is_list()) ? &a : (b.is_string() || b.is_list()) ? &b : nullptr;
    const Value* n = seq == &a ? &b : &a;
    if (seq != nullptr && IsIntLike(*n)) return Repeat(*seq, IntOf(*n), ctx);
    if (seq != nullptr && !(n->is_string() || n->is_list()))
      return InvalidArgument("TypeError: can't multiply sequence by non-int of type '" + std::string(PyTypeName(*n)) + "'");
  }
  if (op == Op::kMod && a.is_string())
    return InvalidArgument("TypeError: %-formatting of strings is not supported here; use + and str()");
  return Unsupported(op, a, b);
}

Result<Value> UnaryOp(Op op, const Value& a) {
  if (op == Op::kNot) return Value::Bool(!IsTruthy(a));
  if (IsIntLike(a)) {
    int64_t x = IntOf(a);
    if (op == Op::kPos) return Value::Int(x);
    if (op == Op::kInvert) return Value::Int(~x);
    if (x == std::numeric_limits<int64_t>::min())
      return InvalidArgument("OverflowError: integer result of -(" + std::to_string(x) + ") does not fit in 64 bits (ints here are int64)");
    return Value::Int(-x);
  }
  if (a.is_float() && op != Op::kInvert) return Value::Float(op == Op::kNeg ? -a.as_float() : a.as_float());
  return InvalidArgument("TypeError: bad operand type for unary " + std::string(OpText(op)) + ": '" + std::string(PyTypeName(a)) + "'");
}

}  // namespace dfw::expr
