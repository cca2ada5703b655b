// Beam YAML's Sql transform (dfw/stages/sql.h): its config, the row-wise form, and the steps of a
// query over every row — Sql/pack before Combine's shuffle and Sql/run after it.
#include "dfw/stages/sql.h"

#include <fmt/format.h>

#include "dfw/stages/combine.h"
#include "dfw/stages/config.h"
#include "sql_engine.h"
#include "sql_stages.h"

namespace dfw {
namespace {

using stages_internal::SqlQueryPool;

constexpr const char* kSqlItemField = "__sql_item";    // Sql/pack's output: [input index, row]
constexpr const char* kSqlItemsField = "__sql_items";  // the Gather's output: every item of a window
constexpr const char* kSqlPackInputKey = "sql_input";      // Sql/pack's config: which input it packs
constexpr const char* kSqlTablesKey = "sql_tables";        // Sql/run's config: the tables, in input order

// The tables a Sql's query reads: its input tags when it has several, else PCOLLECTION; a
// Sql/run's from its config.
std::vector<std::string> SqlTables(const StageConfig& c) {
  std::vector<std::string> tables;
  for (const ConfigNode& t : c.config[kSqlTablesKey].items()) tables.push_back(t.Scalar());
  if (tables.empty() && c.input_names.size() > 1) tables = c.input_names;
  if (tables.empty()) tables.push_back(stages_internal::kSqlInputTable);
  return tables;
}

// A Sql's query as SQLite runs it, and what it needs; errors name the query's location.
Result<std::pair<std::string, stages_internal::SqlShape>> CompileSql(const StageConfig& c) {
  ASSIGN_OR_RETURN(std::string dialect, ConfigString(c, "dialect", std::string("calcite")));
  if (dialect != "calcite" && dialect != "zetasql") {
    return ConfigKeyError(c, "dialect", "unknown dialect '" + dialect + "'; allowed: calcite, zetasql");
  }
  const ConfigNode& query = c.config["query"];
  if (!query.IsScalar()) return ConfigKeyError(c, "query", "expected the SQL query (a string)");
  const std::string where = fmt::format("{}: transform '{}' ({}): query", NodeLocation(c, query), c.name, c.type);
  Result<stages_internal::SqlText> text = stages_internal::TranslateSql(query.Scalar());
  if (!text.ok()) return Status(text.status().code(), where + ": " + text.status().message());
  const std::vector<std::string> tables = SqlTables(c);
  Result<stages_internal::SqlCheck> check = stages_internal::CheckSqlQuery(*text, tables);
  if (!check.ok()) return Status(check.status().code(), where + ": " + check.status().message());
  // Several inputs are several tables: even a scan of one of them runs where all are.
  return std::make_pair(std::move(text->sqlite), tables.size() > 1 ? stages_internal::SqlShape::kWholeInput : check->shape);
}

Result<std::unique_ptr<Stage>> MakeSql(const StageConfig& c) {
  ASSIGN_OR_RETURN(auto compiled, CompileSql(c));
  if (compiled.second != stages_internal::SqlShape::kRowWise) {
    return FailedPrecondition(c.Where() + ": the query needs every row; the pipeline loader runs it as Sql/pack, a "
                                          "Combine and Sql/run (dfw/stages/sql.h)");
  }
  return stages_internal::MakeRowWiseSql(c, std::move(compiled.first));
}

// Each row as [input, row], for the Gather's `group` (the row keeps its window there).
class SqlPack final : public Stage {
 public:
  explicit SqlPack(int64_t input) : input_(input) {}
  Status Process(RowBatch& in, StageOutput& out) override {
    for (Row& row : in) {
      Row packed;
      packed.CopyMetadataFrom(row);
      packed.Append(kSqlItemField, Value::FromList(List{Value::Int(input_), Value::FromRow(std::move(row))}));
      out.Emit(std::move(packed));
    }
    return Status::OK();
  }

