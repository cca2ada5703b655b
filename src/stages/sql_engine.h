// Beam YAML's SQL (the Sql transform, and language: sql on Filter and MapToFields) on an embedded
// SQLite: the Calcite text as SQLite runs it (sql_dialect.cc), the load-time check that prepares it
// (syntax, functions, which rows it needs), and the in-memory database that runs it over rows
// (sql_engine.cc). docs/beam.md ("SQL") lists where SQLite and Calcite differ.
//
// Every database is bounded: one process-wide heap limit (sqlite3_hard_heap_limit64), per-connection
// limits on string, query and expression sizes, an authorizer that lets a query only read, and a
// progress handler that stops a query past its budget of virtual-machine steps.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "dfw/common/status.h"
#include "dfw/record/value.h"

struct sqlite3;
struct sqlite3_stmt;

namespace dfw::stages_internal {

// The table a single-input query reads (Beam's name for it).
inline constexpr const char* kSqlInputTable = "PCOLLECTION";

// A query as SQLite prepares it.
struct SqlText {
  std::string sqlite;              // CAST(x AS STRING) -> CAST(x AS TEXT), ...; the rest as written
  std::vector<std::string> words;  // every identifier the text names (the load-time tables' columns)
};

// Calcite (or ZetaSQL) text -> SQLite text. kUnimplemented for a CAST to a type SQLite has no
// value for (DATE, TIMESTAMP, ARRAY ...), kInvalidArgument for an unterminated quote or comment.
Result<SqlText> TranslateSql(std::string_view query);

// True when the expression's value is a truth value: at its top level (outside parentheses and
// CASE ... END) a comparison, AND/OR/NOT, IS, IN, LIKE, BETWEEN, EXISTS, or TRUE/FALSE. SQLite
// computes these as 1/0; Calcite's type is BOOLEAN, which MapToFields gives back.
bool SqlLooksBoolean(std::string_view expr);

// SqlLooksBoolean of each item of the query's (first, outermost) select list, in order; empty
// when the list is not known from the text (a `*`, no SELECT).
std::vector<bool> SqlSelectBooleans(std::string_view query);

// What rows a query needs.
enum class SqlShape {
  kRowWise,     // one row in, its result rows out: runs per row wherever the row is
  kWholeInput,  // aggregates, GROUP BY, DISTINCT, ORDER BY, LIMIT, subqueries, joins: every row at once
};

struct SqlCheck {
  SqlShape shape = SqlShape::kWholeInput;
  int columns = 0;  // of the result (with the load-time tables: a `*` counts every word)
};

// Prepares `text` against tables named `tables` whose columns are the query's words, so a syntax
// error, an unknown function or table, a second statement or a statement that writes is an error
// at load (the message is SQLite's, without a location). Tells what rows the query needs, read
// from the prepared program (aggregation, sorting, temporary tables, more than one table scan).
Result<SqlCheck> CheckSqlQuery(const SqlText& text, const std::vector<std::string>& tables);

// An in-memory database with the limits above; closed by the deleter.
struct SqlDbCloser {
  void operator()(sqlite3* db) const;
};
using SqlDb = std::unique_ptr<sqlite3, SqlDbCloser>;
Result<SqlDb> OpenSqlDatabase();

// Prepares the query's text where only reading is authorized: one statement, read-only. The
// caller finalizes the statement. kInvalidArgument with SQLite's message.
Result<sqlite3_stmt*> PrepareUserQuery(sqlite3* db, const std::string& text);

// `name` as a quoted SQL identifier ("a""b").
std::string QuoteSqlName(std::string_view name);

// A column of an input table: its name and SQL type (from its values: BIGINT, DOUBLE, VARCHAR,
// BOOLEAN, VARBINARY, TIMESTAMP (microseconds since the epoch); "" when every value is null).
struct SqlColumn {
  std::string name;
  std::string type;
  bool operator==(const SqlColumn& o) const { return name == o.name && type == o.type; }
};

// One connection running one query over rows. Not thread-safe: one per thread (SqlQueryPool).
class SqlQuery {
 public:
  // `tables`: the names the query reads its inputs as, in input order.
  static Result<std::unique_ptr<SqlQuery>> Make(std::string sqlite_text, std::vector<std::string> tables);
  ~SqlQuery();
  SqlQuery(const SqlQuery&) = delete;
  SqlQuery& operator=(const SqlQuery&) = delete;

  // Runs the query with inputs[k] as table k (columns: the union of the rows' fields, in order of
  // appearance; a field a row lacks is NULL) and appends one row per result row to `out`, named by
  // the result's columns. A BOOLEAN or TIMESTAMP column comes back as that type, a BLOB as bytes. Errors (a list
  // or row field, an unknown column, the budget or the heap limit) are kInvalidArgument with
  // SQLite's message; `out` may then hold part of the result.
  Status Run(const std::vector<std::vector<const Row*>>& inputs, std::vector<Row>& out);

 private:
  SqlQuery(sqlite3* db, std::string text, std::vector<std::string> tables);
  Status Define(const std::vector<std::vector<SqlColumn>>& schema);
  Status Error(std::string_view what) const;
  static int OnProgress(void* self);

  sqlite3* db_;
  std::string text_;
  std::vector<std::string> tables_;
  std::vector<std::vector<SqlColumn>> schema_;  // the tables as now defined
  std::vector<sqlite3_stmt*> insert_;           // per table: INSERT OR REPLACE by rowid
  std::vector<sqlite3_stmt*> trim_;             // per table: DELETE the rows past a rowid
  std::vector<int64_t> loaded_;                 // per table: rows now in it (rowids 1..n)
  std::vector<std::string> names_;              // the query's result columns
  std::vector<bool> booleans_;                  // SqlSelectBooleans of the text
  std::vector<bool> as_bool_;                   // per result column: 0/1 given back as bool
  sqlite3_stmt* query_ = nullptr;
  bool defined_ = false;
  int64_t steps_ = 0;   // progress callbacks in this Run
  int64_t budget_ = 0;  // allowed callbacks in this Run
};

// SqlQuery objects for concurrent Process calls: each call takes one (made on first need) and gives
// it back when its lease ends. Thread-safe.
class SqlQueryPool {
 public:
  SqlQueryPool(std::string sqlite_text, std::vector<std::string> tables)
      : text_(std::move(sqlite_text)), tables_(std::move(tables)) {}

  class Lease {
   public:
    Lease(SqlQueryPool* pool, std::unique_ptr<SqlQuery> q) : pool_(pool), q_(std::move(q)) {}
    Lease(Lease&&) = default;
    ~Lease();
    SqlQuery& operator*() const { return *q_; }
    SqlQuery* operator->() const { return q_.get(); }

   private:
    SqlQueryPool* pool_;
    std::unique_ptr<SqlQuery> q_;
  };
  Result<Lease> Take();

 private:
  std::string text_;
  std::vector<std::string> tables_;
  std::mutex mu_;
  std::vector<std::unique_ptr<SqlQuery>> idle_;  // guarded by mu_
};

// A row's failure in a transform without an error output (Sql): kDataLoss "<where>: <msg>;
// element: <json, cut at 200 bytes>".
Status SqlRowError(const std::string& where, const std::string& msg, const Row& element);

// The columns `rows` make (SqlQuery::Run's rule); kInvalidArgument for a list or row value.
Result<std::vector<SqlColumn>> SqlColumnsOf(const std::vector<const Row*>& rows);

}  // namespace dfw::stages_internal
