// Builtin functions called by name inside def callables (the expression subset's builtins plus
// range, enumerate, zip, dict, tuple, repr, ord, chr), and the methods of mutable lists and dicts.
#include <algorithm>
#include <string>

#include "record/python_def_interp.h"

namespace dfw::expr {
namespace {

Result<const Value*> Plain(const Obj* o, Value& scratch) {
  if (!o->sp) return &o->v;
  ASSIGN_OR_RETURN(scratch, ToValue(*o));
  return &scratch;
}

Result<int64_t> IntArg(const Obj* o, std::string_view fn) {
  if (o->sp || !IsIntLike(o->v))
    return EvalError("TypeError: " + std::string(fn) + "() needs an integer, not '" + ObjTypeName(*o) + "'");
  return IntOf(o->v);
}

int FindBuiltin(std::string_view name) {
  const auto& specs = Builtins();
  for (std::size_t i = 0; i < specs.size(); ++i)
    if (specs[i].name == name) return static_cast<int>(i);
  return -1;
}

}  // namespace

Result<Obj> Interp::CallBuiltinByName(const std::string& name, const Args& args) {
  auto no_kw = [&]() -> Status {
    if (!args.kw.empty()) return EvalError("TypeError: " + name + "() takes no keyword arguments");
    return Status::OK();
  };
  if (name == "range") {
    RETURN_IF_ERROR(no_kw());
    if (args.pos.empty() || args.pos.size() > 3)
      return EvalError("TypeError: range expected 1 to 3 arguments, got " + std::to_string(args.pos.size()));
    auto r = std::make_shared<Special>(Special::kRange);
    std::vector<int64_t> v;
    for (const Obj* a : args.pos) {
      ASSIGN_OR_RETURN(int64_t i, IntArg(a, "range"));
      v.push_back(i);
    }
    r->start = v.size() == 1 ? 0 : v[0];
    r->stop = v.size() == 1 ? v[0] : v[1];
    r->step = v.size() == 3 ? v[2] : 1;
    if (r->step == 0) return EvalError("ValueError: range() arg 3 must not be zero");
    return Obj(std::move(r));
  }
  if (name == "len") {
    RETURN_IF_ERROR(no_kw());
    if (args.pos.size() != 1) return EvalError("TypeError: len() takes exactly one argument");
    const Obj& o = *args.pos[0];
    if (o.sp && o.sp->kind == Special::kList) return Obj(Value::Int(static_cast<int64_t>(o.sp->list.size())));
    if (o.sp && o.sp->kind == Special::kDict) return Obj(Value::Int(static_cast<int64_t>(o.sp->dict.size())));
    if (o.sp && o.sp->kind == Special::kRange) {
      const Special& s = *o.sp;
      int64_t len = s.step > 0 ? (s.stop > s.start ? (s.stop - s.start + s.step - 1) / s.step : 0)
                               : (s.start > s.stop ? (s.start - s.stop - s.step - 1) / -s.step : 0);
      return Obj(Value::Int(len));
    }
  }
  if (name == "bool" && args.pos.size() == 1 && args.kw.empty()) return Obj(Value::Bool(ObjTruthy(*args.pos[0])));
  if (name == "format") {
    std::vector<const Obj*> a;
    RETURN_IF_ERROR(BindArgs("format", args, {"value", "format_spec"}, 1, a));
    std::string spec;
    if (a[1] != nullptr) {
      if (a[1]->sp || !a[1]->v.is_string()) return EvalError("TypeError: format() argument 2 must be str");
      spec = a[1]->v.as_string();
    }
    if (a[0]->sp && a[0]->sp->kind == Special::kDateTime && !spec.empty()) {
      ASSIGN_OR_RETURN(std::string s, DateTimeFormat(*a[0]->sp, spec));
      return Obj(Value::String(std::move(s)));
    }
    ASSIGN_OR_RETURN(Value v, ToValue(*a[0]));
    ASSIGN_OR_RETURN(std::string s, FormatValue(v, spec));
    return Obj(Value::String(std::move(s)));
  }
  if (name == "map" || name == "filter") {
    RETURN_IF_ERROR(no_kw());
    if (args.pos.size() != 2) return EvalError("TypeError: " + name + "() here takes a function and one iterable");
    std::vector<Obj> items, out;
    RETURN_IF_ERROR(Items(*args.pos[1], items));
    const Obj& fn = *args.pos[0];
    bool identity = name == "filter" && !fn.sp && fn.v.is_null();
    for (Obj& e : items) {
      RETURN_IF_ERROR(Step());
      if (identity) {
        if (ObjTruthy(e)) out.push_back(std::move(e));
        continue;
      }
      ASSIGN_OR_RETURN(Obj r, Call1(fn, e));
      if (name == "map") out.push_back(std::move(r));
      else if (ObjTruthy(r)) out.push_back(std::move(e));
    }
    for (const Obj& e : out) RETURN_IF_ERROR(Keep(e));
    return Obj(NewList(std::move(out)));
  }
  if ((name == "sorted" || name == "min" || name == "max") &&
      std::any_of(args.kw.begin(), args.kw.end(), [](const auto& kv) { return kv.first == "key"; })) {
    // key=: order by fn(item); ties keep their order (sorted is stable; min/max return the first).
    const Obj* key = nullptr;
    bool reverse = false;
    for (const auto& [k, v] : args.kw) {
      if (k == "key") key = v;
      else if (k == "reverse" && name == "sorted") reverse = ObjTruthy(*v);
      else return EvalError("TypeError: " + name + "() got an unexpected keyword argument '" + k + "'");
    }
    std::vector<Obj> items;
    if (args.pos.size() == 1) {
      RETURN_IF_ERROR(Items(*args.pos[0], items));
    } else if (name != "sorted" && args.pos.size() > 1) {
      for (const Obj* a : args.pos) items.push_back(*a);
    } else {
      return EvalError("TypeError: " + name + "() expected 1 argument, got " + std::to_string(args.pos.size()));
    }
    std::vector<Value> keys;
    for (const Obj& e : items) {
      RETURN_IF_ERROR(Step());
      Obj k = e;
      if (key->sp || !key->v.is_null()) {
        ASSIGN_OR_RETURN(k, Call1(*key, e));
      }
      ASSIGN_OR_RETURN(Value kv, ToValue(k));
      keys.push_back(std::move(kv));
    }
    std::vector<std::size_t> order(items.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    Status err;
    auto less = [&](std::size_t a, std::size_t b) {
      if (!err.ok()) return false;
      Result<bool> r = PyLess(keys[a], keys[b]);
      if (!r.ok()) {
        err = r.status();
        return false;
      }
      return *r;
    };
    if (name == "sorted") {
      if (reverse) std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return less(b, a); });
      else std::stable_sort(order.begin(), order.end(), less);
      RETURN_IF_ERROR(err);
      std::vector<Obj> out;
      for (std::size_t i : order) out.push_back(std::move(items[i]));
      return Obj(NewList(std::move(out)));
    }
    if (items.empty()) return EvalError("ValueError: " + name + "() arg is an empty sequence");
    std::size_t best = 0;
    for (std::size_t i = 1; i < items.size(); ++i)
      if (name == "min" ? less(i, best) : less(best, i)) best = i;
    RETURN_IF_ERROR(err);
    return items[best];
  }
  if (name == "set") {
    RETURN_IF_ERROR(no_kw());
    if (args.pos.size() > 1) return EvalError("TypeError: set expected at most 1 argument, got " + std::to_string(args.pos.size()));
    std::vector<Obj> items;
    if (!args.pos.empty()) RETURN_IF_ERROR(Items(*args.pos[0], items));
    ASSIGN_OR_RETURN(std::shared_ptr<Special> s, MakeSet(std::move(items)));
    return Obj(std::move(s));
  }
  if (name == "reversed") {
    RETURN_IF_ERROR(no_kw());
    if (args.pos.size() != 1) return EvalError("TypeError: reversed expected 1 argument, got " + std::to_string(args.pos.size()));
    std::vector<Obj> items;
    RETURN_IF_ERROR(Items(*args.pos[0], items));
    std::reverse(items.begin(), items.end());
    return Obj(NewList(std::move(items)));
  }
  if (name == "list" || name == "tuple" || name == "enumerate" || name == "zip") {
    if (name == "enumerate") {
      std::vector<const Obj*> a;
      RETURN_IF_ERROR(BindArgs("enumerate", args, {"iterable", "start"}, 1, a));
      int64_t start = 0;
      if (a[1] != nullptr) {
        ASSIGN_OR_RETURN(start, IntArg(a[1], "enumerate"));
      }
      std::vector<Obj> items, out;
      RETURN_IF_ERROR(Items(*a[0], items));
      for (Obj& e : items) {
        RETURN_IF_ERROR(Keep(e));
        out.emplace_back(NewList({Obj(Value::Int(start++)), std::move(e)}));
      }
      return Obj(NewList(std::move(out)));
    }
    RETURN_IF_ERROR(no_kw());
    if (name == "zip") {
      std::vector<std::vector<Obj>> cols(args.pos.size());
      std::size_t len = args.pos.empty() ? 0 : SIZE_MAX;
      for (std::size_t i = 0; i < args.pos.size(); ++i) {
        RETURN_IF_ERROR(Items(*args.pos[i], cols[i]));
        len = std::min(len, cols[i].size());
      }
      std::vector<Obj> out;
      for (std::size_t r = 0; r < len; ++r) {
        std::vector<Obj> tuple;
        for (auto& c : cols) tuple.push_back(std::move(c[r]));
        for (const Obj& e : tuple) RETURN_IF_ERROR(Keep(e));
        out.emplace_back(NewList(std::move(tuple)));
      }
      return Obj(NewList(std::move(out)));
    }
    if (args.pos.size() > 1) return EvalError("TypeError: " + name + "() takes at most 1 argument");
    std::vector<Obj> items;
    if (!args.pos.empty()) RETURN_IF_ERROR(Items(*args.pos[0], items));
    for (const Obj& e : items) RETURN_IF_ERROR(Keep(e));
    if (name == "list") return Obj(NewList(std::move(items)));
    ASSIGN_OR_RETURN(Value t, ToValue(Obj(NewList(std::move(items)))));
    return Obj(std::move(t));
  }
  if (name == "dict") {
    auto d = NewDict();
    if (args.pos.size() > 1) return EvalError("TypeError: dict expected at most 1 argument");
    auto put = [&](const std::string& k, Obj v) -> Status {
      RETURN_IF_ERROR(Keep(v, k.size()));
      DictPut(*d, k, std::move(v));
      return Status::OK();
    };
    if (!args.pos.empty()) {
      const Obj& src = *args.pos[0];
      if (src.sp && src.sp->kind == Special::kDict) {
        for (const auto& kv : src.sp->dict) RETURN_IF_ERROR(put(kv.first, kv.second));
      } else if (!src.sp && src.v.is_row()) {
        for (const Field& f : src.v.as_row().fields()) RETURN_IF_ERROR(put(f.name, Obj(f.value)));
      } else {
        std::vector<Obj> pairs;
        RETURN_IF_ERROR(Items(src, pairs));
        for (const Obj& p : pairs) {
          std::vector<Obj> kv;
          RETURN_IF_ERROR(Items(p, kv));
          if (kv.size() != 2) return EvalError("ValueError: dictionary update sequence element has length " + std::to_string(kv.size()) + "; 2 is required");
          if (kv[0].sp || !kv[0].v.is_string()) return EvalError("TypeError: dict keys here must be str, not " + ObjTypeName(kv[0]));
          RETURN_IF_ERROR(put(kv[0].v.as_string(), std::move(kv[1])));
        }
      }
    }
    for (const auto& [k, v] : args.kw) RETURN_IF_ERROR(put(k, *v));
    return Obj(std::move(d));
  }
  if (name == "str" || name == "repr") {
    RETURN_IF_ERROR(no_kw());
    if (args.pos.size() > 1) return EvalError("TypeError: " + name + "() takes at most 1 argument");
    if (args.pos.empty()) return Obj(Value::String(""));
    const Obj& o = *args.pos[0];
    if (name == "str" && !o.sp && o.v.is_string()) return o;
    std::string s = name == "str" ? ObjStr(o) : ObjRepr(o);
    RETURN_IF_ERROR(ctx_.Charge(s.size()));  // str() of a big list or dict is charged like any string built
    return Obj(Value::String(std::move(s)));
  }
  if (name == "ord" || name == "chr") {
    RETURN_IF_ERROR(no_kw());
    if (args.pos.size() != 1) return EvalError("TypeError: " + name + "() takes exactly one argument");
    const Obj& o = *args.pos[0];
    if (name == "ord") {
      if (o.sp || !o.v.is_string() || CodePointCount(o.v.as_string()) != 1)
        return EvalError("TypeError: ord() expected a character");
      uint32_t cp;
      DecodeUtf8(o.v.as_string(), 0, &cp);
      return Obj(Value::Int(cp));
    }
    ASSIGN_OR_RETURN(int64_t cp, IntArg(&o, "chr"));
    if (cp < 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return EvalError("ValueError: chr() arg not in range(0x110000)");
    std::string s;
    AppendUtf8(s, static_cast<uint32_t>(cp));
    return Obj(Value::String(std::move(s)));
  }
  int fn = FindBuiltin(name);
  if (fn < 0) {
    static const char* kKnown = "len, str, repr, int, float, bool, round, abs, min, max, sum, any, all, sorted, list, tuple, "
                                "dict, set, range, enumerate, zip, reversed, map, filter, format, isinstance, ord, chr";
    return EvalError("NameError: name '" + name + "' is not defined (functions available here: " + kKnown + ")");
  }
  const CallSpec& spec = Builtins()[static_cast<std::size_t>(fn)];
  std::vector<std::string_view> params = spec.params;
  while (params.size() < static_cast<std::size_t>(spec.max_args)) params.push_back("");
  if (spec.max_args >= kMaxCallArgs && args.kw.empty()) params.resize(std::max<std::size_t>(params.size(), args.pos.size()));
  std::vector<const Obj*> bound;
  RETURN_IF_ERROR(BindArgs(spec.name, args, params, static_cast<std::size_t>(spec.min_args), bound));
  while (!bound.empty() && bound.back() == nullptr) bound.pop_back();
  std::vector<Value> scratch(bound.size());
  std::vector<const Value*> argv(bound.size(), nullptr);
  for (std::size_t i = 0; i < bound.size(); ++i) {
    if (bound[i] == nullptr) continue;
    ASSIGN_OR_RETURN(argv[i], Plain(bound[i], scratch[i]));
  }
  ASSIGN_OR_RETURN(Value r, CallBuiltin(static_cast<uint8_t>(fn), argv.data(), static_cast<int>(argv.size()), ctx_));
  return Obj(std::move(r));
}

Result<Obj> Interp::CallContainerMethod(Special& c, const std::string& name, const Args& args, bool may_mutate) {
  static const char* kMutating[] = {"append", "extend", "pop", "insert", "remove", "clear", "sort", "reverse", "update", "setdefault"};
  if (!may_mutate && std::find(std::begin(kMutating), std::end(kMutating), name) != std::end(kMutating))
    return EvalError("TypeError: cannot change this " + std::string(c.kind == Special::kList ? "list" : "dict") +
                     " in place here (it is module-level or read from a row): copy it first, e.g. x = list(...)");
  auto argc = [&](std::size_t lo, std::size_t hi) -> Status {
    if (!args.kw.empty() && name != "sort" && name != "update")
      return EvalError("TypeError: " + name + "() takes no keyword arguments");
    if (args.pos.size() < lo || args.pos.size() > hi)
      return EvalError("TypeError: " + name + "() takes " + (lo == hi ? std::to_string(lo) : std::to_string(lo) + " to " + std::to_string(hi)) +
                       " arguments (" + std::to_string(args.pos.size()) + " given)");
    return Status::OK();
  };
  if (c.is_set) return CallSetMethod(c, name, args, may_mutate);
  if (c.kind == Special::kList) {
    std::vector<Obj>& l = c.list;
    auto index_of = [&](const Obj& x) -> Result<int64_t> {
      for (std::size_t i = 0; i < l.size(); ++i) {
        Value sa, sb;
        ASSIGN_OR_RETURN(const Value* a, Plain(&l[i], sa));
        ASSIGN_OR_RETURN(const Value* b, Plain(&x, sb));
        if (PyEquals(*a, *b)) return static_cast<int64_t>(i);
      }
      return -1;
    };
    if (name == "append") {
      RETURN_IF_ERROR(argc(1, 1));
      RETURN_IF_ERROR(Keep(*args.pos[0]));
      l.push_back(*args.pos[0]);
      return Obj();
    }
    if (name == "extend") {
      RETURN_IF_ERROR(argc(1, 1));
      std::vector<Obj> more;
      RETURN_IF_ERROR(Items(*args.pos[0], more));
      for (Obj& e : more) {
        RETURN_IF_ERROR(Keep(e));
        l.push_back(std::move(e));
      }
      return Obj();
    }
    if (name == "insert") {
      RETURN_IF_ERROR(argc(2, 2));
      ASSIGN_OR_RETURN(int64_t i, IntArg(args.pos[0], "insert"));
      int64_t n = static_cast<int64_t>(l.size());
      i = i < 0 ? std::max<int64_t>(0, i + n) : std::min(i, n);
      RETURN_IF_ERROR(Keep(*args.pos[1]));
      l.insert(l.begin() + i, *args.pos[1]);
      return Obj();
    }
    if (name == "pop") {
      RETURN_IF_ERROR(argc(0, 1));
      if (l.empty()) return EvalError("IndexError: pop from empty list");
      int64_t i = static_cast<int64_t>(l.size()) - 1;
      if (!args.pos.empty()) {
        ASSIGN_OR_RETURN(i, IntArg(args.pos[0], "pop"));
        if (i < 0) i += static_cast<int64_t>(l.size());
        if (i < 0 || i >= static_cast<int64_t>(l.size())) return EvalError("IndexError: pop index out of range");
      }
      Obj r = std::move(l[static_cast<std::size_t>(i)]);
      l.erase(l.begin() + i);
      return r;
    }
    if (name == "remove" || name == "index" || name == "count") {
      RETURN_IF_ERROR(argc(1, 1));
      if (name == "count") {
        int64_t k = 0;
        for (const Obj& e : l) {
          Value sa, sb;
          ASSIGN_OR_RETURN(const Value* a, Plain(&e, sa));
          ASSIGN_OR_RETURN(const Value* b, Plain(args.pos[0], sb));
          k += PyEquals(*a, *b) ? 1 : 0;
        }
        return Obj(Value::Int(k));
      }
      ASSIGN_OR_RETURN(int64_t i, index_of(*args.pos[0]));
      if (i < 0) return EvalError(name == "remove" ? "ValueError: list.remove(x): x not in list" : "ValueError: " + ObjRepr(*args.pos[0]) + " is not in list");
      if (name == "index") return Obj(Value::Int(i));
      l.erase(l.begin() + i);
      return Obj();
    }
    if (name == "reverse") {
      RETURN_IF_ERROR(argc(0, 0));
      std::reverse(l.begin(), l.end());
      return Obj();
    }
    if (name == "clear") {
      RETURN_IF_ERROR(argc(0, 0));
      l.clear();
      return Obj();
    }
    if (name == "copy") {
      RETURN_IF_ERROR(argc(0, 0));
      return Obj(NewList(l));
    }
    if (name == "sort") {
      RETURN_IF_ERROR(argc(0, 0));
      const Obj* reverse = nullptr;
      for (const auto& [k, v] : args.kw) {
        if (k == "key") {
          Obj self(NewList(l));
          Args sa = args;
          sa.pos = {&self};
          ASSIGN_OR_RETURN(Obj r, CallBuiltinByName("sorted", sa));
          l = r.sp->list;
          return Obj();
        }
        if (k != "reverse") return EvalError("TypeError: sort() got an unexpected keyword argument '" + k + "'");
        reverse = v;
      }
      ASSIGN_OR_RETURN(Value plain, ToValue(Obj(NewList(l))));
      Value rv = reverse != nullptr && !reverse->sp ? reverse->v : Value::Bool(false);
      const Value* argv[2] = {&plain, &rv};
      ASSIGN_OR_RETURN(Value sorted, CallBuiltin(static_cast<uint8_t>(FindBuiltin("sorted")), argv, 2, ctx_));
      l.clear();
      for (const Value& e : sorted.as_list()) l.emplace_back(e);
      return Obj();
    }
    return EvalError("AttributeError: 'list' object has no attribute '" + name +
                     "' (list methods here: append, extend, insert, pop, remove, index, count, reverse, sort, copy, clear)");
  }
  const auto& d = c.dict;  // changed only through DictPut/DictErase/DictClear, which keep its index
  auto key_of = [&](const Obj* k) -> Result<std::string> {
    if (k->sp || !k->v.is_string()) return EvalError("TypeError: dict keys here must be str, not " + ObjTypeName(*k));
    return k->v.as_string();
  };
  if (name == "get" || name == "pop" || name == "setdefault") {
    RETURN_IF_ERROR(argc(1, 2));
    if (args.pos[0]->sp || !args.pos[0]->v.is_string()) {
      if (name == "get") return args.pos.size() > 1 ? *args.pos[1] : Obj();
    }
    ASSIGN_OR_RETURN(std::string k, key_of(args.pos[0]));
    std::size_t at = DictFind(c, k);
    if (at != std::string::npos) {
      Obj r = d[at].second;
      if (name == "pop") DictErase(c, at);
      return r;
    }
    if (name == "pop" && args.pos.size() < 2) return EvalError("KeyError: " + PyRepr(Value::String(k)));
    Obj dflt = args.pos.size() > 1 ? *args.pos[1] : Obj();
    if (name == "setdefault") {
      RETURN_IF_ERROR(Keep(dflt, k.size()));
      DictPut(c, k, dflt);
    }
    return dflt;
  }
  if (name == "keys" || name == "values" || name == "items") {
    RETURN_IF_ERROR(argc(0, 0));
    std::vector<Obj> out;
    for (const auto& [k, v] : d) {
      if (name == "keys") out.emplace_back(Value::String(k));
      else if (name == "values") out.push_back(v);
      else out.emplace_back(NewList({Obj(Value::String(k)), v}));
    }
    return Obj(NewList(std::move(out)));
  }
  if (name == "update") {
    RETURN_IF_ERROR(argc(0, 1));
    std::vector<std::pair<std::string, Obj>> more;
    if (!args.pos.empty()) {
      const Obj& src = *args.pos[0];
      if (src.sp && src.sp->kind == Special::kDict) more = src.sp->dict;
      else if (!src.sp && src.v.is_row())
        for (const Field& f : src.v.as_row().fields()) more.emplace_back(f.name, Obj(f.value));
      else return EvalError("TypeError: update() here takes a dict");
    }
    for (const auto& [k, v] : args.kw) more.emplace_back(k, *v);
    for (auto& [k, v] : more) {
      RETURN_IF_ERROR(Keep(v, k.size()));
      DictPut(c, k, std::move(v));
    }
    return Obj();
  }
  if (name == "copy") {
    RETURN_IF_ERROR(argc(0, 0));
    auto n = NewDict();
    n->dict = d;  // no index yet: built when first needed
    return Obj(std::move(n));
  }
  if (name == "clear") {
    RETURN_IF_ERROR(argc(0, 0));
    DictClear(c);
    return Obj();
  }
  return EvalError("AttributeError: 'dict' object has no attribute '" + name +
                   "' (dict methods here: get, keys, values, items, pop, setdefault, update, copy, clear)");
}

}  // namespace dfw::expr
