// Combine through fused stages in one process (RunAllBundles): Beam's combine fns, field order and
// types, many bundles and partitions, spills, chained Combines, and bad input.
#include <gmock/gmock.h>

#include <cstdlib>
#include <map>

#include <fmt/format.h>

#include "dfw/common/test_hooks.h"
#include "dfw/pipeline/fused_stages.h"
#include "pipeline_test_util.h"

namespace dfw {
namespace {

using ::testing::HasSubstr;
using testing::Collected;
using testing::RunCollect;
using testing::TempDir;


constexpr const char* kProduce = R"(
pipeline:
  type: chain
  transforms:
    - type: Create
      config:
        elements:
          - {recipe: pie, fruit: raspberry, quantity: 1, unit_price: 3.50}
          - {recipe: pie, fruit: blackberry, quantity: 1, unit_price: 4.00}
          - {recipe: pie, fruit: blueberry, quantity: 1, unit_price: 2.00}
          - {recipe: muffin, fruit: blueberry, quantity: 2, unit_price: 3.00}
          - {recipe: muffin, fruit: banana, quantity: 3, unit_price: 1.00}
)";

TEST(Combine, SumMeanCountMinMaxInBeamsFieldOrderAndTypes) {
  auto rows = RunCollect(std::string(kProduce) + R"(
    - type: Combine
      config:
        language: python
        group_by: fruit
        combine:
          total_quantity: {value: quantity, fn: sum}
          mean_price: {value: unit_price, fn: mean}
          n: {value: fruit, fn: count}
          cheapest: {value: unit_price, fn: min}
          recipe: max
    - type: TestCollect
      name: Out
)");
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  EXPECT_THAT(*rows, ::testing::ElementsAre(
                         R"({"fruit":"banana","total_quantity":3,"mean_price":1.0,"n":1,"cheapest":1.0,"recipe":"muffin"})",
                         R"({"fruit":"blackberry","total_quantity":1,"mean_price":4.0,"n":1,"cheapest":4.0,"recipe":"pie"})",
                         R"({"fruit":"blueberry","total_quantity":3,"mean_price":2.5,"n":2,"cheapest":2.0,"recipe":"pie"})",
                         R"({"fruit":"raspberry","total_quantity":1,"mean_price":3.5,"n":1,"cheapest":3.5,"recipe":"pie"})"));
}

TEST(Combine, TopGroupConcatAllAnyAndSeveralKeys) {
  auto rows = RunCollect(R"(
pipeline:
  type: chain
  transforms:
    - type: Create
      config:
        elements:
          - {k: a, j: 1, x: 3, tags: [p]}
          - {k: a, j: 1, x: 2, tags: [q, r]}
          - {k: b, j: 1, x: 1, tags: []}
          - {k: a, j: 1, x: 5, tags: [s]}
          - {k: a, j: 2, x: 4, tags: [t]}
    - type: Combine
      config:
        language: python
        group_by: [k, j]
        combine:
          largest:
            value: x
            fn: {type: apache_beam.transforms.combiners.TopCombineFn, config: {n: 2}}
          smallest:
            value: x
            fn: {type: apache_beam.transforms.combiners.TopCombineFn, config: {n: 2, reverse: true}}
          top1: {value: x, fn: {type: top_largest, config: {n: 1}}}
          all_tags: {value: tags, fn: concat}
          xs: {value: x, fn: group}
          all_big: {value: x > 1, fn: all}
          any_big: {value: x > 4, fn: any}
          doubled: {value: x * 2, fn: sum}
    - type: TestCollect
      name: Out
)");
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->size(), 3u);
  EXPECT_EQ((*rows)[0], R"({"k":"a","j":1,"largest":[5,3],"smallest":[2,3],"top1":[5],"all_tags":["p","q","r","s"],)"
                        R"("xs":[3,2,5],"all_big":true,"any_big":true,"doubled":20})");
  EXPECT_EQ((*rows)[1], R"({"k":"a","j":2,"largest":[4],"smallest":[4],"top1":[4],"all_tags":["t"],"xs":[4],)"
                        R"("all_big":true,"any_big":false,"doubled":8})");
  EXPECT_EQ((*rows)[2], R"({"k":"b","j":1,"largest":[1],"smallest":[1],"top1":[1],"all_tags":[],"xs":[1],)"
                        R"("all_big":false,"any_big":false,"doubled":2})");
}

