// Python's `re` module (https://docs.python.org/3/library/re.html) on PCRE2: patterns are
// translated where the two syntaxes differ (\Z, \u/\U escapes, {,n}), compiled once per
// (pattern, flags) and shared, and matched with match data per call, so any thread may match.
// Positions are in code points, as Python's str indexes are.
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <unordered_map>

#include "record/python_def_interp.h"

namespace dfw::expr {

// Python's flag values, so re.I | re.M works on plain ints.
enum PyReFlag : int64_t { kReI = 2, kReL = 4, kReM = 8, kReS = 16, kReU = 32, kReX = 64, kReA = 256 };

struct Regex {
  pcre2_code* code = nullptr;
  std::string pattern;  // as written (Python syntax)
  int64_t flags = 0;
  uint32_t groups = 0;
  std::vector<std::string> names;  // by group number; "" for unnamed groups
  ~Regex() { pcre2_code_free(code); }
};

namespace {

constexpr std::size_t kMaxCachedPatterns = 1024;

Status ReError(const std::string& s) { return EvalError("re.error: " + s); }

// Python pattern syntax to PCRE2's.
Result<std::string> Translate(const std::string& p) {
  std::string out;
  bool in_class = false;
  for (std::size_t i = 0; i < p.size(); ++i) {
    char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      char e = p[i + 1];
      if (e == 'Z' && !in_class) {
        out += "\\z";  // Python's \Z is the very end; PCRE2's \Z also matches before a final newline
        ++i;
        continue;
      }
      if (e == 'u' || e == 'U') {
        std::size_t n = e == 'u' ? 4 : 8;
        if (i + 2 + n > p.size()) return ReError("incomplete escape \\" + std::string(1, e) + " at position " + std::to_string(i));
        out += "\\x{" + p.substr(i + 2, n) + "}";
        i += 1 + n;
        continue;
      }
      out += c;
      out += e;
      ++i;
      continue;
    }
    if (in_class) {
      if (c == ']') in_class = false;
      out += c;
      continue;
    }
    if (c == '[') {
      in_class = true;
      out += c;
      if (i + 1 < p.size() && p[i + 1] == '^') out += p[++i];
      if (i + 1 < p.size() && p[i + 1] == ']') out += p[++i];  // a leading ']' is literal
      continue;
    }
    if (c == '{' && i + 1 < p.size() && p[i + 1] == ',') {  // {,n} is {0,n} in Python
      std::size_t j = i + 2;
      while (j < p.size() && std::isdigit(static_cast<unsigned char>(p[j]))) ++j;
      if (j > i + 2 && j < p.size() && p[j] == '}') {
        out += "{0";
        continue;
      }
    }
    out += c;
  }
  return out;
}

const pcre2_match_context* MatchContext() {
  static pcre2_match_context* ctx = [] {
    pcre2_match_context* c = pcre2_match_context_create(nullptr);
    pcre2_set_match_limit(c, 5'000'000);
    pcre2_set_heap_limit(c, 64 * 1024);  // KiB
    return c;
  }();
  return ctx;
}

Result<std::shared_ptr<const Regex>> CompileRegex(const std::string& pattern, int64_t flags) {
  // A per-thread cache in front of the shared one: rows evaluated on many threads do not take
  // the lock for a pattern they have seen.
  static std::mutex mu;
  static std::unordered_map<std::string, std::shared_ptr<const Regex>> cache;
  thread_local std::unordered_map<std::string, std::shared_ptr<const Regex>> local;
  std::string key = std::to_string(flags) + '\0' + pattern;
  if (auto it = local.find(key); it != local.end()) return it->second;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache.find(key);
    if (it != cache.end()) {
      if (local.size() >= kMaxCachedPatterns) local.clear();
      local.emplace(key, it->second);
      return it->second;
    }
  }
  if (flags & kReL) return EvalError("ValueError: cannot use LOCALE flag with a str pattern");
  ASSIGN_OR_RETURN(std::string translated, Translate(pattern));
  uint32_t opts = PCRE2_UTF | PCRE2_MATCH_INVALID_UTF;
  if (!(flags & kReA)) opts |= PCRE2_UCP;
  if (flags & kReI) opts |= PCRE2_CASELESS;
  if (flags & kReM) opts |= PCRE2_MULTILINE;
  if (flags & kReS) opts |= PCRE2_DOTALL;
  if (flags & kReX) opts |= PCRE2_EXTENDED;
  int err = 0;
  PCRE2_SIZE at = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated.data()), translated.size(), opts, &err, &at, nullptr);
  if (code == nullptr) {
    PCRE2_UCHAR buf[256];
    pcre2_get_error_message(err, buf, sizeof(buf));
    return ReError(std::string(reinterpret_cast<const char*>(buf)) + " at position " + std::to_string(at) + " of " +
                   PyRepr(Value::String(pattern)));
  }
  auto re = std::make_shared<Regex>();
  re->code = code;
  re->pattern = pattern;
  re->flags = flags;
  pcre2_pattern_info(code, PCRE2_INFO_CAPTURECOUNT, &re->groups);
  re->names.assign(re->groups + 1, "");
  uint32_t count = 0, entry = 0;
  PCRE2_SPTR table = nullptr;
  pcre2_pattern_info(code, PCRE2_INFO_NAMECOUNT, &count);
  pcre2_pattern_info(code, PCRE2_INFO_NAMEENTRYSIZE, &entry);
  pcre2_pattern_info(code, PCRE2_INFO_NAMETABLE, &table);
  for (uint32_t i = 0; i < count; ++i) {
    const unsigned char* e = table + i * entry;
    uint32_t n = (static_cast<uint32_t>(e[0]) << 8) | e[1];
    if (n <= re->groups) re->names[n] = reinterpret_cast<const char*>(e + 2);
  }
  std::shared_ptr<const Regex> shared = std::move(re);
  if (local.size() >= kMaxCachedPatterns) local.clear();
  local.emplace(key, shared);
  std::lock_guard<std::mutex> lock(mu);
  if (cache.size() >= kMaxCachedPatterns) cache.clear();
  cache.emplace(std::move(key), shared);
  return shared;
}

