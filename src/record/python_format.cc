// String formatting inside def callables: format(value, spec) with Python's format-spec
// mini-language (https://docs.python.org/3/library/string.html#formatspec), str.format fields,
// f-string fields, and printf-style `%` formatting
// (https://docs.python.org/3/library/stdtypes.html#printf-style-string-formatting).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "record/python_def.h"

namespace dfw::expr {
namespace {

struct Spec {
  uint32_t fill = ' ';
  char align = 0;  // < > ^ =, 0 for the type's default
  char sign = '-';
  bool alt = false;
  bool zero = false;
  int64_t width = -1;
  char grouping = 0;  // , or _
  int64_t precision = -1;
  char type = 0;
};

Status SpecError(std::string_view spec, const std::string& why) {
  return EvalError("ValueError: " + why + " (format spec '" + std::string(spec) + "')");
}

Result<Spec> ParseSpec(std::string_view s) {
  Spec sp;
  std::size_t i = 0;
  auto is_align = [](char c) { return c == '<' || c == '>' || c == '^' || c == '='; };
  uint32_t cp = 0;
  std::size_t n = s.empty() ? 0 : DecodeUtf8(s, 0, &cp);
  if (n < s.size() && is_align(s[n])) {
    sp.fill = cp;
    sp.align = s[n];
    i = n + 1;
  } else if (!s.empty() && is_align(s[0])) {
    sp.align = s[0];
    i = 1;
  }
  if (i < s.size() && (s[i] == '+' || s[i] == '-' || s[i] == ' ')) sp.sign = s[i++];
  if (i < s.size() && s[i] == 'z') ++i;  // negative zero coercion: -0.0 formats as 0.0 below anyway
  if (i < s.size() && s[i] == '#') sp.alt = true, ++i;
  if (i < s.size() && s[i] == '0') sp.zero = true, ++i;
  auto digits = [&](int64_t* out) {
    std::size_t b = i;
    int64_t v = 0;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])) && v < 100000) v = v * 10 + (s[i++] - '0');
    if (i > b) *out = v;
    return i > b;
  };
  digits(&sp.width);
  if (sp.width > 10000) return SpecError(s, "width too large");
  if (i < s.size() && (s[i] == ',' || s[i] == '_')) sp.grouping = s[i++];
  if (i < s.size() && s[i] == '.') {
    ++i;
    if (!digits(&sp.precision)) return SpecError(s, "Format specifier missing precision");
    if (sp.precision > 1000) return SpecError(s, "precision too large");
  }
  if (i < s.size()) sp.type = s[i++];
  if (i < s.size()) return SpecError(s, "Invalid format specifier");
  return sp;
}

void Group(std::string& digits, char sep, int every) {
  std::string out;
  int k = 0;
  for (std::size_t i = digits.size(); i-- > 0;) {
    if (k == every) {
      out += sep;
      k = 0;
    }
    out += digits[i];
    ++k;
  }
  digits.assign(out.rbegin(), out.rend());
}

// Pads `body` (sign and prefix already split off into `head`) to the spec's width.
std::string Pad(const Spec& sp, const std::string& head, const std::string& body, char default_align) {
  char align = sp.align ? sp.align : (sp.zero ? '=' : default_align);
  uint32_t fill = sp.align ? sp.fill : (sp.zero ? '0' : ' ');
  int64_t len = static_cast<int64_t>(CodePointCount(head) + CodePointCount(body));
  int64_t pad = sp.width > len ? sp.width - len : 0;
  std::string f;
  AppendUtf8(f, fill);
  auto fills = [&](int64_t k) {
    std::string r;
    for (int64_t j = 0; j < k; ++j) r += f;
    return r;
  };
  switch (align) {
    case '<': return head + body + fills(pad);
    case '^': return fills(pad / 2) + head + body + fills(pad - pad / 2);
    case '=': return head + fills(pad) + body;
    default: return fills(pad) + head + body;
  }
}

