#include "evaluator.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "filters.h"

namespace dfw::tmpl {
namespace {

bool IsLocated(const Status& s, const std::string& file) {
  return s.message().rfind(file + ":", 0) == 0;
}

// Python's `%` and `//` on ints: the result takes the sign of the divisor.
int64_t FloorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

Result<Value> Repeat(const Value& seq, int64_t n, std::size_t cap) {
  if (n <= 0) return seq.kind() == Value::Kind::kString ? Value::String("") : Value::List({});
  const std::size_t unit = seq.kind() == Value::Kind::kString ? seq.as_string().size() : seq.as_list().size();
  if (unit != 0 && static_cast<uint64_t>(n) > cap / unit) return ResourceExhausted("repetition over the output limit (" + std::to_string(cap) + " bytes)");
  if (seq.kind() == Value::Kind::kString) {
    std::string out;
    for (int64_t i = 0; i < n; ++i) out += seq.as_string();
    return Value::String(std::move(out));
  }
  ValueList out;
  for (int64_t i = 0; i < n; ++i) out.insert(out.end(), seq.as_list().begin(), seq.as_list().end());
  return Value::List(std::move(out));
}

Result<bool> Contains(const Value& haystack, const Value& needle) {
  switch (haystack.kind()) {
    case Value::Kind::kString:
      if (needle.kind() != Value::Kind::kString) return InvalidArgument("'in <string>' requires string as left operand, not " + needle.TypeName());
      return haystack.as_string().find(needle.as_string()) != std::string::npos;
    case Value::Kind::kList:
      for (const Value& v : haystack.as_list()) {
        if (v.Equals(needle)) return true;
      }
      return false;
    case Value::Kind::kDict:
      return needle.kind() == Value::Kind::kString && haystack.Find(needle.as_string()) != nullptr;
    default: return InvalidArgument("argument of type '" + haystack.TypeName() + "' is not iterable");
  }
}

Result<int> Compare(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.kind() == Value::Kind::kFloat || b.kind() == Value::Kind::kFloat) {
      return a.as_float() < b.as_float() ? -1 : a.as_float() > b.as_float() ? 1 : 0;
    }
    return a.as_int() < b.as_int() ? -1 : a.as_int() > b.as_int() ? 1 : 0;
  }
  if (a.kind() == Value::Kind::kString && b.kind() == Value::Kind::kString) return a.as_string().compare(b.as_string());
  return InvalidArgument("'<' not supported between instances of '" + a.TypeName() + "' and '" + b.TypeName() + "'");
}

// The methods Jinja2 templates commonly call: dict.items/keys/values/get, str.upper/lower/strip/
// split/startswith/endswith/replace. nullopt when `name` is not one of them for `object`.
std::optional<Result<Value>> CallMethod(const Value& object, const std::string& name, const ValueList& args) {
  if (object.kind() == Value::Kind::kDict) {
    if (name == "items" || name == "keys" || name == "values") {
      ValueList out;
      for (const auto& [k, v] : object.as_dict()) {
        if (name == "items") out.push_back(Value::List({Value::String(k), v}));
        if (name == "keys") out.push_back(Value::String(k));
        if (name == "values") out.push_back(v);
      }
      return Value::List(std::move(out));
    }
    if (name == "get") {
      if (args.empty() || args[0].kind() != Value::Kind::kString) return Result<Value>(InvalidArgument("dict.get needs a string key"));
      const Value* v = object.Find(args[0].as_string());
      return v ? *v : (args.size() > 1 ? args[1] : Value());
    }
    return std::nullopt;
  }
  if (object.kind() != Value::Kind::kString) return std::nullopt;
  const std::string& s = object.as_string();
  if (name == "upper" || name == "lower" || name == "strip") {
    return ApplyFilter(name == "strip" ? "trim" : name, object, {}, {}, std::numeric_limits<std::size_t>::max());
  }
  if (name == "startswith" || name == "endswith") {
    if (args.empty() || args[0].kind() != Value::Kind::kString) return Result<Value>(InvalidArgument("str." + name + " needs a string"));
    return Value::Bool(name == "startswith" ? s.starts_with(args[0].as_string()) : s.ends_with(args[0].as_string()));
  }
  if (name == "split") {
    ValueList out;
    if (args.empty() || args[0].kind() == Value::Kind::kNone) {
      std::size_t i = 0;
      while (i < s.size()) {
        i = s.find_first_not_of(" \t\n\r\f\v", i);
        if (i == std::string::npos) break;
        std::size_t j = s.find_first_of(" \t\n\r\f\v", i);
        out.push_back(Value::String(s.substr(i, j == std::string::npos ? std::string::npos : j - i)));
        i = j == std::string::npos ? s.size() : j;
      }
    } else {
      if (args[0].kind() != Value::Kind::kString || args[0].as_string().empty()) return Result<Value>(InvalidArgument("str.split needs a non-empty separator"));
      const std::string& sep = args[0].as_string();
      std::size_t i = 0;
      while (true) {
        std::size_t j = s.find(sep, i);
        out.push_back(Value::String(s.substr(i, j == std::string::npos ? std::string::npos : j - i)));
        if (j == std::string::npos) break;
        i = j + sep.size();
      }
    }
    return Value::List(std::move(out));
  }
  if (name == "replace") return ApplyFilter("replace", object, args, {}, std::size_t{64} << 20);
  return std::nullopt;
}

