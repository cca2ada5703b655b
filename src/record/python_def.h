// Private to the def-callable interpreter (CompileCallable in dfw/record/expression.h): the
// statements of a `def` callable, the objects its code handles beyond plain Values (mutable
// lists and dicts, modules, functions, compiled regexes, match objects, ranges), and the
// interpreter's entry points. Not a public contract.
//
// A Module is built once by the parser; its module-level statements run once when it is
// compiled, and the module scope they leave is read-only afterwards, so one compiled callable
// may be called from many threads. Everything a call creates lives in that call.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "record/expression_ast.h"

namespace dfw::expr {

// Sandbox limits of one call.
inline constexpr int64_t kMaxDefSteps = 1'000'000;  // statements executed plus loop iterations
inline constexpr int kMaxCallDepth = 100;           // nested calls of user functions
// C++ stack one call may use (a worker thread has a few MiB; sanitizers make frames far larger).
#if defined(__SANITIZE_ADDRESS__)
inline constexpr std::size_t kMaxStackBytes = std::size_t{3} << 20;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr std::size_t kMaxStackBytes = std::size_t{3} << 20;
#else
inline constexpr std::size_t kMaxStackBytes = std::size_t{1} << 20;
#endif
#else
inline constexpr std::size_t kMaxStackBytes = std::size_t{1} << 20;
#endif
inline constexpr int64_t kMaxKeptBytes = int64_t{256} << 20;  // held in lists and dicts
inline constexpr int64_t kMaxTotalBytes = int64_t{2} << 30;   // built in all, over the whole call

// ---- Statements ---------------------------------------------------------------------------------

struct Target {
  enum Kind : uint8_t { kName, kTuple, kSubscript } kind = kName;
  std::string name;             // kName; kSubscript: the variable subscripted
  std::vector<Target> items;    // kTuple
  int32_t index = -1;           // kSubscript: the index expression
  int line = 0, column = 0;
};

enum class StmtKind : uint8_t {
  kExpr, kAssign, kAugAssign, kReturn, kIf, kWhile, kFor, kBreak, kContinue, kPass, kTry, kRaise, kDef, kImport,
  kAssert, kDel
};

struct Handler {
  std::vector<std::string> types;  // empty: a bare `except:`
  std::string as;
  std::vector<int32_t> body;
  int line = 0;
};

struct Stmt {
  StmtKind kind = StmtKind::kPass;
  int line = 0, column = 0;
  int32_t expr = -1;             // value, condition, iterable, return value or raised error; -1 none
  int32_t expr2 = -1;            // kAssert: the message
  std::vector<Target> targets;   // kAssign: a = b = value; kAugAssign/kFor: one
  Op op = Op::kAdd;              // kAugAssign
  std::vector<int32_t> body;     // if/while/for/try/def bodies
  std::vector<int32_t> orelse;   // else (an elif is an if alone in it); try's else
  std::vector<Handler> handlers; // kTry
  std::vector<int32_t> finally;  // kTry
  int32_t func = -1;             // kDef: index into Module::funcs
  std::string name;              // kImport: the module; kRaise: the error type
  std::string as;                // kImport: the name bound
  std::vector<std::pair<std::string, std::string>> names;  // from MODULE import a as b, ...: (a, b)
};

struct FuncDef {
  std::string name;
  std::vector<std::string> params;
  std::vector<int32_t> defaults;  // expressions for the last defaults.size() params
  std::vector<int32_t> body;
  int line = 0;
};

// ---- Objects ------------------------------------------------------------------------------------

struct Special;
struct Scope;

// A value as the interpreter sees it: a plain Value, or (sp set) one of the objects below.
struct Obj {
  Value v;
  std::shared_ptr<Special> sp;
  Obj() = default;
  explicit Obj(Value value) : v(std::move(value)) {}
  explicit Obj(std::shared_ptr<Special> s) : sp(std::move(s)) {}
};

enum class ModuleId : uint8_t { kRe, kMath, kJson, kDatetime };

struct Regex;  // a compiled PCRE2 pattern (python_re.cc)

struct Special {
  enum Kind : uint8_t { kList, kDict, kModule, kFunction, kPattern, kMatch, kRange, kDateTime } kind;
  // kDateTime: a value (start = microseconds of the wall clock since 1970-01-01, stop = the UTC
  // offset in seconds when aware) or one of the module's classes.
  enum DtKind : uint8_t { kDateTimeValue, kDateValue, kTimedelta, kTimezone, kDateTimeType, kDateType, kTimedeltaType, kTimezoneType };
  explicit Special(Kind k) : kind(k) {}
  DtKind dt = kDateTimeValue;
  bool aware = false;
  bool module_fn = false;  // kFunction: `builtin` names a function of `module` (re.match as a value)
  bool is_set = false;     // kList: a set (distinct items, in insertion order; a list as a value)
  bool frozen = false;  // module-level: shared by every call, so never changed after compile
  std::vector<Obj> list;                             // kList
  std::vector<std::pair<std::string, Obj>> dict;     // kDict: str keys, insertion order
  std::unordered_map<std::string, std::size_t> index;  // kDict: key → position, when index_ok
  bool index_ok = false;
  ModuleId module = ModuleId::kRe;                   // kModule
  const FuncDef* func = nullptr;                     // kFunction: a def ...
  const Node* lambda = nullptr;                      // ... or a lambda expression
  std::string builtin;                               // ... or a builtin used as a value (key=len)
  std::shared_ptr<Scope> closure;                    // kFunction: the enclosing call's scope, if nested
  std::vector<Obj> defaults;                         // kFunction
  std::shared_ptr<const Regex> re;                   // kPattern, kMatch
  std::shared_ptr<const std::string> subject;        // kMatch: the string searched
  std::vector<int64_t> spans;                        // kMatch: byte start/end per group, -1 unset
  int64_t start = 0, stop = 0, step = 1;             // kRange
};

struct Scope : std::enable_shared_from_this<Scope> {
  std::vector<std::pair<std::string, Obj>> vars;
  bool frozen = false;  // captured by a module-level function: shared by every call, read-only
  std::shared_ptr<Scope> parent;  // the enclosing function's scope
  Obj* Find(std::string_view name) {
    for (auto& [k, v] : vars)
      if (k == name) return &v;
    return nullptr;
  }
  void Set(std::string_view name, Obj v) {
    if (Obj* o = Find(name)) *o = std::move(v);
    else vars.emplace_back(std::string(name), std::move(v));
  }
};

struct Module {
  Program prog;                // every expression's nodes
  std::vector<Stmt> stmts;
  std::vector<FuncDef> funcs;
  std::vector<int32_t> top;    // module-level statements
  int32_t callable_func = -1;  // the def called with the row (the last top-level def) ...
  int32_t callable_lambda = -1;  // ... or a final `lambda NAME: EXPR` line's body
  std::string lambda_param;
  std::string source;
  std::vector<Obj> consts;     // per node: a kConst node's value as an object (filled when compiled)
};

// Parses a callable's text. Errors are kInvalidArgument naming "line L, column C" of `source`.
Result<Module> ParseDefModule(std::string_view source);

// Allowed in `import`: re, math, json.
bool IsAllowedModule(std::string_view name);

// Dict access. A dict of kDictIndexFrom keys or more is looked up through a hash index, built
// when first needed for a call's own dicts and at freeze time for module-level ones (which are
// then only read, by every thread).
inline constexpr std::size_t kDictIndexFrom = 16;
std::size_t DictFind(Special& d, std::string_view key);  // the position, or npos
void DictPut(Special& d, std::string_view key, Obj v);   // replaces or appends
void DictErase(Special& d, std::size_t pos);
void DictClear(Special& d);
void DictBuildIndex(Special& d);

inline std::shared_ptr<Special> NewList(std::vector<Obj> items = {}) {
  auto s = std::make_shared<Special>(Special::kList);
  s->list = std::move(items);
  return s;
}
inline std::shared_ptr<Special> NewDict() { return std::make_shared<Special>(Special::kDict); }

// Python type name of an object ("list", "dict", "module", "function", "re.Pattern", ...).
std::string ObjTypeName(const Obj& o);
bool ObjTruthy(const Obj& o);
// Python ==: values by value (sets as sets), modules, functions, patterns and matches by identity.
Result<bool> ObjEquals(const Obj& a, const Obj& b);
Result<bool> SetContains(Special& set, const Obj& x);
void SetBuildIndex(Special& set);
// A plain Value of `o`: lists and dicts converted deeply, a range listed; a TypeError for the rest.
Result<Value> ToValue(const Obj& o);
// Python repr()/str() of an object.
std::string ObjRepr(const Obj& o);
std::string ObjStr(const Obj& o);

// ---- Modules (python_re.cc, python_modules.cc) ----------------------------------------------------

// Call arguments after keyword matching: args[i] is the i-th parameter or nullptr when omitted.
class Interp;
struct Args {
  std::vector<const Obj*> pos;
  std::vector<std::pair<std::string, const Obj*>> kw;
  Interp* interp = nullptr;  // for callbacks into user functions (re.sub with a function)
};

Result<Obj> ModuleAttr(ModuleId m, const std::string& name);
Result<Obj> ModuleAttrValue(ModuleId m, const std::string& name);  // constants and classes only
Result<Obj> CallModule(ModuleId m, const std::string& name, const Args& args, EvalContext& ctx);
// Methods of compiled patterns and match objects.
Result<Obj> CallRegexMethod(const Special& self, const std::string& name, const Args& args, EvalContext& ctx);
Result<Obj> RegexAttr(const Special& self, const std::string& name);
Result<Obj> CallRegexModule(const std::string& fn, const Args& args, EvalContext& ctx);
// datetime (python_datetime.cc).
std::string DateTimeStr(const Special& d);
std::string DateTimeRepr(const Special& d);
Result<Obj> DatetimeModuleAttr(const std::string& name);
Result<Obj> CallDatetimeModule(const std::string& name, const Args& args);
// A method of a datetime value or class; method "" calls the class (constructs).
Result<Obj> CallDateTime(const Special& self, const std::string& method, const Args& args);
Result<Obj> DateTimeAttr(const Special& self, const std::string& name);
Result<Obj> DateTimeBinary(Op op, const Obj& x, const Obj& y);
Result<bool> DateTimeCompare(Op op, const Special& a, const Special& b);
Result<std::string> DateTimeFormat(const Special& d, const std::string& spec);
Result<Obj> RegexModuleAttr(const std::string& name);

// Binds `args` to the named parameters (positional first, then by keyword); nullptr for omitted
// ones. A TypeError naming `fn` for too many, missing (the first `required`) or unknown ones.
Status BindArgs(std::string_view fn, const Args& args, const std::vector<std::string_view>& params, std::size_t required,
                std::vector<const Obj*>& out);

// format(value, spec), with an f-string/str.format conversion ('s', 'r', 'a' or 0 for none).
Result<std::string> FormatValue(const Value& v, std::string_view spec);
Result<std::string> ConvertAndFormat(const Value& v, char conversion, std::string_view spec);
// str.format(*pos, **kw) and fmt % args (a list is the tuple of arguments, a row the mapping).
Result<std::string> StrFormat(const std::string& fmt, const std::vector<const Value*>& pos,
                              const std::vector<std::pair<std::string, const Value*>>& kw);
Result<std::string> PercentFormat(const std::string& fmt, const Value& args);

// str methods beyond the expression subset's (python_strings.cc); *handled false for an unknown name.
Result<Obj> MoreStrMethod(const std::string& s, const std::string& name, const Args& args, bool* handled);

// json.dumps / json.loads on Values.
Result<std::string> JsonDumps(const Value& v, bool sort_keys, int indent, bool ensure_ascii);
Result<Value> JsonLoads(std::string_view text);

// ---- Interpreter (python_def_exec.cc) -----------------------------------------------------------

Result<std::unique_ptr<CompiledExpression>> MakeCompiledDef(Module module);

}  // namespace dfw::expr
