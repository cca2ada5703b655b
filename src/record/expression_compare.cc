// Comparisons, membership, indexing and slicing with Python 3 semantics.
#include <cmath>
#include <limits>
#include <string>

#include "dfw/common/strings.h"
#include "record/expression_ast.h"

namespace dfw::expr {
namespace {


// Exact three-way comparison of two numbers (no rounding of large ints); 2 when unordered (NaN).
int CompareNumbers(const Value& a, const Value& b) {
  if (IsIntLike(a) && IsIntLike(b)) {
    int64_t x = IntOf(a), y = IntOf(b);
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (a.is_float() && b.is_float()) {
    double x = a.as_float(), y = b.as_float();
    if (std::isnan(x) || std::isnan(y)) return 2;
    return x < y ? -1 : x > y ? 1 : 0;
  }
  bool flipped = a.is_float();
  int64_t i = IntOf(flipped ? b : a);
  double f = (flipped ? a : b).as_float();
  int r;
  if (std::isnan(f)) return 2;
  if (f >= 9223372036854775808.0) r = -1;
  else if (f < -9223372036854775808.0) r = 1;
  else {
    double t = std::trunc(f);
    auto ti = static_cast<int64_t>(t);
    if (i != ti) r = i < ti ? -1 : 1;
    else r = f > t ? -1 : f < t ? 1 : 0;
  }
  return flipped ? -r : r;
}

Status NotSupported(std::string_view op, const Value& a, const Value& b) {
  return InvalidArgument("TypeError: '" + std::string(op) + "' not supported between instances of '" +
                         std::string(PyTypeName(a)) + "' and '" + std::string(PyTypeName(b)) + "'");
}

Result<bool> Contains(const Value& container, const Value& item) {
  if (container.is_string()) {
    if (!item.is_string())
      return InvalidArgument("TypeError: 'in <string>' requires string as left operand, not " + std::string(PyTypeName(item)));
    return FindText(container.as_string(), item.as_string()) != std::string::npos;
  }
  if (container.is_list()) {
    for (const Value& v : container.as_list())
      if (PyEquals(v, item)) return true;
    return false;
  }
  if (container.is_row()) return item.is_string() && container.as_row().Has(item.as_string());
  return InvalidArgument("TypeError: argument of type '" + std::string(PyTypeName(container)) + "' is not iterable");
}

// Python's PySlice_AdjustIndices; returns the number of items selected.
int64_t AdjustSlice(int64_t len, int64_t* start, int64_t* stop, int64_t step) {
  auto clamp = [&](int64_t* v, int64_t lo, int64_t hi) {
    if (*v < 0) {
      *v += len;
      if (*v < 0) *v = lo;
    } else if (*v >= len) {
      *v = hi;
    }
  };
  clamp(start, step < 0 ? -1 : 0, step < 0 ? len - 1 : len);
  clamp(stop, step < 0 ? -1 : 0, step < 0 ? len - 1 : len);
  if (step < 0) return *stop < *start ? (*start - *stop - 1) / (-step) + 1 : 0;
  return *start < *stop ? (*stop - *start - 1) / step + 1 : 0;
}

Result<int64_t> SliceBound(const Value* v, int64_t dflt) {
  if (v == nullptr || v->is_null()) return dflt;
  if (!IsIntLike(*v)) return InvalidArgument("TypeError: slice indices must be integers or None, not " + std::string(PyTypeName(*v)));
  return IntOf(*v);
}

}  // namespace

bool PyEquals(const Value& a, const Value& b) {
  if (IsNum(a) && IsNum(b)) return CompareNumbers(a, b) == 0;
  if (a.is_timestamp() || b.is_timestamp()) return a == b;  // Beam's Timestamp.__eq__ (seconds)
  if (a.kind() != b.kind()) return false;
  if (a.is_list()) {
    const List& x = a.as_list();
    const List& y = b.as_list();
    if (x.size() != y.size()) return false;
    for (std::size_t i = 0; i < x.size(); ++i)
      if (!PyEquals(x[i], y[i])) return false;
    return true;
  }
  return a == b;
}

Result<bool> PyLess(const Value& a, const Value& b, std::string_view op_text) {
  if (IsNum(a) && IsNum(b)) return CompareNumbers(a, b) == -1;
  if (a.is_string() && b.is_string()) return a.as_string() < b.as_string();  // UTF-8 byte order = code point order
  if (a.is_list() && b.is_list()) {
    const List& x = a.as_list();
    const List& y = b.as_list();
    for (std::size_t i = 0; i < x.size() && i < y.size(); ++i)
      if (!PyEquals(x[i], y[i])) return PyLess(x[i], y[i], op_text);
    return x.size() < y.size();
  }
  return NotSupported(op_text, a, b);
}

Result<bool> CompareOp(Op op, const Value& a, const Value& b) {
  switch (op) {
    case Op::kEq: return PyEquals(a, b);
    case Op::kNe: return !PyEquals(a, b);
    case Op::kLt: return PyLess(a, b, "<");
    case Op::kGt: {
      auto gt = PyLess(b, a, ">");
      if (!gt.ok()) return NotSupported(">", a, b);
      return *gt;
    }
    case Op::kLe: {
      if (IsNum(a) && IsNum(b)) { int c = CompareNumbers(a, b); return c == -1 || c == 0; }
      auto lt = PyLess(b, a, "<=");
      if (!lt.ok()) return NotSupported("<=", a, b);
      return !*lt;
    }
    case Op::kGe: {
      if (IsNum(a) && IsNum(b)) { int c = CompareNumbers(a, b); return c == 1 || c == 0; }
      auto lt = PyLess(a, b, ">=");
      if (!lt.ok()) return NotSupported(">=", a, b);
      return !*lt;
    }
    case Op::kIn: return Contains(b, a);
    case Op::kNotIn: {
      ASSIGN_OR_RETURN(bool in, Contains(b, a));
      return !in;
    }
    case Op::kIs:
    case Op::kIsNot: {
      // Identity is only meaningful for the singletons None, True and False; other values are
      // never identical here (Python would depend on object caching).
      bool same = (a.is_null() && b.is_null()) || (a.is_bool() && b.is_bool() && a.as_bool() == b.as_bool());
      return op == Op::kIs ? same : !same;
    }
    default: return Internal("not a comparison");
  }
}

Result<Value> Subscript(const Value& obj, const Value& index) {
  if (obj.is_row()) {
    if (!index.is_string()) return InvalidArgument("TypeError: row keys are field names (str), not " + std::string(PyTypeName(index)));
    const Value* v = obj.as_row().Find(index.as_string());
    if (v == nullptr) return InvalidArgument("KeyError: " + PyRepr(index));
    return *v;
  }
  if (!obj.is_string() && !obj.is_list())
    return InvalidArgument("TypeError: '" + std::string(PyTypeName(obj)) + "' object is not subscriptable");
  if (!IsIntLike(index)) {
    if (obj.is_list()) return InvalidArgument("TypeError: list indices must be integers or slices, not " + std::string(PyTypeName(index)));
    return InvalidArgument("TypeError: string indices must be integers, not '" + std::string(PyTypeName(index)) + "'");
  }
  int64_t i = IntOf(index);
  if (obj.is_list()) {
    auto n = static_cast<int64_t>(obj.as_list().size());
    if (i < 0) i += n;
    if (i < 0 || i >= n) return InvalidArgument("IndexError: list index out of range");
    return obj.as_list()[static_cast<std::size_t>(i)];
  }
  const std::string& s = obj.as_string();
  if (IsAscii(s)) {
    auto n = static_cast<int64_t>(s.size());
    if (i < 0) i += n;
    if (i < 0 || i >= n) return InvalidArgument("IndexError: string index out of range");
    return Value::String(std::string(1, s[static_cast<std::size_t>(i)]));
  }
  std::vector<std::size_t> off = CodePointOffsets(s);
  auto n = static_cast<int64_t>(off.size()) - 1;
  if (i < 0) i += n;
  if (i < 0 || i >= n) return InvalidArgument("IndexError: string index out of range");
  auto k = static_cast<std::size_t>(i);
  return Value::String(s.substr(off[k], off[k + 1] - off[k]));
}

namespace {

// The k-th index a slice takes, k < n. Computed from k rather than stepped from the
// last index: one step past the last element can overflow int64 when the step is huge
// (s[1::2**62]), while start + k * step for k < n always lies inside the sequence.
std::size_t SliceIndex(int64_t start, int64_t k, int64_t step) {
  return static_cast<std::size_t>(start + k * step);
}

}  // namespace

Result<Value> Slice(const Value& obj, const Value* lo, const Value* hi, const Value* step_v, EvalContext& ctx) {
  if (!obj.is_string() && !obj.is_list())
    return InvalidArgument("TypeError: '" + std::string(PyTypeName(obj)) + "' object is not subscriptable");
  ASSIGN_OR_RETURN(int64_t step, SliceBound(step_v, 1));
  if (step == 0) return InvalidArgument("ValueError: slice step cannot be zero");
  if (step == std::numeric_limits<int64_t>::min()) step = -std::numeric_limits<int64_t>::max();
  ASSIGN_OR_RETURN(int64_t start, SliceBound(lo, step < 0 ? std::numeric_limits<int64_t>::max() : 0));
  ASSIGN_OR_RETURN(int64_t stop, SliceBound(hi, step < 0 ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int64_t>::max()));
  if (obj.is_list()) {
    const List& l = obj.as_list();
    int64_t n = AdjustSlice(static_cast<int64_t>(l.size()), &start, &stop, step);
    RETURN_IF_ERROR(ctx.Charge(static_cast<std::size_t>(n) * sizeof(Value)));
    List out;
    out.reserve(static_cast<std::size_t>(n));
    for (int64_t k = 0; k < n; ++k) out.push_back(l[SliceIndex(start, k, step)]);
    return Value::FromList(std::move(out));
  }
  const std::string& s = obj.as_string();
  std::string out;
  if (IsAscii(s)) {
    int64_t n = AdjustSlice(static_cast<int64_t>(s.size()), &start, &stop, step);
    if (step == 1) return Value::String(s.substr(static_cast<std::size_t>(start), static_cast<std::size_t>(n)));
    out.reserve(static_cast<std::size_t>(n));
    for (int64_t k = 0; k < n; ++k) out += s[SliceIndex(start, k, step)];
    return Value::String(std::move(out));
  }
  std::vector<std::size_t> off = CodePointOffsets(s);
  int64_t n = AdjustSlice(static_cast<int64_t>(off.size()) - 1, &start, &stop, step);
  for (int64_t k = 0; k < n; ++k) {
    std::size_t j = SliceIndex(start, k, step);
    out.append(s, off[j], off[j + 1] - off[j]);
  }
  return Value::String(std::move(out));
}

}  // namespace dfw::expr