Result<Value> Range(const ValueList& args, std::size_t cap) {
  if (args.empty() || args.size() > 3) return InvalidArgument("range() takes 1 to 3 arguments");
  for (const Value& a : args) {
    if (a.kind() != Value::Kind::kInt) return InvalidArgument("range() needs ints, got " + a.TypeName());
  }
  int64_t start = 0, stop = args[0].as_int(), step = 1;
  if (args.size() > 1) start = args[0].as_int(), stop = args[1].as_int();
  if (args.size() > 2) step = args[2].as_int();
  if (step == 0) return InvalidArgument("range() arg 3 must not be zero");
  ValueList out;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
    if (out.size() >= cap) return ResourceExhausted("range() of more than " + std::to_string(cap) + " items");
    out.push_back(Value::Int(i));
    if ((step > 0 && i > INT64_MAX - step) || (step < 0 && i < INT64_MIN - step)) break;
  }
  return Value::List(std::move(out));
}

}  // namespace

const Value* Scope::Lookup(const std::string& name) const {
  for (const Scope* s = this; s; s = s->parent_.get()) {
    auto it = s->vars_.find(name);
    if (it != s->vars_.end()) return &it->second;
  }
  return nullptr;
}

Status Located(const std::string& file, int line, const Status& s) {
  if (s.ok() || IsLocated(s, file)) return s;
  return Status(s.code(), file + ":" + std::to_string(line) + ": " + s.message());
}

Status Evaluator::Fail(int line, std::string message) const {
  return InvalidArgument(file_ + ":" + std::to_string(line) + ": " + message);
}

// Python's slice of a list or a string (by code point): object[start:stop:step], a bound that is
// not `given` takes Python's default for the step's sign.
Result<Value> SliceValue(const Value& object, const int64_t bound[3], const bool given[3]) {
  std::vector<std::string> chars;
  const bool is_string = object.kind() == Value::Kind::kString;
  if (is_string) {
    const std::string& s = object.as_string();
    for (std::size_t i = 0; i < s.size();) {
      std::size_t n = 1;
      while (i + n < s.size() && (static_cast<unsigned char>(s[i + n]) & 0xC0) == 0x80) ++n;
      chars.push_back(s.substr(i, n));
      i += n;
    }
  } else if (object.kind() != Value::Kind::kList) {
    return InvalidArgument("only lists and strings can be sliced");
  }
  const int64_t len = is_string ? static_cast<int64_t>(chars.size()) : static_cast<int64_t>(object.as_list().size());
  const int64_t step = bound[2];
  auto clamp = [&](int64_t v, bool is_given, int64_t fallback) {
    if (!is_given) return fallback;
    if (v < 0) v += len;
    if (step > 0) return std::clamp<int64_t>(v, 0, len);
    return std::clamp<int64_t>(v, -1, len - 1);
  };
  const int64_t start = clamp(bound[0], given[0], step > 0 ? 0 : len - 1);
  const int64_t stop = clamp(bound[1], given[1], step > 0 ? len : -1);
  std::string out_s;
  ValueList out_l;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
    if (is_string) {
      out_s += chars[static_cast<std::size_t>(i)];
    } else {
      out_l.push_back(object.as_list()[static_cast<std::size_t>(i)]);
    }
  }
  return is_string ? Value::String(std::move(out_s)) : Value::List(std::move(out_l));
}

