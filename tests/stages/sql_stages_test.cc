// The Sql transform and language: sql on Filter and MapToFields as stages. Expected rows are those
// of Beam's own tests (sql.yaml, filter.yaml, maptofields.yaml), or, where Beam has none, what
// python3's sqlite3 gives for the same query.
#include <gmock/gmock.h>

#include "dfw/stages/sql.h"
#include "stages_test_util.h"

namespace dfw {
namespace sql_stages_test {

using ::testing::HasSubstr;
using testing::JsonRow;
using testing::MakeConfig;
using testing::RunStage;

RowBatch SqlYamlRows() {  // Beam's sql.yaml Create
  RowBatch rows;
  for (auto [a, b] : std::vector<std::pair<const char*, int64_t>>{{"x", 1}, {"x", 2}, {"x", 3}, {"y", 10}}) {
    rows.push_back(JsonRow({{"a", Value::String(a)}, {"b", Value::Int(b)}}));
  }
  return rows;
}

std::vector<std::string> Json(const RowBatch& rows) {
  std::vector<std::string> out;
  for (const Row& r : rows) out.push_back(r.ToJson());
  return out;
}

Result<testing::Outputs> RunSql(const StageConfig& c, RowBatch rows) {
  ASSIGN_OR_RETURN(std::unique_ptr<Stage> stage, testing::MakeStage(c));
  return RunStage(*stage, c, std::move(rows));
}

TEST(Sql, ARowWiseQueryRunsPerRowAsBeamsFilteringPipeline) {
  StageConfig c = MakeConfig("Sql", "{query: 'SELECT * FROM PCOLLECTION WHERE b > 2'}");
  Result<testing::Outputs> out = RunSql(c, SqlYamlRows());
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_THAT(Json(out->main), ::testing::ElementsAre(R"({"a":"x","b":3})", R"({"a":"y","b":10})"));
  EXPECT_EQ(out->filtered, 2);
}

TEST(Sql, ZetaSqlCastToStringAsBeamsDialectPipeline) {
  StageConfig c = MakeConfig("Sql", "{dialect: zetasql, query: 'SELECT a, cast(b AS STRING) as s FROM PCOLLECTION'}");
  Result<testing::Outputs> out = RunSql(c, SqlYamlRows());
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_THAT(Json(out->main), ::testing::ElementsAre(R"({"a":"x","s":"1"})", R"({"a":"x","s":"2"})",
                                                      R"({"a":"x","s":"3"})", R"({"a":"y","s":"10"})"));
}

TEST(Sql, AGroupingQueryIsThreeStepsAroundCombinesShuffle) {
  StageConfig c = MakeConfig("Sql", "{query: 'SELECT a, sum(b) as s FROM PCOLLECTION GROUP BY a'}");
  Result<std::vector<SqlStep>> steps = SqlShuffleSteps(c);
  ASSERT_TRUE(steps.ok()) << steps.status().ToString();
  ASSERT_EQ(steps->size(), 3u);
  EXPECT_EQ((*steps)[0].config.type, kSqlPackType);
  EXPECT_EQ((*steps)[1].config.type, "Combine");
  EXPECT_EQ((*steps)[2].config.type, kSqlRunType);
  EXPECT_EQ((*steps)[2].config.name, "Sql");
  EXPECT_EQ((*steps)[0].inputs, std::vector<int>{-1});
  EXPECT_EQ((*steps)[1].inputs, std::vector<int>{0});
  EXPECT_EQ((*steps)[2].inputs, std::vector<int>{1});
  // The steps in turn, the Combine's merge output made by hand: one row of every [input, row].
  Result<testing::Outputs> packed = RunSql((*steps)[0].config, SqlYamlRows());
  ASSERT_TRUE(packed.ok()) << packed.status().ToString();
  List items;
  for (const Row& p : packed->main) items.push_back(p.fields()[0].value);
  RowBatch gathered = {JsonRow({{"__sql_items", Value::FromList(items)}})};
  Result<testing::Outputs> out = RunSql((*steps)[2].config, std::move(gathered));
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  // Beam's sql.yaml "Grouping": {a: x, s: 6}, {a: y, s: 10} (in any order).
  EXPECT_THAT(Json(out->main), ::testing::UnorderedElementsAre(R"({"a":"x","s":6})", R"({"a":"y","s":10})"));
  // A row-wise query has no steps; the stage made from a grouping query refuses to run per row.
  EXPECT_TRUE(SqlShuffleSteps(MakeConfig("Sql", "{query: 'SELECT a FROM PCOLLECTION'}"))->empty());
  EXPECT_EQ(testing::MakeStage(c).status().code(), StatusCode::kFailedPrecondition);
}

TEST(Sql, SeveralInputsAreTablesNamedByTheirTagsAndJoinInOnePlace) {
  StageConfig c = MakeConfig("Sql", "{query: 'SELECT o.id, u.name FROM orders o JOIN users u ON o.uid = u.uid ORDER BY o.id'}");
  c.input_names = {"orders", "users"};
  Result<std::vector<SqlStep>> steps = SqlShuffleSteps(c);
  ASSERT_TRUE(steps.ok()) << steps.status().ToString();
  ASSERT_EQ(steps->size(), 4u);  // a Pack per input, the Gather, the run
  EXPECT_EQ((*steps)[0].config.name, "Sql/Pack[orders]");
  EXPECT_EQ((*steps)[1].inputs, std::vector<int>{-2});
  EXPECT_EQ((*steps)[2].inputs, (std::vector<int>{0, 1}));
  EXPECT_TRUE((*steps)[3].config.input_names.empty());
  List items;
  RowBatch orders = {JsonRow({{"id", Value::Int(1)}, {"uid", Value::Int(7)}}), JsonRow({{"id", Value::Int(2)}, {"uid", Value::Int(8)}}),
                     JsonRow({{"id", Value::Int(3)}, {"uid", Value::Int(7)}})};
  RowBatch users = {JsonRow({{"uid", Value::Int(7)}, {"name", Value::String("ann")}})};
  for (int k = 0; k < 2; ++k) {
    Result<testing::Outputs> packed = RunSql((*steps)[static_cast<std::size_t>(k)].config, k == 0 ? orders : users);
    ASSERT_TRUE(packed.ok()) << packed.status().ToString();
    for (const Row& p : packed->main) items.push_back(p.fields()[0].value);
  }
  Result<testing::Outputs> out = RunSql((*steps)[3].config, {JsonRow({{"__sql_items", Value::FromList(items)}})});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  // python3 sqlite3, the same tables and query: [(1, 'ann'), (3, 'ann')].
  EXPECT_THAT(Json(out->main), ::testing::ElementsAre(R"({"id":1,"name":"ann"})", R"({"id":3,"name":"ann"})"));
  // The tags are the only tables: PCOLLECTION is not one of them.
  c.config = ConfigNodeFromYaml(YAML::Load("{query: 'SELECT * FROM PCOLLECTION'}"));
  EXPECT_THAT(SqlShuffleSteps(c).status().message(), HasSubstr("no such table: PCOLLECTION"));
}

TEST(Sql, LoadErrorsNameTheQuerysPlace) {
  StageConfig c = MakeConfig("Sql", "{query: 'SELECT nope(a) FROM PCOLLECTION'}");
  Status st = testing::MakeStage(c).status();
  EXPECT_THAT(st.message(), HasSubstr("t.yaml:1:"));
  EXPECT_THAT(st.message(), HasSubstr("no such function: nope"));
  EXPECT_THAT(testing::MakeStage(MakeConfig("Sql", "{query: 'SELECT 1', dialect: mysql}")).status().message(),
              HasSubstr("unknown dialect 'mysql'"));
}

TEST(SqlFilter, KeepsRowsAsBeamsFilterYaml) {
  // Beam's filter.yaml, "Simple Filter using SQL".
  auto row = [](const char* id, const char* category, double price) {
    return JsonRow({{"transaction_id", Value::String(id)}, {"category", Value::String(category)}, {"price", Value::Float(price)}});
  };
  RowBatch rows = {row("T0012", "Electronics", 59.99), row("T5034", "Apparel", 109.99), row("T0024", "Kitchen", 29.9),
                   row("T0104", "Electronics", 59.99), row("T0302", "Electronics", 249.99)};
  StageConfig c = MakeConfig("Filter", "{language: sql, keep: \"category = 'Electronics' and price < 100\"}");
  Result<testing::Outputs> out = RunSql(c, std::move(rows));
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ(out->main.size(), 2u);
  EXPECT_EQ(out->main[0].Find("transaction_id")->as_string(), "T0012");
  EXPECT_EQ(out->main[1].Find("transaction_id")->as_string(), "T0104");
  EXPECT_EQ(out->filtered, 3);
}

TEST(SqlFilter, ARowSQLCannotReadGoesToTheErrorOutput) {
  StageConfig c = MakeConfig("Filter", "{language: sql, keep: 'b > 1'}", "errors");
  RowBatch rows = {JsonRow({{"b", Value::Int(2)}}), JsonRow({{"b", Value::FromList({Value::Int(1)})}}),
                   JsonRow({{"c", Value::Int(5)}}), JsonRow({{"b", Value::Int(0)}})};
  Result<testing::Outputs> out = RunSql(c, std::move(rows));
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->main.size(), 1u);
  EXPECT_EQ(out->filtered, 1);
  ASSERT_EQ(out->errors.size(), 2u);
  EXPECT_THAT(out->errors[0].Find("msg")->as_string(), HasSubstr("field 'b' is a list"));
  EXPECT_THAT(out->errors[1].Find("msg")->as_string(), HasSubstr("no such column: b"));
}

TEST(SqlFilter, AnAggregateIsRefusedAtLoad) {
  Status st = testing::MakeStage(MakeConfig("Filter", "{language: sql, keep: 'b > (SELECT avg(b) FROM PCOLLECTION)'}")).status();
  EXPECT_EQ(st.code(), StatusCode::kUnimplemented);
  EXPECT_THAT(st.message(), HasSubstr("use a Sql transform"));
}

TEST(SqlMapToFields, AppendDropAndBackquotedNamesAsBeamsMapToFieldsYaml) {
  // Beam's maptofields.yaml, second pipeline: {label, rank} -> {label, timestamp: rank}.
  StageConfig c = MakeConfig("MapToFields", "{language: sql, append: true, drop: [rank], fields: {timestamp: '`rank`'}}");
  RowBatch rows;
  for (auto [label, rank] : std::vector<std::pair<const char*, int64_t>>{{"11a", 0}, {"37a", 1}, {"389a", 2}}) {
    rows.push_back(JsonRow({{"label", Value::String(label)}, {"rank", Value::Int(rank)}}));
  }
  Result<testing::Outputs> out = RunSql(c, std::move(rows));
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_THAT(Json(out->main), ::testing::ElementsAre(R"({"label":"11a","timestamp":0})", R"({"label":"37a","timestamp":1})",
                                                      R"({"label":"389a","timestamp":2})"));
}

TEST(SqlMapToFields, ComparisonsComeBackAsBooleansAndOtherValuesAsSQLiteGivesThem) {
  // python3 sqlite3: SELECT upper(s), b / 2, b * 1.5, b > 1 -> ('AB', 1, 3.0, 1); Calcite types b > 1 BOOLEAN.
  StageConfig c = MakeConfig("MapToFields", "{language: sql, fields: {u: 'upper(s)', h: 'b / 2', f: 'b * 1.5', big: 'b > 1'}}");
  Result<testing::Outputs> out = RunSql(c, {JsonRow({{"s", Value::String("ab")}, {"b", Value::Int(2)}})});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ(out->main.size(), 1u);
  EXPECT_EQ(out->main[0].ToJson(), R"({"u":"AB","h":1,"f":3.0,"big":true})");
}

TEST(SqlMapToFields, EachBadFieldIsALoadErrorNamingIt) {
  Status st = testing::MakeStage(MakeConfig("MapToFields", "{language: sql, fields: {ok: 'b', bad: 'b +'}}")).status();
  EXPECT_THAT(st.message(), HasSubstr("fields.bad"));
  Status two = testing::MakeStage(MakeConfig("MapToFields", "{language: sql, fields: {two: '1), (2'}}")).status();
  EXPECT_THAT(two.message(), HasSubstr("gives 2 columns, not 1"));
  Status agg = testing::MakeStage(MakeConfig("MapToFields", "{language: sql, fields: {s: 'sum(b)'}}")).status();
  EXPECT_EQ(agg.code(), StatusCode::kUnimplemented);
}

}  // namespace sql_stages_test
}  // namespace dfw
