// Composites and chains at any depth, their inputs and outputs, windowing on any transform: each
// pipeline expands into the flat graph the runner runs. The pipelines follow the forms of Beam's
// own YAML tests (sdks/python/apache_beam/yaml/tests/windowing.yaml, windowinto.yaml) and the
// rules of Beam's yaml_transform.py (Scope.get_pcollection, chain_as_composite,
// normalize_inputs_outputs, preprocess_windowing).
#include <gmock/gmock.h>

#include "pipeline_test_util.h"

namespace dfw {
namespace {

using ::testing::HasSubstr;
using testing::LoadYaml;
using testing::TestRegistry;

const TransformSpec* Find(const PipelineSpec& spec, const std::string& name) {
  for (const TransformSpec& t : spec.transforms) {
    if (t.config.name == name) return &t;
  }
  return nullptr;
}

// The names of the transforms `t` reads (main outputs), in input order.
std::vector<std::string> InputNames(const PipelineSpec& spec, const TransformSpec& t) {
  std::vector<std::string> names;
  for (const InputRef& in : t.inputs) names.push_back(spec.transforms[in.from].config.name);
  return names;
}

TEST(LoaderComposite, NestedChainsReadTheCompositesInputAndGetScopedNames) {
  StageRegistry r = TestRegistry();
  auto spec = LoadYaml(R"(
pipeline:
  type: composite
  transforms:
    - type: Create
      config: {elements: [{k: x, t: 1}]}
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
          config: {elements: [{k: x, t: 1}]}
    - type: chain
      name: Fixed
      input: AssignTimestamps
      transforms:
        - type: WindowInto
          config:
            windowing: {type: fixed, size: 10s}
        - type: Combine
          config: {group_by: k, combine: {t: sum}}
        - type: AssertEqual
          config: {elements: [{k: x, t: 1}]}
)", r);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  ASSERT_EQ(spec->transforms.size(), 7u);
  const TransformSpec* combine = Find(*spec, "Global/Combine");
  ASSERT_NE(combine, nullptr);
  EXPECT_EQ(InputNames(*spec, *combine), std::vector<std::string>{"AssignTimestamps"});
  EXPECT_TRUE(combine->config.windowing.IsDefined());  // the Combine windows its own input
  const TransformSpec* assert_global = Find(*spec, "Global/AssertEqual");
  ASSERT_NE(assert_global, nullptr);
  EXPECT_EQ(InputNames(*spec, *assert_global), std::vector<std::string>{"Global/Combine"});
  const TransformSpec* window = Find(*spec, "Fixed/WindowInto");
  ASSERT_NE(window, nullptr);
  EXPECT_EQ(window->config.windowing["type"].Scalar(), "fixed");  // moved out of config (Beam does the same)
  EXPECT_FALSE(window->config.config["windowing"].IsDefined());
  EXPECT_EQ(InputNames(*spec, *Find(*spec, "Fixed/Combine")), std::vector<std::string>{"Fixed/WindowInto"});
  EXPECT_EQ(window->config.line, 23);
}

TEST(LoaderComposite, InputTagsAndOutputTagsMapThroughTheComposite) {
  StageRegistry r = TestRegistry();
  auto spec = LoadYaml(R"(
pipeline:
  transforms:
    - type: Create
      name: Left
      config: {elements: [{a: 1}]}
    - type: Create
      name: Right
      config: {elements: [{a: 2}]}
    - type: composite
      name: Split
      input: {one: Left, many: [Left, Right]}
      output: {small: Low, all: Every}
      transforms:
        - type: Filter
          name: Low
          input: one
          config: {keep: 'a < 2'}
        - type: MapToFields
          name: Every
          input: many
          config: {fields: {a: a}}
    - type: LogForTesting
      name: LogSmall
      input: Split.small
    - type: LogForTesting
      name: LogAll
      input: Split.all
)", r);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(InputNames(*spec, *Find(*spec, "Split/Low")), std::vector<std::string>{"Left"});
  EXPECT_EQ(InputNames(*spec, *Find(*spec, "Split/Every")), (std::vector<std::string>{"Left", "Right"}));
  EXPECT_EQ(InputNames(*spec, *Find(*spec, "LogSmall")), std::vector<std::string>{"Split/Low"});
  EXPECT_EQ(InputNames(*spec, *Find(*spec, "LogAll")), std::vector<std::string>{"Split/Every"});
}

TEST(LoaderComposite, AChainInsideAChainAndItsImplicitOutputs) {
  StageRegistry r = TestRegistry();
  auto spec = LoadYaml(R"(
pipeline:
  type: chain
  transforms:
    - type: Create
      config: {elements: [{a: 1}, {a: -1}]}
    - type: chain
      name: Inner
      transforms:
        - type: MapToFields
          config:
            language: python
            fields: {b: 'a * 2'}
        - type: chain
          name: Deeper
          transforms:
            - type: Filter
              config: {keep: 'b > 0'}
    - type: LogForTesting
)", r);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  ASSERT_EQ(spec->transforms.size(), 4u);
  EXPECT_EQ(InputNames(*spec, *Find(*spec, "Inner/MapToFields")), std::vector<std::string>{"Create"});
  EXPECT_EQ(InputNames(*spec, *Find(*spec, "Inner/Deeper/Filter")), std::vector<std::string>{"Inner/MapToFields"});
  EXPECT_EQ(InputNames(*spec, *Find(*spec, "LogForTesting")), std::vector<std::string>{"Inner/Deeper/Filter"});
}

TEST(LoaderComposite, NamesAreUniquePerScopeAndAReferenceMayNameTheType) {
  StageRegistry r = TestRegistry();
  auto spec = LoadYaml(R"(
pipeline:
  transforms:
    - type: Create
      name: Numbers
      config: {elements: [{a: 1}]}
    - type: composite
      name: A
      input: Create
      output: Log
      transforms:
        - {type: LogForTesting, name: Log, input: input}
    - type: composite
      name: B
      input: A
      output: Log
      transforms:
        - {type: LogForTesting, name: Log, input: input}
)", r);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  // `input: Create` finds the transform named Numbers by its type, as Beam's Scope does.
  EXPECT_EQ(InputNames(*spec, *Find(*spec, "A/Log")), std::vector<std::string>{"Numbers"});
  EXPECT_EQ(InputNames(*spec, *Find(*spec, "B/Log")), std::vector<std::string>{"A/Log"});
}

TEST(LoaderComposite, WindowingOnATransformBecomesAWindowIntoBeforeItOrAfterASource) {
  StageRegistry r = TestRegistry();
  auto spec = LoadYaml(R"(
pipeline:
  transforms:
    - type: Create
      config: {elements: [{t: 1}]}
      windowing: {type: global}
    - type: AssignTimestamps
      input: Create
      config: {timestamp: t}
    - type: LogForTesting
      input: AssignTimestamps
      windowing: {type: fixed, size: 10s}
)", r);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  const TransformSpec* after_source = Find(*spec, "Create/WindowInto");
  ASSERT_NE(after_source, nullptr);
  EXPECT_EQ(InputNames(*spec, *after_source), std::vector<std::string>{"Create"});
  EXPECT_EQ(InputNames(*spec, *Find(*spec, "AssignTimestamps")), std::vector<std::string>{"Create/WindowInto"});
  const TransformSpec* before = Find(*spec, "LogForTesting/WindowInto[0]");
  ASSERT_NE(before, nullptr);
  EXPECT_EQ(InputNames(*spec, *before), std::vector<std::string>{"AssignTimestamps"});
  EXPECT_EQ(before->config.windowing["type"].Scalar(), "fixed");
  EXPECT_EQ(before->config.line, 12);  // where the windowing was written
  EXPECT_EQ(InputNames(*spec, *Find(*spec, "LogForTesting")), std::vector<std::string>{"LogForTesting/WindowInto[0]"});
}

struct CompositeBadCase {
  const char* name;
  const char* yaml;
  std::vector<std::string> fragments;
};

TEST(LoaderComposite, RefusesWhatBeamRefusesWithThePlace) {
  const std::vector<CompositeBadCase> cases = {
      {"a composite sees only its own scope",
       "pipeline:\n  transforms:\n    - {type: Create, config: {elements: [1]}}\n    - type: composite\n      name: C\n"
       "      input: Create\n      transforms:\n        - {type: LogForTesting, input: Create}\n",
       {"p.yaml:8:40:", "input 'Create' names no transform in composite 'C'", "sees only its own transforms"}},
      {"explicit input inside a chain",
       "pipeline:\n  type: chain\n  transforms:\n    - {type: Create, config: {elements: [1]}}\n    - type: chain\n"
       "      transforms:\n        - {type: LogForTesting, input: Create}\n",
       {"p.yaml:7:40:", "part of a chain"}},
      {"a composite without output has nothing to read",
       "pipeline:\n  transforms:\n    - {type: Create, config: {elements: [1]}}\n    - type: composite\n      name: C\n"
       "      input: Create\n      transforms:\n        - {type: LogForTesting, input: input}\n"
       "    - {type: LogForTesting, name: L, input: C}\n",
       {"p.yaml:9:45:", "composite 'C' declares no 'output:'"}},
      {"several outputs need a tag",
       "pipeline:\n  transforms:\n    - {type: Create, config: {elements: [1]}}\n    - type: composite\n      name: C\n"
       "      input: Create\n      output: {a: X, b: Y}\n      transforms:\n"
       "        - {type: LogForTesting, name: X, input: input}\n        - {type: LogForTesting, name: Y, input: input}\n"
       "    - {type: LogForTesting, name: L, input: C}\n",
       {"p.yaml:11:45:", "is ambiguous", "'C.a', 'C.b'"}},
      {"unknown output tag",
       "pipeline:\n  transforms:\n    - {type: Create, config: {elements: [1]}}\n    - type: composite\n      name: C\n"
       "      input: Create\n      output: X\n      transforms:\n        - {type: LogForTesting, name: X, input: input}\n"
       "    - {type: LogForTesting, name: L, input: C.nope}\n",
       {"p.yaml:10:45:", "has no output 'nope'", "'C.output'"}},
      {"transforms on a leaf",
       "pipeline:\n  transforms:\n    - type: Create\n      config: {elements: [1]}\n      transforms: []\n",
       {"p.yaml:5:19:", "'transforms' belongs to a transform of type composite or chain"}},
      {"an empty chain",
       "pipeline:\n  transforms:\n    - {type: Create, config: {elements: [1]}}\n    - type: chain\n      input: Create\n"
       "      transforms: []\n",
       {"p.yaml:6:19:", "chain 'chain' has no transforms"}},
  };
  StageRegistry r = TestRegistry();
  for (const CompositeBadCase& c : cases) {
    SCOPED_TRACE(c.name);
    Result<PipelineSpec> spec = LoadYaml(c.yaml, r);
    ASSERT_FALSE(spec.ok());
    EXPECT_EQ(spec.status().code(), StatusCode::kInvalidArgument) << spec.status().ToString();
    for (const std::string& f : c.fragments) EXPECT_THAT(spec.status().message(), HasSubstr(f));
  }
}

// output_schema on any transform (Beam's expand_output_schema_transform): a ValidateWithSchema after
// it, which its main output then is; the rows failing the schema join the transform's own error
// output, or (Create, which has none: create.yaml's eighth pipeline) the one output_schema names.
TEST(LoaderComposite, OutputSchemaChecksATransformsRowsAndSendsFailuresToItsErrorOutput) {
  StageRegistry r = TestRegistry();
  auto spec = LoadYaml(R"(
pipeline:
  type: composite
  transforms:
    - type: Create
      config:
        elements: [{sdk: MapReduce, year: 2004}, {sdk: CheeseWheel, year: apple}]
        output_schema:
          type: object
          properties: {year: {type: integer}}
          error_handling: {output: invalid_rows}
      windowing: {type: global}
    - type: MapToFields
      name: Fix
      input: Create
      config:
        language: python
        fields: {year: year}
        error_handling: {output: bad}
        output_schema: {type: object, properties: {year: {type: integer}}}
    - type: LogForTesting
      input: Fix
    - type: LogForTesting
      name: Bad
      input: Fix.bad
    - type: LogForTesting
      name: Invalid
      input: Create.invalid_rows
)", r);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  const TransformSpec* create_check = Find(*spec, "Create/OutputSchema");
  ASSERT_NE(create_check, nullptr);
  EXPECT_EQ(create_check->config.type, "ValidateWithSchema");
  EXPECT_EQ(create_check->config.error_output, "invalid_rows");
  EXPECT_FALSE(create_check->config.config["schema"]["error_handling"].IsDefined());
  EXPECT_TRUE(create_check->config.config["schema"]["properties"].IsDefined());
  EXPECT_FALSE(Find(*spec, "Create")->config.config["output_schema"].IsDefined());
  EXPECT_EQ(InputNames(*spec, *create_check), std::vector<std::string>{"Create"});
  // A source's windowing comes after its check.
  EXPECT_EQ(InputNames(*spec, *Find(*spec, "Create/WindowInto")), std::vector<std::string>{"Create/OutputSchema"});
  EXPECT_EQ(InputNames(*spec, *Find(*spec, "Fix")), std::vector<std::string>{"Create/WindowInto"});
  const TransformSpec* fix_check = Find(*spec, "Fix/OutputSchema");
  ASSERT_NE(fix_check, nullptr);
  EXPECT_EQ(fix_check->config.error_output, "bad");
  EXPECT_FALSE(Find(*spec, "Fix")->config.config["output_schema"].IsDefined());
  EXPECT_EQ(InputNames(*spec, *Find(*spec, "LogForTesting")), std::vector<std::string>{"Fix/OutputSchema"});
  const TransformSpec* bad = Find(*spec, "Bad");
  EXPECT_EQ(InputNames(*spec, *bad), (std::vector<std::string>{"Fix", "Fix/OutputSchema"}));
  ASSERT_EQ(bad->inputs.size(), 2u);
  EXPECT_TRUE(bad->inputs[0].error && bad->inputs[1].error);
  const TransformSpec* invalid = Find(*spec, "Invalid");
  EXPECT_EQ(InputNames(*spec, *invalid), std::vector<std::string>{"Create/OutputSchema"});
  ASSERT_EQ(invalid->inputs.size(), 1u);
  EXPECT_TRUE(invalid->inputs[0].error);
}

// create.yaml's eighth pipeline, run: the element that fails the schema reaches the error output
// (as Beam's error rows, under `element`), the others the main output; every row accounted for.
TEST(LoaderComposite, OutputSchemaFailuresReachTheErrorOutputWhenRun) {
  // The collecting sink "Out" reads `collected`; the other output goes to a log.
  auto pipeline = [](const std::string& collected, const std::string& logged) {
    return R"(
pipeline:
  type: composite
  transforms:
    - type: Create
      config:
        elements: [{sdk: MapReduce, year: 2004}, {sdk: CheeseWheel, year: apple}, {sdk: MillWheel, year: 2008}]
        output_schema:
          type: object
          properties: {sdk: {type: string}, year: {type: integer}}
          error_handling: {output: invalid_rows}
    - {type: TestCollect, name: Out, input: )" + collected + R"(}
    - {type: LogForTesting, input: )" + logged + "}\n";
  };
  auto errors = testing::RunCollect(pipeline("Create.invalid_rows", "Create"));
  ASSERT_TRUE(errors.ok()) << errors.status().ToString();
  ASSERT_EQ(errors->size(), 1u);
  EXPECT_THAT((*errors)[0], HasSubstr(R"("element":{"sdk":"CheeseWheel","year":"apple"})"));
  EXPECT_THAT((*errors)[0], HasSubstr("does not match the schema"));
  auto rows = testing::RunCollect(pipeline("Create", "Create.invalid_rows"));
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  EXPECT_EQ(*rows, (std::vector<std::string>{R"({"sdk":"MapReduce","year":2004})", R"({"sdk":"MillWheel","year":2008})"}));
}

TEST(LoaderComposite, OutputSchemaMistakesAreRefusedWithTheirPlace) {
  StageRegistry r = TestRegistry();
  auto twice = LoadYaml(R"(
pipeline:
  type: chain
  transforms:
    - type: Create
      config: {elements: [{a: 1}]}
    - type: MapToFields
      config:
        language: python
        fields: {a: a}
        error_handling: {output: bad}
        output_schema: {type: object, error_handling: {output: other}}
)", r);
  ASSERT_FALSE(twice.ok());
  EXPECT_THAT(twice.status().message(), HasSubstr("p.yaml:12:"));
  EXPECT_THAT(twice.status().message(), HasSubstr("remove error_handling from output_schema"));
  auto unread = LoadYaml(R"(
pipeline:
  type: chain
  transforms:
    - type: Create
      config:
        elements: [{a: 1}]
        output_schema: {type: object, error_handling: {output: invalid_rows}}
    - type: LogForTesting
)", r);
  ASSERT_FALSE(unread.ok());
  EXPECT_THAT(unread.status().message(), HasSubstr("invalid_rows"));
  auto on_sink = LoadYaml(R"(
pipeline:
  type: chain
  transforms:
    - type: Create
      config: {elements: [{a: 1}]}
    - type: WriteToJson
      config: {path: /tmp/x, output_schema: {type: object}}
)", r);
  ASSERT_FALSE(on_sink.ok());
  EXPECT_EQ(on_sink.status().code(), StatusCode::kUnimplemented);
  EXPECT_THAT(on_sink.status().message(), HasSubstr("has no main output to check"));
  auto not_a_map = LoadYaml(R"(
pipeline:
  type: chain
  transforms:
    - type: Create
      config: {elements: [{a: 1}], output_schema: [1]}
    - type: LogForTesting
)", r);
  ASSERT_FALSE(not_a_map.ok());
  EXPECT_THAT(not_a_map.status().message(), HasSubstr("p.yaml:6:"));
  EXPECT_THAT(not_a_map.status().message(), HasSubstr("JSON Schema mapping"));
}

}  // namespace
}  // namespace dfw