Value GetAttr(const Value& object, const Value& key) {
  if (object.kind() == Value::Kind::kDict && key.kind() == Value::Kind::kString) {
    if (const Value* v = object.Find(key.as_string())) return *v;
    return Value::Undefined("'dict object' has no attribute '" + key.as_string() + "'");
  }
  if ((object.kind() == Value::Kind::kList || object.kind() == Value::Kind::kString) && key.kind() == Value::Kind::kInt) {
    const int64_t n = object.kind() == Value::Kind::kList ? static_cast<int64_t>(object.as_list().size())
                                                          : static_cast<int64_t>(object.as_string().size());
    int64_t i = key.as_int();
    if (i < 0) i += n;
    if (i < 0 || i >= n) return Value::Undefined(object.TypeName() + " object has no element " + key.Repr());  // jinja2's words
    if (object.kind() == Value::Kind::kList) return object.as_list()[static_cast<std::size_t>(i)];
    return Value::String(std::string(1, object.as_string()[static_cast<std::size_t>(i)]));
  }
  return Value::Undefined("'" + object.TypeName() + " object' has no attribute " + key.Repr());
}

Result<Value> Evaluator::Eval(const Expr& e, const Scope& scope) const {
  switch (e.kind) {
    case Expr::Kind::kLiteral: return e.value;
    case Expr::Kind::kName: {
      if (const Value* v = scope.Lookup(e.name)) return *v;
      return Value::Undefined("'" + e.name + "' is undefined");
    }
    case Expr::Kind::kList: {
      ValueList items;
      for (const ExprPtr& k : e.kids) {
        ASSIGN_OR_RETURN(Value v, Eval(*k, scope));
        if (v.is_undefined()) return Located(file_, k->line, UndefinedError(v));
        items.push_back(std::move(v));
      }
      return Value::List(std::move(items));
    }
    case Expr::Kind::kDict: {
      ValueDict items;
      for (std::size_t i = 0; i + 1 < e.kids.size(); i += 2) {
        ASSIGN_OR_RETURN(Value k, Eval(*e.kids[i], scope));
        ASSIGN_OR_RETURN(Value v, Eval(*e.kids[i + 1], scope));
        if (k.kind() != Value::Kind::kString) return Fail(e.kids[i]->line, "dict keys must be strings here, got " + k.TypeName());
        if (v.is_undefined()) return Located(file_, e.kids[i + 1]->line, UndefinedError(v));
        bool replaced = false;
        for (auto& [key, value] : items) {
          if (key == k.as_string()) value = v, replaced = true;
        }
        if (!replaced) items.emplace_back(k.as_string(), std::move(v));
      }
      return Value::Dict(std::move(items));
    }
    case Expr::Kind::kAttr:
    case Expr::Kind::kItem: {
      ASSIGN_OR_RETURN(Value object, Eval(*e.kids[0], scope));
      if (object.is_undefined()) return Located(file_, e.line, UndefinedError(object));
      Value key;
      if (e.kind == Expr::Kind::kAttr) {
        const bool digits = !e.name.empty() && e.name.find_first_not_of("0123456789") == std::string::npos;
        key = digits && e.name.size() < 18 ? Value::Int(std::stoll(e.name)) : Value::String(e.name);
      } else {
        ASSIGN_OR_RETURN(key, Eval(*e.kids[1], scope));
        if (key.is_undefined()) return Located(file_, e.line, UndefinedError(key));
      }
      return GetAttr(object, key);
    }
    case Expr::Kind::kSlice: {
      ASSIGN_OR_RETURN(Value object, Eval(*e.kids[0], scope));
      if (object.is_undefined()) return Located(file_, e.line, UndefinedError(object));
      int64_t bound[3] = {0, 0, 1};
      bool given[3] = {false, false, false};
      for (int i = 0; i < 3; ++i) {
        if (e.kids[static_cast<std::size_t>(i) + 1] == nullptr) continue;
        ASSIGN_OR_RETURN(Value b, Eval(*e.kids[static_cast<std::size_t>(i) + 1], scope));
        if (b.is_undefined()) return Located(file_, e.line, UndefinedError(b));
        if (b.kind() == Value::Kind::kNone) continue;
        if (b.kind() != Value::Kind::kInt) return Located(file_, e.line, InvalidArgument("slice indices must be integers"));
        bound[i] = b.as_int();
        given[i] = true;
      }
      if (bound[2] == 0) return Located(file_, e.line, InvalidArgument("slice step cannot be zero"));
      Result<Value> r = SliceValue(object, bound, given);
      if (!r.ok()) return Located(file_, e.line, r.status());
      return r;
    }
    case Expr::Kind::kCall: return EvalCall(e, scope);
    case Expr::Kind::kFilter:
    case Expr::Kind::kTest: {
      ASSIGN_OR_RETURN(Value input, Eval(*e.kids[0], scope));
      ValueList args;
      ValueDict kwargs;
      for (std::size_t i = 1; i < e.kids.size(); ++i) {
        ASSIGN_OR_RETURN(Value v, Eval(*e.kids[i], scope));
        args.push_back(std::move(v));
      }
      for (const auto& [k, x] : e.kwargs) {
        ASSIGN_OR_RETURN(Value v, Eval(*x, scope));
        kwargs.emplace_back(k, std::move(v));
      }
      if (e.kind == Expr::Kind::kFilter) {
        Result<Value> r = ApplyFilter(e.name, input, args, kwargs, max_string_bytes_);
        if (!r.ok()) return Located(file_, e.line, r.status());
        return r;
      }
      Result<bool> t = ApplyTest(e.name, input, args);
      if (!t.ok()) return Located(file_, e.line, t.status());
      return Value::Bool(*t != e.negate);
    }
    case Expr::Kind::kUnary: {
      ASSIGN_OR_RETURN(Value v, Eval(*e.kids[0], scope));
      if (e.name == "not") {
        Result<bool> t = v.Truthy();
        if (!t.ok()) return Located(file_, e.line, t.status());
        return Value::Bool(!*t);
      }
      if (v.is_undefined()) return Located(file_, e.line, UndefinedError(v));
      if (!v.is_number()) return Fail(e.line, "bad operand type for unary " + e.name + ": '" + v.TypeName() + "'");
      if (e.name == "+") return v.kind() == Value::Kind::kBool ? Value::Int(v.as_int()) : v;
      if (v.kind() == Value::Kind::kFloat) return Value::Float(-v.as_float());
      if (v.as_int() == INT64_MIN) return Fail(e.line, "integer overflow");
      return Value::Int(-v.as_int());
    }
    case Expr::Kind::kBinary: return EvalBinary(e, scope);
    case Expr::Kind::kCond: {
      ASSIGN_OR_RETURN(Value c, Eval(*e.kids[1], scope));
      Result<bool> t = c.Truthy();
      if (!t.ok()) return Located(file_, e.line, t.status());
      if (*t) return Eval(*e.kids[0], scope);
      if (e.kids.size() > 2) return Eval(*e.kids[2], scope);
      return Value::Undefined("the inline if expression on line " + std::to_string(e.line) + " evaluated to false and no else section was defined");
    }
  }
  return Fail(e.line, "unknown expression");
}

