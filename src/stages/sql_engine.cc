// SqlQuery: one query on its own in-memory database, run over rows (sql_engine.h). The input
// tables are defined from the rows' fields and kept while the next rows have the same columns, so
// a row-wise query run once per row costs a clear, an insert and the query's own steps.
#include <sqlite3.h>

#include <algorithm>

#include <fmt/format.h>

#include "sql_engine.h"

namespace dfw::stages_internal {
namespace {

// Progress callbacks (one per kSqlStepsPerCallback virtual-machine steps) a Run may take: a base for
// any query, and more per input row (sorting and grouping grow with the rows).
constexpr int kSqlStepsPerCallback = 1000;
constexpr int64_t kSqlBaseBudget = 20'000;  // 2 * 10^7 steps
constexpr int64_t kSqlBudgetPerRow = 1'000;

const char* SqlTypeOf(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kBool: return "BOOLEAN";
    case Value::Kind::kInt: return "BIGINT";
    case Value::Kind::kFloat: return "DOUBLE";
    case Value::Kind::kString: return "VARCHAR";
    case Value::Kind::kBytes: return "VARBINARY";
    case Value::Kind::kTimestamp: return "TIMESTAMP";
    default: return "";
  }
}

int SqlBind(sqlite3_stmt* stmt, int i, const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kNull: return sqlite3_bind_null(stmt, i);
    case Value::Kind::kBool: return sqlite3_bind_int(stmt, i, v.as_bool() ? 1 : 0);
    case Value::Kind::kInt: return sqlite3_bind_int64(stmt, i, v.as_int());
    case Value::Kind::kFloat: return sqlite3_bind_double(stmt, i, v.as_float());
    case Value::Kind::kTimestamp: return sqlite3_bind_int64(stmt, i, v.as_timestamp_us());
    case Value::Kind::kString:
      return sqlite3_bind_text64(stmt, i, v.as_string().data(), v.as_string().size(), SQLITE_STATIC, SQLITE_UTF8);
    case Value::Kind::kBytes:
      return sqlite3_bind_blob64(stmt, i, v.as_bytes().data(), v.as_bytes().size(), SQLITE_STATIC);
    default: return SQLITE_MISMATCH;  // lists and rows are refused before (SqlColumnsOf)
  }
}

Value SqlColumnValue(sqlite3_stmt* stmt, int i, bool as_bool) {
  const char* decl = sqlite3_column_decltype(stmt, i);
  const std::string_view type = decl ? decl : "";
  switch (sqlite3_column_type(stmt, i)) {
    case SQLITE_INTEGER: {
      const int64_t x = sqlite3_column_int64(stmt, i);
      if (type == "BOOLEAN" || as_bool) return Value::Bool(x != 0);
      if (type == "TIMESTAMP") return Value::Timestamp(x);
      return Value::Int(x);
    }
    case SQLITE_FLOAT: return Value::Float(sqlite3_column_double(stmt, i));
    case SQLITE_TEXT: {
      const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt, i));
      return Value::String(std::string(p ? p : "", static_cast<std::size_t>(sqlite3_column_bytes(stmt, i))));
    }
    case SQLITE_BLOB: {
      const auto* p = static_cast<const char*>(sqlite3_column_blob(stmt, i));
      return Value::Bytes(std::string(p ? p : "", static_cast<std::size_t>(sqlite3_column_bytes(stmt, i))));
    }
    default: return Value();
  }
}

// True when `rows` make exactly `cols` again (SqlColumnsOf's result), or `cols` with NULLs where a
// type was seen before — then the tables stay as they are (the common case: every row of a
// source has the same fields), and nothing is allocated to tell.
bool SqlRowsFit(const std::vector<const Row*>& rows, const std::vector<SqlColumn>& cols) {
  for (const Row* row : rows) {
    const std::vector<Field>& fields = row->fields();
    if (fields.size() != cols.size()) return false;
    for (std::size_t i = 0; i < fields.size(); ++i) {
      const Value& v = fields[i].value;
      if (fields[i].name != cols[i].name || v.is_list() || v.is_row()) return false;
      if (!v.is_null() && cols[i].type != SqlTypeOf(v)) return false;
    }
  }
  return true;
}

}  // namespace

Status SqlRowError(const std::string& where, const std::string& msg, const Row& element) {
  std::string json = element.ToJson();
  if (json.size() > 200) json = json.substr(0, 200) + "...";
  return DataLoss(fmt::format("{}: {}; element: {}", where, msg, json));
}