enum class Mode { kSearch, kMatch, kFull };

// One match at or after byte `start` of subject[0, end); spans empty when there is none.
Status MatchAt(const Regex& re, const std::string& subject, std::size_t start, std::size_t end, Mode mode, uint32_t extra,
               std::vector<int64_t>& spans) {
  spans.clear();
  pcre2_match_data* md = pcre2_match_data_create_from_pattern(re.code, nullptr);
  if (md == nullptr) return EvalError("MemoryError: no memory for a regex match");
  uint32_t opts = extra | (mode == Mode::kMatch ? PCRE2_ANCHORED : 0) |
                  (mode == Mode::kFull ? PCRE2_ANCHORED | PCRE2_ENDANCHORED : 0);
  int rc = pcre2_match(re.code, reinterpret_cast<PCRE2_SPTR>(subject.data()), end, start, opts, md,
                       const_cast<pcre2_match_context*>(MatchContext()));
  Status st;
  if (rc >= 0) {
    PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    spans.resize(2 * (re.groups + 1), -1);
    for (uint32_t g = 0; g <= re.groups; ++g) {
      if (g < static_cast<uint32_t>(rc == 0 ? re.groups + 1 : static_cast<uint32_t>(rc)) && ov[2 * g] != PCRE2_UNSET) {
        spans[2 * g] = static_cast<int64_t>(ov[2 * g]);
        spans[2 * g + 1] = static_cast<int64_t>(ov[2 * g + 1]);
      }
    }
  } else if (rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_HEAPLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT) {
    st = ResourceExhausted("re.error: the pattern " + PyRepr(Value::String(re.pattern)) +
                           " backtracks too much on this input (PCRE2 match limit)");
  } else if (rc != PCRE2_ERROR_NOMATCH) {
    PCRE2_UCHAR buf[256];
    pcre2_get_error_message(rc, buf, sizeof(buf));
    st = ReError(reinterpret_cast<const char*>(buf));
  }
  pcre2_match_data_free(md);
  return st;
}

int64_t CpIndex(const std::string& s, int64_t byte) {
  return byte < 0 ? -1 : static_cast<int64_t>(CodePointCount(std::string_view(s).substr(0, static_cast<std::size_t>(byte))));
}

// Byte offset of code point index `cp` (clamped to the string).
std::size_t ByteOffset(const std::string& s, int64_t cp) {
  std::size_t n = CodePointCount(s);
  if (cp < 0) cp = std::max<int64_t>(0, cp + static_cast<int64_t>(n));
  if (static_cast<std::size_t>(cp) >= n) return s.size();
  return CodePointOffsets(s)[static_cast<std::size_t>(cp)];
}

