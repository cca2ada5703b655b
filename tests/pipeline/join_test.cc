// Join through fused stages in one process (RunAllBundles): Beam's own expectations
// (apache_beam/yaml/yaml_join_test.py), the four join types with unmatched rows and NULL keys,
// many bundles, partitions and spills against a nested-loop reference, and bad configurations.
#include <gmock/gmock.h>

#include <cstdlib>
#include <map>
#include <random>

#include <fmt/format.h>

#include "dfw/common/test_hooks.h"
#include "dfw/pipeline/fused_stages.h"
#include "pipeline_test_util.h"

namespace dfw {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::Collected;
using testing::RunCollect;
using testing::TempDir;


// Beam's test inputs (yaml_join_test.py: FRUITS, QUANTITIES, CATEGORIES).
constexpr const char* kFruitInputs = R"(
pipeline:
  transforms:
    - type: Create
      name: fruits
      config:
        elements:
          - {id: 1, name: raspberry}
          - {id: 2, name: blackberry}
    - type: Create
      name: quantities
      config:
        elements:
          - {name: raspberry, quantity: 1}
          - {name: blackberry, quantity: 2}
          - {name: blueberry, quantity: 3}
    - type: Create
      name: categories
      config:
        elements:
          - {name: raspberry, category: juicy}
          - {name: blackberry, category: dry}
          - {name: blueberry, category: dry}
          - {name: blueberry, category: juicy}
)";

std::string WithJoin(const std::string& join) {
  return std::string(kFruitInputs) + join + R"(
    - type: TestCollect
      name: Out
      input: J
)";
}

