#include <gmock/gmock.h>

#include "dfw/pipeline/dependencies.h"
#include "pipeline_test_util.h"

namespace dfw {
namespace {

using ::testing::HasSubstr;
using testing::LoadYaml;
using testing::TestRegistry;

struct BadCase {
  const char* name;
  const char* yaml;
  StatusCode code;
  std::vector<std::string> fragments;  // all must appear in the message
};

const std::vector<BadCase>& BadCases() {
  static const std::vector<BadCase> kCases = {
      {"unknown type with did-you-mean",
       "pipeline:\n  type: chain\n  transforms:\n    - type: ReadFromJsn\n      config: {path: x}\n",
       StatusCode::kInvalidArgument, {"p.yaml:4:13:", "unknown transform type 'ReadFromJsn'", "did you mean 'ReadFromJson'"}},
      {"unknown config key with did-you-mean",
       "pipeline:\n  type: chain\n  transforms:\n    - type: ReadFromJson\n      config: {pth: x}\n",
       StatusCode::kInvalidArgument, {"p.yaml:5:", "unknown key 'pth'", "did you mean 'path'"}},
      {"missing required key",
       "pipeline:\n  type: chain\n  transforms:\n    - type: ReadFromJson\n      config: {}\n",
       StatusCode::kInvalidArgument, {"'path' is required"}},
      {"windowing on a composite without inputs refused",
       "pipeline:\n  transforms:\n    - type: composite\n      name: C\n      windowing: {type: fixed, size: 60s}\n"
       "      transforms:\n        - type: Create\n          config: {elements: [1]}\n",
       StatusCode::kUnimplemented, {"p.yaml:5:18:", "windowing on composite 'C'", "not supported"}},
      {"pipeline windowing refused",
       "pipeline:\n  windowing: {type: global}\n  transforms: []\n", StatusCode::kUnimplemented, {"windowing"}},
      {"Sql query that does not parse",
       "pipeline:\n  transforms:\n    - type: Create\n      config: {elements: [1]}\n    - type: Sql\n      input: Create\n      config: {query: q}\n",
       StatusCode::kInvalidArgument, {"p.yaml:7:", "transform 'Sql' (Sql): query", "syntax error"}},
      {"Sql/run is not a type a pipeline names",
       "pipeline:\n  transforms:\n    - type: Create\n      config: {elements: [1]}\n    - type: Sql/run\n      input: Create\n      config: {query: q}\n",
       StatusCode::kInvalidArgument, {"p.yaml:5:13:", "unknown transform type 'Sql/run'"}},
      {"PyTransform refused",
       "pipeline:\n  transforms:\n    - type: PyTransform\n      config: {constructor: x}\n",
       StatusCode::kUnimplemented, {"PyTransform"}},
      {"callable without a def refused",
       "pipeline:\n  type: chain\n  transforms:\n    - type: Create\n      config: {elements: [1]}\n    - type: MapToFields\n"
       "      config:\n        language: python\n        fields: {y: {callable: 'import re'}}\n",
       StatusCode::kInvalidArgument, {"SyntaxError: invalid syntax"}},  // Beam: `__python_callable__ = import re`
      {"javascript refused",
       "pipeline:\n  type: chain\n  transforms:\n    - type: Create\n      config: {elements: [1]}\n    - type: Filter\n"
       "      config: {language: javascript, keep: 'x'}\n",
       StatusCode::kUnimplemented, {"language 'javascript' is valid Beam YAML but is not supported"}},
      {"providers refused", "providers: []\npipeline:\n  transforms: []\n", StatusCode::kUnimplemented, {"providers"}},
      {"unknown top-level key", "pipline:\n  transforms: []\n", StatusCode::kInvalidArgument,
       {"unknown key 'pipline'", "did you mean 'pipeline'"}},
      {"error output not consumed",
       "pipeline:\n  type: chain\n  transforms:\n    - type: Create\n      config: {elements: [1]}\n    - type: MapToFields\n"
       "      config:\n        fields: {y: element}\n        error_handling: {output: bad}\n",
       StatusCode::kInvalidArgument, {"p.yaml:6:7:", "error output 'bad' is not consumed", "MapToFields.bad"}},
      {"error_handling where records cannot fail",
       "pipeline:\n  transforms:\n    - type: Create\n      config: {elements: [1]}\n    - type: Flatten\n      input: Create\n"
       "      config: {error_handling: {output: e}}\n",
       StatusCode::kInvalidArgument, {"'error_handling' is not allowed here"}},
      {"threshold out of range",
       "pipeline:\n  transforms:\n    - type: ReadFromJson\n      config: {path: x, error_handling: {output: e, threshold: 2}}\n",
       StatusCode::kInvalidArgument, {"threshold must be a number between 0 and 1"}},
      {"input names nothing, with did-you-mean",
       "pipeline:\n  transforms:\n    - type: Create\n      name: Numbers\n      config: {elements: [1]}\n"
       "    - type: LogForTesting\n      input: Number\n",
       StatusCode::kInvalidArgument, {"p.yaml:7:14:", "input 'Number' names no transform", "did you mean 'Numbers'"}},
      {"unknown named output",
       "pipeline:\n  transforms:\n    - type: Create\n      config: {elements: [1]}\n    - type: LogForTesting\n      input: Create.bad\n",
       StatusCode::kInvalidArgument, {"has no output 'bad'"}},
      {"missing input outside a chain",
       "pipeline:\n  transforms:\n    - type: Create\n      config: {elements: [1]}\n    - type: LogForTesting\n",
       StatusCode::kInvalidArgument, {"'input' is required outside a chain"}},
      {"input inside a chain",
       "pipeline:\n  type: chain\n  transforms:\n    - type: Create\n      config: {elements: [1]}\n    - type: LogForTesting\n"
       "      input: Create\n",
       StatusCode::kInvalidArgument, {"inside a chain inputs are implicit"}},
      {"chain without a source",
       "pipeline:\n  type: chain\n  transforms:\n    - type: LogForTesting\n", StatusCode::kInvalidArgument,
       {"a chain starts with a source"}},
      {"cycle",
       "pipeline:\n  transforms:\n    - type: Create\n      config: {elements: [1]}\n    - type: Flatten\n      name: A\n"
       "      input: [Create, B]\n    - type: Flatten\n      name: B\n      input: A\n",
       StatusCode::kInvalidArgument, {"cycle", "A", "B"}},
      {"sink has no output",
       "pipeline:\n  transforms:\n    - type: Create\n      config: {elements: [1]}\n    - type: WriteToJson\n      input: Create\n"
       "      config: {path: out}\n    - type: LogForTesting\n      input: WriteToJson\n",
       StatusCode::kInvalidArgument, {"is a sink and has no output"}},
      {"input mapping names no transform",
       "pipeline:\n  transforms:\n    - type: Create\n      config: {elements: [1]}\n    - type: Flatten\n      input: {a: Creat}\n",
       StatusCode::kInvalidArgument, {"p.yaml:6:18:", "input 'Creat' names no transform", "did you mean 'Create'"}},
      {"yaml syntax error", "pipeline:\n  transforms: [\n", StatusCode::kInvalidArgument, {"p.yaml:", "YAML syntax error"}},
      {"bad config value",
       "pipeline:\n  type: chain\n  source:\n    type: ReadFromCsv\n    config: {path: x, delimiter: ';;'}\n",
       StatusCode::kInvalidArgument, {"p.yaml:5:", "delimiter", "single character"}},
      {"dependencies that are not a list of requirements",
       "pipeline:\n  type: chain\n  transforms:\n    - type: Create\n      config: {elements: [1]}\n    - type: MapToFields\n"
       "      config:\n        language: python\n        dependencies: numpy\n        fields: {y: element}\n",
       StatusCode::kInvalidArgument, {"p.yaml:9:23:", "'dependencies' must be a list of pip requirements"}},
      {"dependencies beside config, not in it",
       "pipeline:\n  type: chain\n  transforms:\n    - type: Create\n      config: {elements: [1]}\n    - type: MapToFields\n"
       "      dependencies: [numpy]\n      config: {language: python, fields: {y: element}}\n",
       StatusCode::kUnimplemented, {"p.yaml:7:7:", "'dependencies' is valid Beam YAML but only inside the transform's config"}},
      {"duplicate key in a config",
       "pipeline:\n  type: chain\n  transforms:\n    - type: Create\n      config: {elements: [1]}\n    - type: Filter\n"
       "      config:\n        keep: 'element > 0'\n        keep: 'element > 5'\n",
       StatusCode::kInvalidArgument, {"p.yaml:9:9:", "duplicate key 'keep'", "first at line 8, column 9"}},
      {"duplicate top-level key",
       "pipeline:\n  transforms: []\npipeline:\n  transforms: []\n", StatusCode::kInvalidArgument,
       {"p.yaml:3:1:", "duplicate key 'pipeline'"}},
      {"extra_transforms without chain",
       "pipeline:\n  source: {type: Create, config: {elements: [1]}}\n  extra_transforms: []\n", StatusCode::kInvalidArgument,
       {"p.yaml:3:21:", "only allowed with 'type: chain'"}},
      // resource_hints: the structure is the loader's (values are the options module's).
      {"unknown resource hint on a transform",
       "pipeline:\n  type: chain\n  transforms:\n    - type: Create\n      config: {elements: [1]}\n"
       "      resource_hints: {min_rma: 4GB}\n",
       StatusCode::kInvalidArgument,
       {"p.yaml:6:24:", "transform 'Create' (Create) resource_hints: unknown hint 'min_rma'", "did you mean 'min_ram'",
        "known: accelerator, min_ram, cpu_count"}},
      {"unknown resource hint on the pipeline",
       "pipeline:\n  resource_hints:\n    gpu: nvidia-l4\n  transforms:\n    - type: Create\n      config: {elements: [1]}\n",
       StatusCode::kInvalidArgument, {"p.yaml:3:5:", "pipeline resource_hints: unknown hint 'gpu'", "known: accelerator"}},
      {"resource hint value is a list",
       "pipeline:\n  type: chain\n  transforms:\n    - type: Create\n      config: {elements: [1]}\n"
       "      resource_hints:\n        min_ram: [4GB, 8GB]\n",
       StatusCode::kInvalidArgument, {"p.yaml:7:18:", "'min_ram' must be one value", "not a list", "min_ram: 16GB"}},
      {"resource hint value is a mapping",
       "pipeline:\n  type: chain\n  transforms:\n    - type: Create\n      config: {elements: [1]}\n"
       "      resource_hints:\n        accelerator: {type: nvidia-l4, count: 1}\n",
       StatusCode::kInvalidArgument,
       {"p.yaml:7:22:", "'accelerator' must be one value", "not a mapping", "type:nvidia-l4;count:1;install-nvidia-driver"}},
      {"resource hint without a value",
       "pipeline:\n  type: chain\n  transforms:\n    - type: Create\n      config: {elements: [1]}\n"
       "      resource_hints:\n        cpu_count:\n",
       StatusCode::kInvalidArgument, {"p.yaml:7:9:", "'cpu_count' must be one value", "not empty"}},
      {"resource_hints not a mapping",
       "pipeline:\n  resource_hints: [min_ram=4GB]\n  transforms:\n    - type: Create\n      config: {elements: [1]}\n",
       StatusCode::kInvalidArgument, {"p.yaml:2:19:", "pipeline resource_hints: expected a mapping"}},
  };
  return kCases;
}

TEST(Loader, RejectsBadPipelinesWithLocatedMessages) {
  StageRegistry r = TestRegistry();
  for (const BadCase& c : BadCases()) {
    SCOPED_TRACE(c.name);
    Result<PipelineSpec> spec = LoadYaml(c.yaml, r);
    ASSERT_FALSE(spec.ok());
    EXPECT_EQ(spec.status().code(), c.code) << spec.status().ToString();
    for (const std::string& f : c.fragments) EXPECT_THAT(spec.status().message(), HasSubstr(f));
  }
}

// "Billion laughs": nested aliases make a few hundred bytes a tree of 10^9 nodes. The loader counts
// nodes as the aliases expand and refuses the file before anything is converted or allocated.
TEST(Loader, AnAliasBombIsRefusedBeforeItExpands) {
  std::string yaml = "defs:\n  - &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int level = 1; level < 9; ++level) {
    yaml += "  - &a" + std::to_string(level) + " [";
    for (int k = 0; k < 10; ++k) yaml += (k ? ", *a" : "*a") + std::to_string(level - 1);
    yaml += "]\n";
  }
  yaml += "pipeline:\n  type: chain\n  transforms:\n    - {type: Create, config: {elements: *a8}}\n"
          "    - {type: LogForTesting}\n";
  ASSERT_LT(yaml.size(), 1000u);
  StageRegistry r = TestRegistry();
  Result<PipelineSpec> spec = LoadYaml(yaml, r);
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(spec.status().message(), HasSubstr("YAML nodes (aliases expanding?)"));
}

// Beam's extract_extra_dependencies: a transform's config may list pip requirements; they are
// installed before the load (dfw/pipeline/dependencies.h) and are no key of the stage's config.
TEST(Loader, DependenciesInAConfigAreCollectedAndNotTheStages) {
  const std::string yaml =
      "pipeline:\n  type: chain\n  transforms:\n    - type: Create\n      config: {elements: [{a: 1}]}\n"
      "    - type: composite\n      name: Inner\n      transforms:\n"
      "        - type: MapToFields\n          input: input\n"
      "          config: {language: python, dependencies: [numpy, 'pyarrow>=14'], fields: {b: a}}\n"
      "        - type: Filter\n          input: MapToFields\n"
      "          config: {language: python, dependencies: [numpy], keep: 'b > 0', bogus: 1}\n";
  Result<std::vector<std::string>> deps = PythonDependencies(yaml, "p.yaml");
  ASSERT_TRUE(deps.ok()) << deps.status().ToString();
  std::vector<std::string> sorted = *deps;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, (std::vector<std::string>{"numpy", "pyarrow>=14"}));
  // The stage sees its config without the list, and a bad key beside it keeps its place in the file.
  StageRegistry r = TestRegistry();
  Result<PipelineSpec> spec = LoadYaml(yaml, r);
  ASSERT_FALSE(spec.ok());
  EXPECT_THAT(spec.status().message(), HasSubstr("p.yaml:14:76:"));
  EXPECT_THAT(spec.status().message(), HasSubstr("unknown key 'bogus'"));
  std::string fixed = yaml;
  fixed.replace(fixed.find(", bogus: 1"), 10, "");
  spec = LoadYaml(fixed, r);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  for (const TransformSpec& t : spec->transforms) EXPECT_FALSE(t.config.config["dependencies"].IsDefined()) << t.config.name;
  EXPECT_EQ(PythonDependencies("pipeline: [\n", "p.yaml")->size(), 0u);  // the loader reports the syntax
  // Data that looks like a transform (a Create's element) is no transform.
  Result<std::vector<std::string>> data = PythonDependencies(
      "pipeline:\n  transforms:\n    - type: Create\n      config: {elements: [{type: x, config: {dependencies: 3}}]}\n", "p.yaml");
  ASSERT_TRUE(data.ok()) << data.status().ToString();
  EXPECT_TRUE(data->empty());
  Result<std::vector<std::string>> bad = PythonDependencies(
      "pipeline:\n  transforms:\n    - type: MapToFields\n      config: {dependencies: [[numpy]]}\n", "p.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("p.yaml:4:30: every entry of 'dependencies' must be one requirement string"));
}

TEST(Loader, ChainWithSourceSinkAndExtraTransformsIsWiredInOrder) {
  StageRegistry r = TestRegistry();
  auto spec = LoadYaml(R"(
pipeline:
  type: chain
  source:
    type: Create
    config: {elements: [{a: 1}]}
  transforms:
    - type: MapToFields
      name: Parse
      config:
        fields: {b: a}
        error_handling: {output: bad, threshold: 0.5}
  sink:
    type: WriteToJson
    config: {path: out/x}
  extra_transforms:
    - type: WriteToJson
      name: Errors
      input: Parse.bad
      config: {path: out/errors}
options:
  streaming: false
)", r);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  ASSERT_EQ(spec->transforms.size(), 4u);
  EXPECT_EQ(spec->transforms[0].config.name, "Create");
  EXPECT_EQ(spec->transforms[1].config.name, "Parse");
  EXPECT_EQ(spec->transforms[1].config.error_output, "bad");
  EXPECT_DOUBLE_EQ(spec->transforms[1].config.error_threshold, 0.5);
  EXPECT_EQ(spec->transforms[1].config.line, 8);
  // Both writers read from Parse: one its main output, one its error output.
  int main_readers = 0, error_readers = 0;
  for (const TransformSpec& t : spec->transforms) {
    for (const InputRef& in : t.inputs) {
      if (spec->transforms[in.from].config.name == "Parse") (in.error ? error_readers : main_readers)++;
    }
  }
  EXPECT_EQ(main_readers, 1);
  EXPECT_EQ(error_readers, 1);
}

TEST(Loader, ListInputFlattensAndOrderIsTopological) {
  StageRegistry r = TestRegistry();
  auto spec = LoadYaml(R"(
pipeline:
  transforms:
    - type: Flatten
      name: Both
      input: [A, B]
    - type: Create
      name: A
      config: {elements: [1]}
    - type: Create
      name: B
      config: {elements: [2]}
)", r);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  ASSERT_EQ(spec->transforms.size(), 3u);
  EXPECT_EQ(spec->transforms[2].config.name, "Both");
  EXPECT_EQ(spec->transforms[2].inputs.size(), 2u);
}

TEST(Loader, RepeatedTypesInAChainGetUniqueRunTimeNames) {
  StageRegistry r = TestRegistry();
  auto spec = LoadYaml(R"(
pipeline:
  type: chain
  transforms:
    - type: Create
      config: {elements: [1]}
    - type: Filter
      config: {keep: element}
    - type: Filter
      config: {keep: element}
)", r);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  ASSERT_EQ(spec->transforms.size(), 3u);
  EXPECT_EQ(spec->transforms[1].config.name, "Filter");
  EXPECT_EQ(spec->transforms[2].config.name, "Filter_2");
  ASSERT_EQ(spec->transforms[2].inputs.size(), 1u);
  EXPECT_EQ(spec->transforms[2].inputs[0].from, 1);
}

TEST(Loader, ResourceHintsAreAcceptedOnThePipelineAndOnTransforms) {
  StageRegistry r = TestRegistry();
  Result<PipelineSpec> spec = LoadYaml(
      "pipeline:\n  type: chain\n  resource_hints: {min_ram: 4GB}\n  transforms:\n    - type: Create\n      config: {elements: [1]}\n"
      "    - type: LogForTesting\n      resource_hints: {accelerator: 'type:nvidia-l4;count:1;install-nvidia-driver'}\n",
      r);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  ASSERT_EQ(spec->transforms.size(), 2u);
  ASSERT_EQ(spec->resource_hints.size(), 1u);
  EXPECT_EQ(spec->resource_hints[0].key, "min_ram");
  EXPECT_EQ(spec->resource_hints[0].value, "4GB");
  EXPECT_EQ(spec->resource_hints[0].line, 3);
  EXPECT_EQ(spec->resource_hints[0].column, 29);
  EXPECT_TRUE(spec->transforms[0].resource_hints.empty());
  ASSERT_EQ(spec->transforms[1].resource_hints.size(), 1u);
  EXPECT_EQ(spec->transforms[1].resource_hints[0].key, "accelerator");
  EXPECT_EQ(spec->transforms[1].resource_hints[0].value, "type:nvidia-l4;count:1;install-nvidia-driver");
  EXPECT_EQ(spec->transforms[1].resource_hints[0].line, 8);
}

TEST(Loader, ResourceHintsOnChainSourceAndSinkAndEveryKnownKeyKeepTheirOrder) {
  StageRegistry r = TestRegistry();
  Result<PipelineSpec> spec = LoadYaml(
      "pipeline:\n  type: chain\n  source:\n    type: Create\n    config: {elements: [1]}\n"
      "    resource_hints: {cpu_count: 4, min_ram: 1.5GB, accelerator: 'type:nvidia-l4;count:1'}\n"
      "  sink:\n    type: LogForTesting\n    resource_hints:\n      min_ram: 4000000000\n",
      r);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  ASSERT_EQ(spec->transforms.size(), 2u);
  std::vector<std::string> keys, values;
  for (const ResourceHintSpec& h : spec->transforms[0].resource_hints) {
    keys.push_back(h.key);
    values.push_back(h.value);
  }
  EXPECT_EQ(keys, (std::vector<std::string>{"cpu_count", "min_ram", "accelerator"}));
  EXPECT_EQ(values, (std::vector<std::string>{"4", "1.5GB", "type:nvidia-l4;count:1"}));
  ASSERT_EQ(spec->transforms[1].resource_hints.size(), 1u);
  EXPECT_EQ(spec->transforms[1].resource_hints[0].value, "4000000000");
  EXPECT_TRUE(spec->resource_hints.empty());
}

TEST(Loader, MissingFileIsNotFound) {
  StageRegistry r = TestRegistry();
  auto spec = LoadPipelineFile("/nonexistent/p.yaml", r);
  ASSERT_FALSE(spec.ok());
  EXPECT_THAT(spec.status().message(), HasSubstr("/nonexistent/p.yaml"));
}

}  // namespace
}  // namespace dfw
