// A Join of three inputs keyed on different fields per step (Beam's join.yaml, first pipeline):
// run as two-input Joins, left-deep, with Beam's rows (that pipeline's AssertEqual elements).
#include <gmock/gmock.h>

#include "pipeline_test_util.h"

namespace dfw {
namespace {

using ::testing::HasSubstr;
using testing::LoadYaml;
using testing::TempDir;
using testing::TestRegistry;

constexpr const char* kThreeInputs = R"(
pipeline:
  transforms:
    - type: Create
      name: A
      config:
        elements: [{common: "x", a: 1}, {common: "y", a: 2}, {common: "z", a: 3}]
    - type: Create
      name: B
      config:
        elements: [{common: "x", b: 10, other: "t"}, {common: "y", b: 20, other: "u"}, {common: "z", b: 30, other: "v"}]
    - type: Create
      name: C
      config:
        elements: [{other: "t", c: 100}, {other: "u", c: 200}]
    - type: Join
      input: {A: A, B: B, C: C}
      config:
        type: TYPE
        equalities:
          - {B: other, C: other}
          - {A: common, B: common}
        fields: {A: [a], B: [b], C: [c]}
    - type: AssertEqual
      input: Join
      config:
        elements: ELEMENTS
)";

std::string ThreeInputs(const std::string& type, const std::string& elements) {
  std::string yaml = kThreeInputs;
  yaml.replace(yaml.find("TYPE"), 4, type);
  yaml.replace(yaml.find("ELEMENTS"), 8, elements);
  return yaml;
}

Status RunJoinYaml(const std::string& yaml) {
  TempDir dir;
  StageRegistry registry = TestRegistry();
  ASSIGN_OR_RETURN(PipelineSpec spec, LoadYaml(yaml, registry));
  MetricsRegistry metrics;
  return RunAllBundles(spec, registry, RunnerOptions{}, dir / "staging", &metrics).status();
}

TEST(JoinSteps, ThreeInputsKeyedOnDifferentFieldsJoinLeftDeep) {
  const std::string yaml = ThreeInputs("inner", "[{a: 1, b: 10, c: 100}, {a: 2, b: 20, c: 200}]");
  StageRegistry r = TestRegistry();
  auto spec = LoadYaml(yaml, r);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  std::vector<std::string> joins;
  for (const TransformSpec& t : spec->transforms) if (t.config.type == "Join") joins.push_back(t.config.name);
  EXPECT_EQ(joins, (std::vector<std::string>{"Join/step1", "Join"}));
  Status s = RunJoinYaml(yaml);
  EXPECT_TRUE(s.ok()) << s.ToString();
}

// Left joins keep A's unmatched row (z has no C row; SQL's left-deep LEFT JOINs null-extend it).
TEST(JoinSteps, LeftJoinStepsNullExtendAsTheQueryDoes) {
  Status s = RunJoinYaml(ThreeInputs("left", "[{a: 1, b: 10, c: 100}, {a: 2, b: 20, c: 200}, {a: 3, b: 30}]"));
  EXPECT_TRUE(s.ok()) << s.ToString();
}

// Without `fields` for every input the steps cannot name their columns: the Join's own refusal.
TEST(JoinSteps, WithoutFieldsForEveryInputTheRefusalStands) {
  std::string yaml = ThreeInputs("inner", "[]");
  yaml.replace(yaml.find("fields: {A: [a], B: [b], C: [c]}"), 32, "fields: {A: [a], B: [b]}");
  StageRegistry r = TestRegistry();
  auto spec = LoadYaml(yaml, r);
  ASSERT_FALSE(spec.ok());
  EXPECT_THAT(spec.status().message(), HasSubstr("one shuffle"));
}

// A Join that cannot be split keeps its own message (an unknown input in the equalities).
TEST(JoinSteps, ABadJoinIsRefusedWithItsOwnMessage) {
  std::string yaml = ThreeInputs("inner", "[]");
  yaml.replace(yaml.find("{B: other, C: other}"), 20, "{B: other, D: other}");
  StageRegistry r = TestRegistry();
  auto spec = LoadYaml(yaml, r);
  ASSERT_FALSE(spec.ok());
  EXPECT_THAT(spec.status().message(), HasSubstr("'D' is not one of the inputs"));
}

}  // namespace
}  // namespace dfw
