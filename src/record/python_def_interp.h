// Private: the interpreter of def callables, shared by python_def_exec.cc (statements, calls)
// and python_def_eval.cc (expressions, builtins).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "record/python_def.h"

namespace dfw::expr {

// A result that borrows an object living in a scope or owns a new one.
struct OSlot {
  const Obj* ref = nullptr;
  Obj owned;
  const Obj& get() const { return ref ? *ref : owned; }
  void Set(Obj o) { ref = nullptr; owned = std::move(o); }
  void SetValue(Value v) { ref = nullptr; owned = Obj(std::move(v)); }
  void Borrow(const Obj& o) { ref = &o; }
  Obj Take() { return ref ? *ref : std::move(owned); }
};

enum class Flow : uint8_t { kNormal, kBreak, kContinue, kReturn };

// One evaluation: a call of the callable with a row, or the module-level statements at compile
// time. Holds the step count, the call depth and every container and scope it made, which it
// empties when it ends so reference cycles among them (a list appended to itself, a nested
// function in its own scope) are freed.
class Interp {
 public:
  Interp(const Module& m, const Scope* globals);
  ~Interp();
  Interp(const Interp&) = delete;
  Interp& operator=(const Interp&) = delete;

  // Statements.
  Status Exec(const std::vector<int32_t>& block, Scope& sc, Flow& flow, Obj& ret);
  Result<Obj> CallFunction(const Special& fn, const Args& args);
  Result<Obj> CallLambda(const Special& fn, const Args& args);
  // fn(x) for a user function or lambda object (sort keys, map, filter, re.sub callbacks).
  Result<Obj> Call1(const Obj& fn, const Obj& x);
  // Calls a function, lambda, builtin, module function or datetime class object.
  Result<Obj> CallObject(const Obj& fn, const Args& args);
  // Calls the callable's function or lambda with `row`.
  Result<Value> CallWithRow(const Row& row);

  // Expressions.
  Status Eval(int32_t node, Scope& sc, OSlot& out);
  Result<Obj> EvalObj(int32_t node, Scope& sc) {
    OSlot s;
    RETURN_IF_ERROR(Eval(node, sc, s));
    return s.Take();
  }

  std::shared_ptr<Special> NewList(std::vector<Obj> items = {});
  std::shared_ptr<Special> NewDict();
  std::shared_ptr<Scope> NewScope(std::shared_ptr<Scope> parent);
  // A list or dict Special copied from a plain list or row value (mutation of a value read from
  // a row or returned by a builtin works on such a copy).
  std::shared_ptr<Special> Promote(const Value& v);

  // Counts one step; the step limit is an error no `except` catches.
  Status Step();
  Status CheckStack();
  // Charges what a container now holds against the call's kept-bytes limit.
  Status Keep(const Obj& o, std::size_t key_bytes = 0);  // key_bytes: a dict key's

  // Lookup through the scope chain, then the module scope.
  const Obj* Lookup(Scope& sc, const std::string& name) const;
  Status NameError(Scope& sc, const std::string& name) const;

  EvalContext& ctx() { return ctx_; }
  const Module& module() const { return m_; }

  // Iteration: the items of `o` (list, str, dict keys, row keys, range) as objects.
  Status Items(const Obj& o, std::vector<Obj>& out);