std::string SignOf(bool negative, char sign) {
  if (negative) return "-";
  if (sign == '+') return "+";
  if (sign == ' ') return " ";
  return "";
}

Result<std::string> FormatInt(int64_t v, const Spec& sp, std::string_view spec) {
  char t = sp.type ? sp.type : 'd';
  if (sp.precision >= 0) return SpecError(spec, "Precision not allowed in integer format specifier");
  bool neg = v < 0;
  uint64_t mag = neg ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  std::string digits, prefix;
  if (t == 'c') {
    if (v < 0 || v > 0x10FFFF) return EvalError("OverflowError: %c arg not in range(0x110000)");
    std::string s;
    AppendUtf8(s, static_cast<uint32_t>(v));
    return Pad(sp, "", s, '<');
  }
  int base = t == 'b' ? 2 : t == 'o' ? 8 : (t == 'x' || t == 'X') ? 16 : 10;
  if (t != 'd' && t != 'n' && base == 10) return SpecError(spec, std::string("Unknown format code '") + t + "' for object of type 'int'");
  const char* hexd = t == 'X' ? "0123456789ABCDEF" : "0123456789abcdef";
  do {
    digits += hexd[mag % static_cast<uint64_t>(base)];
    mag /= static_cast<uint64_t>(base);
  } while (mag != 0);
  digits.assign(digits.rbegin(), digits.rend());
  if (sp.grouping) Group(digits, sp.grouping, base == 10 ? 3 : 4);
  if (sp.alt && base != 10) prefix = std::string("0") + (t == 'b' ? "b" : t == 'o' ? "o" : t == 'X' ? "X" : "x");
  return Pad(sp, SignOf(neg, sp.sign) + prefix, digits, '>');
}

Result<std::string> FormatFloat(double d, const Spec& sp, std::string_view spec) {
  char t = sp.type;
  if (t != 0 && std::string_view("eEfFgGn%").find(t) == std::string_view::npos)
    return SpecError(spec, std::string("Unknown format code '") + t + "' for object of type 'float'");
  bool neg = std::signbit(d) && !std::isnan(d);
  double a = std::fabs(d);
  std::string body;
  if (t == '%') a *= 100;
  if (std::isnan(a) || std::isinf(a)) {
    body = std::isnan(a) ? "nan" : "inf";
    if (t == 'E' || t == 'F' || t == 'G') body = std::isnan(a) ? "NAN" : "INF";
    if (t == '%') body += '%';
  } else if (t == 0 && sp.precision < 0) {
    body = PyRepr(Value::Float(a));
  } else if (t == 0) {
    // No type, a precision: 'g'-like with p significant digits, but fixed notation only below
    // 10**(p-1) and then always with a digit after the point (format(100.0, '.3') is '1e+02').
    int p = static_cast<int>(std::max<int64_t>(sp.precision, 1));
    std::vector<char> buf(static_cast<std::size_t>(p) + 400);
    std::snprintf(buf.data(), buf.size(), "%.*e", p - 1, a);
    std::string e = buf.data();
    int x = std::atoi(e.c_str() + e.find('e') + 1);
    if (x >= -4 && x < p - 1) {
      std::snprintf(buf.data(), buf.size(), "%.*f", p - 1 - x, a);
      body = buf.data();
      if (body.find('.') != std::string::npos) {
        while (body.back() == '0') body.pop_back();
        if (body.back() == '.') body += '0';
      } else {
        body += ".0";
      }
    } else {
      std::string mant = e.substr(0, e.find('e'));
      if (mant.find('.') != std::string::npos) {
        while (mant.back() == '0') mant.pop_back();
        if (mant.back() == '.') mant.pop_back();
      }
      body = mant + e.substr(e.find('e'));
    }
  } else {
    int64_t p = sp.precision < 0 ? 6 : sp.precision;
    char ct = t == 0 ? 'g' : t == '%' ? 'f' : t == 'n' ? 'g' : t;
    if (ct != 'e' && ct != 'E' && ct != 'f' && ct != 'F' && ct != 'g' && ct != 'G')
      return SpecError(spec, std::string("Unknown format code '") + t + "' for object of type 'float'");
    std::string fmt = std::string("%") + (sp.alt ? "#" : "") + "." + std::to_string(p) + ct;
    std::vector<char> buf(static_cast<std::size_t>(p) + 400);
    std::snprintf(buf.data(), buf.size(), fmt.c_str(), a);
    body = buf.data();
    if (t == '%') body += '%';
  }
  if (sp.grouping) {
    std::size_t end = body.find_first_not_of("0123456789");
    std::string ip = body.substr(0, end);
    Group(ip, sp.grouping, 3);
    body = ip + (end == std::string::npos ? "" : body.substr(end));
  }
  return Pad(sp, SignOf(neg, sp.sign), body, '>');
}

}  // namespace

