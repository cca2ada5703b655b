#include "dfw/template/value.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include <algorithm>

#include <nlohmann/json.hpp>

namespace dfw::tmpl {
namespace {

// Python's repr(float): the shortest digits that read back to the same double, fixed notation
// for exponents -4..15, scientific (1e+16, 1.5e-05) outside.
std::string FloatRepr(double f) {
  if (std::isnan(f)) return "nan";
  if (std::isinf(f)) return f > 0 ? "inf" : "-inf";
  char buf[64];
  int precision = 1;
  for (; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*e", precision - 1, f);
    if (std::strtod(buf, nullptr) == f) break;
  }
  // buf is d.ddde[+-]XX: split digits and exponent.
  std::string s(buf);
  const std::size_t e = s.find('e');
  const int exponent = std::atoi(s.c_str() + e + 1);
  std::string digits;
  const bool negative = s[0] == '-';
  for (std::size_t i = negative ? 1 : 0; i < e; ++i) {
    if (s[i] != '.') digits.push_back(s[i]);
  }
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  std::string out = negative ? "-" : "";
  if (exponent < -4 || exponent >= 16) {
    out += digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char exp[16];
    std::snprintf(exp, sizeof exp, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    return out + exp;
  }
  if (exponent < 0) return out + "0." + std::string(static_cast<std::size_t>(-exponent - 1), '0') + digits;
  const std::size_t int_len = static_cast<std::size_t>(exponent) + 1;
  if (digits.size() <= int_len) return out + digits + std::string(int_len - digits.size(), '0') + ".0";
  return out + digits.substr(0, int_len) + "." + digits.substr(int_len);
}

std::string QuoteRepr(const std::string& s) {
  // Python picks single quotes unless the string has one and no double quote.
  const bool dq = s.find('\'') != std::string::npos && s.find('"') == std::string::npos;
  const char q = dq ? '"' : '\'';
  std::string out(1, q);
  for (char c : s) {
    if (c == q || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else {
      out += c;
    }
  }
  return out + q;
}

Result<nlohmann::json> ToJsonValue(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined: return UndefinedError(v);
    case Value::Kind::kNone: return nlohmann::json(nullptr);
    case Value::Kind::kBool: return nlohmann::json(v.as_bool());
    case Value::Kind::kInt: return nlohmann::json(v.as_int());
    case Value::Kind::kFloat: return nlohmann::json(v.as_float());
    case Value::Kind::kString: return nlohmann::json(v.as_string());
    case Value::Kind::kList: {
      nlohmann::json a = nlohmann::json::array();
      for (const Value& x : v.as_list()) {
        ASSIGN_OR_RETURN(nlohmann::json j, ToJsonValue(x));
        a.push_back(std::move(j));
      }
      return a;
    }
    case Value::Kind::kDict: {
      nlohmann::json o = nlohmann::json::object();  // std::map: sorted keys, as sort_keys=True
      for (const auto& [k, x] : v.as_dict()) {
        ASSIGN_OR_RETURN(nlohmann::json j, ToJsonValue(x));
        o[k] = std::move(j);
      }
      return o;
    }
    case Value::Kind::kCallable: break;
  }
  return InvalidArgument("Object of type function is not JSON serializable");
}

// json.dumps's default layout: ", " and ": " separators; floats as Python writes them.
void DumpJson(const nlohmann::json& j, std::string& out) {
  if (j.is_object()) {
    out += '{';
    bool first = true;
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (!first) out += ", ";
      first = false;
      out += nlohmann::json(it.key()).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      out += ": ";
      DumpJson(it.value(), out);
    }
    out += '}';
  } else if (j.is_array()) {
    out += '[';
    for (std::size_t i = 0; i < j.size(); ++i) {
      if (i) out += ", ";
      DumpJson(j[i], out);
    }
    out += ']';
  } else if (j.is_number_float()) {
    const double f = j.get<double>();
    out += std::isnan(f) ? "NaN" : std::isinf(f) ? (f > 0 ? "Infinity" : "-Infinity") : FloatRepr(f);
  } else {
    out += j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
}

}  // namespace

Value Value::Undefined(std::string message) {
  Value v;
  v.kind_ = Kind::kUndefined;
  v.s_ = std::move(message);
  return v;
}
Value Value::Bool(bool b) {
  Value v;
  v.kind_ = Kind::kBool;
  v.b_ = b;
  return v;
}
Value Value::Int(int64_t i) {
  Value v;
  v.kind_ = Kind::kInt;
  v.i_ = i;
  return v;
}
Value Value::Float(double f) {
  Value v;
  v.kind_ = Kind::kFloat;
  v.f_ = f;
  return v;
}
Value Value::String(std::string s) {
  Value v;
  v.kind_ = Kind::kString;
  v.s_ = std::move(s);
  return v;
}
Value Value::List(ValueList items) {
  Value v;
  v.kind_ = Kind::kList;
  v.list_ = std::make_shared<const ValueList>(std::move(items));
  return v;
}
Value Value::Dict(ValueDict items) {
  Value v;
  v.kind_ = Kind::kDict;
  v.dict_ = std::make_shared<const ValueDict>(std::move(items));
  return v;
}
Value Value::Function(std::shared_ptr<Callable> fn) {
  Value v;
  v.kind_ = Kind::kCallable;
  v.fn_ = std::move(fn);
  return v;
}

Value Value::FromJson(const nlohmann::json& j) {
  if (j.is_null()) return Value();
  if (j.is_boolean()) return Bool(j.get<bool>());
  if (j.is_number_integer()) return Int(j.get<int64_t>());
  if (j.is_number()) return Float(j.get<double>());
  if (j.is_string()) return String(j.get<std::string>());
  if (j.is_array()) {
    ValueList items;
    for (const auto& x : j) items.push_back(FromJson(x));
    return List(std::move(items));
  }
  ValueDict items;
  for (auto it = j.begin(); it != j.end(); ++it) items.emplace_back(it.key(), FromJson(it.value()));
  return Dict(std::move(items));
}

const Value* Value::Find(const std::string& key) const {
  if (kind_ != Kind::kDict) return nullptr;
  for (const auto& [k, v] : *dict_) {
    if (k == key) return &v;
  }
  return nullptr;
}

Result<bool> Value::Truthy() const {
  switch (kind_) {
    case Kind::kUndefined: return UndefinedError(*this);
    case Kind::kNone: return false;
    case Kind::kBool: return b_;
    case Kind::kInt: return i_ != 0;
    case Kind::kFloat: return f_ != 0;
    case Kind::kString: return !s_.empty();
    case Kind::kList: return !list_->empty();
    case Kind::kDict: return !dict_->empty();
    case Kind::kCallable: return true;
  }
  return false;
}

Result<std::string> Value::Str() const {
  if (kind_ == Kind::kUndefined) return UndefinedError(*this);
  if (kind_ == Kind::kString) return s_;
  return Repr();
}

std::string Value::Repr() const {
  switch (kind_) {
    case Kind::kUndefined: return "Undefined";
    case Kind::kNone: return "None";
    case Kind::kBool: return b_ ? "True" : "False";
    case Kind::kInt: return std::to_string(i_);
    case Kind::kFloat: return FloatRepr(f_);
    case Kind::kString: return QuoteRepr(s_);
    case Kind::kList: {
      std::string out = "[";
      for (std::size_t i = 0; i < list_->size(); ++i) out += (i ? ", " : "") + (*list_)[i].Repr();
      return out + "]";
    }
    case Kind::kDict: {
      std::string out = "{";
      bool first = true;
      for (const auto& [k, v] : *dict_) {
        out += (first ? "" : ", ") + QuoteRepr(k) + ": " + v.Repr();
        first = false;
      }
      return out + "}";
    }
    case Kind::kCallable: return "<function>";
  }
  return "";
}

Result<std::string> Value::ToJson() const {
  ASSIGN_OR_RETURN(nlohmann::json j, ToJsonValue(*this));
  std::string raw;
  DumpJson(j, raw);
  std::string out;
  for (char c : raw) {
    switch (c) {
      case '<': out += "\\u003c"; break;
      case '>': out += "\\u003e"; break;
      case '&': out += "\\u0026"; break;
      case '\'': out += "\\u0027"; break;
      default: out += c;
    }
  }
  return out;
}

bool Value::Equals(const Value& o) const {
  if (is_number() && o.is_number()) {
    if (kind_ == Kind::kFloat || o.kind_ == Kind::kFloat) return as_float() == o.as_float();
    return as_int() == o.as_int();
  }
  if (kind_ != o.kind_) return false;
  switch (kind_) {
    case Kind::kUndefined: return false;
    case Kind::kNone: return true;
    case Kind::kString: return s_ == o.s_;
    case Kind::kList:
      return std::equal(list_->begin(), list_->end(), o.list_->begin(), o.list_->end(),
                        [](const Value& a, const Value& b) { return a.Equals(b); });
    case Kind::kDict: {
      if (dict_->size() != o.dict_->size()) return false;
      for (const auto& [k, v] : *dict_) {
        const Value* other = o.Find(k);
        if (!other || !v.Equals(*other)) return false;
      }
      return true;
    }
    case Kind::kCallable: return fn_ == o.fn_;
    default: return false;
  }
}

std::string Value::TypeName() const {
  switch (kind_) {
    case Kind::kUndefined: return "Undefined";
    case Kind::kNone: return "NoneType";
    case Kind::kBool: return "bool";
    case Kind::kInt: return "int";
    case Kind::kFloat: return "float";
    case Kind::kString: return "str";
    case Kind::kList: return "list";
    case Kind::kDict: return "dict";
    case Kind::kCallable: return "function";
  }
  return "";
}

Status UndefinedError(const Value& v) { return InvalidArgument(v.as_string()); }

}  // namespace dfw::tmpl
