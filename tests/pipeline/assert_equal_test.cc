// AssertEqual as Beam defines it (apache_beam/yaml/yaml_provider.py: rows as dicts without their
// None fields, compared with equal_to, a multiset check) and as dfworker runs it: over every bundle,
// after a shuffle too. Expected rows come from Beam's own tests: windowing.yaml's Global chain
// ({k: x, t: 20}, {k: y, t: 101} for t = 1, 8, 11 and 101).
#include <gmock/gmock.h>

#include "dfw/pipeline/assertions.h"
#include "dfw/stages/config_yaml.h"
#include "pipeline_test_util.h"

namespace dfw {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::LoadYaml;
using testing::TempDir;
using testing::TestRegistry;

Status RunYaml(const std::string& yaml, int64_t bundle_bytes = 0) {
  TempDir dir;
  StageRegistry registry = TestRegistry();
  ASSIGN_OR_RETURN(PipelineSpec spec, LoadYaml(yaml, registry));
  RunnerOptions options;
  options.bundle_bytes = bundle_bytes;
  MetricsRegistry metrics;
  return RunAllBundles(spec, registry, options, dir / "staging", &metrics).status();
}

TEST(AssertEqual, PassesOnEqualMultisetsWithNullFieldsDroppedAndNumbersByValue) {
  Status s = RunYaml(R"(
pipeline:
  type: chain
  transforms:
    - type: Create
      config:
        elements: [{a: 1, b: null}, {a: 1}, {a: 2.0, c: x}]
    - type: AssertEqual
      config:
        elements: [{c: x, a: 2}, {a: 1}, {a: 1.0, d: null}]
)");
  EXPECT_TRUE(s.ok()) << s.ToString();
}

TEST(AssertEqual, AFailureStopsTheRunListingMissingAndUnexpectedRows) {
  Status s = RunYaml(R"(
pipeline:
  type: chain
  transforms:
    - type: Create
      config:
        elements: [{a: 1}, {a: 1}, {a: 3}]
    - type: AssertEqual
      name: Check
      config:
        elements: [{a: 1}, {a: 2}]
)");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kAborted);  // exit 1: the run failed
  EXPECT_THAT(s.message(), HasSubstr("p.yaml:8:7: transform 'Check' (AssertEqual): assertion failed"));
  EXPECT_THAT(s.message(), HasSubstr("3 rows received, 2 expected; 1 missing, 2 unexpected"));
  EXPECT_THAT(s.message(), HasSubstr("missing:\n    {\"a\":2}"));
  EXPECT_THAT(s.message(), HasSubstr("unexpected:\n    {\"a\":1}\n    {\"a\":3}"));
}

TEST(AssertEqual, SeesTheRowsOfEveryBundle) {
  TempDir dir;
  std::string lines;
  std::string elements;
  for (int i = 0; i < 400; ++i) {
    lines += "{\"n\": " + std::to_string(i) + ", \"pad\": \"" + std::string(40, 'x') + "\"}\n";
    elements += (i ? ", " : "") + std::string("{n: ") + std::to_string(i) + ", pad: " + std::string(40, 'x') + "}";
  }
  testing::WriteFile(dir / "in.jsonl", lines);
  const std::string yaml = "pipeline:\n  type: chain\n  transforms:\n    - type: ReadFromJson\n      config: {path: '" +
                           (dir / "in.jsonl") + "'}\n    - type: AssertEqual\n      config:\n        elements: [" + elements + "]\n";
  Status s = RunYaml(yaml, /*bundle_bytes=*/4096);  // several bundles
  EXPECT_TRUE(s.ok()) << s.ToString();
  // One row fewer expected: the check sees the whole input, so it fails.
  const std::string short_yaml = yaml.substr(0, yaml.rfind(", {n: 399")) + "]\n";
  Status fails = RunYaml(short_yaml, 4096);
  ASSERT_FALSE(fails.ok());
  EXPECT_THAT(fails.message(), HasSubstr("0 missing, 1 unexpected"));
}

TEST(AssertEqual, RunsAfterAShuffleInANestedChain) {
  const std::string yaml = R"(
pipeline:
  type: composite
  transforms:
    - type: Create
      config:
        elements: [{k: "x", t: 1}, {k: "x", t: 8}, {k: "x", t: 11}, {k: "y", t: 101}]
    - type: AssignTimestamps
      input: Create
      config: {timestamp: t}
    - type: chain
      name: Global
      input: AssignTimestamps
      transforms:
        - type: Combine
          config: {group_by: k, combine: {t: sum}}
          windowing: {type: global}
        - type: AssertEqual
          config:
            elements: [{k: "x", t: 20}, {k: "y", t: WRONG}]
)";
  Status wrong = RunYaml(yaml);
  ASSERT_FALSE(wrong.ok());
  EXPECT_THAT(wrong.message(), HasSubstr("transform 'Global/AssertEqual'"));
  std::string right = yaml;
  right.replace(right.find("WRONG"), 5, "101");
  Status s = RunYaml(right);
  EXPECT_TRUE(s.ok()) << s.ToString();
}

