// The `math` and `json` modules of def callables (https://docs.python.org/3/library/math.html,
// https://docs.python.org/3/library/json.html), and the dispatch of module attributes and calls.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "record/python_def_interp.h"

namespace dfw::expr {
namespace {

Result<double> MathNum(const Obj* o, const std::string& fn) {
  if (o == nullptr || o->sp || !IsNum(o->v))
    return EvalError("TypeError: math." + fn + "() must be a real number, not '" + (o ? ObjTypeName(*o) : "None") + "'");
  return FloatOf(o->v);
}

Status MathDomain() { return EvalError("ValueError: math domain error"); }

Result<Obj> MathFloat(double r) {
  if (std::isinf(r)) return EvalError("OverflowError: math range error");
  return Obj(Value::Float(r));
}

Result<Obj> MathIntegral(double r, const Obj* arg) {
  if (arg != nullptr && !arg->sp && IsIntLike(arg->v)) return Obj(Value::Int(IntOf(arg->v)));
  if (std::isnan(r)) return EvalError("ValueError: cannot convert float NaN to integer");
  if (std::isinf(r)) return EvalError("OverflowError: cannot convert float infinity to integer");
  if (r >= 9223372036854775808.0 || r < -9223372036854775808.0) return EvalError("OverflowError: the result does not fit in a 64-bit int");
  return Obj(Value::Int(static_cast<int64_t>(r)));
}

Result<Obj> CallMath(const std::string& fn, const Args& args) {
  if (!args.kw.empty()) return EvalError("TypeError: math." + fn + "() takes no keyword arguments");
  const auto& a = args.pos;
  auto want = [&](std::size_t lo, std::size_t hi) -> Status {
    if (a.size() < lo || a.size() > hi)
      return EvalError("TypeError: math." + fn + "() takes " + (lo == hi ? std::to_string(lo) : std::to_string(lo) + " to " + std::to_string(hi)) +
                       " arguments (" + std::to_string(a.size()) + " given)");
    return Status::OK();
  };
  struct Unary { const char* name; double (*f)(double); };
  static const Unary kPlain[] = {{"sin", std::sin},   {"cos", std::cos},   {"tan", std::tan},   {"atan", std::atan},
                                 {"sinh", std::sinh}, {"cosh", std::cosh}, {"tanh", std::tanh}, {"fabs", std::fabs}};
  for (const Unary& u : kPlain) {
    if (fn != u.name) continue;
    RETURN_IF_ERROR(want(1, 1));
    ASSIGN_OR_RETURN(double x, MathNum(a[0], fn));
    if (std::isinf(x) && fn != "atan" && fn != "fabs" && fn != "tanh" && fn != "sinh" && fn != "cosh") return MathDomain();
    return MathFloat(u.f(x));
  }
  if (fn == "sqrt" || fn == "exp" || fn == "log10" || fn == "log2" || fn == "asin" || fn == "acos" || fn == "degrees" ||
      fn == "radians" || fn == "expm1" || fn == "log1p") {
    RETURN_IF_ERROR(want(1, 1));
    ASSIGN_OR_RETURN(double x, MathNum(a[0], fn));
    if (fn == "sqrt") return x < 0 ? Result<Obj>(MathDomain()) : Obj(Value::Float(std::sqrt(x)));
    if (fn == "exp") return std::isinf(x) && x < 0 ? Obj(Value::Float(0.0)) : MathFloat(std::exp(x));
    if (fn == "expm1") return MathFloat(std::expm1(x));
    if (fn == "log10") return x <= 0 ? Result<Obj>(MathDomain()) : Obj(Value::Float(std::log10(x)));
    if (fn == "log2") return x <= 0 ? Result<Obj>(MathDomain()) : Obj(Value::Float(std::log2(x)));
    if (fn == "log1p") return x <= -1 ? Result<Obj>(MathDomain()) : Obj(Value::Float(std::log1p(x)));
    if (fn == "asin" || fn == "acos") {
      if (x < -1 || x > 1) return MathDomain();
      return Obj(Value::Float(fn == "asin" ? std::asin(x) : std::acos(x)));
    }
    return Obj(Value::Float(fn == "degrees" ? x * 180.0 / M_PI : x * M_PI / 180.0));
  }
  if (fn == "log") {
    RETURN_IF_ERROR(want(1, 2));
    ASSIGN_OR_RETURN(double x, MathNum(a[0], fn));
    if (x <= 0) return MathDomain();
    if (a.size() == 1) return Obj(Value::Float(std::log(x)));
    ASSIGN_OR_RETURN(double b, MathNum(a[1], fn));
    if (b <= 0) return MathDomain();
    if (b == 1) return EvalError("ZeroDivisionError: float division by zero");
    return Obj(Value::Float(std::log(x) / std::log(b)));
  }
  if (fn == "floor" || fn == "ceil" || fn == "trunc") {
    RETURN_IF_ERROR(want(1, 1));
    ASSIGN_OR_RETURN(double x, MathNum(a[0], fn));
    return MathIntegral(fn == "floor" ? std::floor(x) : fn == "ceil" ? std::ceil(x) : std::trunc(x), a[0]);
  }
  if (fn == "pow" || fn == "atan2" || fn == "hypot" || fn == "copysign" || fn == "fmod") {
    RETURN_IF_ERROR(want(2, 2));
    ASSIGN_OR_RETURN(double x, MathNum(a[0], fn));
    ASSIGN_OR_RETURN(double y, MathNum(a[1], fn));
    if (fn == "atan2") return Obj(Value::Float(std::atan2(x, y)));
    if (fn == "hypot") return MathFloat(std::hypot(x, y));
    if (fn == "copysign") return Obj(Value::Float(std::copysign(x, y)));
    if (fn == "fmod") {
      if (y == 0 || std::isinf(x)) return MathDomain();
      return Obj(Value::Float(std::fmod(x, y)));
    }
    if (x == 0 && y < 0) return MathDomain();
    if (x < 0 && std::isfinite(y) && y != std::floor(y)) return MathDomain();
    double r = std::pow(x, y);
    if (std::isinf(r) && std::isfinite(x) && std::isfinite(y)) return EvalError("OverflowError: math range error");
    return Obj(Value::Float(r));
  }
  if (fn == "isnan" || fn == "isinf" || fn == "isfinite") {
    RETURN_IF_ERROR(want(1, 1));
    ASSIGN_OR_RETURN(double x, MathNum(a[0], fn));
    return Obj(Value::Bool(fn == "isnan" ? std::isnan(x) : fn == "isinf" ? std::isinf(x) : std::isfinite(x)));
  }
  if (fn == "isclose") {
    RETURN_IF_ERROR(want(2, 2));
    ASSIGN_OR_RETURN(double x, MathNum(a[0], fn));
    ASSIGN_OR_RETURN(double y, MathNum(a[1], fn));
    if (x == y) return Obj(Value::Bool(true));
    if (std::isinf(x) || std::isinf(y)) return Obj(Value::Bool(false));
    double d = std::fabs(x - y);
    return Obj(Value::Bool(d <= 1e-09 * std::fabs(x) || d <= 1e-09 * std::fabs(y)));
  }
  if (fn == "gcd") {
    int64_t g = 0;
    for (const Obj* o : a) {
      if (o->sp || !IsIntLike(o->v)) return EvalError("TypeError: math.gcd() takes integers");
      int64_t v = IntOf(o->v);
      if (v == INT64_MIN) return EvalError("OverflowError: math.gcd() argument does not fit in 64 bits");
      v = v < 0 ? -v : v;
      while (v != 0) {
        int64_t t = g % v;
        g = v;
        v = t;
      }
    }
    return Obj(Value::Int(g));
  }
  return EvalError("AttributeError: module 'math' has no attribute '" + fn +
                   "' (available: sqrt, exp, expm1, log, log10, log2, log1p, pow, floor, ceil, trunc, fabs, fmod, "
                   "copysign, hypot, sin, cos, tan, asin, acos, atan, atan2, sinh, cosh, tanh, degrees, radians, "
                   "isnan, isinf, isfinite, isclose, gcd, pi, e, tau, inf, nan)");
}

// ---- json ---------------------------------------------------------------------------------------

void DumpString(std::string& out, const std::string& s, bool ascii) {
  out += '"';
  for (std::size_t i = 0; i < s.size();) {
    uint32_t cp;
    std::size_t n = DecodeUtf8(s, i, &cp);
    if (n == 1 && static_cast<unsigned char>(s[i]) >= 0x80) cp = 0xFFFD;  // an invalid byte
    i += n;
    auto hex4 = [&](uint32_t v) {
      char buf[16];
      std::snprintf(buf, sizeof(buf), "\\u%04x", v);
      out += buf;
    };
    switch (cp) {
      case '"': out += "\\\""; continue;
      case '\\': out += "\\\\"; continue;
      case '\n': out += "\\n"; continue;
      case '\r': out += "\\r"; continue;
      case '\t': out += "\\t"; continue;
      case '\b': out += "\\b"; continue;
      case '\f': out += "\\f"; continue;
      default: break;
    }
    if (cp < 0x20) {
      hex4(cp);
    } else if (cp >= 0x7F && ascii) {  // Python escapes all but ' '..'~'
      if (cp >= 0x10000) {
        uint32_t v = cp - 0x10000;
        hex4(0xD800 + (v >> 10));
        hex4(0xDC00 + (v & 0x3FF));
      } else {
        hex4(cp);
      }
    } else {
      AppendUtf8(out, cp);
    }
  }
  out += '"';
}

Status Dump(std::string& out, const Value& v, bool sort_keys, int indent, bool ascii, int depth) {
  if (depth > 64) return EvalError("ValueError: json.dumps: nesting deeper than 64 levels");
  if (out.size() > static_cast<std::size_t>(kEvalBudgetBytes)) return EvalError("MemoryError: json.dumps result too large");
  auto newline = [&](int d) {
    if (indent < 0) return;
    out += '\n';
    out.append(static_cast<std::size_t>(indent * d), ' ');
  };
  const char* item_sep = indent < 0 ? ", " : ",";
  switch (v.kind()) {
    case Value::Kind::kNull: out += "null"; return Status::OK();
    case Value::Kind::kBool: out += v.as_bool() ? "true" : "false"; return Status::OK();
    case Value::Kind::kInt: out += std::to_string(v.as_int()); return Status::OK();
    case Value::Kind::kFloat: {
      double d = v.as_float();
      if (std::isnan(d)) out += "NaN";
      else if (std::isinf(d)) out += d > 0 ? "Infinity" : "-Infinity";
      else out += PyRepr(v);
      return Status::OK();
    }
    case Value::Kind::kString: DumpString(out, v.as_string(), ascii); return Status::OK();
    case Value::Kind::kList: {
      const List& l = v.as_list();
      if (l.empty()) {
        out += "[]";
        return Status::OK();
      }
      out += '[';
      for (std::size_t i = 0; i < l.size(); ++i) {
        if (i) out += item_sep;
        newline(depth + 1);
        RETURN_IF_ERROR(Dump(out, l[i], sort_keys, indent, ascii, depth + 1));
      }
      newline(depth);
      out += ']';
      return Status::OK();
    }
    case Value::Kind::kRow: {
      std::vector<const Field*> fields;
      for (const Field& f : v.as_row().fields()) fields.push_back(&f);
      if (fields.empty()) {
        out += "{}";
        return Status::OK();
      }
      if (sort_keys) std::stable_sort(fields.begin(), fields.end(), [](const Field* a, const Field* b) { return a->name < b->name; });
      out += '{';
      for (std::size_t i = 0; i < fields.size(); ++i) {
        if (i) out += item_sep;
        newline(depth + 1);
        DumpString(out, fields[i]->name, ascii);
        out += ": ";
        RETURN_IF_ERROR(Dump(out, fields[i]->value, sort_keys, indent, ascii, depth + 1));
      }
      newline(depth);
      out += '}';
      return Status::OK();
    }
  }
  return Internal("unknown value kind");
}

class JsonReader {
 public:
  explicit JsonReader(std::string_view s) : s_(s) {}