Result<std::vector<SqlColumn>> SqlColumnsOf(const std::vector<const Row*>& rows) {
  std::vector<SqlColumn> cols;
  for (const Row* row : rows) {
    for (const Field& f : row->fields()) {
      if (f.value.is_list() || f.value.is_row()) {
        return InvalidArgument(fmt::format("field '{}' is a {}; SQL here reads scalar fields only (string, integer, "
                                           "float, boolean, bytes, Timestamp, null)", f.name, f.value.TypeName()));
      }
      auto it = std::find_if(cols.begin(), cols.end(), [&](const SqlColumn& c) { return c.name == f.name; });
      if (it == cols.end()) {
        cols.push_back(SqlColumn{f.name, SqlTypeOf(f.value)});
      } else if (it->type.empty()) {
        it->type = SqlTypeOf(f.value);
      }
    }
  }
  return cols;
}

Result<std::unique_ptr<SqlQuery>> SqlQuery::Make(std::string sqlite_text, std::vector<std::string> tables) {
  ASSIGN_OR_RETURN(SqlDb db, OpenSqlDatabase());
  return std::unique_ptr<SqlQuery>(new SqlQuery(db.release(), std::move(sqlite_text), std::move(tables)));
}

SqlQuery::SqlQuery(sqlite3* db, std::string text, std::vector<std::string> tables)
    : db_(db), text_(std::move(text)), tables_(std::move(tables)), booleans_(SqlSelectBooleans(text_)) {
  sqlite3_progress_handler(db_, kSqlStepsPerCallback, &SqlQuery::OnProgress, this);
}

SqlQuery::~SqlQuery() {
  for (sqlite3_stmt* s : insert_) sqlite3_finalize(s);
  for (sqlite3_stmt* s : trim_) sqlite3_finalize(s);
  sqlite3_finalize(query_);
  sqlite3_close_v2(db_);
}

int SqlQuery::OnProgress(void* self) {
  auto* q = static_cast<SqlQuery*>(self);
  return ++q->steps_ > q->budget_ ? 1 : 0;
}

Status SqlQuery::Error(std::string_view what) const {
  const int code = sqlite3_errcode(db_);
  if (code == SQLITE_INTERRUPT) {
    return InvalidArgument(fmt::format("{}: the query ran past its budget of {} steps and was stopped", what,
                                       budget_ * kSqlStepsPerCallback));
  }
  if (code == SQLITE_NOMEM) return InvalidArgument(fmt::format("{}: the query ran out of SQL memory (1 GiB)", what));
  return InvalidArgument(fmt::format("{}: {}", what, sqlite3_errmsg(db_)));
}