Result<std::string> FormatValue(const Value& v, std::string_view spec) {
  if (spec.empty()) return PyStr(v);
  if (v.is_null()) return EvalError("TypeError: unsupported format string passed to NoneType.__format__");
  ASSIGN_OR_RETURN(Spec sp, ParseSpec(spec));
  if (v.is_float() || (IsIntLike(v) && sp.type && std::string_view("eEfFgG%").find(sp.type) != std::string_view::npos)) {
    if (sp.type == 's') return SpecError(spec, "Unknown format code 's' for object of type 'float'");
    return FormatFloat(FloatOf(v), sp, spec);
  }
  if (IsIntLike(v)) {  // a bool with a spec formats as its int, as in Python
    if (sp.type == 's') return SpecError(spec, "Unknown format code 's' for object of type 'int'");
    return FormatInt(IntOf(v), sp, spec);
  }
  if (sp.type != 0 && sp.type != 's')
    return SpecError(spec, std::string("Unknown format code '") + sp.type + "' for object of type '" + PyType(v) + "'");
  if (!v.is_string() && !v.is_bool() && !v.is_null() && !spec.empty())
    return EvalError("TypeError: unsupported format string passed to " + PyType(v) + ".__format__");
  if (sp.sign != '-') return SpecError(spec, "Sign not allowed in string format specifier");
  std::string s = PyStr(v);
  if (sp.precision >= 0) {
    std::vector<std::size_t> off = CodePointOffsets(s);
    if (static_cast<std::size_t>(sp.precision) + 1 < off.size()) s.resize(off[static_cast<std::size_t>(sp.precision)]);
  }
  if (sp.zero && !sp.align) sp.align = '<', sp.fill = '0';
  return Pad(sp, "", s, '<');
}

Result<std::string> ConvertAndFormat(const Value& v, char conversion, std::string_view spec) {
  if (conversion == 'r' || conversion == 'a') return FormatValue(Value::String(PyRepr(v)), spec);
  if (conversion == 's') return FormatValue(Value::String(PyStr(v)), spec);
  return FormatValue(v, spec);
}