// Many bundles (small bundles of a JSON Lines file) and 8 partitions: every key's figures are those
// of a plain loop over the rows, and a 50-key spill threshold makes every bundle spill several times.
TEST(Combine, ManyBundlesPartitionsAndSpillsGiveExactFigures) {
  TempDir dir;
  std::string text;
  std::map<int, std::pair<int64_t, int64_t>> expected;  // key -> (sum, count)
  for (int i = 0; i < 6000; ++i) {
    int key = (i * 7919) % 997;
    int v = i % 13;
    text += fmt::format("{{\"key\": {}, \"v\": {}}}\n", key, v);
    expected[key].first += v;
    expected[key].second += 1;
  }
  testing::WriteFile(dir / "in.jsonl", text);
  ::setenv("DFW_TEST_COMBINE_SPILL_KEYS", "50", 1);
  MetricsSnapshot snapshot;
  RunnerOptions options;
  options.bundle_bytes = 8192;
  options.sdk_processes = 4;  // 8 partitions
  options.threads = 2;
  auto rows = RunCollect(fmt::format(R"(
pipeline:
  type: chain
  transforms:
    - type: ReadFromJson
      config: {{path: '{}'}}
    - type: Combine
      config:
        group_by: key
        combine:
          total: {{value: v, fn: sum}}
          n: {{value: v, fn: count}}
          avg: {{value: v, fn: mean}}
    - type: TestCollect
      name: Out
)",
                                     dir / "in.jsonl"),
                         options, &snapshot);
  ::unsetenv("DFW_TEST_COMBINE_SPILL_KEYS");
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  // ~11 bundles of ~550 rows over up to 997 keys (about 430 distinct per bundle): several spills
  // each with the hook; one per bundle without it.
  const int64_t spills = snapshot.CounterOr("Combine", "shuffle_spills");
  EXPECT_GT(spills, 0);
  if (test_hooks::Enabled()) {
    EXPECT_GT(spills, 50);
  }
  ASSERT_EQ(rows->size(), expected.size());
  std::map<std::string, bool> want;
  for (const auto& [key, sc] : expected) {
    want[Row({{"key", Value::Int(key)},
              {"total", Value::Int(sc.first)},
              {"n", Value::Int(sc.second)},
              {"avg", Value::Float(static_cast<double>(sc.first) / static_cast<double>(sc.second))}})
             .ToJson()] = true;
  }
  for (const std::string& r : *rows) EXPECT_TRUE(want.count(r)) << r;
}

TEST(Combine, EmptyInputGivesNoRowsAndSucceeds) {
  auto rows = RunCollect(R"(
pipeline:
  type: chain
  transforms:
    - type: Create
      config: {elements: []}
    - type: Combine
      config: {group_by: k, combine: {n: count}}
    - type: TestCollect
      name: Out
)");
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  EXPECT_TRUE(rows->empty());
}

TEST(Combine, ChainedCombinesRunAsThreeStages) {
  const std::string yaml = std::string(kProduce) + R"(
    - type: Combine
      name: PerFruit
      config: {group_by: [recipe, fruit], combine: {quantity: sum}}
    - type: Combine
      name: PerRecipe
      config: {group_by: recipe, combine: {fruits: {value: fruit, fn: count}, quantity: sum}}
    - type: TestCollect
      name: Out
)";
  StageRegistry registry = testing::TestRegistry();
  auto spec = testing::LoadYaml(yaml, registry);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  FuseOptions fuse;
  fuse.partitions = 3;
  fuse.committed_dir = [](int k) { return "/stage-" + std::to_string(k); };
  auto stages = FuseStages(*spec, fuse);
  ASSERT_TRUE(stages.ok()) << stages.status().ToString();
  ASSERT_EQ(stages->size(), 3u);
  EXPECT_EQ((*stages)[1].spec.transforms[0].config.type, "Combine/merge");
  EXPECT_EQ((*stages)[1].spec.transforms[0].config.shuffle.dir, "/stage-0/PerFruit");
  EXPECT_EQ((*stages)[1].spec.transforms[1].config.type, "Combine/partial");
  EXPECT_EQ((*stages)[2].spec.transforms.back().config.name, "Out");

  auto rows = RunCollect(yaml);
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  EXPECT_THAT(*rows, ::testing::ElementsAre(R"({"recipe":"muffin","fruits":2,"quantity":5})",
                                            R"({"recipe":"pie","fruits":3,"quantity":3})"));
}

