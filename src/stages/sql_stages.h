// The SQL forms of Filter and MapToFields (language: sql), and the row-wise Sql stage they share
// (sql_rowwise.cc); filter.cc and map_to_fields.cc hand their config here for language: sql.
#pragma once

#include <memory>
#include <string>

#include "dfw/common/status.h"
#include "dfw/stages/stage.h"

namespace dfw::stages_internal {

// `language: sql` (or Beam's other name for it, calcite).
bool IsSqlLanguage(const StageConfig& c);

// Filter: keeps the rows for which `keep` (a SQL boolean expression over the row's fields) is
// true; false and NULL are filtered, as in a WHERE clause.
Result<std::unique_ptr<Stage>> MakeSqlFilter(const StageConfig& c);
// MapToFields: each of `fields` a SQL expression over the row's fields; `append` and `drop` as
// for the other languages.
Result<std::unique_ptr<Stage>> MakeSqlMapToFields(const StageConfig& c);
// Sql whose query is row-wise (`sqlite`: its text as SQLite runs it): each row's result rows.
Result<std::unique_ptr<Stage>> MakeRowWiseSql(const StageConfig& c, std::string sqlite);

}  // namespace dfw::stages_internal