Result<std::string> StrFormat(const std::string& fmt, const std::vector<const Value*>& pos,
                              const std::vector<std::pair<std::string, const Value*>>& kw) {
  std::string out;
  int auto_index = 0;
  bool manual = false;
  for (std::size_t i = 0; i < fmt.size(); ++i) {
    char c = fmt[i];
    if (c == '}') {
      if (i + 1 < fmt.size() && fmt[i + 1] == '}') { out += '}'; ++i; continue; }
      return EvalError("ValueError: Single '}' encountered in format string");
    }
    if (c != '{') { out += c; continue; }
    if (i + 1 < fmt.size() && fmt[i + 1] == '{') { out += '{'; ++i; continue; }
    std::size_t close = fmt.find('}', i);
    if (close == std::string::npos) return EvalError("ValueError: Single '{' encountered in format string");
    std::string field = fmt.substr(i + 1, close - i - 1);
    if (field.find('{') != std::string::npos) return EvalError("ValueError: nested replacement fields are not supported here");
    i = close;
    std::string spec, name = field;
    char conv = 0;
    std::size_t colon = field.find(':');
    if (colon != std::string::npos) spec = field.substr(colon + 1), name = field.substr(0, colon);
    std::size_t bang = name.find('!');
    if (bang != std::string::npos) {
      if (bang + 2 != name.size()) return EvalError("ValueError: expected ':' after conversion specifier");
      conv = name[bang + 1];
      if (conv != 's' && conv != 'r' && conv != 'a') return EvalError(std::string("ValueError: Unknown conversion specifier ") + conv);
      name = name.substr(0, bang);
    }
    // The argument: a number or a name, then .attr and [key] lookups.
    std::size_t end = name.find_first_of(".[");
    std::string head = name.substr(0, end);
    Value cur;
    if (head.empty()) {
      if (manual) return EvalError("ValueError: cannot switch from manual field specification to automatic field numbering");
      if (static_cast<std::size_t>(auto_index) >= pos.size())
        return EvalError("IndexError: Replacement index " + std::to_string(auto_index) + " out of range for positional args tuple");
      cur = *pos[static_cast<std::size_t>(auto_index++)];
    } else if (std::isdigit(static_cast<unsigned char>(head[0]))) {
      manual = true;
      std::size_t k = static_cast<std::size_t>(std::atoll(head.c_str()));
      if (k >= pos.size()) return EvalError("IndexError: Replacement index " + head + " out of range for positional args tuple");
      cur = *pos[k];
    } else {
      const Value* found = nullptr;
      for (const auto& [k, v] : kw)
        if (k == head) found = v;
      if (found == nullptr) return EvalError("KeyError: '" + head + "'");
      cur = *found;
    }
    while (end != std::string::npos && end < name.size()) {
      if (name[end] == '.') {
        std::size_t next = name.find_first_of(".[", end + 1);
        std::string attr = name.substr(end + 1, next == std::string::npos ? std::string::npos : next - end - 1);
        const Value* f = cur.is_row() ? cur.as_row().Find(attr) : nullptr;
        if (f == nullptr) return EvalError("AttributeError: '" + PyType(cur) + "' object has no attribute '" + attr + "'");
        cur = *f;
        end = next;
      } else {
        std::size_t rb = name.find(']', end);
        if (rb == std::string::npos) return EvalError("ValueError: Missing ']' in format string");
        std::string key = name.substr(end + 1, rb - end - 1);
        bool numeric = !key.empty() && std::all_of(key.begin(), key.end(), [](char d) { return std::isdigit(static_cast<unsigned char>(d)); });
        ASSIGN_OR_RETURN(cur, Subscript(cur, numeric ? Value::Int(std::atoll(key.c_str())) : Value::String(key)));
        end = rb + 1 < name.size() ? rb + 1 : std::string::npos;
      }
    }
    ASSIGN_OR_RETURN(std::string piece, ConvertAndFormat(cur, conv, spec));
    out += piece;
    if (out.size() > static_cast<std::size_t>(kEvalBudgetBytes)) return EvalError("MemoryError: format() result too large");
  }
  return out;
}

