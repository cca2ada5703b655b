// Expressions inside def callables: the same operators as the expression subset (expression_ops.cc)
// over the interpreter's objects, plus variables, calls of user functions and modules, mutable
// lists and dicts, and list comprehensions.
#include <algorithm>
#include <optional>
#include <string>

#include "dfw/common/strings.h"

#include "record/python_def_interp.h"

namespace dfw::expr {
namespace {

// The plain Value of `o` without copying when it is one; `scratch` holds a converted container.
Result<const Value*> AsValue(const Obj& o, Value& scratch) {
  if (!o.sp) return &o.v;
  ASSIGN_OR_RETURN(scratch, ToValue(o));
  return &scratch;
}

bool IsContainer(const Obj& o) { return o.sp && (o.sp->kind == Special::kList || o.sp->kind == Special::kDict); }
bool IsDateTime(const Obj& o) { return o.sp && o.sp->kind == Special::kDateTime; }
bool IsListLike(const Obj& o) { return (o.sp && o.sp->kind == Special::kList) || (!o.sp && o.v.is_list()); }

Status TypeErrorNotCallable(const Obj& o) { return EvalError("TypeError: '" + ObjTypeName(o) + "' object is not callable"); }

}  // namespace

Result<bool> ObjEquals(const Obj& a, const Obj& b) {
  bool a_set = a.sp && a.sp->kind == Special::kList && a.sp->is_set, b_set = b.sp && b.sp->kind == Special::kList && b.sp->is_set;
  if (a_set || b_set) {
    if (!(a_set && b_set)) return false;
    if (a.sp->list.size() != b.sp->list.size()) return false;
    for (const Obj& e : a.sp->list) {
      ASSIGN_OR_RETURN(bool in, SetContains(*b.sp, e));
      if (!in) return false;
    }
    return true;
  }
  if (IsDateTime(a) && IsDateTime(b)) return DateTimeCompare(Op::kEq, *a.sp, *b.sp);
  bool a_plain = !a.sp || IsContainer(a) || a.sp->kind == Special::kRange;
  bool b_plain = !b.sp || IsContainer(b) || b.sp->kind == Special::kRange;
  if (!a_plain || !b_plain) return a.sp == b.sp;
  Value sa, sb;
  ASSIGN_OR_RETURN(const Value* va, AsValue(a, sa));
  ASSIGN_OR_RETURN(const Value* vb, AsValue(b, sb));
  return PyEquals(*va, *vb);
}

Status Interp::Items(const Obj& o, std::vector<Obj>& out) {
  std::size_t n = o.sp ? (o.sp->kind == Special::kList ? o.sp->list.size() : o.sp->dict.size())
                       : o.v.is_list() ? o.v.as_list().size() : o.v.is_row() ? o.v.as_row().size()
                       : o.v.is_string() ? o.v.as_string().size() : 0;
  RETURN_IF_ERROR(ctx_.Charge(n * sizeof(Obj)));
  if (o.sp) {
    const Special& s = *o.sp;
    switch (s.kind) {
      case Special::kList: out = s.list; return Status::OK();
      case Special::kDict:
        for (const auto& kv : s.dict) out.emplace_back(Value::String(kv.first));
        return Status::OK();
      case Special::kRange: {
        ASSIGN_OR_RETURN(Value v, ToValue(o));
        for (const Value& e : v.as_list()) out.emplace_back(e);
        return Status::OK();
      }
      default: return EvalError("TypeError: '" + ObjTypeName(o) + "' object is not iterable");
    }
  }
  const Value& v = o.v;
  if (v.is_list()) {
    out.reserve(v.as_list().size());
    for (const Value& e : v.as_list()) out.emplace_back(e);
  } else if (v.is_string()) {
    const std::string& s = v.as_string();
    std::vector<std::size_t> off = CodePointOffsets(s);
    for (std::size_t i = 0; i + 1 < off.size(); ++i) out.emplace_back(Value::String(s.substr(off[i], off[i + 1] - off[i])));
  } else if (v.is_row()) {
    for (const Field& f : v.as_row().fields()) out.emplace_back(Value::String(f.name));
  } else {
    return EvalError("TypeError: '" + PyType(v) + "' object is not iterable");
  }
  return Status::OK();
}

Status Interp::EvalArgs(const Node& n, std::size_t first, Scope& sc, std::vector<Obj>& vals, Args& args) {
  std::size_t nargs = n.kids.size() - first;
  vals.resize(nargs);
  for (std::size_t i = 0; i < nargs; ++i) {
    ASSIGN_OR_RETURN(vals[i], EvalObj(n.kids[first + i], sc));
  }
  args.interp = this;
  std::size_t npos = nargs - n.kw.size();
  for (std::size_t i = 0; i < npos; ++i) args.pos.push_back(&vals[i]);
  for (std::size_t i = npos; i < nargs; ++i) args.kw.emplace_back(n.kw[i - npos], &vals[i]);
  return Status::OK();
}

Status BindArgs(std::string_view fn, const Args& args, const std::vector<std::string_view>& params, std::size_t required,
                std::vector<const Obj*>& out) {
  std::string name(fn);
  out.assign(params.size(), nullptr);
  if (args.pos.size() > params.size())
    return EvalError("TypeError: " + name + "() takes at most " + std::to_string(params.size()) + " arguments (" +
                     std::to_string(args.pos.size()) + " given)");
  for (std::size_t i = 0; i < args.pos.size(); ++i) out[i] = args.pos[i];
  for (const auto& [k, v] : args.kw) {
    auto it = std::find(params.begin(), params.end(), k);
    if (it == params.end()) return EvalError("TypeError: " + name + "() got an unexpected keyword argument '" + k + "'");
    std::size_t i = static_cast<std::size_t>(it - params.begin());
    if (out[i] != nullptr) return EvalError("TypeError: " + name + "() got multiple values for argument '" + k + "'");
    out[i] = v;
  }
  for (std::size_t i = 0; i < required; ++i)
    if (out[i] == nullptr)
      return EvalError("TypeError: " + name + "() missing required argument '" + std::string(params[i]) + "'");
  return Status::OK();
}

Status Interp::Eval(int32_t index, Scope& sc, OSlot& out) {
  RETURN_IF_ERROR(CheckStack());
  const Node& n = m_.prog.nodes[static_cast<std::size_t>(index)];
  switch (n.kind) {
    case NodeKind::kConst:
      out.Borrow(m_.consts[static_cast<std::size_t>(index)]);
      return Status::OK();
    case NodeKind::kName: {
      const Obj* o = Lookup(sc, n.name);
      if (o == nullptr) {
        static const char* kValues[] = {"len", "str", "int", "float", "bool", "abs", "repr", "sorted", "list", "tuple",
                                        "min", "max", "sum", "round", "ord", "chr", "any", "all", "reversed", "dict"};
        for (const char* b : kValues)
          if (n.name == b) {  // a builtin passed as a value: key=len, map(str, xs)
            auto fn = std::make_shared<Special>(Special::kFunction);
            fn->builtin = b;
            out.Set(Obj(std::move(fn)));
            return Status::OK();
          }
        return NameError(sc, n.name);
      }
      out.Borrow(*o);
      return Status::OK();
    }
    case NodeKind::kUnary: return EvalUnary(n, sc, out);
    case NodeKind::kBinary: return EvalBinary(n, sc, out);
    case NodeKind::kAnd:
    case NodeKind::kOr: {
      for (std::size_t i = 0; i < n.kids.size(); ++i) {
        RETURN_IF_ERROR(Eval(n.kids[i], sc, out));
        bool truthy = ObjTruthy(out.get());
        if (i + 1 == n.kids.size() || truthy == (n.kind == NodeKind::kOr)) break;
      }
      return Status::OK();
    }
    case NodeKind::kCompare: return EvalCompare(n, sc, out);
    case NodeKind::kIf: {
      OSlot cond;
      RETURN_IF_ERROR(Eval(n.kids[1], sc, cond));
      return Eval(n.kids[ObjTruthy(cond.get()) ? 0 : 2], sc, out);
    }
    case NodeKind::kIndex: return EvalIndex(n, sc, out);
    case NodeKind::kSlice: return EvalSlice(n, sc, out);
    case NodeKind::kAttr: return EvalAttr(n, sc, out);
    case NodeKind::kList: return EvalList(n, sc, out);
    case NodeKind::kDict: return EvalDict(n, sc, out);
    case NodeKind::kListComp: return EvalListComp(n, sc, out);
    case NodeKind::kFormat: return EvalFormat(n, sc, out);
    case NodeKind::kLambda: return EvalLambda(n, sc, out);
    case NodeKind::kCallName: return EvalCallName(n, sc, out);
    case NodeKind::kCallAttr: return EvalCallAttr(n, sc, out);
    case NodeKind::kCallValue: return EvalCallValue(n, sc, out);
    case NodeKind::kCall:
    case NodeKind::kMethod: break;  // the def parser makes kCallName/kCallAttr instead
  }
  return Internal("unexpected expression node in a def callable");
}

Status Interp::EvalUnary(const Node& n, Scope& sc, OSlot& out) {
  OSlot a;
  RETURN_IF_ERROR(Eval(n.kids[0], sc, a));
  if (n.op == Op::kNot) {
    out.SetValue(Value::Bool(!ObjTruthy(a.get())));
    return Status::OK();
  }
  if (IsDateTime(a.get()) && (n.op == Op::kNeg || n.op == Op::kPos)) {
    ASSIGN_OR_RETURN(Obj r, DateTimeBinary(Op::kMul, a.get(), Obj(Value::Int(n.op == Op::kNeg ? -1 : 1))));
    out.Set(std::move(r));
    return Status::OK();
  }
  Value scratch;
  ASSIGN_OR_RETURN(const Value* v, AsValue(a.get(), scratch));
  ASSIGN_OR_RETURN(Value r, UnaryOp(n.op, *v));
  out.SetValue(std::move(r));
  return Status::OK();
}

Status Interp::EvalBinary(const Node& n, Scope& sc, OSlot& out) {
  OSlot a, b;
  RETURN_IF_ERROR(Eval(n.kids[0], sc, a));
  RETURN_IF_ERROR(Eval(n.kids[1], sc, b));
  const Obj& x = a.get();
  const Obj& y = b.get();
  if (IsDateTime(x) || IsDateTime(y)) {
    ASSIGN_OR_RETURN(Obj r, DateTimeBinary(n.op, x, y));
    out.Set(std::move(r));
    return Status::OK();
  }
  if ((x.sp && x.sp->is_set) || (y.sp && y.sp->is_set)) {
    ASSIGN_OR_RETURN(Obj r, SetBinary(n.op, x, y));
    out.Set(std::move(r));
    return Status::OK();
  }
  // A new mutable list from list + list or list * n when a mutable list is involved.
  if ((x.sp && x.sp->kind == Special::kList) || (y.sp && y.sp->kind == Special::kList)) {
    if (n.op == Op::kAdd && IsListLike(x) && IsListLike(y)) {
      std::vector<Obj> items, more;
      RETURN_IF_ERROR(Items(x, items));
      RETURN_IF_ERROR(Items(y, more));
      for (Obj& e : more) items.push_back(std::move(e));
      for (const Obj& e : items) RETURN_IF_ERROR(Keep(e));
      out.Set(Obj(NewList(std::move(items))));
      return Status::OK();
    }
  }
  Value sx, sy;
  ASSIGN_OR_RETURN(const Value* vx, AsValue(x, sx));
  ASSIGN_OR_RETURN(const Value* vy, AsValue(y, sy));
  if (n.op == Op::kMod && vx->is_string()) {  // 'format' % args
    ASSIGN_OR_RETURN(std::string s, PercentFormat(vx->as_string(), *vy));
    RETURN_IF_ERROR(ctx_.Charge(s.size()));
    out.SetValue(Value::String(std::move(s)));
    return Status::OK();
  }
  ASSIGN_OR_RETURN(Value r, BinaryOp(n.op, *vx, *vy, ctx_));
  out.SetValue(std::move(r));
  return Status::OK();
}

Status Interp::EvalCompare(const Node& n, Scope& sc, OSlot& out) {
  OSlot left, right;
  RETURN_IF_ERROR(Eval(n.kids[0], sc, left));
  for (std::size_t i = 0; i < n.ops.size(); ++i) {
    RETURN_IF_ERROR(Eval(n.kids[i + 1], sc, right));
    const Obj& x = left.get();
    const Obj& y = right.get();
    Op op = n.ops[i];
    bool r;
    if ((op == Op::kIs || op == Op::kIsNot) && (x.sp || y.sp)) {
      r = (x.sp == y.sp) == (op == Op::kIs);
    } else if (IsDateTime(x) && IsDateTime(y) && op != Op::kIn && op != Op::kNotIn) {
      ASSIGN_OR_RETURN(r, DateTimeCompare(op, *x.sp, *y.sp));
    } else if ((op == Op::kIn || op == Op::kNotIn) && IsContainer(y)) {
      bool found = false;
      if (y.sp->kind == Special::kDict) {
        if (!x.sp && x.v.is_string()) found = DictFind(*y.sp, x.v.as_string()) != std::string::npos;
      } else if (y.sp->is_set) {
        ASSIGN_OR_RETURN(found, SetContains(*y.sp, x));
      } else {
        for (const Obj& e : y.sp->list) {
          ASSIGN_OR_RETURN(bool eq, ObjEquals(x, e));
          if (eq) {
            found = true;
            break;
          }
        }
      }
      r = found == (op == Op::kIn);
    } else if ((op == Op::kEq || op == Op::kNe) && (x.sp || y.sp)) {
      ASSIGN_OR_RETURN(bool eq, ObjEquals(x, y));
      r = eq == (op == Op::kEq);
    } else {
      Value sx, sy;
      ASSIGN_OR_RETURN(const Value* vx, AsValue(x, sx));
      ASSIGN_OR_RETURN(const Value* vy, AsValue(y, sy));
      ASSIGN_OR_RETURN(r, CompareOp(op, *vx, *vy));
    }
    if (!r) {
      out.SetValue(Value::Bool(false));
      return Status::OK();
    }
    std::swap(left, right);
  }
  out.SetValue(Value::Bool(true));
  return Status::OK();
}

Status Interp::EvalIndex(const Node& n, Scope& sc, OSlot& out) {
  OSlot obj, idx;
  RETURN_IF_ERROR(Eval(n.kids[0], sc, obj));
  RETURN_IF_ERROR(Eval(n.kids[1], sc, idx));
  const Obj& o = obj.get();
  const Obj& k = idx.get();
  if (o.sp && o.sp->is_set) return EvalError("TypeError: 'set' object is not subscriptable");
  if (o.sp && o.sp->kind == Special::kList && !k.sp && IsIntLike(k.v)) {
    int64_t i = IntOf(k.v), len = static_cast<int64_t>(o.sp->list.size());
    if (i < 0) i += len;
    if (i < 0 || i >= len) return EvalError("IndexError: list index out of range");
    out.Set(o.sp->list[static_cast<std::size_t>(i)]);
    return Status::OK();
  }
  if (o.sp && o.sp->kind == Special::kDict) {
    if (!k.sp && k.v.is_string()) {
      std::size_t at = DictFind(*o.sp, k.v.as_string());
      if (at != std::string::npos) {
        out.Set(o.sp->dict[at].second);
        return Status::OK();
      }
    }
    return EvalError("KeyError: " + ObjRepr(k));
  }
  if (o.sp && o.sp->kind == Special::kMatch) {
    Args args;
    args.pos.push_back(&k);
    ASSIGN_OR_RETURN(Obj g, CallRegexMethod(*o.sp, "group", args, ctx_));
    out.Set(std::move(g));
    return Status::OK();
  }
  Value so, sk;
  ASSIGN_OR_RETURN(const Value* vo, AsValue(o, so));
  ASSIGN_OR_RETURN(const Value* vk, AsValue(k, sk));
  if (vo->is_row() && vk->is_string() && vo->as_row().Find(vk->as_string()) == nullptr)
    return EvalError("KeyError: " + PyRepr(*vk));
  ASSIGN_OR_RETURN(Value r, Subscript(*vo, *vk));
  out.SetValue(std::move(r));
  return Status::OK();
}

Status Interp::EvalSlice(const Node& n, Scope& sc, OSlot& out) {
  OSlot obj, parts[3];
  RETURN_IF_ERROR(Eval(n.kids[0], sc, obj));
  Value so, sp[3];
  ASSIGN_OR_RETURN(const Value* vo, AsValue(obj.get(), so));
  const Value* pv[3] = {nullptr, nullptr, nullptr};
  for (std::size_t i = 0; i < 3; ++i) {
    if (n.kids[i + 1] < 0) continue;
    RETURN_IF_ERROR(Eval(n.kids[i + 1], sc, parts[i]));
    ASSIGN_OR_RETURN(pv[i], AsValue(parts[i].get(), sp[i]));
  }
  ASSIGN_OR_RETURN(Value r, Slice(*vo, pv[0], pv[1], pv[2], ctx_));
  out.SetValue(std::move(r));
  return Status::OK();
}

Status Interp::EvalAttr(const Node& n, Scope& sc, OSlot& out) {
  OSlot obj;
  RETURN_IF_ERROR(Eval(n.kids[0], sc, obj));
  const Obj& o = obj.get();
  if (o.sp && o.sp->kind == Special::kModule) {
    ASSIGN_OR_RETURN(Obj a, ModuleAttr(o.sp->module, n.name));
    out.Set(std::move(a));
    return Status::OK();
  }
  if (IsDateTime(o)) {
    ASSIGN_OR_RETURN(Obj a, DateTimeAttr(*o.sp, n.name));
    out.Set(std::move(a));
    return Status::OK();
  }
  if (o.sp && (o.sp->kind == Special::kMatch || o.sp->kind == Special::kPattern)) {
    ASSIGN_OR_RETURN(Obj a, RegexAttr(*o.sp, n.name));
    out.Set(std::move(a));
    return Status::OK();
  }
  if (o.sp || !o.v.is_row())
    return EvalError("AttributeError: '" + ObjTypeName(o) + "' object has no attribute '" + n.name + "'");
  const Value* v = o.v.as_row().Find(n.name);
  if (v == nullptr) {
    std::vector<std::string> names;
    for (const Field& f : o.v.as_row().fields()) names.push_back(f.name);
    return EvalError("AttributeError: row has no field '" + n.name + "'" + DidYouMeanSuffix(n.name, names) +
                     "; fields: " + (names.empty() ? "(none)" : Join(names)));
  }
  out.SetValue(*v);
  return Status::OK();
}

Status Interp::EvalList(const Node& n, Scope& sc, OSlot& out) {
  std::vector<Obj> items;
  items.reserve(n.kids.size());
  for (int32_t k : n.kids) {
    ASSIGN_OR_RETURN(Obj e, EvalObj(k, sc));
    items.push_back(std::move(e));
  }
  if (n.fn == 1) {
    for (const Obj& e : items) RETURN_IF_ERROR(Keep(e));
    out.Set(Obj(NewList(std::move(items))));
    return Status::OK();
  }
  if (n.fn == 2) {
    ASSIGN_OR_RETURN(std::shared_ptr<Special> set, MakeSet(std::move(items)));
    out.Set(Obj(std::move(set)));
    return Status::OK();
  }
  List vals;  // a tuple: an immutable list
  vals.reserve(items.size());
  for (const Obj& e : items) {
    ASSIGN_OR_RETURN(Value v, ToValue(e));
    vals.push_back(std::move(v));
  }
  out.SetValue(Value::FromList(std::move(vals)));
  return Status::OK();
}

Status Interp::EvalDict(const Node& n, Scope& sc, OSlot& out) {
  auto d = NewDict();
  for (std::size_t i = 0; i + 1 < n.kids.size(); i += 2) {
    ASSIGN_OR_RETURN(Obj k, EvalObj(n.kids[i], sc));
    ASSIGN_OR_RETURN(Obj v, EvalObj(n.kids[i + 1], sc));
    if (k.sp || !k.v.is_string()) return EvalError("TypeError: dict keys here must be str, not " + ObjTypeName(k));
    RETURN_IF_ERROR(Keep(v, k.v.as_string().size()));
    DictPut(*d, k.v.as_string(), std::move(v));
  }
  out.Set(Obj(std::move(d)));
  return Status::OK();
}

Status Interp::EvalListComp(const Node& n, Scope& sc, OSlot& out) {
  ASSIGN_OR_RETURN(Obj it, EvalObj(n.kids[1], sc));
  std::vector<Obj> items, result;
  RETURN_IF_ERROR(Items(it, items));
  // The loop variables live in the comprehension's own scope, as in Python 3: the enclosing
  // scope is not changed (so nothing borrowed from it moves while an expression is evaluated).
  std::vector<std::string> names = n.kw.empty() ? std::vector<std::string>{n.name} : n.kw;
  std::shared_ptr<Scope> comp = NewScope(sc.shared_from_this());
  Status st;
  for (Obj& item : items) {
    st = Step();
    if (!st.ok()) break;
    if (n.kw.empty()) {
      comp->Set(n.name, std::move(item));
    } else {
      std::vector<Obj> parts;
      st = Items(item, parts);
      if (st.ok() && parts.size() != names.size())
        st = EvalError("ValueError: cannot unpack " + std::to_string(parts.size()) + " values into " + std::to_string(names.size()) + " names");
      if (!st.ok()) break;
      for (std::size_t i = 0; i < names.size(); ++i) comp->Set(names[i], std::move(parts[i]));
    }
    if (n.kids[2] >= 0) {
      Result<Obj> c = EvalObj(n.kids[2], *comp);
      if (!c.ok()) { st = c.status(); break; }
      if (!ObjTruthy(*c)) continue;
    }
    Result<Obj> e = EvalObj(n.kids[0], *comp);
    if (!e.ok()) { st = e.status(); break; }
    st = Keep(*e);
    if (!st.ok()) break;
    result.push_back(std::move(e).value());
  }
  RETURN_IF_ERROR(st);
  out.Set(Obj(NewList(std::move(result))));
  return Status::OK();
}

Status Interp::EvalFormat(const Node& n, Scope& sc, OSlot& out) {
  std::string s = n.kw[0];
  for (std::size_t i = 0; i < n.kids.size(); ++i) {
    ASSIGN_OR_RETURN(Obj o, EvalObj(n.kids[i], sc));
    const std::string& cs = n.kw[2 * i + 1];
    std::string piece;
    if (IsDateTime(o) && cs[0] == ' ' && cs.size() > 1) {  // f'{d:%Y-%m-%d}' is d.strftime(...)
      ASSIGN_OR_RETURN(piece, DateTimeFormat(*o.sp, cs.substr(1)));
    } else {
      ASSIGN_OR_RETURN(Value v, ToValue(o));
      ASSIGN_OR_RETURN(piece, ConvertAndFormat(v, cs[0] == ' ' ? 0 : cs[0], std::string_view(cs).substr(1)));
    }
    s += piece;
    s += n.kw[2 * i + 2];
    RETURN_IF_ERROR(ctx_.Charge(piece.size()));
  }
  out.SetValue(Value::String(std::move(s)));
  return Status::OK();
}

Status Interp::EvalLambda(const Node& n, Scope& sc, OSlot& out) {
  auto fn = std::make_shared<Special>(Special::kFunction);
  fn->lambda = &n;
  if (&sc != globals_) fn->closure = sc.shared_from_this();
  made_.push_back(fn);
  out.Set(Obj(std::move(fn)));
  return Status::OK();
}

Result<Obj> Interp::Call1(const Obj& fn, const Obj& x) {
  Args a;
  a.pos.push_back(&x);
  a.interp = this;
  return CallObject(fn, a);
}

Result<Obj> Interp::CallObject(const Obj& fn, const Args& args) {
  if (fn.sp && fn.sp->kind == Special::kFunction) return CallFunction(*fn.sp, args);
  if (IsDateTime(fn) && fn.sp->dt >= Special::kDateTimeType) return CallDateTime(*fn.sp, "", args);
  return TypeErrorNotCallable(fn);
}

Status Interp::EvalCallValue(const Node& n, Scope& sc, OSlot& out) {
  ASSIGN_OR_RETURN(Obj callee, EvalObj(n.kids[0], sc));
  std::vector<Obj> vals;
  Args args;
  RETURN_IF_ERROR(EvalArgs(n, 1, sc, vals, args));
  ASSIGN_OR_RETURN(Obj r, CallObject(callee, args));
  out.Set(std::move(r));
  return Status::OK();
}

Status Interp::EvalCallName(const Node& n, Scope& sc, OSlot& out) {
  if (const Obj* f = Lookup(sc, n.name)) {
    Obj fn = *f;  // the call may rebind the name
    std::vector<Obj> vals;
    Args args;
    RETURN_IF_ERROR(EvalArgs(n, 0, sc, vals, args));
    ASSIGN_OR_RETURN(Obj r, CallObject(fn, args));
    out.Set(std::move(r));
    return Status::OK();
  }
  if (n.name == "isinstance") {  // isinstance(x, T) or isinstance(x, (T1, T2)) with builtin type names
    if (n.kids.size() != 2 || !n.kw.empty()) return EvalError("TypeError: isinstance expected 2 arguments");
    ASSIGN_OR_RETURN(Obj x, EvalObj(n.kids[0], sc));
    const Node& t = m_.prog.nodes[static_cast<std::size_t>(n.kids[1])];
    std::vector<std::string> types;
    if (t.kind == NodeKind::kName) types.push_back(t.name);
    for (int32_t k : t.kind == NodeKind::kList ? t.kids : std::vector<int32_t>{}) {
      const Node& e = m_.prog.nodes[static_cast<std::size_t>(k)];
      if (e.kind != NodeKind::kName) return EvalError("TypeError: isinstance() arg 2 must be a type or tuple of types");
      types.push_back(e.name);
    }
    if (types.empty()) return EvalError("TypeError: isinstance() arg 2 must be a type or tuple of types");
    std::string have = ObjTypeName(x);
    bool hit = false;
    for (const std::string& ty : types) {
      static const char* kTypes[] = {"str", "int", "float", "bool", "list", "dict", "tuple", "set", "NoneType"};
      if (std::find(std::begin(kTypes), std::end(kTypes), ty) == std::end(kTypes))
        return EvalError("TypeError: isinstance() here knows the types str, int, float, bool, list, dict, tuple (got '" + ty + "')");
      hit = hit || ty == have || (ty == "int" && have == "bool") || (ty == "dict" && have == "row") ||
            (ty == "tuple" && have == "list" && !x.sp);
    }
    out.SetValue(Value::Bool(hit));
    return Status::OK();
  }
  std::vector<Obj> vals;
  Args args;
  RETURN_IF_ERROR(EvalArgs(n, 0, sc, vals, args));
  ASSIGN_OR_RETURN(Obj r, CallBuiltinByName(n.name, args));
  out.Set(std::move(r));
  return Status::OK();
}

Status Interp::EvalCallAttr(const Node& n, Scope& sc, OSlot& out) {
  const Node& recv = m_.prog.nodes[static_cast<std::size_t>(n.kids[0])];
  OSlot self;
  RETURN_IF_ERROR(Eval(n.kids[0], sc, self));
  std::vector<Obj> vals;
  Args args;
  RETURN_IF_ERROR(EvalArgs(n, 1, sc, vals, args));
  const Obj& o = self.get();
  if (o.sp && o.sp->kind == Special::kModule) {
    for (Obj& v : vals)
      if (IsContainer(v)) {
        ASSIGN_OR_RETURN(Value plain, ToValue(v));
        v = Obj(std::move(plain));
      }
    ASSIGN_OR_RETURN(Obj r, CallModule(o.sp->module, n.name, args, ctx_));
    out.Set(std::move(r));
    return Status::OK();
  }
  if (IsDateTime(o)) {
    ASSIGN_OR_RETURN(Obj r, CallDateTime(*o.sp, n.name, args));
    out.Set(std::move(r));
    return Status::OK();
  }
  if (o.sp && (o.sp->kind == Special::kPattern || o.sp->kind == Special::kMatch)) {
    ASSIGN_OR_RETURN(Obj r, CallRegexMethod(*o.sp, n.name, args, ctx_));
    out.Set(std::move(r));
    return Status::OK();
  }
  if (IsContainer(o)) {
    std::shared_ptr<Special> c = o.sp;
    ASSIGN_OR_RETURN(Obj r, CallContainerMethod(*c, n.name, args, !c->frozen));
    out.Set(std::move(r));
    return Status::OK();
  }
  if (o.sp) return EvalError("AttributeError: '" + ObjTypeName(o) + "' object has no attribute '" + n.name + "'");
  const Value& v = o.v;
  if (v.is_string() && n.name == "format") {
    std::vector<Value> plain(vals.size());
    std::vector<const Value*> pos;
    std::vector<std::pair<std::string, const Value*>> kw;
    for (std::size_t i = 0; i < args.pos.size(); ++i) {
      ASSIGN_OR_RETURN(plain[i], ToValue(*args.pos[i]));
      pos.push_back(&plain[i]);
    }
    for (std::size_t i = 0; i < args.kw.size(); ++i) {
      ASSIGN_OR_RETURN(plain[args.pos.size() + i], ToValue(*args.kw[i].second));
      kw.emplace_back(args.kw[i].first, &plain[args.pos.size() + i]);
    }
    ASSIGN_OR_RETURN(std::string s, StrFormat(v.as_string(), pos, kw));
    RETURN_IF_ERROR(ctx_.Charge(s.size()));
    out.SetValue(Value::String(std::move(s)));
    return Status::OK();
  }
  // The expression subset's methods keep their meaning on plain values (str methods, row.get).
  bool subset = n.fn != kNoMethod && (v.is_string() || (v.is_row() && n.name == "get") || (v.is_list() && n.name == "count"));
  if (subset) {
    const CallSpec& spec = Methods()[n.fn];
    std::vector<const Obj*> bound;
    std::vector<std::string_view> params = spec.params;
    while (params.size() < static_cast<std::size_t>(spec.max_args)) params.push_back("");
    RETURN_IF_ERROR(BindArgs(spec.name, args, params, static_cast<std::size_t>(spec.min_args), bound));
    std::vector<Value> scratch(bound.size());
    std::vector<const Value*> argv(bound.size(), nullptr);
    for (std::size_t i = 0; i < bound.size(); ++i) {
      if (bound[i] == nullptr) continue;
      ASSIGN_OR_RETURN(argv[i], AsValue(*bound[i], scratch[i]));
    }
    ASSIGN_OR_RETURN(Value r, CallMethod(n.fn, v, argv.data(), static_cast<int>(argv.size()), ctx_));
    out.SetValue(std::move(r));
    return Status::OK();
  }
  if (v.is_list() || v.is_row()) {
    // A list or dict method on a plain value: a mutating one turns the variable into a mutable
    // copy (the row itself never changes); others work on a temporary copy.
    Obj* var = nullptr;
    if (recv.kind == NodeKind::kName)
      for (Scope* s = &sc; s != nullptr && !s->frozen && var == nullptr; s = s->parent.get()) var = s->Find(recv.name);
    std::shared_ptr<Special> c = Promote(v);
    if (var != nullptr && !var->sp) *var = Obj(c);
    ASSIGN_OR_RETURN(Obj r, CallContainerMethod(*c, n.name, args, var != nullptr));
    out.Set(std::move(r));
    return Status::OK();
  }
  if (v.is_string()) {
    bool handled = false;
    ASSIGN_OR_RETURN(Obj r, MoreStrMethod(v.as_string(), n.name, args, &handled));
    if (handled) {
      out.Set(std::move(r));
      return Status::OK();
    }
  }
  return EvalError("AttributeError: '" + PyType(v) + "' object has no attribute '" + n.name + "'");
}

}  // namespace dfw::expr
