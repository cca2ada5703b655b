// str methods (lower upper title strip lstrip rstrip split startswith endswith replace join find
// count isdigit isalpha isalnum isspace), list.count and row.get. Indexes are in code points, as
// in Python; case mapping and character classes use utf8proc beyond ASCII.
#include <algorithm>
#include <cctype>
#include <string>

#include <utf8proc.h>

#include "record/expression_ast.h"

namespace dfw::expr {
namespace {

enum Method : uint8_t {
  kLower, kUpper, kTitle, kStrip, kLstrip, kRstrip, kSplit, kStartswith, kEndswith, kReplace, kJoin, kFind, kCount,
  kIsdigit, kIsalpha, kIsalnum, kIsspace, kGet
};

bool Given(const Value* v) { return v != nullptr && !v->is_null(); }

template <typename Fn>
void ForEachCodePoint(std::string_view s, Fn fn) {
  uint32_t cp;
  for (std::size_t i = 0, n; i < s.size(); i += n) {
    n = DecodeUtf8(s, i, &cp);
    fn(cp, s.substr(i, n));
  }
}

// Maps each character; `prev_cased` lets title() know whether the previous character was a letter.
enum class Case { kLower, kUpper, kTitle };
std::string MapCase(const std::string& s, Case mode) {
  std::string out;
  if (mode != Case::kTitle && IsAscii(s)) {  // the common case, without per-character table lookups
    out = s;
    // ASCII only: no locale lookups (std::toupper/tolower are calls per byte).
    const char from = mode == Case::kLower ? 'A' : 'a';
    for (char& c : out) {
      if (static_cast<unsigned char>(c - from) < 26) c = static_cast<char>(c ^ 0x20);
    }
    return out;
  }
  out.reserve(s.size());
  bool prev_cased = false;
  ForEachCodePoint(s, [&](uint32_t cp, std::string_view raw) {
    auto c = static_cast<utf8proc_int32_t>(cp);
    auto cat = utf8proc_category(c);
    bool cased = cat == UTF8PROC_CATEGORY_LU || cat == UTF8PROC_CATEGORY_LL || cat == UTF8PROC_CATEGORY_LT;
    utf8proc_int32_t m = c;
    if (mode == Case::kLower) m = utf8proc_tolower(c);
    else if (mode == Case::kUpper) m = utf8proc_toupper(c);
    else if (cased) m = prev_cased ? utf8proc_tolower(c) : utf8proc_totitle(c);
    prev_cased = cased;
    if (m == c) out += raw;  // keeps invalid bytes as they were
    else AppendUtf8(out, static_cast<uint32_t>(m));
  });
  return out;
}

bool AllChars(const std::string& s, bool (*pred)(uint32_t)) {
  if (s.empty()) return false;
  bool all = true;
  ForEachCodePoint(s, [&](uint32_t cp, std::string_view) { all = all && pred(cp); });
  return all;
}
bool IsDigitCp(uint32_t cp) { return utf8proc_category(static_cast<utf8proc_int32_t>(cp)) == UTF8PROC_CATEGORY_ND; }
bool IsAlphaCp(uint32_t cp) {
  auto c = utf8proc_category(static_cast<utf8proc_int32_t>(cp));
  return c >= UTF8PROC_CATEGORY_LU && c <= UTF8PROC_CATEGORY_LO;
}
bool IsAlnumCp(uint32_t cp) {
  auto c = utf8proc_category(static_cast<utf8proc_int32_t>(cp));
  return IsAlphaCp(cp) || (c >= UTF8PROC_CATEGORY_ND && c <= UTF8PROC_CATEGORY_NO);
}

Result<Value> Strip(const std::string& s, const Value* chars, bool left, bool right) {
  if (Given(chars) && !chars->is_string()) return EvalError("TypeError: strip arg must be None or str");
  if (!Given(chars) && IsAscii(s)) {  // the common case: no offsets table
    auto ws = [](char c) { return c == ' ' || (c >= '\t' && c <= '\r') || (c >= '\x1c' && c <= '\x1f'); };
    std::size_t b = 0, e = s.size();
    while (left && b < e && ws(s[b])) ++b;
    while (right && e > b && ws(s[e - 1])) --e;
    return Value::String(s.substr(b, e - b));
  }
  std::vector<uint32_t> set;
  if (Given(chars)) ForEachCodePoint(chars->as_string(), [&](uint32_t cp, std::string_view) { set.push_back(cp); });
  auto strip_it = [&](uint32_t cp) { return Given(chars) ? std::find(set.begin(), set.end(), cp) != set.end() : IsPyWhitespace(cp); };
  std::vector<std::size_t> off = CodePointOffsets(s);
  std::size_t b = 0, e = off.size() - 1;
  uint32_t cp;
  while (left && b < e && (DecodeUtf8(s, off[b], &cp), strip_it(cp))) ++b;
  while (right && e > b && (DecodeUtf8(s, off[e - 1], &cp), strip_it(cp))) --e;
  return Value::String(s.substr(off[b], off[e] - off[b]));
}

Result<Value> Split(const std::string& s, const Value* sep, const Value* maxsplit_v, EvalContext& ctx) {
  if (Given(sep) && !sep->is_string()) return EvalError("TypeError: must be str or None, not " + PyType(*sep));
  if (Given(maxsplit_v) && !maxsplit_v->is_int()) return EvalError("TypeError: '" + PyType(*maxsplit_v) + "' object cannot be interpreted as an integer");
  int64_t maxsplit = Given(maxsplit_v) ? maxsplit_v->as_int() : -1;
  RETURN_IF_ERROR(ctx.Charge(s.size() * 2 + sizeof(Value)));
  List out;
  if (Given(sep)) {
    const std::string& d = sep->as_string();
    if (d.empty()) return EvalError("ValueError: empty separator");
    std::size_t start = 0;
    for (std::size_t at; (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) && (at = FindText(s, d, start)) != std::string::npos;
         start = at + d.size())
      out.push_back(Value::String(s.substr(start, at - start)));
    out.push_back(Value::String(s.substr(start)));
    RETURN_IF_ERROR(ctx.Charge(out.size() * sizeof(Value)));
    return Value::FromList(std::move(out));
  }
  std::size_t i = 0;
  uint32_t cp;
  auto skip_space = [&] { while (i < s.size()) { std::size_t n = DecodeUtf8(s, i, &cp); if (!IsPyWhitespace(cp)) break; i += n; } };
  while (true) {
    skip_space();
    if (i >= s.size()) break;
    if (maxsplit >= 0 && static_cast<int64_t>(out.size()) >= maxsplit) {  // the rest, trailing space kept
      out.push_back(Value::String(s.substr(i)));
      break;
    }
    std::size_t start = i;
    while (i < s.size()) { std::size_t n = DecodeUtf8(s, i, &cp); if (IsPyWhitespace(cp)) break; i += n; }
    out.push_back(Value::String(s.substr(start, i - start)));
  }
  RETURN_IF_ERROR(ctx.Charge(out.size() * sizeof(Value)));
  return Value::FromList(std::move(out));
}

Result<Value> Affix(const std::string& s, const Value& arg, bool prefix, const char* name) {
  auto test = [&](const std::string& a) {
    return a.size() <= s.size() && (prefix ? s.compare(0, a.size(), a) == 0 : s.compare(s.size() - a.size(), a.size(), a) == 0);
  };
  if (arg.is_string()) return Value::Bool(test(arg.as_string()));
  if (arg.is_list()) {
    for (const Value& v : arg.as_list()) {
      if (!v.is_string()) return EvalError(std::string("TypeError: tuple for ") + name + " must only contain str, not " + PyType(v));
      if (test(v.as_string())) return Value::Bool(true);
    }
    return Value::Bool(false);
  }
  return EvalError(std::string("TypeError: ") + name + " first arg must be str or a tuple of str, not " + PyType(arg));
}

Result<Value> Replace(const std::string& s, const Value& old_v, const Value& new_v, const Value* count_v, EvalContext& ctx) {
  if (!old_v.is_string() || !new_v.is_string())
    return EvalError("TypeError: replace() argument " + std::string(old_v.is_string() ? "2" : "1") + " must be str, not " +
                 PyType(old_v.is_string() ? new_v : old_v));
  if (Given(count_v) && !count_v->is_int()) return EvalError("TypeError: '" + PyType(*count_v) + "' object cannot be interpreted as an integer");
  int64_t count = Given(count_v) ? count_v->as_int() : -1;
  const std::string& o = old_v.as_string();
  const std::string& n = new_v.as_string();
  std::string out;
  int64_t done = 0;
  if (o.empty()) {  // inserts `n` before every character and at the end
    std::vector<std::size_t> off = CodePointOffsets(s);
    RETURN_IF_ERROR(ctx.Charge(s.size() + n.size() * off.size()));
    for (std::size_t i = 0; i < off.size(); ++i) {
      if (count < 0 || done < count) { out += n; ++done; }
      if (i + 1 < off.size()) out.append(s, off[i], off[i + 1] - off[i]);
    }
    return Value::String(std::move(out));
  }
  std::size_t start = 0;
  for (std::size_t at; (count < 0 || done < count) && (at = FindText(s, o, start)) != std::string::npos; start = at + o.size(), ++done) {
    RETURN_IF_ERROR(ctx.Charge(at - start + n.size()));
    out.append(s, start, at - start);
    out += n;
  }
  out.append(s, start);
  return Value::String(std::move(out));
}

Result<Value> JoinItems(const std::string& sep, const Value& items, EvalContext& ctx) {
  if (!items.is_list()) {
    if (items.is_string()) {  // ''.join('abc') joins the characters
      List chars;
      ForEachCodePoint(items.as_string(), [&](uint32_t, std::string_view raw) { chars.push_back(Value::String(std::string(raw))); });
      return JoinItems(sep, Value::FromList(std::move(chars)), ctx);
    }
    return EvalError("TypeError: can only join an iterable");
  }
  const List& l = items.as_list();
  std::size_t total = 0;
  for (std::size_t i = 0; i < l.size(); ++i) {
    if (!l[i].is_string())
      return EvalError("TypeError: sequence item " + std::to_string(i) + ": expected str instance, " + PyType(l[i]) + " found");
    total += l[i].as_string().size() + (i ? sep.size() : 0);
  }
  RETURN_IF_ERROR(ctx.Charge(total));
  std::string out;
  out.reserve(total);
  for (std::size_t i = 0; i < l.size(); ++i) {
    if (i) out += sep;
    out += l[i].as_string();
  }
  return Value::String(std::move(out));
}

}  // namespace

const std::vector<CallSpec>& Methods() {
  static const std::vector<CallSpec> kSpecs = {
      {"lower", 0, 0, {}},  {"upper", 0, 0, {}}, {"title", 0, 0, {}}, {"strip", 0, 1, {"chars"}},
      {"lstrip", 0, 1, {"chars"}}, {"rstrip", 0, 1, {"chars"}}, {"split", 0, 2, {"sep", "maxsplit"}},
      {"startswith", 1, 1, {}}, {"endswith", 1, 1, {}}, {"replace", 2, 3, {"old", "new", "count"}},
      {"join", 1, 1, {}}, {"find", 1, 1, {}}, {"count", 1, 1, {}}, {"isdigit", 0, 0, {}}, {"isalpha", 0, 0, {}},
      {"isalnum", 0, 0, {}}, {"isspace", 0, 0, {}}, {"get", 1, 2, {}}};
  return kSpecs;
}

Result<Value> CallMethod(uint8_t fn, const Value& self, const Value* const* args, int nargs, EvalContext& ctx) {
  const Value* a = nargs > 0 ? args[0] : nullptr;
  const Value* b = nargs > 1 ? args[1] : nullptr;
  const auto m = static_cast<Method>(fn);
  bool ok_type = m == kGet ? self.is_row() : m == kCount ? (self.is_string() || self.is_list()) : self.is_string();
  if (!ok_type)
    return EvalError("AttributeError: '" + PyType(self) + "' object has no attribute '" + std::string(Methods()[fn].name) + "'");
  if (m == kGet) {
    if (!a->is_string()) return b != nullptr ? *b : Value();
    const Value* v = self.as_row().Find(a->as_string());
    return v != nullptr ? *v : b != nullptr ? *b : Value();
  }
  if (m == kCount && self.is_list())
    return Value::Int(std::count_if(self.as_list().begin(), self.as_list().end(), [&](const Value& v) { return PyEquals(v, *a); }));
  const std::string& s = self.as_string();
  switch (m) {
    case kLower: return Value::String(MapCase(s, Case::kLower));
    case kUpper: return Value::String(MapCase(s, Case::kUpper));
    case kTitle: return Value::String(MapCase(s, Case::kTitle));
    case kStrip: return Strip(s, a, true, true);
    case kLstrip: return Strip(s, a, true, false);
    case kRstrip: return Strip(s, a, false, true);
    case kSplit: return Split(s, a, b, ctx);
    case kStartswith: return Affix(s, *a, true, "startswith");
    case kEndswith: return Affix(s, *a, false, "endswith");
    case kReplace: return Replace(s, *a, *b, nargs > 2 ? args[2] : nullptr, ctx);
    case kJoin: return JoinItems(s, *a, ctx);
    case kFind:
    case kCount: {
      if (!a->is_string()) return EvalError("TypeError: must be str, not " + PyType(*a));
      const std::string& sub = a->as_string();
      if (m == kFind) {
        std::size_t at = FindText(s, sub);
        return Value::Int(at == std::string::npos ? -1 : static_cast<int64_t>(CodePointCount(std::string_view(s).substr(0, at))));
      }
      if (sub.empty()) return Value::Int(static_cast<int64_t>(CodePointCount(s)) + 1);
      int64_t n = 0;
      for (std::size_t at = FindText(s, sub); at != std::string::npos; at = FindText(s, sub, at + sub.size())) ++n;
      return Value::Int(n);
    }
    case kIsdigit: return Value::Bool(AllChars(s, IsDigitCp));
    case kIsalpha: return Value::Bool(AllChars(s, IsAlphaCp));
    case kIsalnum: return Value::Bool(AllChars(s, IsAlnumCp));
    case kIsspace: return Value::Bool(AllChars(s, IsPyWhitespace));
    default: break;
  }
  return Internal("unknown method");
}

}  // namespace dfw::expr