  Result<Value> Run() {
    ASSIGN_OR_RETURN(Value v, Parse(0));
    Ws();
    if (i_ < s_.size()) return Fail("Extra data");
    return v;
  }

 private:
  Status Fail(const std::string& what) const {
    std::size_t line = 1, col = 1;
    for (std::size_t k = 0; k < i_ && k < s_.size(); ++k) {
      if (s_[k] == '\n') ++line, col = 1;
      else ++col;
    }
    return EvalError("json.JSONDecodeError: " + what + ": line " + std::to_string(line) + " column " + std::to_string(col) +
                     " (char " + std::to_string(CodePointCount(s_.substr(0, std::min(i_, s_.size())))) + ")");
  }
  void Ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
  }
  bool Word(std::string_view w) {
    if (s_.substr(i_, w.size()) != w) return false;
    i_ += w.size();
    return true;
  }

  Result<Value> Parse(int depth) {
    if (depth > 64) return Fail("Nesting deeper than 64 levels");
    Ws();
    if (i_ >= s_.size()) return Fail("Expecting value");
    char c = s_[i_];
    if (c == '{') return Object(depth);
    if (c == '[') return Array(depth);
    if (c == '"') {
      ASSIGN_OR_RETURN(std::string str, String());
      return Value::String(std::move(str));
    }
    if (Word("null")) return Value();
    if (Word("true")) return Value::Bool(true);
    if (Word("false")) return Value::Bool(false);
    if (Word("NaN")) return Value::Float(std::nan(""));
    if (Word("Infinity")) return Value::Float(HUGE_VAL);
    if (Word("-Infinity")) return Value::Float(-HUGE_VAL);
    return Number();
  }

