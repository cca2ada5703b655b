// str methods inside def callables beyond the expression subset's (expression_methods.cc):
// padding (zfill, ljust, rjust, center), partition/rpartition, rsplit, splitlines, rfind/index/
// rindex, removeprefix/removesuffix, capitalize/casefold/swapcase, isupper/islower/isnumeric/
// isdecimal/istitle. Semantics per https://docs.python.org/3/library/stdtypes.html#string-methods;
// widths and indexes in code points.
#include <algorithm>
#include <cstdlib>
#include <string>

#include <utf8proc.h>

#include "record/python_def.h"

namespace dfw::expr {
namespace {

Result<std::string> StrParam(const Obj* o, const std::string& fn) {
  if (o == nullptr || o->sp || !o->v.is_string())
    return EvalError("TypeError: " + fn + "() argument must be str, not " + (o ? ObjTypeName(*o) : std::string("None")));
  return o->v.as_string();
}

Result<int64_t> IntParam(const Obj* o, const std::string& fn) {
  if (o == nullptr || o->sp || !IsIntLike(o->v)) return EvalError("TypeError: " + fn + "() argument must be an integer");
  return IntOf(o->v);
}

std::string MapEachCodePoint(const std::string& s, utf8proc_int32_t (*fn)(utf8proc_int32_t)) {
  std::string out;
  uint32_t cp;
  for (std::size_t i = 0, n; i < s.size(); i += n) {
    n = DecodeUtf8(s, i, &cp);
    if (n == 1 && static_cast<unsigned char>(s[i]) >= 0x80) {
      out += s[i];  // an invalid byte stays as it is
      continue;
    }
    AppendUtf8(out, static_cast<uint32_t>(fn(static_cast<utf8proc_int32_t>(cp))));
  }
  return out;
}

utf8proc_int32_t SwapCase(utf8proc_int32_t c) {
  if (utf8proc_isupper(c)) return utf8proc_tolower(c);
  if (utf8proc_islower(c)) return utf8proc_toupper(c);
  return c;
}

// Cased-character tests: at least one cased character and none of the other case.
bool CaseIs(const std::string& s, bool upper) {
  bool cased = false;
  uint32_t cp;
  for (std::size_t i = 0, n; i < s.size(); i += n) {
    n = DecodeUtf8(s, i, &cp);
    auto c = static_cast<utf8proc_int32_t>(cp);
    if (upper ? utf8proc_islower(c) : utf8proc_isupper(c)) return false;
    cased = cased || utf8proc_isupper(c) || utf8proc_islower(c);
  }
  return cased;
}

Value Tuple(std::vector<std::string> parts) {
  List l;
  for (std::string& p : parts) l.push_back(Value::String(std::move(p)));
  return Value::FromList(std::move(l));
}

}  // namespace

Result<Obj> MoreStrMethod(const std::string& s, const std::string& name, const Args& args, bool* handled) {
  *handled = true;
  std::vector<const Obj*> a;
  auto width_pad = [&](char how) -> Result<Obj> {
    RETURN_IF_ERROR(BindArgs(name, args, {"width", "fillchar"}, 1, a));
    ASSIGN_OR_RETURN(int64_t width, IntParam(a[0], name));
    std::string fill = " ";
    if (a[1] != nullptr) {
      ASSIGN_OR_RETURN(fill, StrParam(a[1], name));
      if (CodePointCount(fill) != 1) return EvalError("TypeError: The fill character must be exactly one character long");
    }
    int64_t len = static_cast<int64_t>(CodePointCount(s));
    if (width > (int64_t{1} << 24)) return EvalError("MemoryError: " + name + "() width too large");
    if (width <= len) return Obj(Value::String(s));
    int64_t pad = width - len, left = how == '<' ? 0 : how == '>' ? pad : pad / 2 + (pad & width & 1);
    std::string out;
    for (int64_t i = 0; i < left; ++i) out += fill;
    out += s;
    for (int64_t i = 0; i < pad - left; ++i) out += fill;
    return Obj(Value::String(std::move(out)));
  };
  if (name == "ljust") return width_pad('<');
  if (name == "rjust") return width_pad('>');
  if (name == "center") return width_pad('^');
  if (name == "zfill") {
    RETURN_IF_ERROR(BindArgs(name, args, {"width"}, 1, a));
    ASSIGN_OR_RETURN(int64_t width, IntParam(a[0], name));
    int64_t len = static_cast<int64_t>(CodePointCount(s));
    if (width > (int64_t{1} << 24)) return EvalError("MemoryError: zfill() width too large");
    if (width <= len) return Obj(Value::String(s));
    std::size_t sign = !s.empty() && (s[0] == '+' || s[0] == '-') ? 1 : 0;
    return Obj(Value::String(s.substr(0, sign) + std::string(static_cast<std::size_t>(width - len), '0') + s.substr(sign)));
  }
  if (name == "partition" || name == "rpartition") {
    RETURN_IF_ERROR(BindArgs(name, args, {"sep"}, 1, a));
    ASSIGN_OR_RETURN(std::string sep, StrParam(a[0], name));
    if (sep.empty()) return EvalError("ValueError: empty separator");
    std::size_t at = name == "partition" ? s.find(sep) : s.rfind(sep);
    if (at == std::string::npos)
      return Obj(name == "partition" ? Tuple({s, "", ""}) : Tuple({"", "", s}));
    return Obj(Tuple({s.substr(0, at), sep, s.substr(at + sep.size())}));
  }
  if (name == "rsplit") {
    RETURN_IF_ERROR(BindArgs(name, args, {"sep", "maxsplit"}, 0, a));
    int64_t maxsplit = -1;
    if (a[1] != nullptr) {
      ASSIGN_OR_RETURN(maxsplit, IntParam(a[1], name));
    }
    std::vector<std::string> parts;
    if (a[0] == nullptr || (!a[0]->sp && a[0]->v.is_null())) {  // runs of whitespace, from the right
      std::size_t end = s.size();
      while (true) {
        while (end > 0 && IsPyWhitespace(static_cast<unsigned char>(s[end - 1]))) --end;
        if (end == 0) break;
        if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit) {
          parts.push_back(s.substr(0, end));
          break;
        }
        std::size_t b = end;
        while (b > 0 && !IsPyWhitespace(static_cast<unsigned char>(s[b - 1]))) --b;
        parts.push_back(s.substr(b, end - b));
        end = b;
      }
    } else {
      ASSIGN_OR_RETURN(std::string sep, StrParam(a[0], name));
      if (sep.empty()) return EvalError("ValueError: empty separator");
      std::size_t end = s.size();
      while (maxsplit < 0 || static_cast<int64_t>(parts.size()) < maxsplit) {
        std::size_t at = end >= sep.size() ? s.rfind(sep, end - sep.size()) : std::string::npos;
        if (at == std::string::npos) break;
        parts.push_back(s.substr(at + sep.size(), end - at - sep.size()));
        end = at;
      }
      parts.push_back(s.substr(0, end));
    }
    std::reverse(parts.begin(), parts.end());
    return Obj(Tuple(std::move(parts)));
  }
  if (name == "splitlines") {
    RETURN_IF_ERROR(BindArgs(name, args, {"keepends"}, 0, a));
    bool keep = a[0] != nullptr && ObjTruthy(*a[0]);
    std::vector<std::string> parts;
    std::size_t start = 0;
    for (std::size_t i = 0; i < s.size(); ++i) {
      char c = s[i];
      if (c != '\n' && c != '\r' && c != '\v' && c != '\f' && c != '\x1c' && c != '\x1d' && c != '\x1e') continue;
      std::size_t end = i;
      if (c == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ++i;
      parts.push_back(s.substr(start, (keep ? i + 1 : end) - start));
      start = i + 1;
    }
    if (start < s.size()) parts.push_back(s.substr(start));
    return Obj(Tuple(std::move(parts)));
  }
  if (name == "rfind" || name == "index" || name == "rindex") {
    RETURN_IF_ERROR(BindArgs(name, args, {"sub"}, 1, a));
    ASSIGN_OR_RETURN(std::string sub, StrParam(a[0], name));
    std::size_t at = name == "index" ? s.find(sub) : s.rfind(sub);
    if (at == std::string::npos) {
      if (name == "rfind") return Obj(Value::Int(-1));
      return EvalError("ValueError: substring not found");
    }
    return Obj(Value::Int(static_cast<int64_t>(CodePointCount(std::string_view(s).substr(0, at)))));
  }
  if (name == "removeprefix" || name == "removesuffix") {
    RETURN_IF_ERROR(BindArgs(name, args, {"affix"}, 1, a));
    ASSIGN_OR_RETURN(std::string affix, StrParam(a[0], name));
    if (name == "removeprefix") return Obj(Value::String(s.rfind(affix, 0) == 0 ? s.substr(affix.size()) : s));
    bool ends = s.size() >= affix.size() && s.compare(s.size() - affix.size(), affix.size(), affix) == 0;
    return Obj(Value::String(ends ? s.substr(0, s.size() - affix.size()) : s));
  }
  if (name == "capitalize" || name == "casefold" || name == "swapcase" || name == "isupper" || name == "islower" ||
      name == "isnumeric" || name == "isdecimal" || name == "istitle") {
    RETURN_IF_ERROR(BindArgs(name, args, {}, 0, a));
    if (name == "casefold") {  // full case folding (ß is ss), as Python's
      utf8proc_uint8_t* folded = nullptr;
      utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()), static_cast<utf8proc_ssize_t>(s.size()),
                                        &folded, UTF8PROC_CASEFOLD);
      if (n < 0) return Obj(Value::String(MapEachCodePoint(s, utf8proc_tolower)));  // invalid UTF-8: per character
      std::string out(reinterpret_cast<const char*>(folded), static_cast<std::size_t>(n));
      std::free(folded);
      return Obj(Value::String(std::move(out)));
    }
    if (name == "swapcase") return Obj(Value::String(MapEachCodePoint(s, SwapCase)));
    if (name == "isupper") return Obj(Value::Bool(CaseIs(s, true)));
    if (name == "islower") return Obj(Value::Bool(CaseIs(s, false)));
    if (name == "capitalize") {
      if (s.empty()) return Obj(Value::String(""));
      uint32_t cp;
      std::size_t n = DecodeUtf8(s, 0, &cp);
      std::string first;
      AppendUtf8(first, static_cast<uint32_t>(utf8proc_totitle(static_cast<utf8proc_int32_t>(cp))));
      return Obj(Value::String(first + MapEachCodePoint(s.substr(n), utf8proc_tolower)));
    }
    if (name == "istitle") {
      bool prev_cased = false, any = false;
      uint32_t cp;
      for (std::size_t i = 0, n; i < s.size(); i += n) {
        n = DecodeUtf8(s, i, &cp);
        auto c = static_cast<utf8proc_int32_t>(cp);
        if (utf8proc_isupper(c)) {
          if (prev_cased) return Obj(Value::Bool(false));
          prev_cased = any = true;
        } else if (utf8proc_islower(c)) {
          if (!prev_cased) return Obj(Value::Bool(false));
          prev_cased = true;
        } else {
          prev_cased = false;
        }
      }
      return Obj(Value::Bool(any));
    }
    // isnumeric / isdecimal: every character a (decimal) digit, at least one.
    bool all = !s.empty();
    uint32_t cp;
    for (std::size_t i = 0, n; i < s.size() && all; i += n) {
      n = DecodeUtf8(s, i, &cp);
      utf8proc_category_t cat = utf8proc_category(static_cast<utf8proc_int32_t>(cp));
      all = cat == UTF8PROC_CATEGORY_ND || (name == "isnumeric" && (cat == UTF8PROC_CATEGORY_NL || cat == UTF8PROC_CATEGORY_NO));
    }
    return Obj(Value::Bool(all));
  }
  *handled = false;
  return Obj();
}

}  // namespace dfw::expr
