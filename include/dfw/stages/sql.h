// Beam YAML's Sql transform (`query`, `dialect`) on an embedded SQLite (src/stages/sql*.cc).
//
// A row-wise query (only WHERE and SELECT expressions over its one input) runs as one stage, per
// row, wherever the rows are. A query that needs every row at once (aggregates, GROUP BY,
// DISTINCT, ORDER BY, LIMIT, subqueries, self-joins) runs on the shuffle that Combine uses: the
// loader replaces the Sql by the steps SqlShuffleSteps names —
//   <name>/Pack    each row as one value, [input, row]               (Sql/pack)
//   <name>/Gather  a Combine with group_by: [] collecting them all  (one key: one place, per window)
//   <name>         the query over the gathered rows                  (Sql/run)
// so the query runs once over every row of the job (of each window), in one process. A Sql over
// several inputs (`input: {orders: A, users: B}`: the query reads tables `orders` and `users`, as
// on Beam) always runs so, with one Pack per input.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "dfw/common/status.h"
#include "dfw/stages/stage.h"

namespace dfw {

inline constexpr const char* kSqlType = "Sql";
inline constexpr const char* kSqlPackType = "Sql/pack";  // internal (the loader's steps only)
inline constexpr const char* kSqlRunType = "Sql/run";    // internal

// True for the types only the loader's steps use; a pipeline file may not name them.
bool IsInternalSqlType(std::string_view type);

// One step of a Sql that needs every row: its config (name, type, config; location copied from
// the Sql) and where its inputs come from.
struct SqlStep {
  StageConfig config;
  // Each >= 0: the main output of that earlier step; -1 - k: the Sql's input k (tag k of a
  // mapping input; with one input, everything its `input:` names).
  std::vector<int> inputs;
};

// The steps above for a Sql transform whose query needs every row; empty when it is row-wise (the
// Sql runs as it is). Errors: the Sql's own load errors (what its check says).
Result<std::vector<SqlStep>> SqlShuffleSteps(const StageConfig& sql);

// Registers Sql and its internal steps (RegisterBuiltinStages calls it).
void RegisterSql(StageRegistry& r);

}  // namespace dfw