// Every non-overlapping match, as Python 3.7+ finds them: an empty match right after a previous
// match is allowed, and after an empty match the search moves on one character.
Status ForEachMatch(const Regex& re, const std::string& s, int64_t limit,
                    const std::function<Status(const std::vector<int64_t>&)>& fn, std::size_t from = 0,
                    std::size_t to = std::string::npos) {
  std::size_t end = std::min(to, s.size());
  std::size_t pos = from;
  bool after_empty = false;
  int64_t n = 0;
  std::vector<int64_t> spans;
  while (pos <= end && (limit <= 0 || n < limit)) {
    uint32_t extra = after_empty ? PCRE2_NOTEMPTY_ATSTART | PCRE2_ANCHORED : 0;
    RETURN_IF_ERROR(MatchAt(re, s, pos, end, Mode::kSearch, extra, spans));
    if (spans.empty()) {
      if (!after_empty || pos >= end) break;
      uint32_t cp;
      pos += DecodeUtf8(s, pos, &cp);
      after_empty = false;
      continue;
    }
    ++n;
    RETURN_IF_ERROR(fn(spans));
    after_empty = spans[0] == spans[1];
    pos = static_cast<std::size_t>(spans[1]);
  }
  return Status::OK();
}

Value GroupValue(const std::string& s, const std::vector<int64_t>& spans, uint32_t g, const Value& dflt) {
  if (spans[2 * g] < 0) return dflt;
  return Value::String(s.substr(static_cast<std::size_t>(spans[2 * g]), static_cast<std::size_t>(spans[2 * g + 1] - spans[2 * g])));
}

Result<uint32_t> GroupIndex(const Regex& re, const Obj& g) {
  if (!g.sp && IsIntLike(g.v)) {
    int64_t i = IntOf(g.v);
    if (i < 0 || i > static_cast<int64_t>(re.groups)) return EvalError("IndexError: no such group");
    return static_cast<uint32_t>(i);
  }
  if (!g.sp && g.v.is_string())
    for (uint32_t i = 1; i <= re.groups; ++i)
      if (re.names[i] == g.v.as_string()) return i;
  return EvalError("IndexError: no such group");
}

// Expands a sub() template: \1..\99, \g<n>, \g<name> and the string escapes Python allows there.
Status Expand(const Regex& re, const std::string& tmpl, const std::string& s, const std::vector<int64_t>& spans, std::string& out) {
  for (std::size_t i = 0; i < tmpl.size(); ++i) {
    char c = tmpl[i];
    if (c != '\\' || i + 1 >= tmpl.size()) {
      if (c == '\\') return ReError("bad escape (end of pattern) at position " + std::to_string(i));
      out += c;
      continue;
    }
    char e = tmpl[++i];
    int64_t group = -1;
    if (e == 'g') {
      std::size_t close = tmpl.find('>', i);
      if (i + 1 >= tmpl.size() || tmpl[i + 1] != '<' || close == std::string::npos)
        return ReError("missing < or > in group reference at position " + std::to_string(i - 1));
      std::string name = tmpl.substr(i + 2, close - i - 2);
      i = close;
      bool digits = !name.empty() && std::all_of(name.begin(), name.end(), [](char d) { return std::isdigit(static_cast<unsigned char>(d)); });
      Obj key(digits ? Value::Int(std::atoll(name.c_str())) : Value::String(name));
      if (digits && name.size() > 6) return ReError("invalid group reference " + name);
      Result<uint32_t> g = GroupIndex(re, key);
      if (!g.ok()) return digits ? ReError("invalid group reference " + name) : EvalError("IndexError: unknown group name '" + name + "'");
      group = *g;
    } else if (e >= '1' && e <= '9') {
      group = e - '0';
      if (i + 1 < tmpl.size() && std::isdigit(static_cast<unsigned char>(tmpl[i + 1]))) group = group * 10 + (tmpl[++i] - '0');
      if (group > static_cast<int64_t>(re.groups)) return ReError("invalid group reference " + std::to_string(group));
    } else if (e == '0') {
      uint32_t v = 0;
      for (int k = 0; k < 2 && i + 1 < tmpl.size() && tmpl[i + 1] >= '0' && tmpl[i + 1] <= '7'; ++k) v = v * 8 + static_cast<uint32_t>(tmpl[++i] - '0');
      AppendUtf8(out, v);
      continue;
    } else {
      static const std::pair<char, char> kEsc[] = {{'n', '\n'}, {'t', '\t'}, {'r', '\r'}, {'f', '\f'}, {'v', '\v'}, {'a', '\a'}, {'b', '\b'}, {'\\', '\\'}};
      bool done = false;
      for (const auto& [k, v] : kEsc)
        if (e == k) {
          out += v;
          done = true;
        }
      if (done) continue;
      if (std::isalpha(static_cast<unsigned char>(e))) return ReError("bad escape \\" + std::string(1, e) + " at position " + std::to_string(i - 1));
      out += '\\';
      out += e;
      continue;
    }
    if (spans[2 * static_cast<std::size_t>(group)] >= 0)
      out.append(s, static_cast<std::size_t>(spans[2 * group]), static_cast<std::size_t>(spans[2 * group + 1] - spans[2 * group]));
  }
  return Status::OK();
}

