// Python's str()/repr() of values, operator spellings, and the UTF-8 helpers the string builtins use.
#include <charconv>
#include <cmath>
#include <functional>
#include <string>

#include <fmt/format.h>

#include "record/expression_ast.h"

namespace dfw::expr {
namespace {

// Python's float repr: shortest round-trip digits, fixed notation for exponents in [-4, 16).
void AppendFloat(std::string& out, double d) {
  if (std::isnan(d)) { out += "nan"; return; }
  if (std::isinf(d)) { out += d < 0 ? "-inf" : "inf"; return; }
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string_view sci(buf, static_cast<std::size_t>(end - buf));
  bool neg = sci.front() == '-';
  if (neg) sci.remove_prefix(1);
  std::size_t e = sci.find('e');
  std::string digits;
  for (char c : sci.substr(0, e))
    if (c != '.') digits += c;
  int exp = std::stoi(std::string(sci.substr(e + 1)));
  if (neg) out += '-';
  if (exp >= -4 && exp < 16) {
    if (exp < 0) {
      out += "0.";
      out.append(static_cast<std::size_t>(-exp - 1), '0');
      out += digits;
    } else {
      auto int_len = static_cast<std::size_t>(exp + 1);
      if (digits.size() <= int_len) {
        out += digits;
        out.append(int_len - digits.size(), '0');
        out += ".0";
      } else {
        out.append(digits, 0, int_len);
        out += '.';
        out.append(digits, int_len);
      }
    }
    return;
  }
  out += digits[0];
  if (digits.size() > 1) {
    out += '.';
    out.append(digits, 1);
  }
  out += exp < 0 ? "e-" : "e+";
  int a = exp < 0 ? -exp : exp;
  if (a < 10) out += '0';
  out += std::to_string(a);
}

// repr() of a str, or (bytes_repr) of a bytes object: the same quoting, and bytes also escape every
// byte from 0x80 up.
void AppendStrRepr(std::string& out, const std::string& s, bool bytes_repr = false) {
  char q = (s.find('\'') != std::string::npos && s.find('"') == std::string::npos) ? '"' : '\'';
  if (bytes_repr) out += 'b';
  out += q;
  for (unsigned char c : s) {
    if (c == static_cast<unsigned char>(q) || c == '\\') { out += '\\'; out += static_cast<char>(c); }
    else if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (c < 0x20 || c == 0x7f || (bytes_repr && c >= 0x80)) {
      out += "\\x";
      out += "0123456789abcdef"[c >> 4];
      out += "0123456789abcdef"[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  out += q;
}

}  // namespace

std::string_view OpText(Op op) {
  switch (op) {
    case Op::kAdd: return "+";
    case Op::kSub: return "-";
    case Op::kMul: return "*";
    case Op::kDiv: return "/";
    case Op::kFloorDiv: return "//";
    case Op::kMod: return "%";
    case Op::kPow: return "** or pow()";
    case Op::kBitAnd: return "&";
    case Op::kBitOr: return "|";
    case Op::kBitXor: return "^";
    case Op::kShl: return "<<";
    case Op::kShr: return ">>";
    case Op::kNeg: return "-";
    case Op::kPos: return "+";
    case Op::kNot: return "not";
    case Op::kInvert: return "~";
    case Op::kEq: return "==";
    case Op::kNe: return "!=";
    case Op::kLt: return "<";
    case Op::kLe: return "<=";
    case Op::kGt: return ">";
    case Op::kGe: return ">=";
    case Op::kIn: return "in";
    case Op::kNotIn: return "not in";
    case Op::kIs: return "is";
    case Op::kIsNot: return "is not";
  }
  return "?";
}

std::string_view PyTypeName(const Value& v) { return v.is_null() ? "NoneType" : v.TypeName(); }

void AppendStr(std::string& out, const Value& v) {
  if (v.is_string()) out += v.as_string();
  else AppendRepr(out, v);
}

void AppendRepr(std::string& out, const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kNull: out += "None"; return;
    case Value::Kind::kBool: out += v.as_bool() ? "True" : "False"; return;
    case Value::Kind::kInt: out += std::to_string(v.as_int()); return;
    case Value::Kind::kFloat: AppendFloat(out, v.as_float()); return;
    case Value::Kind::kString: AppendStrRepr(out, v.as_string()); return;
    case Value::Kind::kBytes: AppendStrRepr(out, v.as_bytes(), /*bytes_repr=*/true); return;
    case Value::Kind::kTimestamp: {  // Beam's Timestamp.__repr__
      const int64_t us = v.as_timestamp_us();
      const uint64_t mag = us < 0 ? 0 - static_cast<uint64_t>(us) : static_cast<uint64_t>(us);
      out += us < 0 ? "Timestamp(-" : "Timestamp(";
      out += std::to_string(mag / 1000000);
      if (mag % 1000000 != 0) out += fmt::format(".{:06d}", mag % 1000000);
      out += ')';
      return;
    }
    case Value::Kind::kList: {
      out += '[';
      bool first = true;
      for (const Value& x : v.as_list()) {
        if (!first) out += ", ";
        first = false;
        AppendRepr(out, x);
      }
      out += ']';
      return;
    }
    case Value::Kind::kRow: {  // Beam's Row repr
      out += "Row(";
      bool first = true;
      for (const Field& f : v.as_row().fields()) {
        if (!first) out += ", ";
        first = false;
        out += f.name;
        out += '=';
        AppendRepr(out, f.value);
      }
      out += ')';
      return;
    }
  }
}

std::string PyStr(const Value& v) { std::string s; AppendStr(s, v); return s; }
std::string PyRepr(const Value& v) { std::string s; AppendRepr(s, v); return s; }

bool IsAscii(std::string_view s) {
  for (char c : s)
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  return true;
}

std::size_t DecodeUtf8(std::string_view s, std::size_t i, uint32_t* cp) {
  auto c = static_cast<unsigned char>(s[i]);
  std::size_t n;
  uint32_t v;
  if (c < 0x80) { *cp = c; return 1; }
  if ((c & 0xE0) == 0xC0) { n = 2; v = c & 0x1F; }
  else if ((c & 0xF0) == 0xE0) { n = 3; v = c & 0x0F; }
  else if ((c & 0xF8) == 0xF0) { n = 4; v = c & 0x07; }
  else { *cp = 0xFFFD; return 1; }
  if (i + n > s.size()) { *cp = 0xFFFD; return 1; }
  for (std::size_t k = 1; k < n; ++k) {
    auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xC0) != 0x80) { *cp = 0xFFFD; return 1; }
    v = (v << 6) | (b & 0x3F);
  }
  static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (v < kMin[n] || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) { *cp = 0xFFFD; return 1; }
  *cp = v;
  return n;
}

void AppendUtf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) { out += static_cast<char>(cp); return; }
  if (cp < 0x800) { out += static_cast<char>(0xC0 | (cp >> 6)); }
  else if (cp < 0x10000) { out += static_cast<char>(0xE0 | (cp >> 12)); out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F)); }
  else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
  }
  out += static_cast<char>(0x80 | (cp & 0x3F));
}