Result<std::string> PercentFormat(const std::string& fmt, const Value& args) {
  std::vector<Value> items;
  bool mapping = args.is_row();
  if (args.is_list()) items = args.as_list();
  else items.push_back(args);
  std::size_t next = 0;
  std::string out;
  for (std::size_t i = 0; i < fmt.size(); ++i) {
    if (fmt[i] != '%') { out += fmt[i]; continue; }
    if (++i >= fmt.size()) return EvalError("ValueError: incomplete format");
    if (fmt[i] == '%') { out += '%'; continue; }
    const Value* arg = nullptr;
    if (fmt[i] == '(') {
      std::size_t close = fmt.find(')', i);
      if (close == std::string::npos) return EvalError("ValueError: incomplete format key");
      if (!mapping) return EvalError("TypeError: format requires a mapping");
      arg = args.as_row().Find(fmt.substr(i + 1, close - i - 1));
      if (arg == nullptr) return EvalError("KeyError: '" + fmt.substr(i + 1, close - i - 1) + "'");
      i = close + 1;
    }
    std::string flags;
    while (i < fmt.size() && std::string_view("-+ #0").find(fmt[i]) != std::string_view::npos) flags += fmt[i++];
    std::string width, prec;
    while (i < fmt.size() && std::isdigit(static_cast<unsigned char>(fmt[i]))) width += fmt[i++];
    if (i < fmt.size() && fmt[i] == '.') {
      ++i;
      prec = "0";
      while (i < fmt.size() && std::isdigit(static_cast<unsigned char>(fmt[i]))) prec += fmt[i++];
    }
    if (i >= fmt.size()) return EvalError("ValueError: incomplete format");
    char t = fmt[i];
    if (arg == nullptr) {
      if (mapping) return EvalError("TypeError: format requires a mapping");
      if (next >= items.size()) return EvalError("TypeError: not enough arguments for format string");
      arg = &items[next++];
    }
    // The same as format() with the equivalent spec: %-5d is '<5d', %05.2f is '05.2f'.
    std::string spec;
    if (flags.find('-') != std::string::npos) spec += '<';
    if (flags.find('+') != std::string::npos) spec += '+';
    else if (flags.find(' ') != std::string::npos) spec += ' ';
    if (flags.find('#') != std::string::npos) spec += '#';
    if (flags.find('0') != std::string::npos && flags.find('-') == std::string::npos) spec += '0';
    spec += width;
    if (!prec.empty()) spec += "." + std::to_string(std::atoi(prec.c_str()));
    std::string piece;
    if (t == 's' || t == 'r' || t == 'a') {
      std::string s = t == 's' ? PyStr(*arg) : PyRepr(*arg);
      ASSIGN_OR_RETURN(piece, FormatValue(Value::String(s), spec.find('0') != std::string::npos && flags.find('0') != std::string::npos ? width : spec));
    } else if (t == 'd' || t == 'i' || t == 'u') {
      if (!IsNum(*arg)) return EvalError("TypeError: %d format: a real number is required, not " + PyType(*arg));
      int64_t v = arg->is_float() ? static_cast<int64_t>(std::trunc(arg->as_float())) : IntOf(*arg);
      std::string ispec = spec;
      std::size_t dot = ispec.find('.');
      if (dot != std::string::npos) ispec.resize(dot);
      ASSIGN_OR_RETURN(piece, FormatValue(Value::Int(v), ispec + "d"));
    } else if (std::string_view("eEfFgGxXoc").find(t) != std::string_view::npos) {
      if (!IsNum(*arg) && !(t == 'c' && arg->is_string())) return EvalError(std::string("TypeError: %") + t + " format: a real number is required, not " + PyType(*arg));
      if (t == 'c' && arg->is_string()) piece = arg->as_string();
      else {
        Value num = (t == 'x' || t == 'X' || t == 'o' || t == 'c') ? Value::Int(arg->is_float() ? static_cast<int64_t>(arg->as_float()) : IntOf(*arg))
                                                                   : Value::Float(FloatOf(*arg));
        ASSIGN_OR_RETURN(piece, FormatValue(num, spec + t));
      }
    } else {
      return EvalError(std::string("ValueError: unsupported format character '") + t + "'");
    }
    out += piece;
    if (out.size() > static_cast<std::size_t>(kEvalBudgetBytes)) return EvalError("MemoryError: %-format result too large");
  }
  if (!mapping && next < items.size() && args.is_list())
    return EvalError("TypeError: not all arguments converted during string formatting");
  if (!mapping && !args.is_list() && next == 0) return EvalError("TypeError: not all arguments converted during string formatting");
  return out;
}

}  // namespace dfw::expr
