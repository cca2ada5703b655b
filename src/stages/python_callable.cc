#include "python_callable.h"

#include <mutex>
#include <utility>
#include <vector>

#include "dfw/python/python.h"

namespace dfw::stages_internal {
namespace {

Result<std::unique_ptr<python::Function>> CompileInPython(const PythonSource& s) {
  switch (s.form) {
    case PythonForm::kExpression: return python::Function::FromExpression(s.text);
    case PythonForm::kCallable: return python::Function::FromCallable(s.text);
    case PythonForm::kModule: return python::Function::FromModule(s.text, s.name);
  }
  return Internal("unknown Python form");
}

const std::vector<std::string> kNoFields;

// CPython only.
class CPythonExpression final : public CompiledExpression {
 public:
  CPythonExpression(std::unique_ptr<python::Function> fn, std::string shown) : fn_(std::move(fn)), shown_(std::move(shown)) {}

  Result<Value> Evaluate(const Row& row) const override { return fn_->CallRow(row); }
  void EvaluateBatch(const Row* rows, std::size_t n, std::vector<Result<Value>>& out) const override {
    fn_->CallRows(rows, n, out);
  }
  const std::vector<std::string>& referenced_fields() const override { return kNoFields; }
  const std::string& source() const override { return shown_; }

 private:
  std::unique_ptr<python::Function> fn_;
  std::string shown_;
};

// The subset first; CPython for the rows it fails on.
class FastPathExpression final : public CompiledExpression {
 public:
  FastPathExpression(std::unique_ptr<CompiledExpression> fast, PythonSource source)
      : fast_(std::move(fast)), source_(std::move(source)) {}

  Result<Value> Evaluate(const Row& row) const override {
    Result<Value> v = fast_->Evaluate(row);
    if (v.ok()) return v;
    const python::Function* fn = Fallback();
    return fn != nullptr ? fn->CallRow(row) : v;
  }

  void EvaluateBatch(const Row* rows, std::size_t n, std::vector<Result<Value>>& out) const override {
    fast_->EvaluateBatch(rows, n, out);
    std::vector<Row> failed;
    std::vector<std::size_t> at;
    for (std::size_t i = 0; i < n; ++i) {
      if (!out[i].ok()) {
        failed.push_back(rows[i]);
        at.push_back(i);
      }
    }
    if (failed.empty()) return;
    const python::Function* fn = Fallback();
    if (fn == nullptr) return;
    std::vector<Result<Value>> again;
    fn->CallRows(failed.data(), failed.size(), again);  // one request for all of them
    for (std::size_t k = 0; k < at.size(); ++k) out[at[k]] = std::move(again[k]);
  }

  const std::vector<std::string>& referenced_fields() const override { return fast_->referenced_fields(); }
  const std::string& source() const override { return source_.shown; }

 private:
  // CPython's function, compiled on first need; nullptr where it cannot be (no libpython, or it
  // does not compile: the subset's own error then stands).
  const python::Function* Fallback() const {
    std::call_once(once_, [this] {
      auto fn = CompileInPython(source_);
      if (fn.ok()) fallback_ = std::move(fn).value();
    });
    return fallback_.get();
  }

  std::unique_ptr<CompiledExpression> fast_;
  PythonSource source_;
  mutable std::once_flag once_;
  mutable std::unique_ptr<python::Function> fallback_;
};

}  // namespace

Result<std::unique_ptr<CompiledExpression>> MakePythonExpression(std::unique_ptr<CompiledExpression> fast, PythonSource source) {
  if (fast != nullptr) return std::unique_ptr<CompiledExpression>(new FastPathExpression(std::move(fast), std::move(source)));
  ASSIGN_OR_RETURN(std::unique_ptr<python::Function> fn, CompileInPython(source));
  return std::unique_ptr<CompiledExpression>(new CPythonExpression(std::move(fn), std::move(source.shown)));
}

}  // namespace dfw::stages_internal