TEST(Join, BeamsBasicJoinRenamesTheDuplicateField) {
  auto rows = RunCollect(WithJoin(R"(
    - type: Join
      name: J
      input: {f: fruits, q: quantities}
      config:
        type: inner
        equalities:
          - f: name
            q: name
)"));
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  EXPECT_THAT(*rows, ElementsAre(R"({"id":1,"name":"raspberry","name0":"raspberry","quantity":1})",
                                 R"({"id":2,"name":"blackberry","name0":"blackberry","quantity":2})"));
}

TEST(Join, BeamsThreeInputsAndTheShorthandGiveTheSameRows) {
  const std::vector<std::string> want = {
      R"({"id":1,"name":"raspberry","name0":"raspberry","quantity":1,"name1":"raspberry","category":"juicy"})",
      R"({"id":2,"name":"blackberry","name0":"blackberry","quantity":2,"name1":"blackberry","category":"dry"})"};
  std::vector<std::string> sorted = want;
  std::sort(sorted.begin(), sorted.end());
  auto rows = RunCollect(WithJoin(R"(
    - type: Join
      name: J
      input: {f: fruits, q: quantities, c: categories}
      config:
        type: inner
        equalities:
          - {f: name, q: name}
          - {f: name, c: name}
)"));
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  EXPECT_EQ(*rows, sorted);
  auto shorthand = RunCollect(WithJoin(R"(
    - type: Join
      name: J
      input: {f: fruits, q: quantities, c: categories}
      config: {type: inner, equalities: name}
)"));
  ASSERT_TRUE(shorthand.ok()) << shorthand.status().ToString();
  EXPECT_EQ(*shorthand, sorted);
}

TEST(Join, BeamsFieldsComeFirstThenTheOtherInputsFields) {
  auto rows = RunCollect(WithJoin(R"(
    - type: Join
      name: J
      input: {f: fruits, q: quantities, c: categories}
      config:
        type: inner
        equalities: [{f: name, q: name}, {f: name, c: name}]
        fields:
          f: {f_id: id}
          q: [name, quantity]
)"));
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  EXPECT_THAT(*rows, ElementsAre(R"({"f_id":1,"name":"raspberry","quantity":1,"name0":"raspberry","category":"juicy"})",
                                 R"({"f_id":2,"name":"blackberry","quantity":2,"name0":"blackberry","category":"dry"})"));
}

// Left and right inputs with an unmatched row each, a NULL key on each side and a missing key.
constexpr const char* kSides = R"(
pipeline:
  transforms:
    - type: Create
      name: users
      config:
        elements:
          - {uid: 1, user: ann}
          - {uid: 2, user: bob}
          - {uid: null, user: nobody}
          - {user: keyless}
    - type: Create
      name: orders
      config:
        elements:
          - {oid: 10, uid: 1, amount: 5}
          - {oid: 11, uid: 1, amount: 7}
          - {oid: 12, uid: 3, amount: 9}
          - {oid: 13, uid: null, amount: 1}
)";

std::string Sides(const std::string& type) {
  return std::string(kSides) + fmt::format(R"(
    - type: Join
      name: J
      input: {{u: users, o: orders}}
      config:
        type: {}
        equalities: uid
        fields:
          u: [user]
          o: [oid]
    - type: TestCollect
      name: Out
      input: J
)", type);
}

TEST(Join, InnerLeftRightOuterKeepUnmatchedRowsAsSqlDoes) {
  auto inner = RunCollect(Sides("inner"));
  ASSERT_TRUE(inner.ok()) << inner.status().ToString();
  EXPECT_THAT(*inner, ElementsAre(R"({"user":"ann","oid":10})", R"({"user":"ann","oid":11})"));

  // A NULL (or missing) key matches nothing, not even another NULL.
  auto left = RunCollect(Sides("left"));
  ASSERT_TRUE(left.ok()) << left.status().ToString();
  EXPECT_THAT(*left, ElementsAre(R"({"user":"ann","oid":10})", R"({"user":"ann","oid":11})", R"({"user":"bob","oid":null})",
                                 R"({"user":"keyless","oid":null})", R"({"user":"nobody","oid":null})"));

  auto right = RunCollect(Sides("right"));
  ASSERT_TRUE(right.ok()) << right.status().ToString();
  EXPECT_THAT(*right, ElementsAre(R"({"user":"ann","oid":10})", R"({"user":"ann","oid":11})", R"({"user":null,"oid":12})",
                                  R"({"user":null,"oid":13})"));

  auto outer = RunCollect(Sides("outer"));
  ASSERT_TRUE(outer.ok()) << outer.status().ToString();
  EXPECT_THAT(*outer, ElementsAre(R"({"user":"ann","oid":10})", R"({"user":"ann","oid":11})", R"({"user":"bob","oid":null})",
                                  R"({"user":"keyless","oid":null})", R"({"user":"nobody","oid":null})",
                                  R"({"user":null,"oid":12})", R"({"user":null,"oid":13})"));
}

TEST(Join, NullExtendedRowsCarryEveryFieldTheirInputHad) {
  auto rows = RunCollect(std::string(kSides) + R"(
    - type: Join
      name: J
      input: {u: users, o: orders}
      config: {type: right, equalities: uid}
    - type: TestCollect
      name: Out
      input: J
)");
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  EXPECT_THAT(*rows, ElementsAre(R"({"uid":1,"user":"ann","oid":10,"uid0":1,"amount":5})",
                                 R"({"uid":1,"user":"ann","oid":11,"uid0":1,"amount":7})",
                                 R"({"uid":null,"user":null,"oid":12,"uid0":3,"amount":9})",
                                 R"({"uid":null,"user":null,"oid":13,"uid0":null,"amount":1})"));
}

TEST(Join, OuterListOuterJoinsOnlyThoseInputs) {
  // {outer: [q, c]}: f INNER JOIN q (q is outer, f not: RIGHT), then q FULL JOIN c.
  auto rows = RunCollect(WithJoin(R"(
    - type: Join
      name: J
      input: {f: fruits, q: quantities, c: categories}
      config:
        type: {outer: [q, c]}
        equalities: name
        fields: {f: [id], q: [quantity], c: [category]}
)"));
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  // Step 2's ON is f.name = c.name: blueberry's categories find no f row (f is null-extended for
  // blueberry), so they come out unmatched, as does q's blueberry row.
  EXPECT_THAT(*rows, ElementsAre(R"({"id":1,"quantity":1,"category":"juicy"})", R"({"id":2,"quantity":2,"category":"dry"})",
                                 R"({"id":null,"quantity":3,"category":null})", R"({"id":null,"quantity":null,"category":"dry"})",
                                 R"({"id":null,"quantity":null,"category":"juicy"})"));
}

TEST(Join, IntegralFloatsMeetIntsAndTypesOtherwiseStayApart) {
  auto rows = RunCollect(R"(
pipeline:
  transforms:
    - type: Create
      name: a
      config: {elements: [{k: 1, x: a1}, {k: 2.5, x: a2}, {k: "1", x: a3}, {k: true, x: a4}]}
    - type: Create
      name: b
      config: {elements: [{k: 1.0, y: b1}, {k: 2.5, y: b2}, {k: "1", y: b3}]}
    - type: Join
      name: J
      input: {a: a, b: b}
      config: {type: inner, equalities: k, fields: {a: [x], b: [y]}}
    - type: TestCollect
      name: Out
      input: J
)");
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  EXPECT_THAT(*rows, ElementsAre(R"({"x":"a1","y":"b1"})", R"({"x":"a2","y":"b2"})", R"({"x":"a3","y":"b3"})"));
}

// A many-to-many join over many bundles, 8 partitions and spills, against a nested loop.
TEST(Join, ManyBundlesPartitionsAndSpillsEqualANestedLoop) {
  TempDir dir;
  std::mt19937 rng(7);
  struct L { int id, k; };
  struct R { int id, k; };
  std::vector<L> ls;
  std::vector<R> rs;
  std::string lt, rt;
  for (int i = 0; i < 3000; ++i) {
    ls.push_back({i, static_cast<int>(rng() % 700)});
    lt += fmt::format("{{\"lid\": {}, \"k\": {}, \"pad\": \"{}\"}}\n", i, ls.back().k, std::string(i % 17, 'x'));
  }
  for (int i = 0; i < 2000; ++i) {
    rs.push_back({i, static_cast<int>(rng() % 900)});
    rt += fmt::format("{{\"rid\": {}, \"k\": {}}}\n", i, rs.back().k);
  }
  testing::WriteFile(dir / "l.jsonl", lt);
  testing::WriteFile(dir / "r.jsonl", rt);
  std::vector<std::string> want;
  std::vector<bool> l_hit(ls.size()), r_hit(rs.size());
  for (const L& l : ls) {
    for (const R& r : rs) {
      if (l.k != r.k) continue;
      want.push_back(fmt::format(R"({{"lid":{},"rid":{}}})", l.id, r.id));
      l_hit[static_cast<std::size_t>(l.id)] = r_hit[static_cast<std::size_t>(r.id)] = true;
    }
  }
  for (const L& l : ls) if (!l_hit[static_cast<std::size_t>(l.id)]) want.push_back(fmt::format(R"({{"lid":{},"rid":null}})", l.id));
  for (const R& r : rs) if (!r_hit[static_cast<std::size_t>(r.id)]) want.push_back(fmt::format(R"({{"lid":null,"rid":{}}})", r.id));
  std::sort(want.begin(), want.end());
  ::setenv("DFW_TEST_JOIN_SPILL_BYTES", "2000", 1);
  RunnerOptions options;
  options.bundle_bytes = 8192;
  options.sdk_processes = 1;  // 256 partitions
  options.threads = 2;
  MetricsSnapshot snapshot;
  auto rows = RunCollect(fmt::format(R"(
pipeline:
  transforms:
    - type: ReadFromJson
      name: L
      config: {{path: '{}'}}
    - type: ReadFromJson
      name: R
      config: {{path: '{}'}}
    - type: Join
      name: J
      input: {{l: L, r: R}}
      config: {{type: outer, equalities: [{{l: k, r: k}}], fields: {{l: [lid], r: [rid]}}}}
    - type: TestCollect
      name: Out
      input: J
)", dir / "l.jsonl", dir / "r.jsonl"), options, &snapshot);
  ::unsetenv("DFW_TEST_JOIN_SPILL_BYTES");
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  EXPECT_GT(snapshot.CounterOr("J", "shuffle_bytes_written"), 0);
  EXPECT_EQ(rows->size(), want.size());
  EXPECT_EQ(*rows, want);
}

TEST(Join, AfterACombineRunsAsThreeStages) {
  const std::string yaml = std::string(kFruitInputs) + R"(
    - type: Combine
      name: PerName
      input: categories
      config: {group_by: name, combine: {category: count}}
    - type: Join
      name: J
      input: {f: fruits, c: PerName}
      config: {type: left, equalities: name, fields: {f: [id, name], c: {n: category}}}
    - type: TestCollect
      name: Out
      input: J
)";
  StageRegistry registry = testing::TestRegistry();
  auto spec = testing::LoadYaml(yaml, registry);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  FuseOptions fuse;
  fuse.committed_dir = [](int k) { return "/committed/" + std::to_string(k); };
  auto stages = FuseStages(*spec, fuse);
  ASSERT_TRUE(stages.ok()) << stages.status().ToString();
  EXPECT_EQ(stages->size(), 3u);
  auto rows = RunCollect(yaml);
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  EXPECT_THAT(*rows, ElementsAre(R"({"id":1,"name":"raspberry","n":1})", R"({"id":2,"name":"blackberry","n":1})"));
}

TEST(Join, NamedOutputsAndOneTransformTwiceAreInputsLikeAnyOther) {
  auto parted = RunCollect(R"(
pipeline:
  transforms:
    - type: Create
      name: Rows
      config:
        elements: [{k: 1, side: l, v: a}, {k: 1, side: r, w: b}, {k: 2, side: l, v: c}, {k: 3, side: r, w: d}]
    - {type: Partition, name: P, input: Rows, config: {by: side, outputs: [l, r]}}
    - type: Join
      name: J
      input: {a: P.l, b: P.r}
      config: {type: outer, equalities: k, fields: {a: [v], b: [w]}}
    - {type: TestCollect, name: Out, input: J}
)");
  ASSERT_TRUE(parted.ok()) << parted.status().ToString();
  EXPECT_THAT(*parted, ElementsAre(R"({"v":"a","w":"b"})", R"({"v":"c","w":null})", R"({"v":null,"w":"d"})"));
  // A self-join: every pair of rows with the same key, each input's fields renamed apart.
  auto self = RunCollect(R"(
pipeline:
  transforms:
    - type: Create
      name: T
      config: {elements: [{k: 1, x: 1}, {k: 1, x: 2}, {k: 2, x: 3}]}
    - type: Join
      name: J
      input: {l: T, r: T}
      config: {type: inner, equalities: k}
    - {type: TestCollect, name: Out, input: J}
)");
  ASSERT_TRUE(self.ok()) << self.status().ToString();
  EXPECT_THAT(*self, ElementsAre(R"({"k":1,"x":1,"k0":1,"x0":1})", R"({"k":1,"x":1,"k0":1,"x0":2})",
                                 R"({"k":1,"x":2,"k0":1,"x0":1})", R"({"k":1,"x":2,"k0":1,"x0":2})",
                                 R"({"k":2,"x":3,"k0":2,"x0":3})"));
}

TEST(Join, EmptyInputsGiveWhatSqlGives) {
  auto rows = RunCollect(R"(
pipeline:
  transforms:
    - type: Create
      name: a
      config: {elements: [{k: 1, x: 1}]}
    - type: Create
      name: b
      config: {elements: []}
    - type: Join
      name: J
      input: {a: a, b: b}
      config: {type: left, equalities: k}
    - type: TestCollect
      name: Out
      input: J
)");
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  // b had no rows, so no fields to null-extend.
  EXPECT_THAT(*rows, ElementsAre(R"({"k":1,"x":1})"));
}

TEST(Join, AKeyFieldNoRowHasFailsNamingIt) {
  auto rows = RunCollect(WithJoin(R"(
    - type: Join
      name: J
      input: {f: fruits, q: quantities}
      config: {type: inner, equalities: [{f: nme, q: name}]}
)"));
  ASSERT_FALSE(rows.ok());
  EXPECT_THAT(rows.status().message(), HasSubstr("'nme' is not a field of input 'f'"));
  EXPECT_THAT(rows.status().message(), HasSubstr("'id', 'name'"));
}

Status LoadError(const std::string& yaml) {
  StageRegistry registry = testing::TestRegistry();
  return testing::LoadYaml(yaml, registry).status();
}

std::string JoinWith(const std::string& input, const std::string& config) {
  return std::string(kFruitInputs) + fmt::format(R"(
    - type: Join
      name: J
      input: {}
      config: {}
    - type: TestCollect
      name: Out
      input: J
)", input, config);
}

TEST(Join, BadConfigurationsAreRefusedAtLoadWithTheReason) {
  struct Case {
    std::string input, config, want;
  };
  const std::vector<Case> cases = {
      {"[fruits, quantities]", "{type: inner, equalities: name}", "takes named inputs"},
      {"{f: fruits}", "{type: inner, equalities: name}", "two or more named inputs"},
      {"{f: fruits, q: quantities}", "{equalities: name}", "'type' is required"},
      {"{f: fruits, q: quantities}", "{type: inner}", "'equalities' is required"},
      {"{f: fruits, q: quantities}", "{type: cross, equalities: name}", "must be one of inner, outer, left, right"},
      {"{f: fruits, q: quantities}", "{type: {inner: [f]}, equalities: name}", "{outer: [list of inputs to outer join]}"},
      {"{f: fruits, q: quantities}", "{type: {outer: [x]}, equalities: name}", "'x' is not one of the inputs"},
      {"{f: fruits, q: quantities}", "{type: inner, equalities: [{f: name}]}", "at least 2 items"},
      {"{f: fruits, q: quantities}", "{type: inner, equalities: [{f: name, z: name}]}", "'z' is not one of the inputs"},
      {"{f: fruits, q: quantities, c: categories}", "{type: inner, equalities: [{f: name, q: name}, {q: quantity, c: name}]}",
       "write this as two Joins"},
      {"{f: fruits, q: quantities}", "{type: inner, equalities: [{f: name, q: name}, {f: id, q: name}]}",
       "two fields of input 'f' equal"},
      {"{f: fruits, q: quantities}", "{type: inner, equalities: name, fields: {f: [name], q: [name]}}",
       "'name' is given more than once"},
      {"{f: fruits, q: quantities}", "{type: inner, equalities: name, fields: {f: '*'}}", "must be a list of fields"},
      {"{f: fruits, q: quantities}", "{type: inner, equalities: name, fields: {z: [id]}}", "'z' is not one of the inputs"},
      {"{1f: fruits, q: quantities}", "{type: inner, equalities: name}", "must be an identifier"},
      {"{f: fruits, q: nowhere}", "{type: inner, equalities: name}", "nowhere"},
  };
  for (const Case& c : cases) {
    Status s = LoadError(JoinWith(c.input, c.config));
    EXPECT_FALSE(s.ok()) << c.input << " " << c.config;
    EXPECT_THAT(s.message(), HasSubstr(c.want)) << c.input << " " << c.config;
  }
  // Several named inputs are Join's and Flatten's (Beam's Flatten takes any tags); a one-input
  // transform takes one.
  Status map = LoadError(std::string(kFruitInputs) + R"(
    - type: MapToFields
      input: {a: fruits, b: quantities}
      config: {fields: {n: name}}
)");
  EXPECT_THAT(map.message(), HasSubstr("MapToFields takes one input"));
}

}  // namespace
}  // namespace dfw
