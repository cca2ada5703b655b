// Statements, user function calls and the compiled def callable. Python semantics per
// https://docs.python.org/3/reference/compound_stmts.html and simple_stmts.html, within the
// sandbox's limits (python_def.h).
#include <algorithm>
#include <string>

#include "record/python_def_interp.h"

namespace dfw::expr {
namespace {

const Row& EmptyRow() {
  static const Row row;
  return row;
}

Status LimitError(std::string s) { return ResourceExhausted(std::move(s)); }

}  // namespace

// ---- Objects --------------------------------------------------------------------------------------

std::string ObjTypeName(const Obj& o) {
  if (!o.sp) return PyType(o.v);
  switch (o.sp->kind) {
    case Special::kList: return o.sp->is_set ? "set" : "list";
    case Special::kDict: return "dict";
    case Special::kModule: return "module";
    case Special::kFunction: return "function";
    case Special::kPattern: return "re.Pattern";
    case Special::kMatch: return "re.Match";
    case Special::kRange: return "range";
    case Special::kDateTime:
      switch (o.sp->dt) {
        case Special::kDateTimeValue: return "datetime.datetime";
        case Special::kDateValue: return "datetime.date";
        case Special::kTimedelta: return "datetime.timedelta";
        case Special::kTimezone: return "datetime.timezone";
        default: return "type";
      }
  }
  return "object";
}

void DictBuildIndex(Special& d) {
  d.index.clear();
  d.index.reserve(d.dict.size());
  for (std::size_t i = 0; i < d.dict.size(); ++i) d.index[d.dict[i].first] = i;
  d.index_ok = true;
}

std::size_t DictFind(Special& d, std::string_view key) {
  if (d.dict.size() >= kDictIndexFrom) {
    if (!d.index_ok && !d.frozen) DictBuildIndex(d);  // a frozen dict is shared: only read it
    if (d.index_ok) {
      auto it = d.index.find(std::string(key));
      return it == d.index.end() ? std::string::npos : it->second;
    }
  }
  for (std::size_t i = 0; i < d.dict.size(); ++i)
    if (d.dict[i].first == key) return i;
  return std::string::npos;
}

void DictPut(Special& d, std::string_view key, Obj v) {
  std::size_t at = DictFind(d, key);
  if (at != std::string::npos) {
    d.dict[at].second = std::move(v);
    return;
  }
  d.dict.emplace_back(std::string(key), std::move(v));
  if (d.index_ok) d.index.emplace(std::string(key), d.dict.size() - 1);
}

void DictErase(Special& d, std::size_t pos) {
  d.dict.erase(d.dict.begin() + static_cast<std::ptrdiff_t>(pos));
  d.index.clear();
  d.index_ok = false;
}

void DictClear(Special& d) {
  d.dict.clear();
  d.index.clear();
  d.index_ok = false;
}

bool ObjTruthy(const Obj& o) {
  if (!o.sp) return IsTruthy(o.v);
  switch (o.sp->kind) {
    case Special::kList: return !o.sp->list.empty();
    case Special::kDict: return !o.sp->dict.empty();
    case Special::kRange: return (o.sp->step > 0 && o.sp->start < o.sp->stop) || (o.sp->step < 0 && o.sp->start > o.sp->stop);
    case Special::kDateTime: return o.sp->dt != Special::kTimedelta || o.sp->start != 0;
    default: return true;
  }
}

namespace {

Result<Value> ToValueAt(const Obj& o, int depth) {
  if (!o.sp) return o.v;
  if (depth > 64) return EvalError("ValueError: a list or dict nests deeper than 64 levels (does it contain itself?)");
  const Special& s = *o.sp;
  switch (s.kind) {
    case Special::kList: {
      List items;
      items.reserve(s.list.size());
      for (const Obj& e : s.list) {
        ASSIGN_OR_RETURN(Value v, ToValueAt(e, depth + 1));
        items.push_back(std::move(v));
      }
      return Value::FromList(std::move(items));
    }
    case Special::kDict: {
      Row row;
      row.Reserve(s.dict.size());
      for (const auto& [k, e] : s.dict) {
        ASSIGN_OR_RETURN(Value v, ToValueAt(e, depth + 1));
        row.Append(k, std::move(v));
      }
      return Value::FromRow(std::move(row));
    }
    case Special::kDateTime:  // a datetime, date or timedelta as a value: its str(), e.g. '2024-05-01 12:30:00'
      if (s.dt <= Special::kTimezone) return Value::String(DateTimeStr(s));
      return EvalError("TypeError: a class cannot be used as a value here");
    case Special::kRange: {
      List items;
      for (int64_t i = s.start; s.step > 0 ? i < s.stop : i > s.stop; i += s.step) {
        if (items.size() >= (std::size_t{1} << 22)) return EvalError("MemoryError: range too long to list");
        items.push_back(Value::Int(i));
      }
      return Value::FromList(std::move(items));
    }
    default:
      return EvalError("TypeError: a " + ObjTypeName(o) + " object cannot be used as a value here (a row field, a list "
                       "item or an operand); use its methods, e.g. match.group()");
  }
}

}  // namespace

Result<Value> ToValue(const Obj& o) { return ToValueAt(o, 0); }

std::string ObjRepr(const Obj& o) {
  if (!o.sp) return PyRepr(o.v);
  switch (o.sp->kind) {
    case Special::kModule: {
      static const char* kNames[] = {"re", "math", "json", "datetime"};
      return std::string("<module '") + kNames[static_cast<int>(o.sp->module)] + "'>";
    }
    case Special::kFunction:
      if (!o.sp->builtin.empty()) return "<built-in function " + o.sp->builtin + ">";
      return "<function " + (o.sp->func ? o.sp->func->name : std::string("<lambda>")) + ">";
    case Special::kPattern:
    case Special::kMatch: return "<" + ObjTypeName(o) + " object>";
    case Special::kDateTime: return DateTimeRepr(*o.sp);
    case Special::kList:
      if (o.sp->is_set) {
        if (o.sp->list.empty()) return "set()";
        std::string s = "{";
        for (std::size_t i = 0; i < o.sp->list.size(); ++i) s += (i ? ", " : "") + ObjRepr(o.sp->list[i]);
        return s + "}";
      }
      break;
    default: break;
  }
  Result<Value> v = ToValue(o);
  return v.ok() ? PyRepr(*v) : "<" + ObjTypeName(o) + ">";
}

std::string ObjStr(const Obj& o) {
  if (!o.sp) return PyStr(o.v);
  if (o.sp->kind == Special::kDateTime) return DateTimeStr(*o.sp);
  return ObjRepr(o);
}

std::string ErrorType(const Status& s) {
  const std::string& m = s.message();
  std::size_t colon = m.find(": ");
  if (colon == std::string::npos || colon == 0) return "";
  for (std::size_t i = 0; i < colon; ++i)
    if (!(std::isalnum(static_cast<unsigned char>(m[i])) || m[i] == '.' || m[i] == '_')) return "";
  return m.substr(0, colon);
}

std::string ErrorText(const Status& s) {
  std::string type = ErrorType(s);
  return type.empty() ? s.message() : s.message().substr(type.size() + 2);
}

bool ExceptMatches(const std::string& name, const std::string& type) {
  if (name == "Exception" || name == "BaseException" || name == type) return true;
  if (name == "LookupError") return type == "IndexError" || type == "KeyError";
  if (name == "ArithmeticError") return type == "ZeroDivisionError" || type == "OverflowError" || type == "FloatingPointError";
  if (name == "ValueError") return type == "UnicodeDecodeError" || type == "UnicodeEncodeError" || type == "json.JSONDecodeError";
  if (name == "OSError" || name == "IOError") return type == "FileNotFoundError";
  if (name == "re.error" || name == "error") return type == "re.error";
  return false;
}

// ---- Interpreter core ---------------------------------------------------------------------------

Interp::Interp(const Module& m, const Scope* globals)
    : m_(m), globals_(globals), ctx_{EmptyRow()}, stack_base_(static_cast<const char*>(__builtin_frame_address(0))) {}

Interp::~Interp() {
  // Empties what this evaluation made, so cycles among them do not keep them alive.
  for (auto& s : scopes_) {
    if (s->frozen) continue;  // the closure of a module-level function
    s->vars.clear();
    s->parent.reset();
  }
  for (auto& c : made_) {
    if (c->frozen) continue;  // module-level objects outlive the compile-time evaluation
    c->list.clear();
    DictClear(*c);
    c->closure.reset();
    c->defaults.clear();
  }
}

std::shared_ptr<Special> Interp::NewList(std::vector<Obj> items) {
  auto s = expr::NewList(std::move(items));
  made_.push_back(s);
  return s;
}

std::shared_ptr<Special> Interp::NewDict() {
  auto s = expr::NewDict();
  made_.push_back(s);
  return s;
}

std::shared_ptr<Scope> Interp::NewScope(std::shared_ptr<Scope> parent) {
  auto s = std::make_shared<Scope>();
  s->parent = std::move(parent);
  scopes_.push_back(s);
  return s;
}

std::shared_ptr<Special> Interp::Promote(const Value& v) {
  if (v.is_list()) {
    std::vector<Obj> items;
    items.reserve(v.as_list().size());
    for (const Value& e : v.as_list()) items.emplace_back(e);
    return NewList(std::move(items));
  }
  auto d = NewDict();
  for (const Field& f : v.as_row().fields()) DictPut(*d, f.name, Obj(f.value));
  return d;
}

Status Interp::Step() {
  if (++steps_ > kMaxDefSteps)
    return LimitError("the callable ran more than " + std::to_string(kMaxDefSteps) +
                      " statements and loop iterations for one row (an endless loop?)");
  return Status::OK();
}

Status Interp::Keep(const Obj& o, std::size_t key_bytes) {
  int64_t bytes = static_cast<int64_t>(sizeof(Obj) + key_bytes);
  if (!o.sp && o.v.is_string()) bytes += static_cast<int64_t>(o.v.as_string().size());
  if (!o.sp && o.v.is_list()) bytes += static_cast<int64_t>(o.v.as_list().size() * sizeof(Value));
  kept_ -= bytes;
  if (kept_ < 0)
    return LimitError("MemoryError: the callable keeps more than " + std::to_string(kMaxKeptBytes >> 20) +
                      " MiB in lists and dicts for one row");
  return Status::OK();
}

Status Interp::CheckStack() {
  const char* here = static_cast<const char*>(__builtin_frame_address(0));
  std::size_t used = stack_base_ > here ? static_cast<std::size_t>(stack_base_ - here) : 0;
  if (used > kMaxStackBytes) return LimitError("RecursionError: maximum recursion depth exceeded (calls and expressions nest too deeply)");
  return Status::OK();
}

const Obj* Interp::Lookup(Scope& sc, const std::string& name) const {
  for (Scope* s = &sc; s != nullptr; s = s->parent.get())
    if (const Obj* o = s->Find(name)) return o;
  if (globals_ != nullptr && globals_ != &sc) {
    for (const auto& [k, v] : globals_->vars)
      if (k == name) return &v;
  }
  return nullptr;
}

Status Interp::NameError(Scope&, const std::string& name) const {
  if (name == "re" || name == "math" || name == "json")
    return EvalError("NameError: name '" + name + "' is not defined (add 'import " + name + "')");
  return EvalError("NameError: name '" + name + "' is not defined");
}

// ---- Statements ---------------------------------------------------------------------------------

Status Interp::Assign(const Target& t, Obj v, Scope& sc) {
  switch (t.kind) {
    case Target::kName:
      sc.Set(t.name, std::move(v));
      return Status::OK();
    case Target::kTuple: {
      std::vector<Obj> items;
      RETURN_IF_ERROR(Items(v, items));
      if (items.size() != t.items.size()) {
        if (items.size() < t.items.size())
          return EvalError("ValueError: not enough values to unpack (expected " + std::to_string(t.items.size()) + ", got " +
                           std::to_string(items.size()) + ")");
        return EvalError("ValueError: too many values to unpack (expected " + std::to_string(t.items.size()) + ")");
      }
      for (std::size_t i = 0; i < items.size(); ++i) RETURN_IF_ERROR(Assign(t.items[i], std::move(items[i]), sc));
      return Status::OK();
    }
    case Target::kSubscript: {
      Obj* var = nullptr;
      for (Scope* s = &sc; s != nullptr && !s->frozen && var == nullptr; s = s->parent.get()) var = s->Find(t.name);
      if (var == nullptr) {
        if (Lookup(sc, t.name) != nullptr)
          return EvalError("TypeError: module-level '" + t.name + "' is read-only inside the callable");
        return NameError(sc, t.name);
      }
      ASSIGN_OR_RETURN(Obj key, EvalObj(t.index, sc));
      if (!var->sp && (var->v.is_list() || var->v.is_row())) var->sp = Promote(var->v), var->v = Value();
      if (!var->sp || (var->sp->kind != Special::kList && var->sp->kind != Special::kDict))
        return EvalError("TypeError: '" + ObjTypeName(*var) + "' object does not support item assignment");
      if (var->sp->frozen) return Frozen(*var->sp);
      if (var->sp->is_set) return EvalError("TypeError: 'set' object does not support item assignment");
      Special& c = *var->sp;
      if (c.kind == Special::kDict) {
        if (key.sp || !key.v.is_string()) return EvalError("TypeError: dict keys here must be str, not " + ObjTypeName(key));
        RETURN_IF_ERROR(Keep(v, key.v.as_string().size()));
        DictPut(c, key.v.as_string(), std::move(v));
        return Status::OK();
      }
      if (key.sp || !IsIntLike(key.v)) return EvalError("TypeError: list indices must be integers, not " + ObjTypeName(key));
      int64_t i = IntOf(key.v), n = static_cast<int64_t>(c.list.size());
      if (i < 0) i += n;
      if (i < 0 || i >= n) return EvalError("IndexError: list assignment index out of range");
      RETURN_IF_ERROR(Keep(v));
      c.list[static_cast<std::size_t>(i)] = std::move(v);
      return Status::OK();
    }
  }
  return Internal("unknown target");
}

Status Interp::Exec(const std::vector<int32_t>& block, Scope& sc, Flow& flow, Obj& ret) {
  for (int32_t i : block) {
    // Each statement may build up to the per-expression budget; the call as a whole up to
    // kMaxTotalBytes (so quadratic rebuilding, s = s + x in a loop, ends), and Keep bounds what
    // lists and dicts hold.
    spent_ += kEvalBudgetBytes - ctx_.budget;
    ctx_.budget = kEvalBudgetBytes;
    if (spent_ > kMaxTotalBytes)
      return LimitError("MemoryError: the callable built more than " + std::to_string(kMaxTotalBytes >> 30) +
                        " GiB of strings and lists in total for one row");
    RETURN_IF_ERROR(ExecOne(m_.stmts[static_cast<std::size_t>(i)], sc, flow, ret));
    if (flow != Flow::kNormal) return Status::OK();
  }
  return Status::OK();
}

Status Interp::Raise(const Stmt& s, Scope& sc) {
  if (s.expr < 0) {
    if (handling_.ok()) return EvalError("RuntimeError: No active exception to reraise");
    return handling_;
  }
  const Node& n = m_.prog.nodes[static_cast<std::size_t>(s.expr)];
  std::string type, text;
  if (n.kind == NodeKind::kName) {
    type = n.name;
  } else if (n.kind == NodeKind::kCallName && n.kw.empty() && n.kids.size() <= 1) {
    type = n.name;
    if (!n.kids.empty()) {
      ASSIGN_OR_RETURN(Obj arg, EvalObj(n.kids[0], sc));
      text = ObjStr(arg);
    }
  } else {
    return EvalError("TypeError: raise takes an exception such as ValueError('message')");
  }
  bool known = type == "Exception" || (type.size() > 5 && type.compare(type.size() - 5, 5, "Error") == 0);
  if (!known) return EvalError("TypeError: exceptions must derive from BaseException (got '" + type + "')");
  return EvalError(type + ": " + text);
}

Status Interp::ExecDel(const Stmt& s, Scope& sc) {
  for (const Target& t : s.targets) {
    Obj* var = sc.Find(t.name);
    if (t.kind == Target::kName) {
      if (var == nullptr) return NameError(sc, t.name);
      auto& vars = sc.vars;
      vars.erase(std::remove_if(vars.begin(), vars.end(), [&](const auto& kv) { return kv.first == t.name; }), vars.end());
      continue;
    }
    for (Scope* p = sc.parent.get(); p != nullptr && !p->frozen && var == nullptr; p = p->parent.get()) var = p->Find(t.name);
    if (var == nullptr) {
      if (Lookup(sc, t.name) != nullptr) return EvalError("TypeError: module-level '" + t.name + "' is read-only inside the callable");
      return NameError(sc, t.name);
    }
    ASSIGN_OR_RETURN(Obj key, EvalObj(t.index, sc));
    if (!var->sp && (var->v.is_list() || var->v.is_row())) var->sp = Promote(var->v), var->v = Value();
    if (!var->sp || (var->sp->kind != Special::kList && var->sp->kind != Special::kDict) || var->sp->is_set)
      return EvalError("TypeError: '" + ObjTypeName(*var) + "' object doesn't support item deletion");
    if (var->sp->frozen) return Frozen(*var->sp);
    Special& c = *var->sp;
    if (c.kind == Special::kDict) {
      std::size_t at = !key.sp && key.v.is_string() ? DictFind(c, key.v.as_string()) : std::string::npos;
      if (at == std::string::npos) return EvalError("KeyError: " + ObjRepr(key));
      DictErase(c, at);
      continue;
    }
    if (key.sp || !IsIntLike(key.v)) return EvalError("TypeError: list indices must be integers, not " + ObjTypeName(key));
    int64_t i = IntOf(key.v), n = static_cast<int64_t>(c.list.size());
    if (i < 0) i += n;
    if (i < 0 || i >= n) return EvalError("IndexError: list assignment index out of range");
    c.list.erase(c.list.begin() + i);
  }
  return Status::OK();
}

Status Interp::ExecTry(const Stmt& s, Scope& sc, Flow& flow, Obj& ret) {
  Status st = Exec(s.body, sc, flow, ret);
  if (!st.ok() && !IsLimitError(st) && !s.handlers.empty()) {
    std::string type = ErrorType(st);
    for (const Handler& h : s.handlers) {
      bool hit = h.types.empty();
      for (const std::string& t : h.types) hit = hit || ExceptMatches(t, type);
      if (!hit) continue;
      if (!h.as.empty()) sc.Set(h.as, Obj(Value::String(ErrorText(st))));
      Status saved = handling_;
      handling_ = st;
      st = Exec(h.body, sc, flow, ret);
      handling_ = saved;
      break;
    }
  } else if (st.ok() && flow == Flow::kNormal) {
    st = Exec(s.orelse, sc, flow, ret);
  }
  if (!s.finally.empty() && !IsLimitError(st)) {
    Flow f2 = Flow::kNormal;
    Obj r2;
    RETURN_IF_ERROR(Exec(s.finally, sc, f2, r2));
    if (f2 != Flow::kNormal) {  // a return/break in finally wins, as in Python
      flow = f2;
      ret = std::move(r2);
      return Status::OK();
    }
  }
  return st;
}

Status Interp::ExecAugAssign(const Stmt& s, Scope& sc, Flow& flow, Obj& ret) {
  (void)flow;
  (void)ret;
  const Target& t = s.targets[0];
  OSlot cur;
  if (t.kind == Target::kName) {
    const Obj* o = Lookup(sc, t.name);
    if (o == nullptr) return NameError(sc, t.name);
    cur.Set(*o);
  } else {
    const Obj* o = Lookup(sc, t.name);
    if (o == nullptr) return NameError(sc, t.name);
    ASSIGN_OR_RETURN(Obj key, EvalObj(t.index, sc));
    ASSIGN_OR_RETURN(Value base, ToValue(*o));
    ASSIGN_OR_RETURN(Value k, ToValue(key));
    ASSIGN_OR_RETURN(Value item, Subscript(base, k));
    cur.SetValue(std::move(item));
  }
  ASSIGN_OR_RETURN(Obj rhs, EvalObj(s.expr, sc));
  if (t.kind == Target::kName && s.op == Op::kAdd && !rhs.sp && rhs.v.is_string()) {
    Obj* var = sc.Find(t.name);
    if (var != nullptr && !var->sp && var->v.is_string()) {
      // s += text appends in place (amortised O(1), as CPython does for a str nobody else holds).
      if (var->v.as_string().size() + rhs.v.as_string().size() > static_cast<std::size_t>(kEvalBudgetBytes))
        return EvalError("MemoryError: the string grows past " + std::to_string(kEvalBudgetBytes >> 20) + " MiB");
      const_cast<std::string&>(var->v.as_string()).append(rhs.v.as_string());
      return Status::OK();
    }
  }
  const Obj& a = cur.get();
  if (a.sp && a.sp->is_set) {  // s |= t, s &= t, s -= t, s ^= t
    ASSIGN_OR_RETURN(Obj r, SetBinary(s.op, a, rhs));
    return Assign(t, std::move(r), sc);
  }
  if (a.sp && a.sp->kind == Special::kList && s.op == Op::kAdd && t.kind == Target::kName) {
    std::vector<Obj> more;  // list += iterable extends in place
    RETURN_IF_ERROR(Items(rhs, more));
    Obj* var = sc.Find(t.name);
    if (var == nullptr || !var->sp || var->sp->frozen)
      return EvalError("TypeError: module-level '" + t.name + "' is read-only inside the callable");
    for (Obj& e : more) {
      RETURN_IF_ERROR(Keep(e));
      var->sp->list.push_back(std::move(e));
    }
    return Status::OK();
  }
  ASSIGN_OR_RETURN(Value av, ToValue(a));
  ASSIGN_OR_RETURN(Value bv, ToValue(rhs));
  ASSIGN_OR_RETURN(Value r, BinaryOp(s.op, av, bv, ctx_));
  return Assign(t, Obj(std::move(r)), sc);
}

Status Interp::ExecFor(const Stmt& s, Scope& sc, Flow& flow, Obj& ret) {
  (void)flow;
  (void)ret;
  ASSIGN_OR_RETURN(Obj it, EvalObj(s.expr, sc));
  auto body = [&](Obj item, bool* stop) -> Status {
    RETURN_IF_ERROR(Step());
    RETURN_IF_ERROR(Assign(s.targets[0], std::move(item), sc));
    RETURN_IF_ERROR(Exec(s.body, sc, flow, ret));
    if (flow == Flow::kBreak || flow == Flow::kReturn) *stop = true;
    if (flow != Flow::kReturn) flow = Flow::kNormal;
    return Status::OK();
  };
  bool stop = false;
  // Lists, strings and ranges are walked in place (a loop that breaks early costs nothing for
  // the rest); a mutable list is read by index each time, as Python's list iterator does.
  if (it.sp && it.sp->kind == Special::kRange) {
    for (int64_t i = it.sp->start; !stop && (it.sp->step > 0 ? i < it.sp->stop : i > it.sp->stop); i += it.sp->step)
      RETURN_IF_ERROR(body(Obj(Value::Int(i)), &stop));
  } else if (it.sp && it.sp->kind == Special::kList) {
    for (std::size_t i = 0; !stop && i < it.sp->list.size(); ++i) RETURN_IF_ERROR(body(it.sp->list[i], &stop));
  } else if (!it.sp && it.v.is_list()) {
    const List& l = it.v.as_list();
    for (std::size_t i = 0; !stop && i < l.size(); ++i) RETURN_IF_ERROR(body(Obj(l[i]), &stop));
  } else if (!it.sp && it.v.is_string()) {
    const std::string& str = it.v.as_string();
    uint32_t cp;
    for (std::size_t i = 0, n; !stop && i < str.size(); i += n) {
      n = DecodeUtf8(str, i, &cp);
      RETURN_IF_ERROR(body(Obj(Value::String(str.substr(i, n))), &stop));
    }
  } else {
    std::vector<Obj> items;
    RETURN_IF_ERROR(Items(it, items));
    for (std::size_t i = 0; i < items.size() && !stop; ++i) RETURN_IF_ERROR(body(std::move(items[i]), &stop));
  }
  if (!stop) return Exec(s.orelse, sc, flow, ret);
  return Status::OK();
}

Status Interp::ExecDef(const Stmt& s, Scope& sc, Flow& flow, Obj& ret) {
  (void)flow;
  (void)ret;
  const FuncDef& f = m_.funcs[static_cast<std::size_t>(s.func)];
  auto fn = std::make_shared<Special>(Special::kFunction);
  fn->func = &f;
  for (int32_t d : f.defaults) {
    ASSIGN_OR_RETURN(Obj dv, EvalObj(d, sc));
    fn->defaults.push_back(std::move(dv));
  }
  // A def inside a function sees that call's variables; a top-level one the module scope.
  if (&sc != globals_) fn->closure = sc.shared_from_this();
  made_.push_back(fn);
  sc.Set(f.name, Obj(std::move(fn)));
  return Status::OK();
}

Status Interp::ExecImport(const Stmt& s, Scope& sc, Flow& flow, Obj& ret) {
  (void)flow;
  (void)ret;
  auto mod = std::make_shared<Special>(Special::kModule);
  mod->module = s.name == "re" ? ModuleId::kRe : s.name == "math" ? ModuleId::kMath : s.name == "json" ? ModuleId::kJson
                                                                                                    : ModuleId::kDatetime;
  if (s.names.empty()) {
    sc.Set(s.as, Obj(std::move(mod)));
    return Status::OK();
  }
  for (const auto& [name, as] : s.names) {  // from MODULE import name as as
    Result<Obj> attr = ModuleAttr(mod->module, name);
    if (!attr.ok()) return EvalError("ImportError: cannot import name '" + name + "' from '" + s.name + "'");
    sc.Set(as, std::move(attr).value());
  }
  return Status::OK();
}

Status Interp::ExecAssign(const Stmt& s, Scope& sc, Flow& flow, Obj& ret) {
  (void)flow;
  (void)ret;
  ASSIGN_OR_RETURN(Obj v, EvalObj(s.expr, sc));
  for (const Target& t : s.targets) RETURN_IF_ERROR(Assign(t, v, sc));
  return Status::OK();
}

Status Interp::ExecOne(const Stmt& s, Scope& sc, Flow& flow, Obj& ret) {
  RETURN_IF_ERROR(Step());
  RETURN_IF_ERROR(CheckStack());
  line_ = s.line;
  switch (s.kind) {
    case StmtKind::kPass: return Status::OK();
    case StmtKind::kBreak: flow = Flow::kBreak; return Status::OK();
    case StmtKind::kContinue: flow = Flow::kContinue; return Status::OK();
    case StmtKind::kExpr: {
      OSlot tmp;
      return Eval(s.expr, sc, tmp);
    }
    case StmtKind::kReturn: {
      if (s.expr >= 0) {
        ASSIGN_OR_RETURN(ret, EvalObj(s.expr, sc));
      } else {
        ret = Obj();
      }
      flow = Flow::kReturn;
      return Status::OK();
    }
    case StmtKind::kAssign: return ExecAssign(s, sc, flow, ret);
    case StmtKind::kAugAssign: return ExecAugAssign(s, sc, flow, ret);
    case StmtKind::kIf: {
      ASSIGN_OR_RETURN(Obj c, EvalObj(s.expr, sc));
      return Exec(ObjTruthy(c) ? s.body : s.orelse, sc, flow, ret);
    }
    case StmtKind::kWhile: {
      while (true) {
        ASSIGN_OR_RETURN(Obj c, EvalObj(s.expr, sc));
        if (!ObjTruthy(c)) return Exec(s.orelse, sc, flow, ret);
        RETURN_IF_ERROR(Step());
        RETURN_IF_ERROR(Exec(s.body, sc, flow, ret));
        if (flow == Flow::kBreak) {
          flow = Flow::kNormal;
          return Status::OK();
        }
        if (flow == Flow::kReturn) return Status::OK();
        flow = Flow::kNormal;
      }
    }
    case StmtKind::kFor: return ExecFor(s, sc, flow, ret);
    case StmtKind::kTry: return ExecTry(s, sc, flow, ret);
    case StmtKind::kRaise: return Raise(s, sc);
    case StmtKind::kImport: return ExecImport(s, sc, flow, ret);
    case StmtKind::kAssert: {
      ASSIGN_OR_RETURN(Obj c, EvalObj(s.expr, sc));
      if (ObjTruthy(c)) return Status::OK();
      std::string msg;
      if (s.expr2 >= 0) {
        ASSIGN_OR_RETURN(Obj m, EvalObj(s.expr2, sc));
        msg = ObjStr(m);
      }
      return EvalError("AssertionError: " + msg);
    }
    case StmtKind::kDel: return ExecDel(s, sc);
    case StmtKind::kDef: return ExecDef(s, sc, flow, ret);
  }
  return Internal("unknown statement");
}

}  // namespace dfw::expr
