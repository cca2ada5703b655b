// A JSON Schema (as Beam YAML writes one in ValidateWithSchema's `schema` and Create's
// `output_schema`) checked against rows, with valijson (Draft 7, Python jsonschema's default
// family). The schema is parsed once; Validate may be called from several threads.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "dfw/common/status.h"
#include "dfw/record/value.h"
#include "dfw/stages/stage.h"

namespace dfw::stages_internal {

class RowSchema {
 public:
  // kInvalidArgument naming `key`'s place when `schema` is not a mapping or not a valid schema.
  static Result<RowSchema> Make(const StageConfig& c, const std::string& key);
  // nullopt when `row` satisfies the schema; else what is wrong ("<root>.age: Value type not permitted ...").
  std::optional<std::string> Validate(const Row& row) const;

 private:
  struct Impl;
  std::shared_ptr<const Impl> impl_;
};

}  // namespace dfw::stages_internal