  Result<Value> Number() {
    std::size_t start = i_;
    if (i_ < s_.size() && s_[i_] == '-') ++i_;
    auto digits = [&] {
      std::size_t b = i_;
      while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) ++i_;
      return i_ - b;
    };
    std::size_t int_start = i_;
    std::size_t nd = digits();
    if (nd == 0 || (nd > 1 && s_[int_start] == '0')) {
      i_ = start;
      return Fail("Expecting value");
    }
    bool is_float = false;
    if (i_ < s_.size() && s_[i_] == '.') {
      std::size_t save = i_++;
      if (digits() == 0) i_ = save;
      else is_float = true;
    }
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      std::size_t save = i_++;
      if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
      if (digits() == 0) i_ = save;
      else is_float = true;
    }
    std::string text(s_.substr(start, i_ - start));
    if (!is_float) {
      errno = 0;
      long long v = std::strtoll(text.c_str(), nullptr, 10);
      if (errno != ERANGE) return Value::Int(v);
    }
    return Value::Float(std::strtod(text.c_str(), nullptr));
  }

  Result<std::string> String() {
    ++i_;  // '"'
    std::string out;
    while (true) {
      if (i_ >= s_.size()) return Fail("Unterminated string starting at");
      char c = s_[i_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) return Fail("Invalid control character at");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (i_ >= s_.size()) return Fail("Unterminated string starting at");
      char e = s_[i_++];
      switch (e) {
        case '"': out += '"'; continue;
        case '\\': out += '\\'; continue;
        case '/': out += '/'; continue;
        case 'b': out += '\b'; continue;
        case 'f': out += '\f'; continue;
        case 'n': out += '\n'; continue;
        case 'r': out += '\r'; continue;
        case 't': out += '\t'; continue;
        case 'u': break;
        default: --i_; return Fail("Invalid \\escape");
      }
      ASSIGN_OR_RETURN(uint32_t cp, Hex4());
      if (cp >= 0xD800 && cp < 0xDC00 && s_.substr(i_, 2) == "\\u") {
        std::size_t save = i_;
        i_ += 2;
        ASSIGN_OR_RETURN(uint32_t lo, Hex4());
        if (lo >= 0xDC00 && lo < 0xE000) cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        else i_ = save;
      }
      if (cp >= 0xD800 && cp < 0xE000) cp = 0xFFFD;  // a lone surrogate: not representable in UTF-8
      AppendUtf8(out, cp);
    }
  }

  Result<uint32_t> Hex4() {
    if (i_ + 4 > s_.size()) return Fail("Invalid \\uXXXX escape");
    uint32_t v = 0;
    for (int k = 0; k < 4; ++k) {
      char h = s_[i_ + static_cast<std::size_t>(k)];
      int d = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
      if (d < 0) return Fail("Invalid \\uXXXX escape");
      v = v * 16 + static_cast<uint32_t>(d);
    }
    i_ += 4;
    return v;
  }

  Result<Value> Array(int depth) {
    ++i_;
    List items;
    Ws();
    if (i_ < s_.size() && s_[i_] == ']') {
      ++i_;
      return Value::FromList(std::move(items));
    }
    while (true) {
      ASSIGN_OR_RETURN(Value v, Parse(depth + 1));
      items.push_back(std::move(v));
      Ws();
      if (i_ < s_.size() && s_[i_] == ',') { ++i_; continue; }
      if (i_ < s_.size() && s_[i_] == ']') { ++i_; return Value::FromList(std::move(items)); }
      return Fail("Expecting ',' delimiter");
    }
  }

  Result<Value> Object(int depth) {
    ++i_;
    Row row;
    Ws();
    if (i_ < s_.size() && s_[i_] == '}') {
      ++i_;
      return Value::FromRow(std::move(row));
    }
    while (true) {
      Ws();
      if (i_ >= s_.size() || s_[i_] != '"') return Fail("Expecting property name enclosed in double quotes");
      ASSIGN_OR_RETURN(std::string key, String());
      Ws();
      if (i_ >= s_.size() || s_[i_] != ':') return Fail("Expecting ':' delimiter");
      ++i_;
      ASSIGN_OR_RETURN(Value v, Parse(depth + 1));
      row.Set(key, std::move(v));  // a repeated key: the last one wins, as in Python
      Ws();
      if (i_ < s_.size() && s_[i_] == ',') { ++i_; continue; }
      if (i_ < s_.size() && s_[i_] == '}') { ++i_; return Value::FromRow(std::move(row)); }
      return Fail("Expecting ',' delimiter");
    }
  }

  std::string_view s_;
  std::size_t i_ = 0;
};