Status SqlQuery::Define(const std::vector<std::vector<SqlColumn>>& schema) {
  for (sqlite3_stmt* s : insert_) sqlite3_finalize(s);
  for (sqlite3_stmt* s : trim_) sqlite3_finalize(s);
  sqlite3_finalize(query_);
  insert_.assign(tables_.size(), nullptr);
  trim_.assign(tables_.size(), nullptr);
  loaded_.assign(tables_.size(), 0);
  query_ = nullptr;
  defined_ = false;
  for (std::size_t t = 0; t < tables_.size(); ++t) {
    const std::string name = QuoteSqlName(tables_[t]);
    std::string cols, names = "rowid", marks = "?";
    for (const SqlColumn& c : schema[t]) {
      cols += fmt::format("{}{} {}", cols.empty() ? "" : ", ", QuoteSqlName(c.name), c.type);
      names += ", " + QuoteSqlName(c.name);
      marks += ", ?";
    }
    if (cols.empty()) cols = "\"_\"";  // a table of rows with no fields
    const std::string ddl = fmt::format("DROP TABLE IF EXISTS {0}; CREATE TABLE {0} ({1})", name, cols);
    if (sqlite3_exec(db_, ddl.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) {
      return Error(fmt::format("input '{}'", tables_[t]));
    }
    // Row i of a run is rowid i + 1, replacing the last run's; the rest of a longer run is trimmed.
    const std::string ins = fmt::format("INSERT OR REPLACE INTO {} ({}) VALUES ({})", name, names, marks);
    const std::string trim = fmt::format("DELETE FROM {} WHERE rowid > ?", name);
    if (sqlite3_prepare_v2(db_, ins.c_str(), -1, &insert_[t], nullptr) != SQLITE_OK ||
        sqlite3_prepare_v2(db_, trim.c_str(), -1, &trim_[t], nullptr) != SQLITE_OK) {
      return Error(fmt::format("input '{}'", tables_[t]));
    }
  }
  Result<sqlite3_stmt*> q = PrepareUserQuery(db_, text_);
  if (!q.ok()) return q.status();
  query_ = *q;
  const int ncol = sqlite3_column_count(query_);
  names_.assign(static_cast<std::size_t>(ncol), "");
  for (int c = 0; c < ncol; ++c) {
    const char* name = sqlite3_column_name(query_, c);
    names_[static_cast<std::size_t>(c)] = name ? name : fmt::format("EXPR${}", c);
    for (int d = 0; d < c; ++d) {
      if (names_[static_cast<std::size_t>(d)] == names_[static_cast<std::size_t>(c)]) {
        return InvalidArgument(fmt::format("the query's result has two columns named '{}'; name them apart with AS",
                                           names_[static_cast<std::size_t>(c)]));
      }
    }
  }
  // A comparison or logic in the select list is BOOLEAN in Calcite; SQLite computes 0/1.
  as_bool_ = booleans_.size() == names_.size() ? booleans_ : std::vector<bool>(names_.size(), false);
  schema_ = schema;
  defined_ = true;
  return Status::OK();
}

Status SqlQuery::Run(const std::vector<std::vector<const Row*>>& inputs, std::vector<Row>& out) {
  if (inputs.size() != tables_.size()) return Internal("SQL query: input count differs from its tables");
  int64_t rows = 0;
  bool fits = defined_;
  for (std::size_t t = 0; t < tables_.size(); ++t) {
    rows += static_cast<int64_t>(inputs[t].size());
    fits = fits && SqlRowsFit(inputs[t], schema_[t]);
  }
  // The budget covers the whole run: loading the rows (the progress handler counts inserts too)
  // and the query.
  steps_ = 0;
  budget_ = kSqlBaseBudget + kSqlBudgetPerRow * rows;
  if (!fits) {
    std::vector<std::vector<SqlColumn>> schema(tables_.size());
    for (std::size_t t = 0; t < tables_.size(); ++t) {
      ASSIGN_OR_RETURN(schema[t], SqlColumnsOf(inputs[t]));
    }
    if (!defined_ || schema != schema_) RETURN_IF_ERROR(Define(schema));
  }
  for (std::size_t t = 0; t < tables_.size(); ++t) {
    sqlite3_stmt* ins = insert_[t];
    int64_t rowid = 0;
    for (const Row* row : inputs[t]) {
      sqlite3_bind_int64(ins, 1, ++rowid);
      const std::vector<Field>& fields = row->fields();
      for (std::size_t c = 0; c < schema_[t].size(); ++c) {
        static const Value kMissing;
        // The row's own fields in the table's order when they are (SqlRowsFit), else by name.
        const Value* v = c < fields.size() && fields[c].name == schema_[t][c].name ? &fields[c].value
                                                                                   : row->Find(schema_[t][c].name);
        // Bound without a copy (SQLITE_STATIC): the row's own value, alive until the step below.
        if (SqlBind(ins, static_cast<int>(c) + 2, v != nullptr ? *v : kMissing) != SQLITE_OK) return Error("reading a row");
      }
      const int rc = sqlite3_step(ins);
      sqlite3_reset(ins);
      sqlite3_clear_bindings(ins);
      if (rc != SQLITE_DONE) return Error("reading a row");
    }
    if (loaded_[t] > rowid) {
      sqlite3_bind_int64(trim_[t], 1, rowid);
      const int rc = sqlite3_step(trim_[t]);
      sqlite3_reset(trim_[t]);
      if (rc != SQLITE_DONE) return Error("clearing the input");
    }
    loaded_[t] = rowid;
  }
  const int ncol = static_cast<int>(names_.size());
  int rc;
  while ((rc = sqlite3_step(query_)) == SQLITE_ROW) {
    Row& r = out.emplace_back();
    r.Reserve(static_cast<std::size_t>(ncol));
    for (int c = 0; c < ncol; ++c) r.Append(names_[static_cast<std::size_t>(c)], SqlColumnValue(query_, c, as_bool_[static_cast<std::size_t>(c)]));
  }
  Status st = rc == SQLITE_DONE ? Status::OK() : Error("running the query");
  sqlite3_reset(query_);
  return st;
}

SqlQueryPool::Lease::~Lease() {
  if (pool_ == nullptr || q_ == nullptr) return;
  std::lock_guard<std::mutex> lock(pool_->mu_);
  pool_->idle_.push_back(std::move(q_));
}

Result<SqlQueryPool::Lease> SqlQueryPool::Take() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!idle_.empty()) {
      std::unique_ptr<SqlQuery> q = std::move(idle_.back());
      idle_.pop_back();
      return Lease(this, std::move(q));
    }
  }
  ASSIGN_OR_RETURN(std::unique_ptr<SqlQuery> q, SqlQuery::Make(text_, tables_));
  return Lease(this, std::move(q));
}

}  // namespace dfw::stages_internal
