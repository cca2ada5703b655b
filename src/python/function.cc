#include <utility>

#include "dfw/python/python.h"
#include "python/runtime_internal.h"

namespace dfw::python {

using python_internal::FunctionForm;

Result<std::unique_ptr<Function>> Function::Make(int form, std::string_view text, std::string_view name) {
  ASSIGN_OR_RETURN(python_internal::Embedded * py, python_internal::Interpreter());
  ASSIGN_OR_RETURN(std::uintptr_t handle, py->MakeFunction(static_cast<FunctionForm>(form), text, name));
  return std::unique_ptr<Function>(new Function(handle));
}

Result<std::unique_ptr<Function>> Function::FromCallable(std::string_view source) {
  return Make(static_cast<int>(FunctionForm::kCallable), source, "<callable>");
}

Result<std::unique_ptr<Function>> Function::FromModule(std::string_view module_source, std::string_view name) {
  return Make(static_cast<int>(FunctionForm::kModule), module_source, name);
}

Result<std::unique_ptr<Function>> Function::FromExpression(std::string_view expression) {
  return Make(static_cast<int>(FunctionForm::kExpression), expression, "<expression>");
}

Function::~Function() {
  // A Function exists only once the interpreter has started, so this cannot fail.
  Result<python_internal::Embedded*> py = python_internal::Interpreter();
  if (py.ok()) (*py)->ReleaseFunction(handle_);
}

void Function::CallRows(const Row* rows, std::size_t n, std::vector<Result<Value>>& out) const {
  out.assign(n, Result<Value>(Internal("not evaluated")));
  Result<python_internal::Embedded*> py = python_internal::Interpreter();
  if (!py.ok()) {
    for (auto& r : out) r = py.status();
    return;
  }
  (*py)->CallRows(handle_, rows, n, out.data());
}

Result<Value> Function::CallRow(const Row& row) const {
  std::vector<Result<Value>> out;
  CallRows(&row, 1, out);
  return std::move(out.front());
}

Result<Value> Function::Call(const std::vector<Value>& args) const {
  ASSIGN_OR_RETURN(python_internal::Embedded * py, python_internal::Interpreter());
  return py->Call(handle_, args.data(), args.size());
}

Result<std::vector<Row>> Function::CallForRows(const std::vector<Value>& args) const {
  ASSIGN_OR_RETURN(Value v, Call(args));
  if (!v.is_list()) {
    return InvalidArgument("TypeError: expected a list of rows, got " + std::string(v.TypeName()));
  }
  std::vector<Row> rows;
  rows.reserve(v.as_list().size());
  for (const Value& item : v.as_list()) {
    if (!item.is_row()) {
      return InvalidArgument("TypeError: expected a list of rows, got a list holding " + std::string(item.TypeName()));
    }
    rows.push_back(item.as_row());
  }
  return rows;
}

}  // namespace dfw::python
