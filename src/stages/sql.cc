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
  Result<stages_internal::SqlCheck> check = stages_internal::CheckSqlQuery(*text, {stages_internal::kSqlInputTable});
  if (!check.ok()) return Status(check.status().code(), where + ": " + check.status().message());
  return std::make_pair(std::move(text->sqlite), check->shape);
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
  SqlRun(std::string where, std::string sqlite)
      : where_(std::move(where)), pool_(std::move(sqlite), {stages_internal::kSqlInputTable}) {}
  Status Process(RowBatch& in, StageOutput& out) override {
    ASSIGN_OR_RETURN(SqlQueryPool::Lease query, pool_.Take());
    std::vector<std::vector<const Row*>> inputs(1);
    std::vector<Row> results;
    for (Row& group : in) {
      const Value* items = group.Find(kSqlItemsField);
      if (items == nullptr || !items->is_list()) return stages_internal::SqlRowError(where_, "no gathered rows", group);
      inputs[0].clear();
      for (const Value& item : items->as_list()) {
        if (!item.is_list() || item.as_list().size() != 2 || !item.as_list()[1].is_row() || !item.as_list()[0].is_int() ||
            item.as_list()[0].as_int() != 0) {
          return stages_internal::SqlRowError(where_, "a gathered item is not [0, row]", group);
        }
        inputs[0].push_back(&item.as_list()[1].as_row());
      }
      results.clear();
      if (Status st = query->Run(inputs, results); !st.ok()) {
        return stages_internal::SqlRowError(where_, fmt::format("query over {} rows: {}", inputs[0].size(), st.message()),
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
  std::string where_;  // the Sql's location, for errors
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
  return std::unique_ptr<Stage>(new SqlRun(shown.Where(), std::move(compiled.first)));
}

}  // namespace

bool IsInternalSqlType(std::string_view type) { return type == kSqlPackType || type == kSqlRunType; }

Result<std::vector<SqlStep>> SqlShuffleSteps(const StageConfig& sql) {
  ASSIGN_OR_RETURN(auto compiled, CompileSql(sql));
  if (compiled.second == stages_internal::SqlShape::kRowWise) return std::vector<SqlStep>{};
  std::vector<SqlStep> steps(3);
  for (SqlStep& s : steps) s.config = sql;
  steps[0].config.name = sql.name + "/Pack";
  steps[0].config.type = kSqlPackType;
  steps[0].config.config = ConfigNode::Map();
  steps[0].config.config.Set(kSqlPackInputKey, ConfigNode::Scalar("0"));
  steps[0].input = -1;
  steps[1].config.name = sql.name + "/Gather";
  steps[1].config.type = kCombineType;
  ConfigNode gather = ConfigNode::Map();
  gather.Set("group_by", ConfigNode::Sequence());
  ConfigNode agg = ConfigNode::Map();
  agg.Set("value", ConfigNode::Scalar(kSqlItemField));
  agg.Set("fn", ConfigNode::Scalar("group"));
  ConfigNode combine = ConfigNode::Map();
  combine.Set(kSqlItemsField, std::move(agg));
  gather.Set("combine", std::move(combine));
  steps[1].config.config = std::move(gather);
  steps[1].input = 0;
  steps[2].config.type = kSqlRunType;
  steps[2].input = 1;
  return steps;
}

void RegisterSql(StageRegistry& r) {
  auto check = [](const StageConfig& c) { return CompileSql(c).status(); };
  (void)r.Register({kSqlType, MakeSql, {"query", "dialect"}, {"query"}, StageTraits{}, check});
  (void)r.Register({kSqlPackType, MakeSqlPack, {kSqlPackInputKey}, {}, StageTraits{}, CheckByMaking(MakeSqlPack)});
  (void)r.Register({kSqlRunType, MakeSqlRun, {"query", "dialect"}, {"query"}, StageTraits{}, CheckByMaking(MakeSqlRun)});
}

}  // namespace dfw