Obj NewMatch(const std::shared_ptr<const Regex>& re, std::shared_ptr<const std::string> subject, std::vector<int64_t> spans) {
  auto m = std::make_shared<Special>(Special::kMatch);
  m->re = re;
  m->subject = std::move(subject);
  m->spans = std::move(spans);
  return Obj(std::move(m));
}

Result<std::string> StrArg(const Obj* o, const char* what) {
  if (o == nullptr || o->sp || !o->v.is_string())
    return EvalError(std::string("TypeError: ") + what + " must be str, not '" + (o ? ObjTypeName(*o) : "None") + "'");
  return o->v.as_string();
}

Result<int64_t> IntOr(const Obj* o, int64_t dflt, const char* what) {
  if (o == nullptr) return dflt;
  if (o->sp || !IsIntLike(o->v)) return EvalError(std::string("TypeError: ") + what + " must be an int");
  return IntOf(o->v);
}

// The functions shared by the module (pattern first) and compiled patterns.
Result<Obj> PatternCall(const std::shared_ptr<const Regex>& re, const std::string& fn, const std::vector<const Obj*>& a,
                        const Args& args, EvalContext& ctx) {
  (void)ctx;
  if (fn == "match" || fn == "search" || fn == "fullmatch") {
    ASSIGN_OR_RETURN(std::string s, StrArg(a[0], "the string"));
    auto subject = std::make_shared<const std::string>(std::move(s));
    ASSIGN_OR_RETURN(int64_t pos, IntOr(a.size() > 1 ? a[1] : nullptr, 0, "pos"));
    ASSIGN_OR_RETURN(int64_t endpos, IntOr(a.size() > 2 ? a[2] : nullptr, INT64_MAX, "endpos"));
    std::size_t b = ByteOffset(*subject, std::max<int64_t>(pos, 0));
    std::size_t e = endpos == INT64_MAX ? subject->size() : ByteOffset(*subject, std::max<int64_t>(endpos, 0));
    if (b > e) return Obj();
    std::vector<int64_t> spans;
    Mode mode = fn == "match" ? Mode::kMatch : fn == "search" ? Mode::kSearch : Mode::kFull;
    RETURN_IF_ERROR(MatchAt(*re, *subject, b, e, mode, 0, spans));
    if (spans.empty()) return Obj();
    return NewMatch(re, std::move(subject), std::move(spans));
  }
  if (fn == "sub" || fn == "subn") {
    const Obj* repl = a[0];
    ASSIGN_OR_RETURN(std::string s, StrArg(a[1], "the string"));
    ASSIGN_OR_RETURN(int64_t count, IntOr(a[2], 0, "count"));
    bool call = repl->sp && repl->sp->kind == Special::kFunction;
    if (!call && (repl->sp || !repl->v.is_string())) return EvalError("TypeError: sub() repl must be str or a function");
    if (call && args.interp == nullptr) return Internal("no interpreter for a sub() callback");
    auto subject = std::make_shared<const std::string>(std::move(s));
    std::string out;
    std::size_t last = 0;
    int64_t n = 0;
    RETURN_IF_ERROR(ForEachMatch(*re, *subject, count, [&](const std::vector<int64_t>& spans) -> Status {
      out.append(*subject, last, static_cast<std::size_t>(spans[0]) - last);
      if (call) {
        Obj m = NewMatch(re, subject, spans);
        Args margs;
        margs.pos.push_back(&m);
        ASSIGN_OR_RETURN(Obj r, args.interp->CallFunction(*repl->sp, margs));
        if (r.sp || !r.v.is_string()) return EvalError("TypeError: expected str instance, " + ObjTypeName(r) + " found");
        out += r.v.as_string();
      } else {
        RETURN_IF_ERROR(Expand(*re, repl->v.as_string(), *subject, spans, out));
      }
      if (out.size() > static_cast<std::size_t>(kEvalBudgetBytes)) return EvalError("MemoryError: sub() result too large");
      last = static_cast<std::size_t>(spans[1]);
      ++n;
      return Status::OK();
    }));
    out.append(*subject, last, std::string::npos);
    if (fn == "subn") return Obj(Value::FromList({Value::String(std::move(out)), Value::Int(n)}));
    return Obj(Value::String(std::move(out)));
  }
  if (fn == "findall" || fn == "finditer") {
    ASSIGN_OR_RETURN(std::string s, StrArg(a[0], "the string"));
    auto subject = std::make_shared<const std::string>(std::move(s));
    ASSIGN_OR_RETURN(int64_t pos, IntOr(a.size() > 1 ? a[1] : nullptr, 0, "pos"));
    ASSIGN_OR_RETURN(int64_t endpos, IntOr(a.size() > 2 ? a[2] : nullptr, INT64_MAX, "endpos"));
    std::size_t from = ByteOffset(*subject, std::max<int64_t>(pos, 0));
    std::size_t to = endpos == INT64_MAX ? subject->size() : ByteOffset(*subject, std::max<int64_t>(endpos, 0));
    List found;
    std::vector<Obj> matches;
    RETURN_IF_ERROR(ForEachMatch(*re, *subject, 0, [&](const std::vector<int64_t>& spans) -> Status {
      if (found.size() + matches.size() >= (std::size_t{1} << 22)) return EvalError("MemoryError: too many matches");
      if (fn == "finditer") {
        matches.push_back(NewMatch(re, subject, spans));
      } else if (re->groups == 0) {
        found.push_back(GroupValue(*subject, spans, 0, Value::String("")));
      } else if (re->groups == 1) {
        found.push_back(GroupValue(*subject, spans, 1, Value::String("")));
      } else {
        List tuple;
        for (uint32_t g = 1; g <= re->groups; ++g) tuple.push_back(GroupValue(*subject, spans, g, Value::String("")));
        found.push_back(Value::FromList(std::move(tuple)));
      }
      return Status::OK();
    }, from, to));
    if (fn == "finditer") {  // a list of match objects, owned by the call like any list it makes
      if (args.interp != nullptr) return Obj(args.interp->NewList(std::move(matches)));
      return Obj(NewList(std::move(matches)));
    }
    return Obj(Value::FromList(std::move(found)));
  }
  if (fn == "split") {
    ASSIGN_OR_RETURN(std::string s, StrArg(a[0], "the string"));
    ASSIGN_OR_RETURN(int64_t maxsplit, IntOr(a[1], 0, "maxsplit"));
    List parts;
    std::size_t last = 0;
    RETURN_IF_ERROR(ForEachMatch(*re, s, maxsplit, [&](const std::vector<int64_t>& spans) -> Status {
      parts.push_back(Value::String(s.substr(last, static_cast<std::size_t>(spans[0]) - last)));
      for (uint32_t g = 1; g <= re->groups; ++g) parts.push_back(GroupValue(s, spans, g, Value()));
      last = static_cast<std::size_t>(spans[1]);
      return Status::OK();
    }));
    parts.push_back(Value::String(s.substr(last)));
    return Obj(Value::FromList(std::move(parts)));
  }
  return EvalError("AttributeError: 're.Pattern' object has no attribute '" + fn + "'");
}