Result<Value> Evaluator::EvalBinary(const Expr& e, const Scope& scope) const {
  ASSIGN_OR_RETURN(Value a, Eval(*e.kids[0], scope));
  if (e.name == "and" || e.name == "or") {
    Result<bool> t = a.Truthy();
    if (!t.ok()) return Located(file_, e.line, t.status());
    if (*t == (e.name == "or")) return a;
    return Eval(*e.kids[1], scope);
  }
  ASSIGN_OR_RETURN(Value b, Eval(*e.kids[1], scope));
  for (const Value* v : {&a, &b}) {
    if (v->is_undefined()) return Located(file_, e.line, UndefinedError(*v));
  }
  const std::string& op = e.name;
  if (op == "==") return Value::Bool(a.Equals(b));
  if (op == "!=") return Value::Bool(!a.Equals(b));
  if (op == "in" || op == "notin") {
    Result<bool> c = Contains(b, a);
    if (!c.ok()) return Located(file_, e.line, c.status());
    return Value::Bool(*c == (op == "in"));
  }
  if (op == "<" || op == "<=" || op == ">" || op == ">=") {
    Result<int> c = Compare(a, b);
    if (!c.ok()) return Located(file_, e.line, c.status());
    return Value::Bool(op == "<" ? *c < 0 : op == "<=" ? *c <= 0 : op == ">" ? *c > 0 : *c >= 0);
  }
  if (op == "~") {
    ASSIGN_OR_RETURN(std::string x, a.Str());
    ASSIGN_OR_RETURN(std::string y, b.Str());
    if (x.size() + y.size() > max_string_bytes_) return Located(file_, e.line, ResourceExhausted("a string over the output limit"));
    return Value::String(x + y);
  }
  return Arithmetic(op, a, b, e.line);
}