Result<Obj> CallJson(const std::string& fn, const Args& args) {
  if (fn == "dumps") {
    std::vector<const Obj*> a;
    RETURN_IF_ERROR(BindArgs("dumps", args, {"obj", "sort_keys", "indent", "ensure_ascii"}, 1, a));
    if (args.pos.size() > 1) return EvalError("TypeError: dumps() takes 1 positional argument");
    ASSIGN_OR_RETURN(Value v, ToValue(*a[0]));
    bool sort = a[1] != nullptr && ObjTruthy(*a[1]);
    int indent = -1;
    if (a[2] != nullptr && !(a[2]->v.is_null() && !a[2]->sp)) {
      if (a[2]->sp || !IsIntLike(a[2]->v)) return EvalError("TypeError: json.dumps indent here must be an int");
      indent = static_cast<int>(std::max<int64_t>(0, std::min<int64_t>(IntOf(a[2]->v), 64)));
    }
    bool ascii = a[3] == nullptr || ObjTruthy(*a[3]);
    ASSIGN_OR_RETURN(std::string s, JsonDumps(v, sort, indent, ascii));
    return Obj(Value::String(std::move(s)));
  }
  if (fn == "loads") {
    std::vector<const Obj*> a;
    RETURN_IF_ERROR(BindArgs("loads", args, {"s"}, 1, a));
    if (a[0]->sp || !a[0]->v.is_string())
      return EvalError("TypeError: the JSON object must be str, not " + ObjTypeName(*a[0]));
    ASSIGN_OR_RETURN(Value v, JsonLoads(a[0]->v.as_string()));
    return Obj(std::move(v));
  }
  return EvalError("AttributeError: module 'json' has no attribute '" + fn + "' (available: dumps, loads)");
}

}  // namespace

