#include "filters.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <vector>

namespace dfw::tmpl {
namespace {

const Value* Arg(const ValueList& args, const ValueDict& kwargs, std::size_t i, const char* key) {
  if (i < args.size()) return &args[i];
  for (const auto& [k, v] : kwargs) {
    if (k == key) return &v;
  }
  return nullptr;
}

Status Refuse(const std::string& filter, const Value& v, const std::string& wants) {
  return InvalidArgument("filter '" + filter + "' needs " + wants + ", got " + v.TypeName() + " " + v.Repr());
}

Result<Value> Length(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kString: return Value::Int(static_cast<int64_t>(v.as_string().size()));
    case Value::Kind::kList: return Value::Int(static_cast<int64_t>(v.as_list().size()));
    case Value::Kind::kDict: return Value::Int(static_cast<int64_t>(v.as_dict().size()));
    default: return Refuse("length", v, "a string, list or dict");
  }
}

// Jinja2's `int`: numbers truncate; strings parse as int (then float), else the default.
Value ToInt(const Value& v, const Value& fallback) {
  if (v.kind() == Value::Kind::kFloat) {
    const double f = v.as_float();
    if (std::isfinite(f) && std::fabs(f) < 9.2e18) return Value::Int(static_cast<int64_t>(f));
    return fallback;
  }
  if (v.is_number()) return Value::Int(v.as_int());
  if (v.kind() == Value::Kind::kString) {
    std::string s = v.as_string();
    const std::size_t a = s.find_first_not_of(" \t\n\r"), b = s.find_last_not_of(" \t\n\r");
    if (a == std::string::npos) return fallback;
    s = s.substr(a, b - a + 1);
    char* end = nullptr;
    errno = 0;
    const long long i = std::strtoll(s.c_str(), &end, 10);
    if (errno == 0 && end && *end == '\0') return Value::Int(i);
    errno = 0;
    const double f = std::strtod(s.c_str(), &end);
    if (errno == 0 && end && *end == '\0' && std::isfinite(f) && std::fabs(f) < 9.2e18) return Value::Int(static_cast<int64_t>(f));
  }
  return fallback;
}

std::string Trim(const std::string& s, const std::string& chars) {
  const std::size_t a = s.find_first_not_of(chars);
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(chars) - a + 1);
}

// jinja2 3.x `indent(width=4, first=False, blank=False)`: every line but the first (unless
// `first`) gets `width` spaces (or the string `width`); blank lines only with `blank`.
Result<Value> Indent(const Value& in, const ValueList& args, const ValueDict& kwargs) {
  ASSIGN_OR_RETURN(std::string s, in.Str());
  const Value* width = Arg(args, kwargs, 0, "width");
  const Value* first_v = Arg(args, kwargs, 1, "first");
  const Value* blank_v = Arg(args, kwargs, 2, "blank");
  std::string pad = "    ";
  if (width && width->kind() == Value::Kind::kString) {
    pad = width->as_string();
  } else if (width) {
    if (!width->is_number() || width->as_int() < 0 || width->as_int() > 4096) return Refuse("indent", *width, "a width of 0..4096");
    pad = std::string(static_cast<std::size_t>(width->as_int()), ' ');
  }
  bool first = false, blank = false;
  if (first_v) {
    ASSIGN_OR_RETURN(first, first_v->Truthy());
  }
  if (blank_v) {
    ASSIGN_OR_RETURN(blank, blank_v->Truthy());
  }
  std::vector<std::string> lines;  // (s + "\n").splitlines()
  s += '\n';
  for (std::size_t pos = 0; pos < s.size();) {
    const std::size_t nl = s.find('\n', pos);
    lines.push_back(s.substr(pos, nl - pos));
    pos = nl + 1;
  }
  std::string out = lines[0];
  for (std::size_t i = 1; i < lines.size(); ++i) {
    out += '\n';
    if (blank || !lines[i].empty()) out += pad;
    out += lines[i];
  }
  if (first) out = pad + out;
  return Value::String(std::move(out));
}

}  // namespace

