// CompileCallable (dfw/record/expression.h): a Beam YAML `callable:` with statements. As Beam's
// PythonCallableWithSource does, the text's module-level statements run once and the last
// top-level `def` (or a final `lambda` line) is what each row is passed to.
#include <string>

#include "record/python_def_interp.h"

namespace dfw::expr {
namespace {

// What Freeze marked, so the compiled callable can empty it when it goes (a module-level closure
// holds its scope, which holds the function: a cycle of shared_ptrs).
struct Frozen {
  std::vector<std::shared_ptr<Special>> objects;
  std::vector<std::shared_ptr<Scope>> scopes;
  ~Frozen() {
    for (auto& s : scopes) {
      s->vars.clear();
      s->parent.reset();
    }
    for (auto& o : objects) {
      o->list.clear();
      DictClear(*o);
      o->closure.reset();
      o->defaults.clear();
    }
  }
};

// Marks everything reachable from a module-level value read-only (a worklist: no depth limit).
void Freeze(const Obj& root, Frozen& frozen) {
  std::vector<std::shared_ptr<Special>> work;
  if (root.sp) work.push_back(root.sp);
  auto push = [&](const Obj& o) {
    if (o.sp && !o.sp->frozen) work.push_back(o.sp);
  };
  while (!work.empty()) {
    std::shared_ptr<Special> s = std::move(work.back());
    work.pop_back();
    if (s->frozen) continue;
    if (s->kind == Special::kDict && s->dict.size() >= kDictIndexFrom) DictBuildIndex(*s);  // before it is shared
    if (s->is_set && s->list.size() >= kDictIndexFrom) SetBuildIndex(*s);
    s->frozen = true;
    frozen.objects.push_back(s);
    for (const Obj& e : s->list) push(e);
    for (const auto& kv : s->dict) push(kv.second);
    for (const Obj& d : s->defaults) push(d);
    for (std::shared_ptr<Scope> sc = s->closure; sc != nullptr && !sc->frozen; sc = sc->parent) {
      sc->frozen = true;
      frozen.scopes.push_back(sc);
      for (const auto& kv : sc->vars) push(kv.second);
    }
  }
}

class CompiledDef final : public CompiledExpression {
 public:
  CompiledDef(Module m, std::shared_ptr<Scope> globals, std::unique_ptr<Frozen> frozen)
      : m_(std::move(m)), globals_(std::move(globals)), frozen_(std::move(frozen)) {}

  Result<Value> Evaluate(const Row& row) const override {
    Interp in(m_, globals_.get());
    return in.CallWithRow(row);
  }
  const std::vector<std::string>& referenced_fields() const override { return fields_; }
  const std::string& source() const override { return m_.source; }