Result<std::string> JsonDumps(const Value& v, bool sort_keys, int indent, bool ensure_ascii) {
  std::string out;
  RETURN_IF_ERROR(Dump(out, v, sort_keys, indent, ensure_ascii, 0));
  return out;
}

Result<Value> JsonLoads(std::string_view text) { return JsonReader(text).Run(); }

namespace {

// A module's function as a value (from re import match; key=math.floor).
Result<Obj> ModuleFunction(ModuleId m, const std::string& name, Status otherwise) {
  static const char* kRe[] = {"match", "search", "fullmatch", "sub", "subn", "findall", "finditer", "split", "compile", "escape"};
  static const char* kMath[] = {"sqrt", "exp", "expm1", "log", "log10", "log2", "log1p", "pow", "floor", "ceil", "trunc",
                                "fabs", "fmod", "copysign", "hypot", "sin", "cos", "tan", "asin", "acos", "atan", "atan2",
                                "sinh", "cosh", "tanh", "degrees", "radians", "isnan", "isinf", "isfinite", "isclose", "gcd"};
  static const char* kJson[] = {"dumps", "loads"};
  auto has = [&](const char* const* names, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i)
      if (name == names[i]) return true;
    return false;
  };
  bool known = m == ModuleId::kRe ? has(kRe, std::size(kRe)) : m == ModuleId::kMath ? has(kMath, std::size(kMath))
               : m == ModuleId::kJson ? has(kJson, std::size(kJson)) : false;
  if (!known) return otherwise;
  auto fn = std::make_shared<Special>(Special::kFunction);
  fn->module_fn = true;
  fn->module = m;
  fn->builtin = name;
  return Obj(std::move(fn));
}

}  // namespace