 private:
  int64_t input_;
};

// The query over each gathered window of rows.
class SqlRun final : public Stage {
 public:
  SqlRun(std::string where, std::string sqlite, std::vector<std::string> tables)
      : where_(std::move(where)), tables_(tables.size()), pool_(std::move(sqlite), std::move(tables)) {}
  Status Process(RowBatch& in, StageOutput& out) override {
    ASSIGN_OR_RETURN(SqlQueryPool::Lease query, pool_.Take());
    std::vector<std::vector<const Row*>> inputs(tables_);
    std::vector<Row> results;
    for (Row& group : in) {
      const Value* items = group.Find(kSqlItemsField);
      if (items == nullptr || !items->is_list()) return stages_internal::SqlRowError(where_, "no gathered rows", group);
      std::size_t rows = 0;
      for (auto& table : inputs) table.clear();
      for (const Value& item : items->as_list()) {
        if (!item.is_list() || item.as_list().size() != 2 || !item.as_list()[1].is_row() || !item.as_list()[0].is_int() ||
            item.as_list()[0].as_int() < 0 || static_cast<std::size_t>(item.as_list()[0].as_int()) >= tables_) {
          return stages_internal::SqlRowError(where_, "a gathered item is not [input, row]", group);
        }
        inputs[static_cast<std::size_t>(item.as_list()[0].as_int())].push_back(&item.as_list()[1].as_row());
        ++rows;
      }
      results.clear();
      if (Status st = query->Run(inputs, results); !st.ok()) {
        return stages_internal::SqlRowError(where_, fmt::format("query over {} rows: {}", rows, st.message()),
                                            group);
      }
      if (results.empty()) out.CountFiltered();
      if (results.size() > 1) out.CountFannedOut(static_cast<int64_t>(results.size()) - 1);
      for (Row& r : results) {
        r.CopyMetadataFrom(group);
        out.Emit(std::move(r));
      }
    }
    return Status::OK();
  }

 private:
  std::string where_;   // the Sql's location, for errors
  std::size_t tables_;  // the query's tables (inputs), in the packed items' order
  SqlQueryPool pool_;
};

Result<std::unique_ptr<Stage>> MakeSqlPack(const StageConfig& c) {
  ASSIGN_OR_RETURN(int64_t input, ConfigInt(c, kSqlPackInputKey, int64_t{0}));
  return std::unique_ptr<Stage>(new SqlPack(input));
}

Result<std::unique_ptr<Stage>> MakeSqlRun(const StageConfig& c) {
  ASSIGN_OR_RETURN(auto compiled, CompileSql(c));
  StageConfig shown = c;  // errors name the user's transform type
  shown.type = kSqlType;
  return std::unique_ptr<Stage>(new SqlRun(shown.Where(), std::move(compiled.first), SqlTables(c)));
}

}  // namespace

bool IsInternalSqlType(std::string_view type) { return type == kSqlPackType || type == kSqlRunType; }

Result<std::vector<SqlStep>> SqlShuffleSteps(const StageConfig& sql) {
  ASSIGN_OR_RETURN(auto compiled, CompileSql(sql));
  if (compiled.second == stages_internal::SqlShape::kRowWise) return std::vector<SqlStep>{};
  const std::vector<std::string> tables = SqlTables(sql);
  const int n = static_cast<int>(tables.size());
  std::vector<SqlStep> steps(static_cast<std::size_t>(n) + 2);
  for (SqlStep& s : steps) {
    s.config = sql;
    s.config.input_names.clear();
  }
  for (int k = 0; k < n; ++k) {
    SqlStep& pack = steps[static_cast<std::size_t>(k)];
    pack.config.name = n == 1 ? sql.name + "/Pack" : fmt::format("{}/Pack[{}]", sql.name, tables[static_cast<std::size_t>(k)]);
    pack.config.type = kSqlPackType;
    pack.config.config = ConfigNode::Map();
    pack.config.config.Set(kSqlPackInputKey, ConfigNode::Scalar(std::to_string(k)));
    pack.inputs = {-1 - k};
  }
  SqlStep& gather_step = steps[static_cast<std::size_t>(n)];
  gather_step.config.name = sql.name + "/Gather";
  gather_step.config.type = kCombineType;
  ConfigNode gather = ConfigNode::Map();
  gather.Set("group_by", ConfigNode::Sequence());
  ConfigNode agg = ConfigNode::Map();
  agg.Set("value", ConfigNode::Scalar(kSqlItemField));
  agg.Set("fn", ConfigNode::Scalar("group"));
  ConfigNode combine = ConfigNode::Map();
  combine.Set(kSqlItemsField, std::move(agg));
  gather.Set("combine", std::move(combine));
  gather_step.config.config = std::move(gather);
  for (int k = 0; k < n; ++k) gather_step.inputs.push_back(k);
  SqlStep& run = steps.back();
  run.config.type = kSqlRunType;
  ConfigNode table_list = ConfigNode::Sequence();
  for (const std::string& t : tables) table_list.Append(ConfigNode::Scalar(t));
  run.config.config.Set(kSqlTablesKey, std::move(table_list));
  run.inputs = {n};
  return steps;
}

void RegisterSql(StageRegistry& r) {
  auto check = [](const StageConfig& c) { return CompileSql(c).status(); };
  (void)r.Register({kSqlType, MakeSql, {"query", "dialect"}, {"query"}, StageTraits{}, check});
  (void)r.Register({kSqlPackType, MakeSqlPack, {kSqlPackInputKey}, {}, StageTraits{}, CheckByMaking(MakeSqlPack)});
  (void)r.Register({kSqlRunType, MakeSqlRun, {"query", "dialect", kSqlTablesKey}, {"query"}, StageTraits{},
                    CheckByMaking(MakeSqlRun)});
}

}  // namespace dfw