// windowing.yaml's Sliding chain: a sliding `windowing:` on a Combine (a WindowInto before it copies
// each row into its windows); the expected rows are that chain's AssertEqual elements.
TEST(AssertEqual, SlidingWindowsAsBeamsWindowingTestExpects) {
  Status s = RunYaml(R"(
pipeline:
  type: composite
  transforms:
    - type: Create
      config:
        elements: [{k: "x", t: 1}, {k: "x", t: 8}, {k: "x", t: 11}, {k: "y", t: 101}]
    - type: AssignTimestamps
      input: Create
      config: {timestamp: t}
    - type: chain
      name: Sliding
      input: AssignTimestamps
      transforms:
        - type: Combine
          config: {group_by: k, combine: {t: sum}}
          windowing: {type: sliding, size: 20s, period: 10s}
        - type: AssertEqual
          config:
            elements: [{k: "x", t: 9}, {k: "x", t: 20}, {k: "x", t: 11}, {k: "y", t: 101}, {k: "y", t: 101}]
)");
  EXPECT_TRUE(s.ok()) << s.ToString();
}

// windowinto.yaml's Sessions chain: a WindowInto with sessions, then a Combine without windowing
// (it merges the sessions); the expected rows are that chain's AssertEqual elements.
TEST(AssertEqual, SessionsOpenedByAWindowIntoMergeInTheCombine) {
  Status s = RunYaml(R"(
pipeline:
  type: composite
  transforms:
    - type: Create
      config:
        elements: [{k: "x", t: 1}, {k: "x", t: 8}, {k: "x", t: 11}, {k: "y", t: 101}]
    - type: AssignTimestamps
      input: Create
      config: {timestamp: t}
    - type: chain
      name: Sessions
      input: AssignTimestamps
      transforms:
        - type: WindowInto
          config:
            windowing: {type: sessions, gap: 5s}
        - type: Combine
          config: {group_by: k, combine: {t: sum}}
        - type: AssertEqual
          config:
            elements: [{k: "x", t: 1}, {k: "x", t: 19}, {k: "y", t: 101}]
)");
  EXPECT_TRUE(s.ok()) << s.ToString();
}

TEST(AssertEqual, ElementsMustBeAListOfRows) {
  StageRegistry r = TestRegistry();
  auto spec = LoadYaml("pipeline:\n  type: chain\n  transforms:\n    - {type: Create, config: {elements: [1]}}\n"
                       "    - {type: AssertEqual, config: {elements: [1]}}\n", r);
  ASSERT_FALSE(spec.ok());
  EXPECT_THAT(spec.status().message(), HasSubstr("p.yaml:5:47: AssertEqual elements must be mappings"));
  EXPECT_THAT(spec.status().message(), Not(HasSubstr("not supported")));
}

TEST(AssertEqual, CompareAssertedKeepsMultiplicity) {
  YAML::Node n = YAML::Load("[{a: 1}, {a: 1}]");
  AssertionResult r = CompareAsserted(ConfigNodeFromYaml(n), {Value::FromRow(Row({{"a", Value::Int(1)}}))});
  ASSERT_EQ(r.missing.size(), 1u);
  EXPECT_EQ(r.missing[0].ToJson(), "{\"a\":1}");
  EXPECT_TRUE(r.unexpected.empty());
}

}  // namespace
}  // namespace dfw
