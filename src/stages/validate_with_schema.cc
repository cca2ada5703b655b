// ValidateWithSchema (Beam YAML, apache_beam/yaml/yaml_mapping.py): each row is checked against the
// JSON Schema `schema`; a row that satisfies it passes unchanged, one that does not is a record
// failure (the error output's row with the reason when error_handling is declared, else the run
// stops naming the row), as Beam's validator raising inside the mapping does.
#include "dfw/stages/config.h"
#include "dfw/stages/stage.h"
#include "json_schema.h"

namespace dfw {
namespace {

class ValidateWithSchema final : public Stage {
 public:
  explicit ValidateWithSchema(stages_internal::RowSchema schema) : schema_(std::move(schema)) {}

  Status Process(RowBatch& in, StageOutput& out) override {
    for (Row& row : in) {
      if (std::optional<std::string> bad = schema_.Validate(row)) {
        RETURN_IF_ERROR(out.Fail(row, "does not match the schema: " + *bad));
        continue;
      }
      out.Emit(std::move(row));
    }
    return Status::OK();
  }

 private:
  stages_internal::RowSchema schema_;
};

Result<std::unique_ptr<Stage>> MakeValidateWithSchema(const StageConfig& config) {
  ASSIGN_OR_RETURN(stages_internal::RowSchema schema, stages_internal::RowSchema::Make(config, "schema"));
  return std::unique_ptr<Stage>(new ValidateWithSchema(std::move(schema)));
}

}  // namespace

void RegisterValidateWithSchema(StageRegistry& r) {
  (void)r.Register({"ValidateWithSchema", MakeValidateWithSchema, {"schema"}, {"schema"},
                    StageTraits{.can_fail_per_record = true}, CheckByMaking(MakeValidateWithSchema)});
}

}  // namespace dfw
