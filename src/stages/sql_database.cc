// The bounded in-memory SQLite database every SQL stage runs in, the prepare of a user's query
// (read-only, one statement) and the load-time check that tells row-wise queries from those that
// need every row (sql_engine.h).
#include <sqlite3.h>

#include <algorithm>
#include <cctype>
#include <mutex>
#include <set>

#include <fmt/format.h>

#include "sql_engine.h"

namespace dfw::stages_internal {
namespace {

// SQLite's memory, all connections of the process together: past it an allocation fails and the
// query stops with "out of memory" (a Sql over every row of a job holds those rows here).
constexpr int64_t kHeapLimitBytes = int64_t{1} << 30;

// Only reading: SELECT, reading columns, calling functions, recursive CTEs.
int SqlReadOnlyAuthorizer(void* /*unused*/, int action, const char*, const char*, const char*, const char*) {
  switch (action) {
    case SQLITE_SELECT:
    case SQLITE_READ:
    case SQLITE_FUNCTION:
    case SQLITE_RECURSIVE:
      return SQLITE_OK;
    default:
      return SQLITE_DENY;
  }
}

std::string SqlLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Opcodes of a program that needs more than the one row it reads: aggregation (Count is
// count(*)), sorting, temporary tables (DISTINCT, IN subqueries), LIMIT/OFFSET, subroutines
// (subqueries, CTEs) and window functions.
const std::set<std::string>& WholeInputOpcodes() {
  static const std::set<std::string> kOps = {
      "AggStep", "AggStep1", "AggFinal", "AggValue", "AggInverse", "Count", "SorterOpen", "OpenEphemeral",
      "OpenAutoindex", "OpenDup", "OpenPseudo", "DecrJumpZero", "OffsetLimit", "IfPos", "Gosub", "InitCoroutine",
      "Yield", "Once", "SeekRowid", "NotExists"};
  return kOps;
}

}  // namespace

void SqlDbCloser::operator()(sqlite3* db) const { sqlite3_close_v2(db); }

std::string QuoteSqlName(std::string_view name) {
  std::string out = "\"";
  for (char c : name) {
    out.push_back(c);
    if (c == '"') out.push_back('"');
  }
  out.push_back('"');
  return out;
}

Result<SqlDb> OpenSqlDatabase() {
  static std::once_flag heap_once;
  std::call_once(heap_once, [] { sqlite3_hard_heap_limit64(kHeapLimitBytes); });
  sqlite3* raw = nullptr;
  const int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_MEMORY | SQLITE_OPEN_NOMUTEX;
  int rc = sqlite3_open_v2(":memory:", &raw, flags, nullptr);
  SqlDb db(raw);
  if (rc != SQLITE_OK) {
    return ResourceExhausted(fmt::format("SQLite: cannot open an in-memory database: {}",
                                         raw ? sqlite3_errmsg(raw) : sqlite3_errstr(rc)));
  }
  sqlite3_limit(raw, SQLITE_LIMIT_LENGTH, 64 << 20);
  sqlite3_limit(raw, SQLITE_LIMIT_SQL_LENGTH, 1 << 20);
  sqlite3_limit(raw, SQLITE_LIMIT_COLUMN, 2000);
  sqlite3_limit(raw, SQLITE_LIMIT_EXPR_DEPTH, 200);
  sqlite3_limit(raw, SQLITE_LIMIT_COMPOUND_SELECT, 64);
  sqlite3_limit(raw, SQLITE_LIMIT_FUNCTION_ARG, 100);
  sqlite3_limit(raw, SQLITE_LIMIT_ATTACHED, 0);
  sqlite3_limit(raw, SQLITE_LIMIT_LIKE_PATTERN_LENGTH, 10000);
  sqlite3_limit(raw, SQLITE_LIMIT_TRIGGER_DEPTH, 1);
  sqlite3_limit(raw, SQLITE_LIMIT_WORKER_THREADS, 0);
  sqlite3_db_config(raw, SQLITE_DBCONFIG_DEFENSIVE, 1, nullptr);
  sqlite3_db_config(raw, SQLITE_DBCONFIG_DQS_DML, 0, nullptr);  // "x" is a name, never a string
  sqlite3_db_config(raw, SQLITE_DBCONFIG_DQS_DDL, 0, nullptr);
  sqlite3_db_config(raw, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0, nullptr);
  sqlite3_db_config(raw, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, nullptr);
  // Calcite's LIKE tells case apart; SQLite's does not unless told.
  rc = sqlite3_exec(raw, "PRAGMA case_sensitive_like = ON", nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) return ResourceExhausted(fmt::format("SQLite: {}", sqlite3_errmsg(raw)));
  return db;
}

Result<sqlite3_stmt*> PrepareUserQuery(sqlite3* db, const std::string& text) {
  sqlite3_set_authorizer(db, SqlReadOnlyAuthorizer, nullptr);
  sqlite3_stmt* stmt = nullptr;
  const char* tail = nullptr;
  int rc = sqlite3_prepare_v2(db, text.c_str(), static_cast<int>(text.size()), &stmt, &tail);
  sqlite3_set_authorizer(db, nullptr, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = rc == SQLITE_AUTH ? "the query may only read (SELECT)" : sqlite3_errmsg(db);
    sqlite3_finalize(stmt);
    return InvalidArgument(msg);
  }
  if (stmt == nullptr) return InvalidArgument("the query is empty");
  while (tail != nullptr && *tail != '\0' && (std::isspace(static_cast<unsigned char>(*tail)) || *tail == ';')) ++tail;
  if (tail != nullptr && *tail != '\0') {
    sqlite3_finalize(stmt);
    return InvalidArgument("the query has more than one statement");
  }
  if (!sqlite3_stmt_readonly(stmt)) {
    sqlite3_finalize(stmt);
    return InvalidArgument("the query may only read (SELECT)");
  }
  return stmt;
}

Result<SqlCheck> CheckSqlQuery(const SqlText& text, const std::vector<std::string>& tables) {
  ASSIGN_OR_RETURN(SqlDb db, OpenSqlDatabase());
  std::set<std::string> seen;  // SQLite's names ignore ASCII case
  for (const std::string& t : tables) seen.insert(SqlLower(t));
  std::string columns;
  for (const std::string& w : text.words) {
    if (!seen.insert(SqlLower(w)).second) continue;
    columns += (columns.empty() ? "" : ", ") + QuoteSqlName(w);
  }
  if (seen.size() > 1900) return InvalidArgument("the query names more than 1900 columns");
  if (columns.empty()) columns = "\"_\"";
  for (const std::string& t : tables) {
    const std::string ddl = fmt::format("CREATE TABLE {} ({})", QuoteSqlName(t), columns);
    if (sqlite3_exec(db.get(), ddl.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) {
      return InvalidArgument(fmt::format("cannot define input '{}': {}", t, sqlite3_errmsg(db.get())));
    }
  }
  SqlCheck check;
  ASSIGN_OR_RETURN(sqlite3_stmt * stmt, PrepareUserQuery(db.get(), text.sqlite));
  check.columns = sqlite3_column_count(stmt);
  sqlite3_finalize(stmt);
  ASSIGN_OR_RETURN(stmt, PrepareUserQuery(db.get(), "EXPLAIN " + text.sqlite));
  int scans = 0;
  bool whole = false;
  int rc;
  while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
    const unsigned char* op = sqlite3_column_text(stmt, 1);
    const std::string opcode = op ? reinterpret_cast<const char*>(op) : "";
    scans += opcode == "OpenRead" ? 1 : 0;
    whole = whole || WholeInputOpcodes().count(opcode) > 0;
  }
  std::string err = rc == SQLITE_DONE ? "" : sqlite3_errmsg(db.get());
  sqlite3_finalize(stmt);
  if (!err.empty()) return InvalidArgument(err);
  check.shape = whole || scans != 1 ? SqlShape::kWholeInput : SqlShape::kRowWise;
  return check;
}

}  // namespace dfw::stages_internal
