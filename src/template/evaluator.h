// Expression evaluation over a chain of scopes (private to the template module).
#pragma once

#include <map>
#include <memory>
#include <string>

#include "dfw/template/ast.h"
#include "dfw/template/value.h"

namespace dfw::tmpl {

// Names visible at one level: a template's top level, a for body, a macro call. Lookups walk up.
class Scope {
 public:
  explicit Scope(std::shared_ptr<const Scope> parent = nullptr) : parent_(std::move(parent)) {}
  const Value* Lookup(const std::string& name) const;
  void Set(const std::string& name, Value v) { vars_[name] = std::move(v); }
  const std::map<std::string, Value>& own() const { return vars_; }

 private:
  std::shared_ptr<const Scope> parent_;
  std::map<std::string, Value> vars_;
};

// "FILE:LINE: message" for an error that does not yet name its place.
Status Located(const std::string& file, int line, const Status& s);

// Evaluates expressions of the template `file`. Strings an expression builds are capped at
// `max_string_bytes` (ResourceExhausted). Errors are located ("file:line: ..."); those of a macro
// called from the expression keep the macro's own location.
class Evaluator {
 public:
  Evaluator(std::string file, std::size_t max_string_bytes) : file_(std::move(file)), max_string_bytes_(max_string_bytes) {}
  Result<Value> Eval(const Expr& e, const Scope& scope) const;

 private:
  Result<Value> EvalBinary(const Expr& e, const Scope& scope) const;
  Result<Value> EvalCall(const Expr& e, const Scope& scope) const;
  Result<Value> Arithmetic(const std::string& op, const Value& a, const Value& b, int line) const;
  Status Fail(int line, std::string message) const;

  std::string file_;
  std::size_t max_string_bytes_;
};

// a.name / a[key] with Jinja2's rules (a missing one is an Undefined naming it).
Value GetAttr(const Value& object, const Value& key);

}  // namespace dfw::tmpl
