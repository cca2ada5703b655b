// SQL from arbitrary bytes: the first line is a query (or an expression), the rest makes rows.
// The query goes through what the Sql transform does at load (TranslateSql, CheckSqlQuery) and,
// when it loads, runs over the rows as a whole-input query; the same text is a Filter `keep` and a
// MapToFields field with language: sql, made and run over the rows as those stages do. Any
// outcome but a crash, a hang, a leak or a sanitizer report is fine: the limits (length, depth,
// steps, heap) must stop hostile queries with an error.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "stages/sql_engine.h"
#include "stages/sql_stages.h"

namespace {

using dfw::ConfigNode;
using dfw::Row;
using dfw::Value;

// Up to 16 rows from the bytes after the query: each byte picks a value of one of five fields.
std::vector<Row> RowsFrom(std::string_view bytes) {
  std::vector<Row> rows;
  for (std::size_t i = 0; i < bytes.size() && rows.size() < 16; i += 4) {
    Row r;
    const auto b = [&](std::size_t k) { return static_cast<unsigned char>(i + k < bytes.size() ? bytes[i + k] : 0); };
    r.Append("a", b(0) % 7 == 0 ? Value() : Value::Int(static_cast<int64_t>(b(0)) - 128));
    r.Append("b", Value::Float(static_cast<double>(b(1)) / 3.0));
    r.Append("s", Value::String(std::string(bytes.substr(i, 3))));
    if (b(2) % 3 != 0) r.Append("ok", Value::Bool(b(2) % 2 == 0));
    if (b(3) % 5 == 0) r.Append("xs", Value::FromList({Value::Int(b(3))}));  // SQL refuses lists: an error path
    rows.push_back(std::move(r));
  }
  return rows;
}

void RunStage(const dfw::StageConfig& c, dfw::Result<std::unique_ptr<dfw::Stage>> made, const std::vector<Row>& rows) {
  if (!made.ok()) return;
  dfw::RowBatch batch(rows.begin(), rows.end());
  dfw::StageOutput out(&c);
  (void)(*made)->Process(batch, out);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 8192) return 0;  // the per-query limits, not the fuzzer's time, are under test
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  const std::size_t nl = in.find('\n');
  const std::string query(in.substr(0, nl));
  const std::vector<Row> rows = RowsFrom(nl == std::string_view::npos ? std::string_view() : in.substr(nl + 1));

  auto text = dfw::stages_internal::TranslateSql(query);
  if (text.ok()) {
    (void)dfw::stages_internal::SqlLooksBoolean(query);
    auto check = dfw::stages_internal::CheckSqlQuery(*text, {dfw::stages_internal::kSqlInputTable});
    if (check.ok()) {
      auto q = dfw::stages_internal::SqlQuery::Make(text->sqlite, {dfw::stages_internal::kSqlInputTable});
      if (q.ok()) {
        std::vector<std::vector<const Row*>> inputs(1);
        for (const Row& r : rows) inputs[0].push_back(&r);
        std::vector<Row> out;
        (void)(*q)->Run(inputs, out);
      }
    }
  }

  dfw::StageConfig filter;
  filter.name = filter.type = "Filter";
  filter.file = "fuzz.yaml";
  filter.error_output = "errors";
  filter.config = ConfigNode::Map();
  filter.config.Set("language", ConfigNode::Scalar("sql"));
  filter.config.Set("keep", ConfigNode::Scalar(query));
  RunStage(filter, dfw::stages_internal::MakeSqlFilter(filter), rows);

  dfw::StageConfig map = filter;
  map.name = map.type = "MapToFields";
  map.config = ConfigNode::Map();
  map.config.Set("language", ConfigNode::Scalar("sql"));
  map.config.Set("append", ConfigNode::Scalar("true"));
  ConfigNode fields = ConfigNode::Map();
  fields.Set("out", ConfigNode::Scalar(query));
  map.config.Set("fields", std::move(fields));
  RunStage(map, dfw::stages_internal::MakeSqlMapToFields(map), rows);
  return 0;
}