TEST(Combine, BadInputIsRefusedWithTheReason) {
  auto run = [](const std::string& combine_config) {
    return RunCollect(std::string(kProduce) + "    - type: Combine\n      config: " + combine_config +
                      "\n    - type: TestCollect\n      name: Out\n");
  };
  auto missing = run("{group_by: colour, combine: {n: {value: fruit, fn: count}}}");
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(), HasSubstr("group_by field 'colour' is not in the row"));

  auto no_field = run("{group_by: fruit, combine: {t: {value: weight, fn: sum}}}");
  ASSERT_FALSE(no_field.ok());
  EXPECT_THAT(no_field.status().message(), HasSubstr("weight"));

  auto strings = run("{group_by: fruit, combine: {t: {value: recipe, fn: sum}}}");
  ASSERT_FALSE(strings.ok());
  EXPECT_THAT(strings.status().message(), HasSubstr("TypeError"));

  auto unknown = run("{group_by: fruit, combine: {t: {value: quantity, fn: median}}}");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), StatusCode::kUnimplemented);
  EXPECT_THAT(unknown.status().message(), HasSubstr("'median' is not a combine function"));

  auto python_class = run("{group_by: fruit, combine: {t: {value: quantity, fn: {type: my.module.MyFn}}}}");
  ASSERT_FALSE(python_class.ok());
  EXPECT_THAT(python_class.status().message(), HasSubstr("my.module.MyFn"));

  auto no_n = run("{group_by: fruit, combine: {t: {value: quantity, fn: {type: top_largest}}}}");
  ASSERT_FALSE(no_n.ok());
  EXPECT_THAT(no_n.status().message(), HasSubstr("needs config n"));

  auto no_combine = run("{group_by: fruit}");
  ASSERT_FALSE(no_combine.ok());
  EXPECT_THAT(no_combine.status().message(), HasSubstr("combine"));

  auto sql = run("{language: sql, group_by: fruit, combine: {n: count}}");
  ASSERT_FALSE(sql.ok());
  EXPECT_EQ(sql.status().code(), StatusCode::kUnimplemented);
}

TEST(Combine, ListValuedKeyFailsNamingTheField) {
  auto rows = RunCollect(R"(
pipeline:
  type: chain
  transforms:
    - type: Create
      config:
        elements:
          - {tags: [a, b], x: 1}
    - type: Combine
      config: {group_by: tags, combine: {x: sum}}
    - type: TestCollect
      name: Out
)");
  ASSERT_FALSE(rows.ok());
  EXPECT_THAT(rows.status().message(), HasSubstr("group_by field 'tags' is a list"));
}

TEST(Combine, InternalTypesCannotBeNamedInAPipelineFile) {
  StageRegistry registry = testing::TestRegistry();
  auto spec = testing::LoadYaml("pipeline:\n  transforms:\n    - type: Combine/partial\n      config: {}\n", registry);
  ASSERT_FALSE(spec.ok());
  EXPECT_THAT(spec.status().message(), HasSubstr("unknown transform type 'Combine/partial'"));
  EXPECT_THAT(spec.status().message(), ::testing::Not(HasSubstr("Combine/merge")));
}

TEST(FuseStages, RefusesATransformReadingBothSidesOfACombine) {
  StageRegistry registry = testing::TestRegistry();
  auto spec = testing::LoadYaml(R"(
pipeline:
  transforms:
    - type: Create
      name: In
      config: {elements: [{k: 1}]}
    - type: Combine
      name: C
      input: In
      config: {group_by: k, combine: {n: {value: k, fn: count}}}
    - type: Flatten
      name: Both
      input: [In, C]
    - type: TestCollect
      name: Out
      input: Both
)",
                                registry);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  FuseOptions fuse;
  fuse.committed_dir = [](int) { return std::string("/x"); };
  auto stages = FuseStages(*spec, fuse);
  ASSERT_FALSE(stages.ok());
  EXPECT_THAT(stages.status().message(), HasSubstr("reads from both sides of a Combine"));
}

TEST(FuseStages, APipelineWithoutCombineIsOneStage) {
  StageRegistry registry = testing::TestRegistry();
  auto spec = testing::LoadYaml(std::string(kProduce) + "    - type: TestCollect\n      name: Out\n", registry);
  ASSERT_TRUE(spec.ok());
  auto stages = FuseStages(*spec, FuseOptions{});
  ASSERT_TRUE(stages.ok());
  ASSERT_EQ(stages->size(), 1u);
  EXPECT_EQ((*stages)[0].spec.transforms.size(), spec->transforms.size());
  EXPECT_FALSE(HasShuffle(*spec));
}

}  // namespace
}  // namespace dfw