Result<Obj> ModuleAttr(ModuleId m, const std::string& name) {
  Result<Obj> r = ModuleAttrValue(m, name);
  if (r.ok()) return r;
  return ModuleFunction(m, name, r.status());
}

Result<Obj> ModuleAttrValue(ModuleId m, const std::string& name) {
  switch (m) {
    case ModuleId::kDatetime: return DatetimeModuleAttr(name);
    case ModuleId::kRe: return RegexModuleAttr(name);
    case ModuleId::kMath:
      if (name == "pi") return Obj(Value::Float(M_PI));
      if (name == "e") return Obj(Value::Float(M_E));
      if (name == "tau") return Obj(Value::Float(2 * M_PI));
      if (name == "inf") return Obj(Value::Float(HUGE_VAL));
      if (name == "nan") return Obj(Value::Float(std::nan("")));
      return EvalError("AttributeError: module 'math' has no attribute '" + name + "' here (constants: pi, e, tau, inf, nan)");
    case ModuleId::kJson:
      return EvalError("AttributeError: module 'json' has no attribute '" + name + "' here (call json.dumps or json.loads)");
  }
  return Internal("unknown module");
}

Result<Obj> CallModule(ModuleId m, const std::string& name, const Args& args, EvalContext& ctx) {
  switch (m) {
    case ModuleId::kRe: return CallRegexModule(name, args, ctx);
    case ModuleId::kMath: return CallMath(name, args);
    case ModuleId::kJson: return CallJson(name, args);
    case ModuleId::kDatetime: return CallDatetimeModule(name, args);
  }
  return Internal("unknown module");
}

}  // namespace dfw::expr
