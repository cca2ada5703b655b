// CompileExpression: the public entry point of the expression languages (dfw/record/expression.h).
#include "dfw/record/expression.h"

#include "record/expression_ast.h"

namespace dfw {
namespace {

class Compiled final : public CompiledExpression {
 public:
  explicit Compiled(expr::Program program) : program_(std::move(program)) {
    columns_ = expr::PlanColumns(program_, column_plan_);
  }

  Result<Value> Evaluate(const Row& row) const override {
    expr::EvalContext ctx{row};
    expr::Slot out;
    RETURN_IF_ERROR(expr::Evaluate(program_, program_.root, ctx, out));
    if (out.ref != nullptr) return *out.ref;
    return std::move(out.owned);
  }

  // A batch of at least kMinColumnRows rows goes column by column where the program allows it
  // (expr::ColumnPlan); otherwise each row's result is built in its place in `out` by the walker.
  void EvaluateBatch(const Row* rows, std::size_t n, std::vector<Result<Value>>& out) const override {
    if (columns_ && n >= kMinColumnRows) {
      expr::EvaluateColumns(program_, column_plan_, rows, n, out);
      return;
    }
    out.clear();
    out.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
      expr::EvalContext ctx{rows[i]};
      expr::Slot slot;
      Status s = expr::Evaluate(program_, program_.root, ctx, slot);
      if (!s.ok()) {
        out.emplace_back(std::move(s));
      } else if (slot.ref != nullptr) {
        out.emplace_back(*slot.ref);
      } else {
        out.emplace_back(std::move(slot.owned));
      }
    }
  }

  const std::vector<std::string>& referenced_fields() const override { return program_.fields; }
  const std::string& source() const override { return program_.source; }

 private:
  // Below this the columns' set-up (a vector per node) costs more than the walk it saves.
  static constexpr std::size_t kMinColumnRows = 8;
  expr::Program program_;
  expr::ColumnPlan column_plan_;
  bool columns_ = false;
};

}  // namespace

Result<std::unique_ptr<CompiledExpression>> CompileExpression(std::string_view source, ExprLanguage language) {
  Result<expr::Program> program = language == ExprLanguage::kGeneric ? expr::ParseGeneric(source) : expr::ParsePython(source);
  if (!program.ok()) return program.status();
  return std::unique_ptr<CompiledExpression>(std::make_unique<Compiled>(std::move(program).value()));
}

bool IsTruthy(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kNull: return false;
    case Value::Kind::kBool: return v.as_bool();
    case Value::Kind::kInt: return v.as_int() != 0;
    case Value::Kind::kFloat: return v.as_float() != 0.0;
    case Value::Kind::kTimestamp: return true;  // an object without __bool__ or __len__
    case Value::Kind::kString: return !v.as_string().empty();
    case Value::Kind::kBytes: return !v.as_bytes().empty();
    case Value::Kind::kList: return !v.as_list().empty();
    case Value::Kind::kRow: return !v.as_row().empty();
  }
  return false;
}

}  // namespace dfw