Result<Value> Evaluator::Arithmetic(const std::string& op, const Value& a, const Value& b, int line) const {
  const bool seq_a = a.kind() == Value::Kind::kString || a.kind() == Value::Kind::kList;
  if (op == "+" && seq_a && a.kind() == b.kind()) {
    if (a.kind() == Value::Kind::kString) {
      if (a.as_string().size() + b.as_string().size() > max_string_bytes_) return Located(file_, line, ResourceExhausted("a string over the output limit"));
      return Value::String(a.as_string() + b.as_string());
    }
    ValueList out = a.as_list();
    out.insert(out.end(), b.as_list().begin(), b.as_list().end());
    return Value::List(std::move(out));
  }
  if (op == "*" && (seq_a || b.kind() == Value::Kind::kString || b.kind() == Value::Kind::kList)) {
    const Value& seq = seq_a ? a : b;
    const Value& n = seq_a ? b : a;
    if (n.kind() != Value::Kind::kInt && n.kind() != Value::Kind::kBool) return Fail(line, "can't multiply sequence by non-int of type '" + n.TypeName() + "'");
    Result<Value> r = Repeat(seq, n.as_int(), max_string_bytes_);
    return r.ok() ? r : Result<Value>(Located(file_, line, r.status()));
  }
  if (!a.is_number() || !b.is_number()) {
    return Fail(line, "unsupported operand type(s) for " + op + ": '" + a.TypeName() + "' and '" + b.TypeName() + "'");
  }
  const bool floats = a.kind() == Value::Kind::kFloat || b.kind() == Value::Kind::kFloat || op == "/";
  if (op == "**" && !floats && b.as_int() < 0) return Value::Float(std::pow(a.as_float(), b.as_float()));
  if (floats) {
    const double x = a.as_float(), y = b.as_float();
    if ((op == "/" || op == "//" || op == "%") && y == 0) return Fail(line, "division by zero");
    if (op == "+") return Value::Float(x + y);
    if (op == "-") return Value::Float(x - y);
    if (op == "*") return Value::Float(x * y);
    if (op == "/") return Value::Float(x / y);
    if (op == "//") return Value::Float(std::floor(x / y));
    if (op == "%") {
      double m = std::fmod(x, y);
      if (m != 0 && ((m < 0) != (y < 0))) m += y;
      return Value::Float(m);
    }
    if (op == "**") return Value::Float(std::pow(x, y));
  } else {
    const int64_t x = a.as_int(), y = b.as_int();
    int64_t r = 0;
    bool overflow = false;
    if (op == "+") overflow = __builtin_add_overflow(x, y, &r);
    if (op == "-") overflow = __builtin_sub_overflow(x, y, &r);
    if (op == "*") overflow = __builtin_mul_overflow(x, y, &r);
    if (op == "//" || op == "%") {
      if (y == 0) return Fail(line, "integer division or modulo by zero");
      if (x == INT64_MIN && y == -1) return Fail(line, "integer overflow");
      r = op == "//" ? FloorDiv(x, y) : x - FloorDiv(x, y) * y;
    }
    if (op == "**") {
      r = 1;
      for (int64_t i = 0; i < y && !overflow; ++i) overflow = __builtin_mul_overflow(r, x, &r);
    }
    if (overflow) return Fail(line, "integer overflow (64-bit integers only)");
    return Value::Int(r);
  }
  return Fail(line, "unknown operator '" + op + "'");
}

Result<Value> Evaluator::EvalCall(const Expr& e, const Scope& scope) const {
  ValueList args;
  ValueDict kwargs;
  for (std::size_t i = 1; i < e.kids.size(); ++i) {
    ASSIGN_OR_RETURN(Value v, Eval(*e.kids[i], scope));
    if (v.is_undefined()) return Located(file_, e.kids[i]->line, UndefinedError(v));
    args.push_back(std::move(v));
  }
  for (const auto& [k, x] : e.kwargs) {
    ASSIGN_OR_RETURN(Value v, Eval(*x, scope));
    kwargs.emplace_back(k, std::move(v));
  }
  const Expr& callee = *e.kids[0];
  if (callee.kind == Expr::Kind::kAttr) {
    ASSIGN_OR_RETURN(Value object, Eval(*callee.kids[0], scope));
    if (object.is_undefined()) return Located(file_, e.line, UndefinedError(object));
    if (auto r = CallMethod(object, callee.name, args)) return r->ok() ? *r : Result<Value>(Located(file_, e.line, r->status()));
  }
  if (callee.kind == Expr::Kind::kName && !scope.Lookup(callee.name)) {
    if (callee.name == "range") {
      Result<Value> r = Range(args, max_string_bytes_);
      return r.ok() ? r : Result<Value>(Located(file_, e.line, r.status()));
    }
    if (callee.name == "dict") return Value::Dict(kwargs);
  }
  ASSIGN_OR_RETURN(Value fn, Eval(callee, scope));
  if (fn.is_undefined()) return Located(file_, e.line, UndefinedError(fn));
  if (fn.kind() != Value::Kind::kCallable) return Fail(e.line, "'" + fn.TypeName() + "' object is not callable");
  return fn.as_callable()->Call(args, kwargs, e.line);
}

}  // namespace dfw::tmpl
