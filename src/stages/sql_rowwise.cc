// SQL that reads one row at a time: a row-wise Sql query, Filter's `keep` and MapToFields' `fields`
// with language: sql (sql_stages.h). Each is one query over PCOLLECTION holding the one row, run
// once per row, so a failing row fails alone (its error output, when declared) and the result rows
// keep the row's event timestamp and window. Beam builds the same queries: Filter is
// SELECT * FROM PCOLLECTION WHERE keep, MapToFields SELECT [*,] expr AS name, ... FROM PCOLLECTION.
#include <algorithm>

#include <fmt/format.h>

#include "dfw/stages/config.h"
#include "sql_engine.h"
#include "sql_stages.h"

namespace dfw::stages_internal {
namespace {

enum class SqlRowOutput { kRows, kKeep, kFields };

struct SqlRowWiseOptions {
  SqlRowOutput output = SqlRowOutput::kRows;
  std::string what;                 // what ran, for row errors ("query", "keep = ...")
  std::string where;                // kRows: the Sql's location (a Sql has no error output)
  std::vector<std::string> fields;  // kFields: the output fields, in YAML order (the query's columns)
  std::vector<bool> boolean;        // kFields: per field, its expression is a truth value (SqlLooksBoolean)
  bool append = false;              // kFields: keep the input fields
  std::vector<std::string> drop;    // kFields: input fields removed first (only with append)
};

class SqlRowWise final : public Stage {
 public:
  SqlRowWise(SqlRowWiseOptions options, std::string sqlite)
      : options_(std::move(options)), pool_(std::move(sqlite), {kSqlInputTable}) {}

  // Concurrent calls each take a connection of their own from the pool.
  Status Process(RowBatch& in, StageOutput& out) override {
    ASSIGN_OR_RETURN(SqlQueryPool::Lease query, pool_.Take());
    std::vector<std::vector<const Row*>> inputs(1);
    std::vector<Row> results;
    for (Row& row : in) {
      inputs[0] = {&row};
      results.clear();
      if (Status st = query->Run(inputs, results); !st.ok()) {
        if (options_.output == SqlRowOutput::kRows) return SqlRowError(options_.where, options_.what + ": " + st.message(), row);
        RETURN_IF_ERROR(out.Fail(row, options_.what + ": " + st.message()));
        continue;
      }
      RETURN_IF_ERROR(Emit(row, results, out));
    }
    return Status::OK();
  }

 private:
  Status Emit(Row& row, std::vector<Row>& results, StageOutput& out) const {
    if (options_.output == SqlRowOutput::kKeep) {
      if (results.empty()) {
        out.CountFiltered();
      } else {
        out.Emit(std::move(row));
      }
      return Status::OK();
    }
    if (options_.output == SqlRowOutput::kRows) {
      if (results.empty()) out.CountFiltered();
      if (results.size() > 1) out.CountFannedOut(static_cast<int64_t>(results.size()) - 1);
      for (Row& r : results) {
        r.CopyMetadataFrom(row);
        out.Emit(std::move(r));
      }
      return Status::OK();
    }
    if (results.size() != 1) return out.Fail(row, fmt::format("{}: gave {} rows, not one", options_.what, results.size()));
    std::vector<Field>& values = results[0].mutable_fields();
    for (std::size_t k = 0; k < options_.fields.size(); ++k) {
      if (options_.boolean[k] && values[k].value.is_int()) values[k].value = Value::Bool(values[k].value.as_int() != 0);
    }
    auto dropped = [&](const std::string& name) {
      return std::find(options_.drop.begin(), options_.drop.end(), name) != options_.drop.end();
    };
    if (!options_.append) {
      Row result;
      result.CopyMetadataFrom(row);
      result.Reserve(options_.fields.size());
      for (std::size_t k = 0; k < options_.fields.size(); ++k) result.Append(options_.fields[k], std::move(values[k].value));
      out.Emit(std::move(result));
      return Status::OK();
    }
    for (const std::string& f : options_.fields) {
      if (row.Has(f) && !dropped(f)) {
        return out.Fail(row, "Redefinition of field '" + f + "' (it is an input field; add it to drop or rename it)");
      }
    }
    auto& fields = row.mutable_fields();
    fields.erase(std::remove_if(fields.begin(), fields.end(), [&](const Field& f) { return dropped(f.name); }), fields.end());
    for (std::size_t k = 0; k < options_.fields.size(); ++k) row.Append(options_.fields[k], std::move(values[k].value));
    out.Emit(std::move(row));
    return Status::OK();
  }

