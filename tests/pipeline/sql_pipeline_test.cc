// Sql through the loader and fused stages in one process (RunAllBundles): a query over every row
// gathered through Combine's shuffle from many bundles, a join of two tagged inputs, and the
// row-wise forms in a chain. Expected figures are computed here from the input (the same sums a
// GROUP BY gives), or are what python3's sqlite3 gives for the same query and rows.
#include <gmock/gmock.h>

#include <map>

#include <fmt/format.h>

#include "dfw/pipeline/fused_stages.h"
#include "pipeline_test_util.h"

namespace dfw {
namespace sql_pipeline_test {

using ::testing::HasSubstr;
using testing::RunCollect;
using testing::TempDir;

TEST(SqlPipeline, AGroupByOverManyBundlesSeesEveryRowOnce) {
  TempDir dir;
  std::string text;
  std::map<int, std::pair<int64_t, int64_t>> expected;  // key -> (sum, count)
  for (int i = 0; i < 3000; ++i) {
    const int key = (i * 7919) % 37;
    const int v = i % 11;
    text += fmt::format("{{\"key\": {}, \"v\": {}}}\n", key, v);
    expected[key].first += v;
    expected[key].second += 1;
  }
  testing::WriteFile(dir / "in.jsonl", text);
  RunnerOptions options;
  options.bundle_bytes = 4096;  // about 15 bundles
  options.sdk_processes = 3;
  options.threads = 2;
  auto rows = RunCollect(fmt::format(R"(
pipeline:
  type: chain
  transforms:
    - type: ReadFromJson
      config: {{path: '{}'}}
    - type: Sql
      name: Totals
      config:
        query: "SELECT key, sum(v) AS total, count(*) AS n FROM PCOLLECTION GROUP BY key"
    - type: TestCollect
      name: Out
)",
                                     dir / "in.jsonl"),
                         options);
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  std::vector<std::string> want;
  for (const auto& [key, sn] : expected) want.push_back(fmt::format(R"({{"key":{},"total":{},"n":{}}})", key, sn.first, sn.second));
  std::sort(want.begin(), want.end());
  EXPECT_EQ(*rows, want);
}

TEST(SqlPipeline, TaggedInputsAreTablesOfOneQuery) {
  auto rows = RunCollect(R"(
pipeline:
  transforms:
    - type: Create
      name: Orders
      config: {elements: [{id: 1, uid: 7, amount: 2.5}, {id: 2, uid: 8, amount: 1.0}, {id: 3, uid: 7, amount: 4.0}]}
    - type: Create
      name: Users
      config: {elements: [{uid: 7, name: ann}, {uid: 8, name: bob}, {uid: 9, name: cy}]}
    - type: Sql
      input: {orders: Orders, users: Users}
      config:
        query: >-
          SELECT u.name, count(o.id) AS n, sum(o.amount) AS total
          FROM users u LEFT JOIN orders o ON o.uid = u.uid GROUP BY u.name
    - type: TestCollect
      name: Out
      input: Sql
)");
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  // python3 sqlite3, the same rows and query: [('ann', 2, 6.5), ('bob', 1, 1.0), ('cy', 0, None)].
  EXPECT_THAT(*rows, ::testing::ElementsAre(R"({"name":"ann","n":2,"total":6.5})", R"({"name":"bob","n":1,"total":1.0})",
                                            R"({"name":"cy","n":0,"total":null})"));
}

TEST(SqlPipeline, RowWiseFormsRunInTheStageOfTheirRows) {
  const std::string yaml = R"(
pipeline:
  type: chain
  transforms:
    - type: Create
      config: {elements: [{a: x, b: 1}, {a: y, b: 5}, {a: z, b: 9}]}
    - type: Sql
      config: {query: "SELECT a, b * 2 AS b2 FROM PCOLLECTION WHERE b > 2"}
    - type: Filter
      config: {language: sql, keep: "a <> 'z'"}
    - type: MapToFields
      config: {language: sql, append: true, fields: {big: "b2 >= 10", tag: "upper(a) || '!'"}}
    - type: TestCollect
      name: Out
)";
  auto rows = RunCollect(yaml);
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  EXPECT_THAT(*rows, ::testing::ElementsAre(R"({"a":"y","b2":10,"big":true,"tag":"Y!"})"));
  // No shuffle: one fused stage, the Sql as written.
  StageRegistry registry = testing::TestRegistry();
  auto spec = testing::LoadYaml(yaml, registry);
  ASSERT_TRUE(spec.ok());
  EXPECT_FALSE(HasShuffle(*spec));
}

TEST(SqlPipeline, LoadErrorsNameTheQueryAndTheInputs) {
  StageRegistry registry = testing::TestRegistry();
  auto bad = testing::LoadYaml(R"(
pipeline:
  transforms:
    - {type: Create, name: A, config: {elements: [{a: 1}]}}
    - {type: Create, name: B, config: {elements: [{a: 1}]}}
    - type: Sql
      input: {left: A, right: B}
      config: {query: "SELECT * FROM PCOLLECTION"}
)",
                               registry);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("p.yaml:8:"));
  EXPECT_THAT(bad.status().message(), HasSubstr("no such table: PCOLLECTION"));
}

}  // namespace sql_pipeline_test
}  // namespace dfw