 private:
  Module m_;
  std::shared_ptr<Scope> globals_;  // read-only after construction
  std::unique_ptr<Frozen> frozen_;
  std::vector<std::string> fields_;
};

}  // namespace

Result<Obj> Interp::CallLambda(const Special& fn, const Args& args) {
  const Node& n = *fn.lambda;
  if (depth_ >= kMaxCallDepth)
    return ResourceExhausted("RecursionError: maximum recursion depth exceeded (" + std::to_string(kMaxCallDepth) + " nested calls)");
  if (!args.kw.empty()) return EvalError("TypeError: <lambda>() takes no keyword arguments here");
  if (args.pos.size() != n.kw.size())
    return EvalError("TypeError: <lambda>() takes " + std::to_string(n.kw.size()) + " positional arguments but " +
                     std::to_string(args.pos.size()) + " were given");
  std::shared_ptr<Scope> scope = NewScope(fn.closure);
  for (std::size_t i = 0; i < n.kw.size(); ++i) scope->vars.emplace_back(n.kw[i], *args.pos[i]);
  ++depth_;
  Result<Obj> r = EvalObj(n.kids[0], *scope);
  --depth_;
  return r;
}

Result<Obj> Interp::CallFunction(const Special& fn, const Args& args) {
  if (fn.lambda != nullptr) return CallLambda(fn, args);
  if (fn.module_fn) {
    std::vector<Obj> plain;  // modules take plain values (a mutable list as its value)
    plain.reserve(args.pos.size() + args.kw.size());
    Args margs;
    margs.interp = this;
    for (const Obj* a : args.pos) {
      if (a->sp && (a->sp->kind == Special::kList || a->sp->kind == Special::kDict)) {
        ASSIGN_OR_RETURN(Value v, ToValue(*a));
        plain.emplace_back(std::move(v));
        margs.pos.push_back(&plain.back());
      } else {
        margs.pos.push_back(a);
      }
    }
    margs.kw = args.kw;
    return CallModule(fn.module, fn.builtin, margs, ctx_);
  }
  if (!fn.builtin.empty()) return CallBuiltinByName(fn.builtin, args);
  const FuncDef& f = *fn.func;
  if (depth_ >= kMaxCallDepth)
    return ResourceExhausted("RecursionError: maximum recursion depth exceeded (" + std::to_string(kMaxCallDepth) +
                             " nested calls, in " + f.name + "())");
  RETURN_IF_ERROR(CheckStack());
  std::shared_ptr<Scope> scope = NewScope(fn.closure);
  if (args.pos.size() > f.params.size())
    return EvalError("TypeError: " + f.name + "() takes " + std::to_string(f.params.size()) + " positional arguments but " +
                     std::to_string(args.pos.size()) + " were given");
  std::vector<const Obj*> bound(f.params.size(), nullptr);
  for (std::size_t i = 0; i < args.pos.size(); ++i) bound[i] = args.pos[i];
  for (const auto& [k, v] : args.kw) {
    auto it = std::find(f.params.begin(), f.params.end(), k);
    if (it == f.params.end()) return EvalError("TypeError: " + f.name + "() got an unexpected keyword argument '" + k + "'");
    std::size_t i = static_cast<std::size_t>(it - f.params.begin());
    if (bound[i] != nullptr) return EvalError("TypeError: " + f.name + "() got multiple values for argument '" + k + "'");
    bound[i] = v;
  }
  std::size_t first_default = f.params.size() - fn.defaults.size();
  for (std::size_t i = 0; i < bound.size(); ++i) {
    if (bound[i] == nullptr && i >= first_default) bound[i] = &fn.defaults[i - first_default];
    if (bound[i] == nullptr)
      return EvalError("TypeError: " + f.name + "() missing required positional argument: '" + f.params[i] + "'");
    scope->vars.emplace_back(f.params[i], *bound[i]);
  }
  ++depth_;
  Flow flow = Flow::kNormal;
  Obj ret;
  Status st = Exec(f.body, *scope, flow, ret);
  --depth_;
  RETURN_IF_ERROR(st);
  return ret;
}

Result<Value> Interp::CallWithRow(const Row& row) {
  Obj arg(Value::FromRow(row));
  Result<Obj> r = Obj();
  if (m_.callable_lambda >= 0) {
    std::shared_ptr<Scope> scope = NewScope(nullptr);
    scope->vars.emplace_back(m_.lambda_param, std::move(arg));
    r = EvalObj(m_.callable_lambda, *scope);
  } else {
    const FuncDef& f = m_.funcs[static_cast<std::size_t>(m_.callable_func)];
    const Obj* fn = nullptr;
    for (const auto& [k, v] : globals_->vars)
      if (k == f.name) fn = &v;
    if (fn == nullptr || !fn->sp || fn->sp->kind != Special::kFunction)
      return InvalidArgument("TypeError: '" + f.name + "' is not a function after the module-level statements ran");
    Args args;
    args.pos.push_back(&arg);
    r = CallFunction(*fn->sp, args);
  }
  if (r.ok()) {
    Result<Value> v = ToValue(*r);
    if (v.ok()) return v;
    r = v.status();
  }
  const Status& s = r.status();
  std::string where = line_ > 0 ? " (line " + std::to_string(line_) + " of the callable)" : "";
  return Status(s.code(), s.message() + where);
}

Result<std::unique_ptr<CompiledExpression>> MakeCompiledDef(Module m) {
  m.consts.resize(m.prog.nodes.size());
  for (std::size_t i = 0; i < m.prog.nodes.size(); ++i)
    if (m.prog.nodes[i].kind == NodeKind::kConst) m.consts[i] = Obj(m.prog.nodes[i].value);
  auto globals = std::make_shared<Scope>();
  auto frozen = std::make_unique<Frozen>();
  {
    Interp in(m, globals.get());
    Flow flow = Flow::kNormal;
    Obj ret;
    Status st = in.Exec(m.top, *globals, flow, ret);
    if (!st.ok()) return InvalidArgument("running the callable's module-level statements: " + st.message());
    for (const auto& kv : globals->vars) Freeze(kv.second, *frozen);
  }
  // Moving the Module keeps its node and statement addresses (vectors move their buffers), which
  // the functions in `globals` point into.
  return std::unique_ptr<CompiledExpression>(std::make_unique<CompiledDef>(std::move(m), std::move(globals), std::move(frozen)));
}

}  // namespace dfw::expr

namespace dfw {

Result<std::unique_ptr<CompiledExpression>> CompileCallable(std::string_view source) {
  ASSIGN_OR_RETURN(expr::Module m, expr::ParseDefModule(source));
  return expr::MakeCompiledDef(std::move(m));
}

}  // namespace dfw