namespace dfw {
namespace {

using ::testing::HasSubstr;

constexpr const char* kVisits = R"(
pipeline:
  type: chain
  transforms:
    - type: Create
      config:
        elements:
          - {user: alice, timestamp: 1}
          - {user: alice, timestamp: 3}
          - {user: bob, timestamp: 7}
          - {user: bob, timestamp: 12}
          - {user: bob, timestamp: 20}
          - {user: alice, timestamp: 101}
          - {user: alice, timestamp: 109.5}
          - {user: alice, timestamp: 115}
    - type: AssignTimestamps
      config: {timestamp: timestamp}
)";

TEST(Windowing, FixedWindowsOnTheCombineGroupPerKeyAndWindow) {
  auto rows = RunCollect(std::string(kVisits) + R"(
    - type: Combine
      config:
        group_by: user
        combine: {visits: {value: user, fn: count}, first: {value: timestamp, fn: min}}
      windowing: {type: fixed, size: 10s}
    - type: TestCollect
      name: Out
)");
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  // alice: [0,10) 2, [100,110) 2, [110,120) 1; bob: [0,10) 1, [10,20) 1, [20,30) 1.
  EXPECT_THAT(*rows, ::testing::ElementsAre(R"({"user":"alice","visits":1,"first":115})",
                                            R"({"user":"alice","visits":2,"first":101})",
                                            R"({"user":"alice","visits":2,"first":1})",
                                            R"({"user":"bob","visits":1,"first":12})",
                                            R"({"user":"bob","visits":1,"first":20})",
                                            R"({"user":"bob","visits":1,"first":7})"));
}

// WindowInto before the Combine, timestamps kept through a MapToFields that builds new rows, and
// a second Combine downstream that groups within the first one's windows (as in Beam).
TEST(Windowing, WindowIntoThenCombinesKeepTheWindows) {
  auto rows = RunCollect(std::string(kVisits) + R"(
    - type: MapToFields
      config: {language: python, fields: {who: user, t: timestamp}}
    - type: WindowInto
      windowing: {type: fixed, size: 1m, offset: 40s}
    - type: Combine
      name: PerUser
      config: {group_by: who, combine: {n: {value: t, fn: count}}}
    - type: Combine
      name: Users
      config: {group_by: [], combine: {users: {value: who, fn: count}, visits: {value: n, fn: sum}}}
    - type: TestCollect
      name: Out
)");
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  // Windows [-20s, 40s) and [40s, 100s), [100s, 160s): users 2 (5 visits), none, 1 (3 visits).
  EXPECT_THAT(*rows, ::testing::ElementsAre(R"({"users":1,"visits":3})", R"({"users":2,"visits":5})"));
}

// Sessions on the Combine: each element opens [ts, ts + gap); a key's overlapping windows merge in
// the reduce stage, across bundles (600 elements: three bundles of Create), and windows that only
// touch stay apart. ExtractWindowingInfo shows the merged windows as Beam writes them.
TEST(Windowing, SessionsMergeAcrossBundlesAndShowInExtractWindowingInfo) {
  std::string elements;
  for (int i = 0; i < 300; ++i) elements += fmt::format("          - {{user: a, t: {}}}\n", i);          // one session
  for (int i = 0; i < 100; ++i) elements += fmt::format("          - {{user: b, t: {}}}\n", i);          // [0, 101)
  for (int i = 0; i < 100; ++i) elements += fmt::format("          - {{user: b, t: {}}}\n", 1000 + i);   // [1000, 1101)
  for (int i = 0; i < 100; ++i) elements += fmt::format("          - {{user: c, t: {}}}\n", 2 * i);      // touching: 100 sessions
  auto rows = RunCollect(R"(
pipeline:
  type: chain
  transforms:
    - type: Create
      config:
        elements:
)" + elements + R"(
    - type: AssignTimestamps
      config: {timestamp: t}
    - type: Combine
      config: {group_by: user, combine: {n: {value: t, fn: count}, last: {value: t, fn: max}}}
      windowing: {type: sessions, gap: 2s}
    - type: ExtractWindowingInfo
      config: {fields: [window_string, timestamp]}
    - type: Filter
      config: {language: python, keep: "user != 'c' or window_string == '[10.0, 12.0)'"}
    - type: TestCollect
      name: Out
)");
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  EXPECT_THAT(*rows, ::testing::ElementsAre(
                         R"j({"user":"a","n":300,"last":299,"window_string":"[0.0, 301.0)","timestamp":300.999999})j",
                         R"j({"user":"b","n":100,"last":1099,"window_string":"[1000.0, 1101.0)","timestamp":1100.999999})j",
                         R"j({"user":"b","n":100,"last":99,"window_string":"[0.0, 101.0)","timestamp":100.999999})j",
                         R"j({"user":"c","n":1,"last":10,"window_string":"[10.0, 12.0)","timestamp":11.999999})j"));
}

TEST(Windowing, BadWindowingIsRefusedWithTheReason) {
  StageRegistry registry = testing::TestRegistry();
  auto load = [&](const std::string& tail) { return testing::LoadYaml(std::string(kVisits) + tail, registry); };
  // Sessions in a WindowInto: the Combine after it takes the windowing and merges them.
  auto sessions = load("    - type: WindowInto\n      windowing: {type: sessions, gap: 10s}\n"
                       "    - type: Combine\n      config: {group_by: user, combine: {n: count}}\n");
  ASSERT_TRUE(sessions.ok()) << sessions.status().ToString();
  EXPECT_EQ(sessions->transforms.back().config.windowing["type"].Scalar(), "sessions");
  auto info = load("    - type: ExtractWindowingInfo\n      config: {fields: [window_start, pane_infos]}\n");
  ASSERT_FALSE(info.ok());
  EXPECT_THAT(info.status().message(), HasSubstr("'pane_infos' is not windowing info"));
  auto sliding = load("    - type: Combine\n      config: {group_by: user, combine: {n: count}}\n"
                      "      windowing: {type: sliding, size: 10s, period: 5s}\n");
  ASSERT_TRUE(sliding.ok()) << sliding.status().ToString();  // a WindowInto before the Combine copies rows into windows
  EXPECT_EQ(sliding->transforms[sliding->transforms.size() - 2].config.type, "WindowInto");
  auto size = load("    - type: WindowInto\n      windowing: {type: fixed, size: soon}\n");
  ASSERT_FALSE(size.ok());
  EXPECT_THAT(size.status().message(), HasSubstr("windowing.size must be a duration"));
  auto none = load("    - type: WindowInto\n");
  ASSERT_FALSE(none.ok());
  EXPECT_THAT(none.status().message(), HasSubstr("needs 'windowing:'"));
  // Beam applies a transform's windowing to its input: a WindowInto before the MapToFields.
  auto on_map = load("    - type: MapToFields\n      config: {fields: {u: user}}\n      windowing: {type: fixed, size: 10s}\n");
  ASSERT_TRUE(on_map.ok()) << on_map.status().ToString();
  EXPECT_EQ(on_map->transforms[on_map->transforms.size() - 2].config.type, "WindowInto");
  auto pipeline_level = testing::LoadYaml(
      "pipeline:\n  windowing: {type: fixed, size: 10s}\n  transforms:\n    - type: Create\n      config: {elements: [1]}\n",
      registry);
  ASSERT_FALSE(pipeline_level.ok());
  EXPECT_THAT(pipeline_level.status().message(), HasSubstr("pipeline-level windowing"));
}

TEST(Windowing, RowsWithoutOrWithBadTimestampsFailNamingWhy) {
  auto no_ts = RunCollect(R"(
pipeline:
  type: chain
  transforms:
    - type: Create
      config: {elements: [{u: a}]}
    - type: WindowInto
      windowing: {type: fixed, size: 10s}
    - type: TestCollect
      name: Out
)");
  ASSERT_FALSE(no_ts.ok());
  EXPECT_THAT(no_ts.status().message(), HasSubstr("no event timestamp"));
  auto text_ts = RunCollect(R"(
pipeline:
  type: chain
  transforms:
    - type: Create
      config: {elements: [{u: a, t: yesterday}]}
    - type: AssignTimestamps
      config: {timestamp: t}
    - type: TestCollect
      name: Out
)");
  ASSERT_FALSE(text_ts.ok());
  EXPECT_THAT(text_ts.status().message(), HasSubstr("seconds since the epoch"));
}

}  // namespace
}  // namespace dfw