std::size_t CodePointCount(std::string_view s) {
  if (IsAscii(s)) return s.size();
  std::size_t n = 0;
  uint32_t cp;
  for (std::size_t i = 0; i < s.size(); i += DecodeUtf8(s, i, &cp)) ++n;
  return n;
}

std::vector<std::size_t> CodePointOffsets(std::string_view s) {
  std::vector<std::size_t> off;
  off.reserve(s.size() + 1);
  uint32_t cp;
  for (std::size_t i = 0; i < s.size(); i += DecodeUtf8(s, i, &cp)) off.push_back(i);
  off.push_back(s.size());
  return off;
}

bool IsPyWhitespace(uint32_t cp) {
  if (cp == ' ' || (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x1F)) return true;
  if (cp < 0x85) return false;
  return cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 ||
         cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

std::size_t FindText(std::string_view hay, std::string_view needle, std::size_t from) {
  if (from > hay.size()) return std::string_view::npos;
  // Short needles: the library search is fast and at most 32x the text. Long ones: Boyer-Moore,
  // so a crafted 'aaaa...b' in 'aaaa...' stays linear instead of quadratic.
  if (needle.size() < 32) return hay.find(needle, from);
  std::boyer_moore_searcher searcher(needle.begin(), needle.end());
  auto it = std::search(hay.begin() + static_cast<std::ptrdiff_t>(from), hay.end(), searcher);
  return it == hay.end() ? std::string_view::npos : static_cast<std::size_t>(it - hay.begin());
}

}  // namespace dfw::expr
