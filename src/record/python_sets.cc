// Sets inside def callables (https://docs.python.org/3/library/stdtypes.html#set-types-set-frozenset):
// a mutable list of distinct items kept in insertion order (lookups scan it, which suits the
// small sets one row builds), with the set methods and the | & - ^ operators. As a value (a row
// field, a list item) a set is the list of its items.
#include <algorithm>
#include <string>

#include "record/python_def_interp.h"

namespace dfw::expr {
namespace {

Status Unhashable(const Obj& o) { return EvalError("TypeError: unhashable type: '" + ObjTypeName(o) + "'"); }

bool IsSet(const Obj& o) { return o.sp && o.sp->kind == Special::kList && o.sp->is_set; }

}  // namespace

Result<bool> SetContains(const Special& set, const Obj& x) {
  for (const Obj& e : set.list) {
    ASSIGN_OR_RETURN(bool eq, ObjEquals(e, x));
    if (eq) return true;
  }
  return false;
}

Status Interp::SetAdd(Special& set, Obj x) {
  // Tuples are immutable lists here, so a plain list value is hashable; a mutable list or dict is not.
  bool unhashable = (x.sp && (x.sp->kind == Special::kList || x.sp->kind == Special::kDict)) || (!x.sp && x.v.is_row());
  if (unhashable) return Unhashable(x);
  ASSIGN_OR_RETURN(bool has, SetContains(set, x));
  if (has) return Status::OK();
  RETURN_IF_ERROR(Keep(x));
  set.list.push_back(std::move(x));
  return Status::OK();
}

Result<std::shared_ptr<Special>> Interp::MakeSet(std::vector<Obj> items) {
  auto s = NewList();
  s->is_set = true;
  for (Obj& e : items) {
    RETURN_IF_ERROR(Step());
    RETURN_IF_ERROR(SetAdd(*s, std::move(e)));
  }
  return s;
}

Result<Obj> Interp::SetBinary(Op op, const Obj& x, const Obj& y) {
  if (!IsSet(x) || !IsSet(y) || (op != Op::kBitOr && op != Op::kBitAnd && op != Op::kSub && op != Op::kBitXor))
    return EvalError("TypeError: unsupported operand type(s) for " + std::string(OpText(op)) + ": '" + ObjTypeName(x) + "' and '" +
                     ObjTypeName(y) + "'");
  const Special& a = *x.sp;
  const Special& b = *y.sp;
  ASSIGN_OR_RETURN(std::shared_ptr<Special> out, MakeSet({}));
  for (const Obj& e : a.list) {
    ASSIGN_OR_RETURN(bool in_b, SetContains(b, e));
    bool keep = op == Op::kBitOr || (op == Op::kBitAnd && in_b) || ((op == Op::kSub || op == Op::kBitXor) && !in_b);
    if (keep) RETURN_IF_ERROR(SetAdd(*out, e));
  }
  if (op == Op::kBitOr || op == Op::kBitXor) {
    for (const Obj& e : b.list) {
      ASSIGN_OR_RETURN(bool in_a, SetContains(a, e));
      if (op == Op::kBitOr || !in_a) RETURN_IF_ERROR(SetAdd(*out, e));
    }
  }
  return Obj(std::move(out));
}

Result<Obj> Interp::CallSetMethod(Special& c, const std::string& name, const Args& args, bool may_mutate) {
  static const char* kMutating[] = {"add", "discard", "remove", "pop", "update", "clear"};
  if ((!may_mutate || c.frozen) && std::find(std::begin(kMutating), std::end(kMutating), name) != std::end(kMutating))
    return EvalError("TypeError: cannot change this set in place here (it is module-level): copy it first, e.g. s = set(...)");
  if (!args.kw.empty()) return EvalError("TypeError: set." + name + "() takes no keyword arguments");
  auto argc = [&](std::size_t lo, std::size_t hi) -> Status {
    if (args.pos.size() < lo || args.pos.size() > hi)
      return EvalError("TypeError: set." + name + "() takes " + std::to_string(lo) + (lo == hi ? "" : " to " + std::to_string(hi)) +
                       " arguments (" + std::to_string(args.pos.size()) + " given)");
    return Status::OK();
  };
  auto other_set = [&](const Obj* o) -> Result<Obj> {
    if (IsSet(*o)) return *o;
    std::vector<Obj> items;
    RETURN_IF_ERROR(Items(*o, items));
    ASSIGN_OR_RETURN(std::shared_ptr<Special> s, MakeSet(std::move(items)));
    return Obj(std::move(s));
  };
  if (name == "add") {
    RETURN_IF_ERROR(argc(1, 1));
    RETURN_IF_ERROR(SetAdd(c, *args.pos[0]));
    return Obj();
  }
  if (name == "discard" || name == "remove") {
    RETURN_IF_ERROR(argc(1, 1));
    for (std::size_t i = 0; i < c.list.size(); ++i) {
      ASSIGN_OR_RETURN(bool eq, ObjEquals(c.list[i], *args.pos[0]));
      if (eq) {
        c.list.erase(c.list.begin() + static_cast<std::ptrdiff_t>(i));
        return Obj();
      }
    }
    if (name == "remove") return EvalError("KeyError: " + ObjRepr(*args.pos[0]));
    return Obj();
  }
  if (name == "pop") {
    RETURN_IF_ERROR(argc(0, 0));
    if (c.list.empty()) return EvalError("KeyError: 'pop from an empty set'");
    Obj r = std::move(c.list.front());
    c.list.erase(c.list.begin());
    return r;
  }
  if (name == "clear") {
    RETURN_IF_ERROR(argc(0, 0));
    c.list.clear();
    return Obj();
  }
  if (name == "copy") {
    RETURN_IF_ERROR(argc(0, 0));
    ASSIGN_OR_RETURN(std::shared_ptr<Special> s, MakeSet(c.list));
    return Obj(std::move(s));
  }
  if (name == "update") {
    for (const Obj* o : args.pos) {
      std::vector<Obj> items;
      RETURN_IF_ERROR(Items(*o, items));
      for (Obj& e : items) RETURN_IF_ERROR(SetAdd(c, std::move(e)));
    }
    return Obj();
  }
  if (name == "union" || name == "intersection" || name == "difference" || name == "symmetric_difference") {
    Op op = name == "union" ? Op::kBitOr : name == "intersection" ? Op::kBitAnd : name == "difference" ? Op::kSub : Op::kBitXor;
    if (name == "symmetric_difference") RETURN_IF_ERROR(argc(1, 1));
    ASSIGN_OR_RETURN(std::shared_ptr<Special> acc, MakeSet(c.list));
    for (const Obj* o : args.pos) {
      ASSIGN_OR_RETURN(Obj other, other_set(o));
      ASSIGN_OR_RETURN(Obj next, SetBinary(op, Obj(acc), other));
      acc = next.sp;
    }
    return Obj(std::move(acc));
  }
  if (name == "issubset" || name == "issuperset" || name == "isdisjoint") {
    RETURN_IF_ERROR(argc(1, 1));
    ASSIGN_OR_RETURN(Obj other, other_set(args.pos[0]));
    const Special& small = name == "issuperset" ? *other.sp : c;
    const Special& big = name == "issuperset" ? c : *other.sp;
    for (const Obj& e : small.list) {
      ASSIGN_OR_RETURN(bool in, SetContains(big, e));
      if (name == "isdisjoint" ? in : !in) return Obj(Value::Bool(false));
    }
    return Obj(Value::Bool(true));
  }
  return EvalError("AttributeError: 'set' object has no attribute '" + name +
                   "' (set methods here: add, discard, remove, pop, update, clear, copy, union, intersection, difference, "
                   "symmetric_difference, issubset, issuperset, isdisjoint)");
}

}  // namespace dfw::expr