 private:
  static Status Frozen(const Special& s) {
    return EvalError(std::string("TypeError: the module-level ") + (s.kind == Special::kList ? "list" : "dict") +
                     " is read-only inside the callable (it is shared by every row); copy it first, e.g. x = list(...)");
  }
  // The larger cases of Eval, out of line so its frame (paid per nesting level) stays small.
  [[gnu::noinline]] Status EvalUnary(const Node& n, Scope& sc, OSlot& out);
  [[gnu::noinline]] Status EvalBinary(const Node& n, Scope& sc, OSlot& out);
  [[gnu::noinline]] Status EvalCompare(const Node& n, Scope& sc, OSlot& out);
  [[gnu::noinline]] Status EvalIndex(const Node& n, Scope& sc, OSlot& out);
  [[gnu::noinline]] Status EvalSlice(const Node& n, Scope& sc, OSlot& out);
  [[gnu::noinline]] Status EvalAttr(const Node& n, Scope& sc, OSlot& out);
  [[gnu::noinline]] Status EvalList(const Node& n, Scope& sc, OSlot& out);
  [[gnu::noinline]] Status EvalDict(const Node& n, Scope& sc, OSlot& out);
  [[gnu::noinline]] Status EvalListComp(const Node& n, Scope& sc, OSlot& out);
  [[gnu::noinline]] Status EvalFormat(const Node& n, Scope& sc, OSlot& out);
  [[gnu::noinline]] Status EvalLambda(const Node& n, Scope& sc, OSlot& out);
  Status EvalCallName(const Node& n, Scope& sc, OSlot& out);
  Status EvalCallAttr(const Node& n, Scope& sc, OSlot& out);
  Status EvalCallValue(const Node& n, Scope& sc, OSlot& out);
  Status EvalArgs(const Node& n, std::size_t first, Scope& sc, std::vector<Obj>& vals, Args& args);
  Result<Obj> CallBuiltinByName(const std::string& name, const Args& args);
  Result<Obj> CallContainerMethod(Special& self, const std::string& name, const Args& args, bool may_mutate);
  // Sets (python_sets.cc).
  Status SetAdd(Special& set, Obj x);
  Result<std::shared_ptr<Special>> MakeSet(std::vector<Obj> items);
  Result<Obj> SetBinary(Op op, const Obj& x, const Obj& y);
  Result<Obj> CallSetMethod(Special& set, const std::string& name, const Args& args, bool may_mutate);
  Status Assign(const Target& t, Obj v, Scope& sc);
  Status ExecOne(const Stmt& s, Scope& sc, Flow& flow, Obj& ret);
  [[gnu::noinline]] Status ExecAugAssign(const Stmt& s, Scope& sc, Flow& flow, Obj& ret);
  [[gnu::noinline]] Status ExecFor(const Stmt& s, Scope& sc, Flow& flow, Obj& ret);
  [[gnu::noinline]] Status ExecDef(const Stmt& s, Scope& sc, Flow& flow, Obj& ret);
  [[gnu::noinline]] Status ExecImport(const Stmt& s, Scope& sc, Flow& flow, Obj& ret);
  [[gnu::noinline]] Status ExecAssign(const Stmt& s, Scope& sc, Flow& flow, Obj& ret);
  [[gnu::noinline]] Status ExecDel(const Stmt& s, Scope& sc);
  [[gnu::noinline]] Status ExecTry(const Stmt& s, Scope& sc, Flow& flow, Obj& ret);
  Status Raise(const Stmt& s, Scope& sc);

  const Module& m_;
  const Scope* globals_;
  EvalContext ctx_;
  int64_t steps_ = 0;
  int64_t kept_ = kMaxKeptBytes;
  int64_t spent_ = 0;  // bytes charged to ctx_ by the statements before the current one
  int depth_ = 0;
  int line_ = 0;  // of the statement running, for error messages
  const char* stack_base_;
  std::vector<std::shared_ptr<Special>> made_;
  std::vector<std::shared_ptr<Scope>> scopes_;
  Status handling_;  // the error an `except` block is handling, for a bare `raise`
};

// Errors of the sandbox's limits carry this code; `except` never catches them.
inline bool IsLimitError(const Status& s) { return s.code() == StatusCode::kResourceExhausted; }
// The Python exception type of an evaluation error ("ValueError" of "ValueError: ..."), or "".
std::string ErrorType(const Status& s);
// The message after the type ("x" of "ValueError: x").
std::string ErrorText(const Status& s);
// Whether `except name` catches an error of type `type` (Exception catches all; LookupError,
// ArithmeticError and OSError their subclasses).
bool ExceptMatches(const std::string& name, const std::string& type);

}  // namespace dfw::expr
