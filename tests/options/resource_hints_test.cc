// Resource hints written in the pipeline file (Beam YAML `resource_hints:` on the pipeline and on
// transforms) go through the same grammar as --resource_hints, with the YAML position as the origin.
#include <gtest/gtest.h>

#include "dfw/options/parse.h"
#include "test_util.h"

namespace dfw {
namespace resource_hints_test {

using dfw::testing::kL4Accelerator;

std::vector<std::string> Codes(const PipelineOptions& o) {
  std::vector<std::string> codes;
  for (const Diagnostic& d : o.diagnostics) codes.push_back(d.code);
  return codes;
}

// Create (no hints) → a transform named `name` with `resource_hints: HINTS` → LogForTesting.
std::string Pipeline(const std::string& pipeline_hints, const std::string& name, const std::string& hints) {
  std::string y = "pipeline:\n  type: chain\n";
  if (!pipeline_hints.empty()) y += "  resource_hints: " + pipeline_hints + "\n";
  y += "  transforms:\n    - type: Create\n      config: {elements: [1]}\n";
  y += "    - type: MapToFields\n      name: " + name + "\n      config: {fields: {x: element}}\n";
  if (!hints.empty()) y += "      resource_hints: " + hints + "\n";
  y += "    - type: LogForTesting\n";
  return y;
}

TEST(YamlResourceHints, ATransformsAcceleratorDeclaresTheJobsGpuWithItsYamlOrigin) {
  auto o = ParsePipelineOptions({}, Pipeline("", "Embed", "{accelerator: \"" + kL4Accelerator + "\"}"), "p.yaml");
  EXPECT_TRUE(o.diagnostics.empty()) << o.diagnostics.front().message;
  ASSERT_TRUE(o.accelerator_hint);
  EXPECT_EQ(o.accelerator_hint->gpu_type, "nvidia-l4");
  EXPECT_EQ(o.accelerator_hint->count, 1);
  EXPECT_TRUE(o.accelerator_hint->install_driver);
  EXPECT_EQ(o.accelerator_hint->origin.where, "p.yaml:9:37");  // the value (its opening quote)
  EXPECT_EQ(o.accelerator_hint->origin.text, "      resource_hints: {accelerator: \"" + kL4Accelerator + "\"}");
  ASSERT_TRUE(o.accelerator_hint->type_field);
  EXPECT_EQ(o.accelerator_hint->origin.text.substr(o.accelerator_hint->type_field->offset, 14), "type:nvidia-l4");
  EXPECT_FALSE(o.worker_accelerator);
  ASSERT_EQ(o.transform_hints.size(), 1u);
  EXPECT_EQ(o.transform_hints[0].transform, "Embed");
  EXPECT_EQ(o.transform_hints[0].where, "p.yaml:6:7");
  EXPECT_TRUE(o.transform_hints[0].own_accelerator);
  EXPECT_FALSE(o.pipeline_hints);
}

TEST(YamlResourceHints, PipelineLevelHintsApplyToEveryTransformAndMinRamTakesTheMaximum) {
  // Beam's own example: the pipeline asks 1GB, the transform 3GB; the worker needs 3GB.
  auto o = ParsePipelineOptions({}, Pipeline("{min_ram: 1GB}", "Strip", "{min_ram: 3GB}"), "p.yaml");
  EXPECT_TRUE(o.diagnostics.empty());
  ASSERT_TRUE(o.min_ram_bytes);
  EXPECT_EQ(*o.min_ram_bytes, 3'000'000'000u);
  ASSERT_TRUE(o.min_ram_origin);
  EXPECT_EQ(o.min_ram_origin->value, "3GB");
  EXPECT_EQ(o.min_ram_origin->origin.where, "p.yaml:10:33");
  ASSERT_TRUE(o.pipeline_hints);
  EXPECT_EQ(o.pipeline_hints->min_ram_bytes, 1'000'000'000u);
  ASSERT_EQ(o.transform_hints.size(), 1u);
  EXPECT_EQ(o.transform_hints[0].min_ram_bytes, 3'000'000'000u);

  // The other way round the pipeline level wins for the transform too (the maximum, not the innermost).
  auto big = ParsePipelineOptions({}, Pipeline("{min_ram: 8GiB}", "Strip", "{min_ram: 1.5GB}"), "p.yaml");
  EXPECT_EQ(*big.min_ram_bytes, 8ull << 30);
  EXPECT_EQ(big.transform_hints[0].min_ram_bytes, 8ull << 30);
  EXPECT_EQ(big.min_ram_origin->origin.where, "p.yaml:3:29");
}

TEST(YamlResourceHints, BeamValueFormsParse) {
  auto o = ParsePipelineOptions(
      {}, Pipeline("", "T", "{min_ram: 1.5GB, cpu_count: 4, accelerator: 'type:nvidia-tesla-t4;count:2;install-nvidia-driver'}"),
      "p.yaml");
  EXPECT_TRUE(o.diagnostics.empty());
  EXPECT_EQ(*o.min_ram_bytes, 1'500'000'000u);
  EXPECT_EQ(*o.cpu_count, 4);
  EXPECT_EQ(o.accelerator_hint->gpu_type, "nvidia-tesla-t4");
  EXPECT_EQ(o.accelerator_hint->count, 2);
  auto bytes = ParsePipelineOptions({}, Pipeline("", "T", "{min_ram: 4000000000}"), "p.yaml");
  EXPECT_EQ(*bytes.min_ram_bytes, 4'000'000'000u);
}

TEST(YamlResourceHints, TheInnermostAcceleratorWinsOverThePipelineLevel) {
  // Same GPU, but only the transform installs the driver: the transform's spec is the worker's.
  auto o = ParsePipelineOptions({}, Pipeline("{accelerator: 'type:nvidia-l4;count:1'}", "Embed",
                                             "{accelerator: '" + kL4Accelerator + "'}"),
                                "p.yaml");
  EXPECT_TRUE(o.diagnostics.empty());
  ASSERT_TRUE(o.accelerator_hint);
  EXPECT_TRUE(o.accelerator_hint->install_driver);
  EXPECT_EQ(o.accelerator_hint->origin.where.substr(0, 10), "p.yaml:10:");
  ASSERT_TRUE(o.pipeline_hints && o.pipeline_hints->accelerator);
  EXPECT_FALSE(o.pipeline_hints->accelerator->install_driver);

  // A transform without its own accelerator inherits the pipeline's.
  auto inherit = ParsePipelineOptions({}, Pipeline("{accelerator: '" + kL4Accelerator + "'}", "Strip", "{min_ram: 2GB}"), "p.yaml");
  ASSERT_EQ(inherit.transform_hints.size(), 1u);
  EXPECT_FALSE(inherit.transform_hints[0].own_accelerator);
  ASSERT_TRUE(inherit.transform_hints[0].accelerator);
  EXPECT_EQ(inherit.transform_hints[0].accelerator->gpu_type, "nvidia-l4");
  EXPECT_EQ(inherit.accelerator_hint->origin.where.substr(0, 9), "p.yaml:3:");
}

TEST(YamlResourceHints, TransformsAskingForDifferentGpusConflict) {
  std::string y = "pipeline:\n  transforms:\n    - type: Create\n      resource_hints: {accelerator: '" + kL4Accelerator +
                  "'}\n    - type: LogForTesting\n      input: Create\n"
                  "      resource_hints: {accelerator: 'type:nvidia-tesla-t4;count:1;install-nvidia-driver'}\n";
  auto o = ParsePipelineOptions({}, y, "p.yaml");
  ASSERT_EQ(Codes(o), std::vector<std::string>{"resource-hints-conflict"});
  const Diagnostic& d = o.diagnostics[0];
  EXPECT_NE(d.message.find("transform 'LogForTesting' asks for accelerator type:nvidia-tesla-t4;count:1"), std::string::npos)
      << d.message;
  EXPECT_NE(d.message.find("transform 'Create' (p.yaml:3:7)"), std::string::npos) << d.message;
  EXPECT_EQ(d.origin->where.substr(0, 9), "p.yaml:7:");

  // The same GPU asked for twice is one request.
  std::string same = "pipeline:\n  transforms:\n    - type: Create\n      resource_hints: {accelerator: '" + kL4Accelerator +
                     "'}\n    - type: LogForTesting\n      input: Create\n      resource_hints: {accelerator: '" + kL4Accelerator + "'}\n";
  EXPECT_TRUE(ParsePipelineOptions({}, same, "p.yaml").diagnostics.empty());
}

TEST(YamlResourceHints, TheCommandLineHintIsPipelineLevelAndAgreeingIsFine) {
  auto o = ParsePipelineOptions({"--resource_hints=accelerator=" + kL4Accelerator, "--resource_hints=min_ram=64GB"},
                                Pipeline("", "Embed", "{accelerator: '" + kL4Accelerator + "', min_ram: 16GB}"), "p.yaml");
  EXPECT_TRUE(o.diagnostics.empty());
  EXPECT_EQ(*o.min_ram_bytes, 64'000'000'000u);
  EXPECT_EQ(o.min_ram_origin->origin.where, "command line");
  EXPECT_EQ(o.accelerator_hint->origin.where.substr(0, 9), "p.yaml:9:");
}

TEST(YamlResourceHints, MalformedValuesAreSyntaxErrorsPointingIntoTheFile) {
  auto lots = ParsePipelineOptions({}, Pipeline("", "T", "{min_ram: lots}"), "p.yaml");
  ASSERT_EQ(Codes(lots), std::vector<std::string>{"option-syntax"});
  const Diagnostic& d = lots.diagnostics[0];
  EXPECT_EQ(d.message, "resource hint min_ram 'lots' is not a size");
  EXPECT_NE(d.help.find("min_ram: 16GB"), std::string::npos) << d.help;  // the YAML spelling
  EXPECT_EQ(d.origin->where, "p.yaml:9:33");
  EXPECT_EQ(d.origin->text.substr(d.caret_offset, d.caret_length), "lots");

  auto cpus = ParsePipelineOptions({}, Pipeline("{cpu_count: 0}", "T", ""), "p.yaml");
  EXPECT_EQ(Codes(cpus), std::vector<std::string>{"option-syntax"});
  auto acc = ParsePipelineOptions({}, Pipeline("", "T", "{accelerator: 'type:nvidia-l4;count:zero'}"), "p.yaml");
  EXPECT_EQ(Codes(acc), std::vector<std::string>{"option-syntax"});
  EXPECT_EQ(acc.diagnostics[0].origin->where.substr(0, 9), "p.yaml:9:");
}

TEST(YamlResourceHints, StructuralMistakesAreLeftToTheLoader) {
  // Unknown keys, lists and mappings are refused by the pipeline loader (loader_test.cc); the
  // options parser skips them rather than reporting them twice.
  for (const std::string hints : {"{min_rma: 4GB}", "{min_ram: [4GB]}", "{accelerator: {type: nvidia-l4}}", "[min_ram]"}) {
    auto o = ParsePipelineOptions({}, Pipeline(hints, "T", hints), "p.yaml");
    EXPECT_TRUE(o.diagnostics.empty()) << hints;
    EXPECT_FALSE(o.min_ram_bytes) << hints;
    EXPECT_FALSE(o.accelerator_hint) << hints;
  }
}

TEST(YamlResourceHints, YamlExperimentalFeaturesAreAcceptedAsAStringOrAList) {
  for (const std::string value : {"Combine", "[Combine, ML]", "[ML]"}) {
    auto o = ParsePipelineOptions({}, "options:\n  yaml_experimental_features: " + value + "\npipeline: {transforms: []}\n",
                                  "p.yaml");
    EXPECT_TRUE(o.diagnostics.empty()) << value;
    EXPECT_TRUE(o.other.count("yaml_experimental_features")) << value;
  }
  auto map = ParsePipelineOptions({}, "options:\n  yaml_experimental_features: {Combine: true}\n", "p.yaml");
  EXPECT_EQ(Codes(map), std::vector<std::string>{"option-syntax"});
}

}  // namespace resource_hints_test
}  // namespace dfw