// Parameter names of each function on a compiled pattern (the module's take pattern first and
// flags where Python's do).
const std::vector<std::string_view>* PatternParams(const std::string& fn) {
  static const std::vector<std::string_view> kMatch = {"string", "pos", "endpos"};
  static const std::vector<std::string_view> kSub = {"repl", "string", "count"};
  static const std::vector<std::string_view> kFind = {"string", "pos", "endpos"};
  static const std::vector<std::string_view> kSplit = {"string", "maxsplit"};
  if (fn == "match" || fn == "search" || fn == "fullmatch") return &kMatch;
  if (fn == "sub" || fn == "subn") return &kSub;
  if (fn == "findall" || fn == "finditer") return &kFind;
  if (fn == "split") return &kSplit;
  return nullptr;
}

}  // namespace

Result<Obj> CallRegexModule(const std::string& fn, const Args& args, EvalContext& ctx) {
  if (fn == "compile") {
    std::vector<const Obj*> a;
    RETURN_IF_ERROR(BindArgs("compile", args, {"pattern", "flags"}, 1, a));
    if (a[0]->sp && a[0]->sp->kind == Special::kPattern) return *a[0];
    ASSIGN_OR_RETURN(std::string p, StrArg(a[0], "the pattern"));
    ASSIGN_OR_RETURN(int64_t flags, IntOr(a[1], 0, "flags"));
    auto pat = std::make_shared<Special>(Special::kPattern);
    ASSIGN_OR_RETURN(pat->re, CompileRegex(p, flags));
    return Obj(std::move(pat));
  }
  if (fn == "escape") {
    std::vector<const Obj*> a;
    RETURN_IF_ERROR(BindArgs("escape", args, {"pattern"}, 1, a));
    ASSIGN_OR_RETURN(std::string p, StrArg(a[0], "the pattern"));
    std::string out;
    // Python 3.7+ escapes only the characters special in patterns.
    for (char c : p) {
      if (std::strchr("()[]{}?*+-|^$\\.&~# \t\n\r\v\f", c) != nullptr && c != '\0') out += '\\';
      out += c;
    }
    return Obj(Value::String(std::move(out)));
  }
  const std::vector<std::string_view>* params = PatternParams(fn);
  if (params == nullptr)
    return EvalError("AttributeError: module 're' has no attribute '" + fn +
                     "' (available: match, search, fullmatch, sub, subn, findall, finditer, split, compile, escape)");
  // re.fn(pattern, <the pattern method's parameters without pos/endpos>, flags=0)
  std::vector<std::string_view> names = {"pattern"};
  for (std::string_view p : *params)
    if (p != "pos" && p != "endpos") names.push_back(p);
  names.push_back("flags");
  std::vector<const Obj*> a;
  RETURN_IF_ERROR(BindArgs(fn, args, names, fn == "sub" || fn == "subn" ? 3 : 2, a));
  ASSIGN_OR_RETURN(int64_t flags, IntOr(a.back(), 0, "flags"));
  std::shared_ptr<const Regex> re;
  if (a[0]->sp && a[0]->sp->kind == Special::kPattern) {
    if (flags != 0) return EvalError("ValueError: cannot process flags argument with a compiled pattern");
    re = a[0]->sp->re;
  } else {
    ASSIGN_OR_RETURN(std::string p, StrArg(a[0], "the pattern"));
    ASSIGN_OR_RETURN(re, CompileRegex(p, flags));
  }
  std::vector<const Obj*> rest(a.begin() + 1, a.end() - 1);
  while (rest.size() < params->size()) rest.push_back(nullptr);
  return PatternCall(re, fn, rest, args, ctx);
}