Result<Value> ApplyFilter(const std::string& name, const Value& in, const ValueList& args, const ValueDict& kwargs,
                          std::size_t max_string_bytes) {
  if (name == "default" || name == "d") {
    const Value* fallback = Arg(args, kwargs, 0, "default_value");
    const Value* boolean = Arg(args, kwargs, 1, "boolean");
    bool use_fallback = in.is_undefined();
    if (!use_fallback && boolean) {
      ASSIGN_OR_RETURN(bool b, boolean->Truthy());
      if (b) {
        ASSIGN_OR_RETURN(bool t, in.Truthy());
        use_fallback = !t;
      }
    }
    if (!use_fallback) return in;
    return fallback ? *fallback : Value::String("");
  }
  if (in.is_undefined()) return UndefinedError(in);
  if (name == "upper" || name == "lower") {
    ASSIGN_OR_RETURN(std::string s, in.Str());
    for (char& c : s) c = static_cast<char>(name == "upper" ? std::toupper(static_cast<unsigned char>(c)) : std::tolower(static_cast<unsigned char>(c)));
    return Value::String(std::move(s));
  }
  if (name == "trim") {
    ASSIGN_OR_RETURN(std::string s, in.Str());
    const Value* chars = Arg(args, kwargs, 0, "chars");
    return Value::String(Trim(s, chars && chars->kind() == Value::Kind::kString ? chars->as_string() : " \t\n\r\f\v"));
  }
  if (name == "replace") {
    ASSIGN_OR_RETURN(std::string s, in.Str());
    const Value* old_v = Arg(args, kwargs, 0, "old");
    const Value* new_v = Arg(args, kwargs, 1, "new");
    const Value* count_v = Arg(args, kwargs, 2, "count");
    if (!old_v || !new_v) return InvalidArgument("filter 'replace' needs two arguments: replace(old, new)");
    ASSIGN_OR_RETURN(std::string from, old_v->Str());
    ASSIGN_OR_RETURN(std::string to, new_v->Str());
    int64_t count = count_v && count_v->is_number() ? count_v->as_int() : -1;
    std::string out;
    std::size_t pos = 0;
    while (count != 0) {
      std::size_t hit = from.empty() ? (pos <= s.size() ? pos : std::string::npos) : s.find(from, pos);
      if (hit == std::string::npos) break;
      out.append(s, pos, hit - pos).append(to);
      if (out.size() > max_string_bytes) return ResourceExhausted("filter 'replace': the result is over the output limit");
      if (from.empty()) {
        if (hit < s.size()) out += s[hit];
        pos = hit + 1;
      } else {
        pos = hit + from.size();
      }
      if (count > 0) --count;
    }
    if (pos < s.size()) out.append(s, pos, std::string::npos);
    return Value::String(std::move(out));
  }
  if (name == "join") {
    if (in.kind() != Value::Kind::kList) return Refuse("join", in, "a list");
    const Value* sep_v = Arg(args, kwargs, 0, "d");
    const Value* attr = Arg(args, kwargs, 1, "attribute");
    std::string sep;
    if (sep_v) {
      ASSIGN_OR_RETURN(sep, sep_v->Str());
    }
    std::string out;
    bool first = true;
    for (const Value& item : in.as_list()) {
      const Value* x = &item;
      Value missing;
      if (attr) {
        ASSIGN_OR_RETURN(std::string key, attr->Str());
        x = item.Find(key);
        if (!x) {
          missing = Value::Undefined("'" + item.TypeName() + " object' has no attribute '" + key + "'");
          x = &missing;
        }
      }
      ASSIGN_OR_RETURN(std::string s, x->Str());
      if (!first) out += sep;
      out += s;
      first = false;
      if (out.size() > max_string_bytes) return ResourceExhausted("filter 'join': the result is over the output limit");
    }
    return Value::String(std::move(out));
  }
  if (name == "indent") return Indent(in, args, kwargs);
  if (name == "length" || name == "count") return Length(in);
  if (name == "int") {
    const Value* fallback = Arg(args, kwargs, 0, "default");
    return ToInt(in, fallback ? *fallback : Value::Int(0));
  }
  if (name == "float") {
    if (in.is_number()) return Value::Float(in.as_float());
    if (in.kind() == Value::Kind::kString) {
      char* end = nullptr;
      const std::string s = Trim(in.as_string(), " \t\n\r");
      const double f = std::strtod(s.c_str(), &end);
      if (!s.empty() && end && *end == '\0') return Value::Float(f);
    }
    const Value* fallback = Arg(args, kwargs, 0, "default");
    return fallback ? *fallback : Value::Float(0);
  }
  if (name == "string") {
    ASSIGN_OR_RETURN(std::string s, in.Str());
    return Value::String(std::move(s));
  }
  if (name == "tojson") {
    ASSIGN_OR_RETURN(std::string s, in.ToJson());
    return Value::String(std::move(s));
  }
  if (name == "list") {
    if (in.kind() == Value::Kind::kList) return in;
    ValueList out;
    if (in.kind() == Value::Kind::kString) {
      for (char c : in.as_string()) out.push_back(Value::String(std::string(1, c)));
    } else if (in.kind() == Value::Kind::kDict) {
      for (const auto& [k, v] : in.as_dict()) out.push_back(Value::String(k));
    } else {
      return Refuse("list", in, "a string, list or dict");
    }
    return Value::List(std::move(out));
  }
  if (name == "first" || name == "last") {
    if (in.kind() != Value::Kind::kList) return Refuse(name, in, "a list");
    if (in.as_list().empty()) return Value::Undefined("No " + name + " item, sequence was empty.");
    return name == "first" ? in.as_list().front() : in.as_list().back();
  }
  if (name == "abs") {
    if (in.kind() == Value::Kind::kFloat) return Value::Float(std::fabs(in.as_float()));
    if (in.is_number() && in.as_int() != INT64_MIN) return Value::Int(std::llabs(in.as_int()));
    return Refuse("abs", in, "a number");
  }
  return InvalidArgument("no filter named '" + name +
                         "' (supported: default, upper, lower, trim, replace, join, length, int, float, string, tojson, "
                         "list, first, last, abs, indent)");
}

