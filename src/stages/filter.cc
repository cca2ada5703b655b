// Filter: keeps the rows for which `keep` is truthy (Python truthiness); others are counted as
// filtered, which the run's accounting relies on.
#include "dfw/stages/config.h"
#include "dfw/stages/stage.h"
#include "expression_config.h"
#include "sql_stages.h"

namespace dfw {
namespace {

struct FilterOptions {
  stages_internal::ConfiguredExpression keep;  // the predicate
};

class Filter final : public Stage {
 public:
  explicit Filter(FilterOptions options) : options_(std::move(options)) {}

  // Stateless: safe to call concurrently. The batch is evaluated at once (one request to CPython
  // when the predicate runs there).
  Status Process(RowBatch& in, StageOutput& out) override {
    out.main().reserve(out.main().size() + in.size());
    std::vector<Result<Value>> keep;
    options_.keep.expr->EvaluateBatch(in.data(), in.size(), keep);
    for (std::size_t i = 0; i < in.size(); ++i) {
      Row& row = in[i];
      Result<Value>& v = keep[i];
      if (!v.ok()) {
        RETURN_IF_ERROR(out.Fail(row, "keep = " + options_.keep.expr->source() + ": " + v.status().message()));
        continue;
      }
      if (IsTruthy(*v)) {
        out.Emit(std::move(row));
      } else {
        out.CountFiltered();
      }
    }
    return Status::OK();
  }

 private:
  FilterOptions options_;
};

Result<std::unique_ptr<Stage>> MakeFilter(const StageConfig& config) {
  if (stages_internal::IsSqlLanguage(config)) return stages_internal::MakeSqlFilter(config);
  FilterOptions o;
  ASSIGN_OR_RETURN(ExprLanguage lang, stages_internal::ConfigLanguage(config));
  const ConfigNode& keep = config.config["keep"];
  if (!keep.IsDefined() || keep.IsNull()) return config.ConfigError("config 'keep' is required");
  ASSIGN_OR_RETURN(o.keep, stages_internal::CompileConfigExpression(config, keep, "keep", lang));
  return std::unique_ptr<Stage>(new Filter(std::move(o)));
}

}  // namespace

void RegisterFilter(StageRegistry& r) {
  (void)r.Register({"Filter", MakeFilter, {"keep", "language"}, {"keep"}, StageTraits{.can_fail_per_record = true}, CheckByMaking(MakeFilter)});
}

}  // namespace dfw
