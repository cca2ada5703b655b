// The SQL engine under the Sql transform: Calcite text as SQLite's, the load-time check and what
// rows a query needs, and running a query over rows (values both ways, limits). Expected results
// were computed by running the same queries in python3's sqlite3 (the reference for SQLite's own
// semantics), or come from Beam's sql.yaml where they are Beam's.
#include <gmock/gmock.h>

#include "stages/sql_engine.h"
#include "stages_test_util.h"

namespace dfw::stages_internal {
namespace sql_engine_test {

using ::testing::HasSubstr;
using testing::JsonRow;

TEST(TranslateSql, MapsCastTypesAndLeavesLiteralsAndAliasesAlone) {
  Result<SqlText> t = TranslateSql("SELECT cast(b AS STRING) AS string, 'AS STRING' AS s, `rank` FROM PCOLLECTION");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->sqlite, "SELECT cast(b AS TEXT) AS string, 'AS STRING' AS s, `rank` FROM PCOLLECTION");
  EXPECT_THAT(t->words, ::testing::Contains("rank"));
  EXPECT_THAT(t->words, ::testing::Contains("b"));
  Result<SqlText> nested = TranslateSql("SELECT CAST((b + 1) AS DOUBLE), CAST(CAST(b AS VARCHAR(3)) AS BIGINT) FROM t");
  ASSERT_TRUE(nested.ok());
  EXPECT_EQ(nested->sqlite, "SELECT CAST((b + 1) AS REAL), CAST(CAST(b AS TEXT(3)) AS INTEGER) FROM t");
  Result<SqlText> fn = TranslateSql("SELECT CHAR_LENGTH (a) FROM t");
  ASSERT_TRUE(fn.ok());
  EXPECT_EQ(fn->sqlite, "SELECT length (a) FROM t");
}

TEST(TranslateSql, RefusesWhatSQLiteCannotHoldAndUnterminatedText) {
  Result<SqlText> date = TranslateSql("SELECT CAST(a AS DATE) FROM t");
  EXPECT_EQ(date.status().code(), StatusCode::kUnimplemented);
  EXPECT_THAT(date.status().message(), HasSubstr("CAST to DATE"));
  EXPECT_EQ(TranslateSql("SELECT 'open").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(TranslateSql("SELECT `open").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(TranslateSql("SELECT 1 /* open").status().code(), StatusCode::kInvalidArgument);
}

struct ShapeCase {
  const char* query;
  SqlShape shape;
};

TEST(CheckSqlQuery, TellsRowWiseQueriesFromThoseThatNeedEveryRow) {
  const ShapeCase cases[] = {
      {"SELECT * FROM PCOLLECTION WHERE b > 2", SqlShape::kRowWise},
      {"SELECT a, cast(b AS STRING) AS s FROM PCOLLECTION", SqlShape::kRowWise},
      {"SELECT a || 'x' AS c FROM PCOLLECTION WHERE a LIKE 'x%' AND b IN (1, 2)", SqlShape::kRowWise},
      {"SELECT a, sum(b) AS s FROM PCOLLECTION GROUP BY a", SqlShape::kWholeInput},
      {"SELECT count(*) AS n FROM PCOLLECTION", SqlShape::kWholeInput},
      {"SELECT DISTINCT a FROM PCOLLECTION", SqlShape::kWholeInput},
      {"SELECT a FROM PCOLLECTION ORDER BY b", SqlShape::kWholeInput},
      {"SELECT a FROM PCOLLECTION LIMIT 2", SqlShape::kWholeInput},
      {"SELECT a FROM PCOLLECTION WHERE b > (SELECT avg(b) FROM PCOLLECTION)", SqlShape::kWholeInput},
      {"SELECT x.a FROM PCOLLECTION x JOIN PCOLLECTION y ON x.a = y.a", SqlShape::kWholeInput},
      {"SELECT 1 AS one", SqlShape::kWholeInput},
  };
  for (const ShapeCase& c : cases) {
    Result<SqlText> t = TranslateSql(c.query);
    ASSERT_TRUE(t.ok()) << c.query;
    Result<SqlCheck> check = CheckSqlQuery(*t, {kSqlInputTable});
    ASSERT_TRUE(check.ok()) << c.query << ": " << check.status().ToString();
    EXPECT_EQ(check->shape, c.shape) << c.query;
  }
}

TEST(CheckSqlQuery, SyntaxFunctionsTablesAndWritesAreLoadErrors) {
  const std::pair<const char*, const char*> cases[] = {
      {"SELECT a FROM PCOLLECTION WHERE", "incomplete input"},
      {"SELECT frobnicate(a) FROM PCOLLECTION", "no such function: frobnicate"},
      {"SELECT * FROM elsewhere", "no such table: elsewhere"},
      {"DELETE FROM PCOLLECTION", "may only read"},
      {"SELECT 1; SELECT 2", "more than one statement"},
      {"ATTACH ':memory:' AS other", "may only read"},
      {"PRAGMA case_sensitive_like = OFF", "may only read"},
  };
  for (const auto& [query, fragment] : cases) {
    Result<SqlText> t = TranslateSql(query);
    ASSERT_TRUE(t.ok()) << query;
    Result<SqlCheck> check = CheckSqlQuery(*t, {kSqlInputTable});
    ASSERT_FALSE(check.ok()) << query;
    EXPECT_THAT(check.status().message(), HasSubstr(fragment)) << query;
  }
}

TEST(SqlLooksBoolean, ComparisonsAndLogicAtTheTopLevelOnly) {
  EXPECT_TRUE(SqlLooksBoolean("price > 100"));
  EXPECT_TRUE(SqlLooksBoolean("(a = 'x') AND b <> 2"));
  EXPECT_TRUE(SqlLooksBoolean(" (b IS NULL) "));
  EXPECT_TRUE(SqlLooksBoolean("label LIKE '1%'"));
  EXPECT_FALSE(SqlLooksBoolean("label"));
  EXPECT_FALSE(SqlLooksBoolean("CASE WHEN b > 1 THEN 'big' ELSE 'small' END"));
  EXPECT_FALSE(SqlLooksBoolean("coalesce(b > 1, 0) + 1"));
  EXPECT_FALSE(SqlLooksBoolean("'a = b'"));
  EXPECT_FALSE(SqlLooksBoolean("b << 2"));
}

TEST(SqlSelectBooleans, EachSelectListItemOfTheOutermostSelect) {
  EXPECT_EQ(SqlSelectBooleans("SELECT a, b > 1 AS big, count(*) FROM t GROUP BY a"), (std::vector<bool>{false, true, false}));
  EXPECT_EQ(SqlSelectBooleans("SELECT DISTINCT (a = 'x'), CASE WHEN b > 1 THEN 1 END FROM t"), (std::vector<bool>{true, false}));
  EXPECT_EQ(SqlSelectBooleans("WITH c AS (SELECT b > 1 AS x FROM t) SELECT x, x IS NULL FROM c"), (std::vector<bool>{false, true}));
  EXPECT_EQ(SqlSelectBooleans("SELECT f(a, b) <> 0, 'a, b' FROM t"), (std::vector<bool>{true, false}));
  EXPECT_TRUE(SqlSelectBooleans("SELECT * FROM t").empty());
  EXPECT_TRUE(SqlSelectBooleans("SELECT t.*, a > 1 FROM t").empty());
  EXPECT_TRUE(SqlSelectBooleans("VALUES (1)").empty());
}

Result<std::vector<Row>> RunQuery(const std::string& query, const std::vector<Row>& rows) {
  ASSIGN_OR_RETURN(SqlText text, TranslateSql(query));
  ASSIGN_OR_RETURN(std::unique_ptr<SqlQuery> q, SqlQuery::Make(text.sqlite, {kSqlInputTable}));
  std::vector<std::vector<const Row*>> inputs(1);
  for (const Row& r : rows) inputs[0].push_back(&r);
  std::vector<Row> out;
  RETURN_IF_ERROR(q->Run(inputs, out));
  return out;
}

TEST(SqlQuery, GroupsAsBeamsSqlYamlDoes) {
  // Beam's sql.yaml, "Grouping": {a: x, s: 6}, {a: y, s: 10}.
  std::vector<Row> rows;
  for (auto [a, b] : std::vector<std::pair<const char*, int64_t>>{{"x", 1}, {"x", 2}, {"x", 3}, {"y", 10}}) {
    rows.push_back(JsonRow({{"a", Value::String(a)}, {"b", Value::Int(b)}}));
  }
  Result<std::vector<Row>> out = RunQuery("SELECT a, sum(b) as s FROM PCOLLECTION GROUP BY a ORDER BY a", rows);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ(out->size(), 2u);
  EXPECT_EQ((*out)[0].ToJson(), R"({"a":"x","s":6})");
  EXPECT_EQ((*out)[1].ToJson(), R"({"a":"y","s":10})");
}

TEST(SqlQuery, ComparisonsInTheSelectListComeBackAsBooleans) {
  // python3 sqlite3 gives (1, 0, 2) for the three columns; Calcite types the first two BOOLEAN.
  std::vector<Row> rows = {JsonRow({{"b", Value::Int(2)}})};
  Result<std::vector<Row>> out = RunQuery("SELECT b > 1 AS big, NOT (b > 1) AS small, b FROM PCOLLECTION", rows);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ(out->size(), 1u);
  EXPECT_EQ((*out)[0].ToJson(), R"({"big":true,"small":false,"b":2})");
}

TEST(SqlQuery, ValuesKeepTheirTypesBothWays) {
  Row r = JsonRow({{"s", Value::String("it's")}, {"i", Value::Int(-7)}, {"f", Value::Float(2.5)}, {"ok", Value::Bool(true)},
                   {"n", Value()}, {"long", Value::String(std::string(100, 'z'))},
                   {"t", Value::Timestamp(1'700'000'000'000'000)}, {"raw", Value::Bytes(std::string("\0x", 2))}});
  Result<std::vector<Row>> out = RunQuery("SELECT * FROM PCOLLECTION", {r});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ(out->size(), 1u);
  EXPECT_EQ((*out)[0], r) << (*out)[0].ToJson() << " vs " << r.ToJson();
  EXPECT_TRUE((*out)[0].Find("ok")->is_bool());
  EXPECT_TRUE((*out)[0].Find("t")->is_timestamp());
  EXPECT_TRUE((*out)[0].Find("raw")->is_bytes());
}

TEST(SqlQuery, ColumnsAreTheUnionOfTheRowsFieldsAndMissingOnesAreNull) {
  std::vector<Row> rows = {JsonRow({{"a", Value::Int(1)}}), JsonRow({{"b", Value::String("x")}})};
  Result<std::vector<Row>> out = RunQuery("SELECT a, b FROM PCOLLECTION", rows);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ(out->size(), 2u);
  EXPECT_EQ((*out)[0].ToJson(), R"({"a":1,"b":null})");
  EXPECT_EQ((*out)[1].ToJson(), R"({"a":null,"b":"x"})");
}

TEST(SqlQuery, ListFieldsUnknownColumnsAndDuplicateNamesAreErrors) {
  Row listy = JsonRow({{"a", Value::FromList({Value::Int(1)})}});
  EXPECT_THAT(RunQuery("SELECT 1 FROM PCOLLECTION", {listy}).status().message(), HasSubstr("field 'a' is a list"));
  Row plain = JsonRow({{"a", Value::Int(1)}});
  EXPECT_THAT(RunQuery("SELECT nosuch FROM PCOLLECTION", {plain}).status().message(), HasSubstr("no such column: nosuch"));
  EXPECT_THAT(RunQuery("SELECT a, a FROM PCOLLECTION", {plain}).status().message(), HasSubstr("two columns named 'a'"));
}

TEST(SqlQuery, ARunawayQueryStopsAtItsBudget) {
  Row plain = JsonRow({{"a", Value::Int(1)}});
  Result<std::vector<Row>> out = RunQuery(
      "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) AS n FROM c, PCOLLECTION", {plain});
  EXPECT_THAT(out.status().message(), HasSubstr("ran past its budget"));
}

TEST(SqlQuery, TheBudgetGrowsWithTheRowsLoaded) {
  std::vector<Row> rows;
  for (int i = 0; i < 5000; ++i) rows.push_back(JsonRow({{"k", Value::Int(i % 3)}}));
  Result<std::vector<Row>> out = RunQuery("SELECT count(*) AS n FROM PCOLLECTION", rows);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ(out->size(), 1u);
  EXPECT_EQ((*out)[0].ToJson(), R"({"n":5000})");
}

TEST(SqlQuery, StringsLongerThanTheLimitAreRefused) {
  Row plain = JsonRow({{"a", Value::Int(1)}});
  Result<std::vector<Row>> out = RunQuery("SELECT zeroblob(100000000) AS z FROM PCOLLECTION", {plain});
  EXPECT_THAT(out.status().message(), HasSubstr("too big"));
}

TEST(SqlQuery, OneConnectionFollowsRowsWhoseColumnsChange) {
  Result<std::unique_ptr<SqlQuery>> q = SqlQuery::Make("SELECT * FROM PCOLLECTION", {kSqlInputTable});
  ASSERT_TRUE(q.ok());
  const Row first = JsonRow({{"a", Value::Int(1)}});
  const Row second = JsonRow({{"a", Value::Int(2)}});
  const Row other = JsonRow({{"b", Value::String("x")}, {"a", Value::Float(0.5)}});
  std::vector<Row> out;
  for (const Row* r : {&first, &second, &other}) {
    ASSERT_TRUE((*q)->Run({{r}}, out).ok());
  }
  ASSERT_EQ(out.size(), 3u);  // one row each: the table was emptied between runs
  EXPECT_EQ(out[1].ToJson(), R"({"a":2})");
  EXPECT_EQ(out[2].ToJson(), R"({"b":"x","a":0.5})");
  // Three rows, then one (with a NULL where a string was): the second run sees only its own row.
  const Row third = JsonRow({{"b", Value()}, {"a", Value::Float(1.5)}});
  out.clear();
  ASSERT_TRUE((*q)->Run({{&other, &other, &other}}, out).ok());
  ASSERT_TRUE((*q)->Run({{&third}}, out).ok());
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[3].ToJson(), R"({"b":null,"a":1.5})");
}

}  // namespace sql_engine_test
}  // namespace dfw::stages_internal