Result<bool> ApplyTest(const std::string& name, const Value& in, const ValueList& args) {
  if (name == "defined") return !in.is_undefined();
  if (name == "undefined") return in.is_undefined();
  if (in.is_undefined()) return UndefinedError(in);
  if (name == "none") return in.kind() == Value::Kind::kNone;
  if (name == "string") return in.kind() == Value::Kind::kString;
  if (name == "number") return in.kind() == Value::Kind::kInt || in.kind() == Value::Kind::kFloat;
  if (name == "integer") return in.kind() == Value::Kind::kInt;
  if (name == "float") return in.kind() == Value::Kind::kFloat;
  if (name == "boolean") return in.kind() == Value::Kind::kBool;
  if (name == "mapping") return in.kind() == Value::Kind::kDict;
  if (name == "sequence" || name == "iterable") {
    return in.kind() == Value::Kind::kList || in.kind() == Value::Kind::kString || in.kind() == Value::Kind::kDict;
  }
  if (name == "even" || name == "odd") {
    if (in.kind() != Value::Kind::kInt) return InvalidArgument("test '" + name + "' needs an int, got " + in.TypeName());
    return (in.as_int() % 2 == 0) == (name == "even");
  }
  if (name == "eq" || name == "equalto" || name == "sameas") {
    if (args.empty()) return InvalidArgument("test '" + name + "' needs an argument");
    return in.Equals(args[0]);
  }
  return InvalidArgument("no test named '" + name +
                         "' (supported: defined, undefined, none, string, number, integer, float, boolean, mapping, "
                         "sequence, iterable, even, odd, eq)");
}

}  // namespace dfw::tmpl