Result<Obj> RegexModuleAttr(const std::string& name) {
  static const std::pair<const char*, int64_t> kFlags[] = {
      {"I", kReI}, {"IGNORECASE", kReI}, {"M", kReM}, {"MULTILINE", kReM}, {"S", kReS}, {"DOTALL", kReS},
      {"X", kReX}, {"VERBOSE", kReX}, {"A", kReA}, {"ASCII", kReA}, {"U", kReU}, {"UNICODE", kReU}, {"NOFLAG", 0}};
  for (const auto& [k, v] : kFlags)
    if (name == k) return Obj(Value::Int(v));
  return EvalError("AttributeError: module 're' has no attribute '" + name + "' here (call its functions, e.g. re.match(...))");
}

Result<Obj> CallRegexMethod(const Special& self, const std::string& name, const Args& args, EvalContext& ctx) {
  if (self.kind == Special::kPattern) {
    const std::vector<std::string_view>* params = PatternParams(name);
    if (params == nullptr)
      return EvalError("AttributeError: 're.Pattern' object has no attribute '" + name + "'");
    std::vector<const Obj*> a;
    RETURN_IF_ERROR(BindArgs(name, args, *params, name == "sub" || name == "subn" ? 2 : 1, a));
    return PatternCall(self.re, name, a, args, ctx);
  }
  const Regex& re = *self.re;
  const std::string& s = *self.subject;
  const std::vector<int64_t>& sp = self.spans;
  if (name == "group") {
    if (!args.kw.empty()) return EvalError("TypeError: group() takes no keyword arguments");
    if (args.pos.empty()) return Obj(GroupValue(s, sp, 0, Value()));
    List out;
    for (const Obj* g : args.pos) {
      ASSIGN_OR_RETURN(uint32_t i, GroupIndex(re, *g));
      out.push_back(GroupValue(s, sp, i, Value()));
    }
    if (out.size() == 1) return Obj(std::move(out[0]));
    return Obj(Value::FromList(std::move(out)));
  }
  if (name == "groups" || name == "groupdict") {
    std::vector<const Obj*> a;
    RETURN_IF_ERROR(BindArgs(name, args, {"default"}, 0, a));
    Value dflt = a[0] != nullptr && !a[0]->sp ? a[0]->v : Value();
    if (name == "groups") {
      List out;
      for (uint32_t g = 1; g <= re.groups; ++g) out.push_back(GroupValue(s, sp, g, dflt));
      return Obj(Value::FromList(std::move(out)));
    }
    Row out;
    for (uint32_t g = 1; g <= re.groups; ++g)
      if (!re.names[g].empty()) out.Append(re.names[g], GroupValue(s, sp, g, dflt));
    return Obj(Value::FromRow(std::move(out)));
  }
  if (name == "start" || name == "end" || name == "span") {
    std::vector<const Obj*> a;
    RETURN_IF_ERROR(BindArgs(name, args, {"group"}, 0, a));
    uint32_t g = 0;
    if (a[0] != nullptr) {
      ASSIGN_OR_RETURN(g, GroupIndex(re, *a[0]));
    }
    int64_t b = CpIndex(s, sp[2 * g]), e = CpIndex(s, sp[2 * g + 1]);
    if (name == "start") return Obj(Value::Int(b));
    if (name == "end") return Obj(Value::Int(e));
    return Obj(Value::FromList({Value::Int(b), Value::Int(e)}));
  }
  if (name == "expand") {
    std::vector<const Obj*> a;
    RETURN_IF_ERROR(BindArgs(name, args, {"template"}, 1, a));
    ASSIGN_OR_RETURN(std::string t, StrArg(a[0], "the template"));
    std::string out;
    RETURN_IF_ERROR(Expand(re, t, s, sp, out));
    return Obj(Value::String(std::move(out)));
  }
  return EvalError("AttributeError: 're.Match' object has no attribute '" + name +
                   "' (methods: group, groups, groupdict, start, end, span, expand)");
}

