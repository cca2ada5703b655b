// Sets inside def callables (https://docs.python.org/3/library/stdtypes.html#set-types-set-frozenset):
// a mutable list of distinct items kept in insertion order, with the set methods and the | & - ^
// operators. From kDictIndexFrom items on, membership goes through a hash index of each item's
// canonical key (1, 1.0 and True share one, as they are equal in Python). As a value (a row field,
// a list item) a set is the list of its items.
#include <cmath>
#include <cstring>
#include <algorithm>
#include <string>

#include "record/python_def_interp.h"

namespace dfw::expr {
namespace {

Status Unhashable(const Obj& o) { return EvalError("TypeError: unhashable type: '" + ObjTypeName(o) + "'"); }

bool IsSet(const Obj& o) { return o.sp && o.sp->kind == Special::kList && o.sp->is_set; }

// A string equal for equal values (numbers by value), or false for values not indexed.
bool Canon(const Value& v, std::string& out, int depth) {
  switch (v.kind()) {
    case Value::Kind::kNull: out += 'n'; return true;
    case Value::Kind::kBool: out += v.as_bool() ? "i1" : "i0"; return true;
    case Value::Kind::kInt: out += 'i' + std::to_string(v.as_int()); return true;
    case Value::Kind::kFloat: {
      double d = v.as_float();
      if (std::isnan(d)) return false;
      if (d == std::trunc(d) && std::fabs(d) < 9.0e18) {
        out += 'i' + std::to_string(static_cast<int64_t>(d));
        return true;
      }
      char bits[sizeof d];
      std::memcpy(bits, &d, sizeof d);
      out += 'f';
      out.append(bits, sizeof d);
      return true;
    }
    case Value::Kind::kString:
      out += 's' + std::to_string(v.as_string().size()) + ':' + v.as_string();
      return true;
    case Value::Kind::kList:
      if (depth > 32) return false;
      out += 't' + std::to_string(v.as_list().size()) + ':';
      for (const Value& e : v.as_list())
        if (!Canon(e, out, depth + 1)) return false;
      return true;
    case Value::Kind::kRow: return false;
  }
  return false;
}

bool CanonObj(const Obj& o, std::string& out) { return !o.sp && Canon(o.v, out, 0); }

void DropIndex(Special& s) {
  s.index.clear();
  s.index_ok = false;
}

}  // namespace

void SetBuildIndex(Special& s) {
  s.index.clear();
  std::string k;
  for (std::size_t i = 0; i < s.list.size(); ++i) {
    k.clear();
    if (!CanonObj(s.list[i], k)) return DropIndex(s);  // an item without a key: lookups scan
    s.index.emplace(k, i);
  }
  s.index_ok = true;
}

Result<bool> SetContains(Special& set, const Obj& x) {
  if (set.list.size() >= kDictIndexFrom) {
    if (!set.index_ok && !set.frozen) SetBuildIndex(set);  // a frozen set is shared: only read it
    std::string k;
    if (set.index_ok && CanonObj(x, k)) return set.index.count(k) > 0;
  }
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
  if (set.index_ok) {
    std::string k;
    if (CanonObj(x, k)) set.index.emplace(std::move(k), set.list.size());
    else DropIndex(set);
  }
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
  Special& a = *x.sp;
  Special& b = *y.sp;
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
        DropIndex(c);
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
    DropIndex(c);
    return r;
  }
  if (name == "clear") {
    RETURN_IF_ERROR(argc(0, 0));
    c.list.clear();
    DropIndex(c);
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
    Special& small = name == "issuperset" ? *other.sp : c;
    Special& big = name == "issuperset" ? c : *other.sp;
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