  SqlRowWiseOptions options_;
  SqlQueryPool pool_;
};

// `query` (Calcite text) as SQLite runs it, checked to read only its row and to give `columns`
// columns (0: any number); errors start with the location of `at` and `what`.
Result<std::string> CompileRowWise(const StageConfig& c, const ConfigNode& at, const std::string& what,
                                   const std::string& query, int columns) {
  const std::string where = fmt::format("{}: transform '{}' ({}): {}", NodeLocation(c, at), c.name, c.type, what);
  Result<SqlText> text = TranslateSql(query);
  if (!text.ok()) return Status(text.status().code(), where + ": " + text.status().message());
  Result<SqlCheck> check = CheckSqlQuery(*text, {kSqlInputTable});
  if (!check.ok()) return Status(check.status().code(), where + ": " + check.status().message());
  if (columns > 0 && check->columns != columns) {
    return InvalidArgument(fmt::format("{}: gives {} columns, not {} (one per expression)", where, check->columns, columns));
  }
  if (check->shape != SqlShape::kRowWise) {
    return Unimplemented(where + ": reads more than its own row (an aggregate, a subquery, DISTINCT ...); language: sql "
                                 "here is an expression over one row; use a Sql transform for a query over all rows");
  }
  return std::move(text->sqlite);
}

// A config value that must be one SQL expression: a string, or {expression: TEXT}.
Result<std::string> SqlExpression(const StageConfig& c, const ConfigNode& node, const std::string& what) {
  if (node.IsScalar()) return node.Scalar();
  if (node.IsMap() && node.size() == 1 && node["expression"].IsScalar()) return node["expression"].Scalar();
  return InvalidArgument(fmt::format("{}: transform '{}' ({}): {}: expected a SQL expression (a string)",
                                     NodeLocation(c, node), c.name, c.type, what));
}

}  // namespace

bool IsSqlLanguage(const StageConfig& c) {
  const ConfigNode& lang = c.config["language"];
  return lang.IsScalar() && (lang.Scalar() == "sql" || lang.Scalar() == "calcite");
}

Result<std::unique_ptr<Stage>> MakeSqlFilter(const StageConfig& c) {
  const ConfigNode& keep = c.config["keep"];
  if (!keep.IsDefined() || keep.IsNull()) return c.ConfigError("config 'keep' is required");
  ASSIGN_OR_RETURN(std::string expr, SqlExpression(c, keep, "keep"));
  ASSIGN_OR_RETURN(std::string sqlite,
                   CompileRowWise(c, keep, "keep", fmt::format("SELECT 1 FROM {} WHERE ({})", kSqlInputTable, expr), 1));
  SqlRowWiseOptions o;
  o.output = SqlRowOutput::kKeep;
  o.what = "keep = " + expr;
  return std::unique_ptr<Stage>(new SqlRowWise(std::move(o), std::move(sqlite)));
}

Result<std::unique_ptr<Stage>> MakeSqlMapToFields(const StageConfig& c) {
  SqlRowWiseOptions o;
  o.output = SqlRowOutput::kFields;
  o.what = "fields";
  ASSIGN_OR_RETURN(o.append, ConfigBool(c, "append", false));
  ASSIGN_OR_RETURN(o.drop, ConfigStringList(c, "drop"));
  if (!o.drop.empty() && !o.append) return ConfigKeyError(c, "drop", "is only allowed with append: true");
  const ConfigNode& fields = c.config["fields"];
  std::string select;
  if (!fields.IsDefined() || fields.IsNull()) {
    if (!o.append) return c.ConfigError("config 'fields' is required (a mapping of output field: SQL expression)");
  } else if (!fields.IsMap()) {
    return ConfigKeyError(c, "fields", "expected a mapping of output field name to SQL expression");
  } else {
    for (const ConfigEntry& kv : fields.entries()) {
      const std::string name = kv.key.Scalar();
      if (std::find(o.fields.begin(), o.fields.end(), name) != o.fields.end()) {
        return ConfigKeyError(c, "fields", "field '" + name + "' is defined twice");
      }
      ASSIGN_OR_RETURN(std::string expr, SqlExpression(c, kv.value, "fields." + name));
      // Each alone first, so an error names its field and line.
      RETURN_IF_ERROR(CompileRowWise(c, kv.value, "fields." + name, fmt::format("SELECT ({}) FROM {}", expr, kSqlInputTable), 1)
                          .status());
      select += fmt::format("{}({})", select.empty() ? "" : ", ", expr);
      o.fields.push_back(name);
      o.boolean.push_back(SqlLooksBoolean(expr));
    }
  }
  if (select.empty()) select = "1";
  ASSIGN_OR_RETURN(std::string sqlite, CompileRowWise(c, fields.IsDefined() ? fields : c.config, "fields",
                                                      fmt::format("SELECT {} FROM {}", select, kSqlInputTable),
                                                      std::max<int>(1, static_cast<int>(o.fields.size()))));
  return std::unique_ptr<Stage>(new SqlRowWise(std::move(o), std::move(sqlite)));
}

Result<std::unique_ptr<Stage>> MakeRowWiseSql(const StageConfig& c, std::string sqlite) {
  SqlRowWiseOptions o;
  o.what = "query";
  o.where = c.Where();
  return std::unique_ptr<Stage>(new SqlRowWise(std::move(o), std::move(sqlite)));
}

}  // namespace dfw::stages_internal