Result<Obj> RegexAttr(const Special& self, const std::string& name) {
  const Regex& re = *self.re;
  if (self.kind == Special::kPattern) {
    if (name == "pattern") return Obj(Value::String(re.pattern));
    if (name == "flags") return Obj(Value::Int(re.flags | kReU));
    if (name == "groups") return Obj(Value::Int(re.groups));
    if (name == "groupindex") {
      Row out;
      for (uint32_t g = 1; g <= re.groups; ++g)
        if (!re.names[g].empty()) out.Append(re.names[g], Value::Int(g));
      return Obj(Value::FromRow(std::move(out)));
    }
    return EvalError("AttributeError: 're.Pattern' object has no attribute '" + name + "'");
  }
  if (name == "string") return Obj(Value::String(*self.subject));
  if (name == "lastindex" || name == "lastgroup") {
    // The group that closed last: the one ending furthest right, the outermost on a tie.
    int64_t best = -1, best_end = -1;
    for (uint32_t g = 1; g <= re.groups; ++g)
      if (self.spans[2 * g] >= 0 && self.spans[2 * g + 1] > best_end) best = g, best_end = self.spans[2 * g + 1];
    if (best < 0) return Obj();
    if (name == "lastindex") return Obj(Value::Int(best));
    return re.names[static_cast<std::size_t>(best)].empty() ? Obj() : Obj(Value::String(re.names[static_cast<std::size_t>(best)]));
  }
  if (name == "re") {
    auto p = std::make_shared<Special>(Special::kPattern);
    p->re = self.re;
    return Obj(std::move(p));
  }
  return EvalError("AttributeError: 're.Match' object has no attribute '" + name + "'");
}

}  // namespace dfw::expr
