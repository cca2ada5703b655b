// Partition in a pipeline: `Name.out_name` wiring, load-time errors, every row delivered once and
// the accounting balanced (unconsumed outputs counted, not lost), across threads.
#include <gmock/gmock.h>

#include <fmt/format.h>

#include "dfw/pipeline/pipeline_tests.h"
#include "pipeline_test_util.h"

namespace dfw {
namespace {

using ::testing::HasSubstr;

std::string PartitionPipeline(int n, const std::string& extra_config = "", const std::string& consumers = "") {
  std::string elements;
  for (int i = 0; i < n; ++i) elements += fmt::format("{}{{k: {}, n: {}}}", i ? ", " : "", i % 3 == 0 ? "a" : i % 3 == 1 ? "b" : "c", i);
  return fmt::format(
      "pipeline:\n  transforms:\n"
      "    - {{type: Create, config: {{elements: [{}]}}}}\n"
      "    - {{type: Partition, name: P, input: Create, config: {{by: k, outputs: [a, b]{}}}}}\n"
      "{}",
      elements, extra_config,
      consumers.empty() ? "    - {type: TestCollect, name: GotA, input: P.a}\n    - {type: TestCollect, name: GotB, input: P.b}\n"
                        : consumers);
}

TEST(PartitionPipeline, EachOutputReachesItsConsumersAndTheAccountingBalances) {
  for (int threads : {1, 4}) {
    testing::Collected::Get().rows.clear();
    StageRegistry registry = testing::TestRegistry();
    auto spec = testing::LoadYaml(PartitionPipeline(300, ", unknown_output: rest"), registry);
    ASSERT_TRUE(spec.ok()) << spec.status().ToString();
    testing::TempDir dir;
    MetricsRegistry metrics;
    RunnerOptions options;
    options.threads = threads;
    options.batch_size = 7;
    auto run = RunAllBundles(*spec, registry, options, dir / "staging", &metrics);
    ASSERT_TRUE(run.ok()) << run.status().ToString();
    auto& rows = testing::Collected::Get().rows;
    EXPECT_EQ(rows["GotA"].size(), 100u);
    EXPECT_EQ(rows["GotB"].size(), 100u);
    for (const Row& r : rows["GotA"]) EXPECT_EQ(r.Find("k")->as_string(), "a");
    // P.rest (the c rows) has no consumer: counted as unconsumed, so nothing is lost silently.
    EXPECT_EQ(metrics.Snapshot().CounterOr("P", "elements_unconsumed"), 100);
    EXPECT_TRUE(run->accounting.Balanced()) << run->accounting.ToString();
    EXPECT_EQ(run->accounting.read, 300);
  }
}

TEST(PartitionPipeline, AnOutputReadByTwoTransformsAndAFlattenOfTwoOutputs) {
  testing::Collected::Get().rows.clear();
  StageRegistry registry = testing::TestRegistry();
  auto spec = testing::LoadYaml(
      PartitionPipeline(30, ", unknown_output: c",
                        "    - {type: TestCollect, name: A1, input: P.a}\n"
                        "    - {type: TestCollect, name: A2, input: P.a}\n"
                        "    - {type: TestCollect, name: BC, input: [P.b, P.c]}\n"),
      registry);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  testing::TempDir dir;
  MetricsRegistry metrics;
  auto run = RunAllBundles(*spec, registry, {}, dir / "staging", &metrics);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  auto& rows = testing::Collected::Get().rows;
  EXPECT_EQ(rows["A1"].size(), 10u);
  EXPECT_EQ(rows["A2"].size(), 10u);
  EXPECT_EQ(rows["BC"].size(), 20u);
  EXPECT_TRUE(run->accounting.Balanced()) << run->accounting.ToString();
}

TEST(PartitionPipeline, AnUnknownNameStopsTheRunNamingTheRowOrGoesToTheErrorOutput) {
  StageRegistry registry = testing::TestRegistry();
  auto strict = testing::LoadYaml(PartitionPipeline(5), registry);  // k: c has no output
  ASSERT_TRUE(strict.ok()) << strict.status().ToString();
  testing::TempDir dir;
  MetricsRegistry metrics;
  auto failed = RunAllBundles(*strict, registry, {}, dir / "s1", &metrics);
  ASSERT_FALSE(failed.ok());
  EXPECT_THAT(failed.status().message(), HasSubstr("Unknown output name \"c\" from k"));
  EXPECT_THAT(failed.status().message(), HasSubstr("p.yaml:"));

  testing::Collected::Get().rows.clear();
  auto handled = testing::LoadYaml(
      PartitionPipeline(6, ", error_handling: {output: bad}",
                        "    - {type: TestCollect, name: GotA, input: P.a}\n"
                        "    - {type: TestCollect, name: GotB, input: P.b}\n"
                        "    - {type: TestCollect, name: Bad, input: P.bad}\n"),
      registry);
  ASSERT_TRUE(handled.ok()) << handled.status().ToString();
  MetricsRegistry metrics2;
  auto run = RunAllBundles(*handled, registry, {}, dir / "s2", &metrics2);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_EQ(testing::Collected::Get().rows["Bad"].size(), 2u);
  EXPECT_TRUE(run->accounting.Balanced()) << run->accounting.ToString();
}

TEST(PartitionPipeline, WiringErrorsNameTheOutputsThereAre) {
  StageRegistry registry = testing::TestRegistry();
  struct Case {
    std::string yaml;
    const char* message;
  } cases[] = {
      {PartitionPipeline(3, "", "    - {type: TestCollect, input: P}\n"), "has no main output; name one of its outputs: 'P.a', 'P.b'"},
      {PartitionPipeline(3, "", "    - {type: TestCollect, input: P.x}\n"), "has no output 'x'"},
      {PartitionPipeline(3, ", error_handling: {output: a}", "    - {type: TestCollect, input: P.a}\n"),
       "error_handling output 'a' cannot be among its outputs"},
      {"pipeline:\n  type: chain\n  transforms:\n    - {type: Create, config: {elements: [1]}}\n"
       "    - {type: Partition, config: {by: element, outputs: [a]}}\n    - {type: TestCollect}\n",
       "has only named outputs"},
  };
  for (const Case& c : cases) {
    auto spec = testing::LoadYaml(c.yaml, registry);
    ASSERT_FALSE(spec.ok()) << c.yaml;
    EXPECT_THAT(spec.status().message(), HasSubstr(c.message)) << c.yaml;
    EXPECT_THAT(spec.status().message(), HasSubstr("p.yaml:")) << c.yaml;
  }
}

}  // namespace
}  // namespace dfw

namespace dfw {
namespace {

// Beam's own Partition cases (apache_beam/yaml/tests/partition.yaml: the same inputs, Beam's
// expected rows), run through the pipeline's-tests machinery. Beam's two cases with `def`
// callables are written here as the equivalent expressions (def bodies are another feature).
struct BeamCase {
  const char* name;
  const char* create;     // Create elements
  const char* partition;  // Partition config
  const char* expected;   // expected_outputs entries
};

TEST(PartitionPipeline, BeamsOwnPartitionCasesGiveBeamsRows) {
  const char* fruits = "[{produce: Apple}, {produce: Apricot}, {produce: Blueberry}, {produce: Date}, {produce: Fig}, "
                       "{produce: Mango}, {produce: Orange}, {produce: Strawberry}]";
  const char* baskets = "[{produce: [Grapefruit, Cantaloupe, Fig, Raspberry, Lemon, Peach, Watermelon]}, "
                        "{produce: [Strawberry, Kiwi, Lime, Pear, Plum, Orange, Pomegranate, Cranberry]}, "
                        "{produce: [Banana]}, {produce: [Apricot, Blackberry, Mango, Apple, Blueberry]}, "
                        "{produce: [Cherry, Grape]}]";
  const BeamCase cases[] = {
      {"one group", fruits, "{by: \"'fruits'\", language: python, outputs: [fruits]}",
       "[{name: P.fruits, elements: [{produce: Apple}, {produce: Apricot}, {produce: Blueberry}, {produce: Date}, "
       "{produce: Fig}, {produce: Mango}, {produce: Orange}, {produce: Strawberry}]}]"},
      {"two groups", fruits,
       "{by: \"'vowel_fruits' if produce[0].upper() in 'AEIOU' else 'consonant_fruits'\", language: python, "
       "outputs: [vowel_fruits, consonant_fruits]}",
       "[{name: P.vowel_fruits, elements: [{produce: Apple}, {produce: Apricot}, {produce: Orange}]}, "
       "{name: P.consonant_fruits, elements: [{produce: Blueberry}, {produce: Date}, {produce: Fig}, {produce: Mango}, "
       "{produce: Strawberry}]}]"},
      {"lists of values", baskets,
       "{by: \"'too_much_fruits' if len(produce) > 4 else 'just_right_fruits'\", language: python, "
       "outputs: [too_much_fruits, just_right_fruits]}",
       "[{name: P.just_right_fruits, elements: [{produce: [Banana]}, {produce: [Cherry, Grape]}]}, "
       "{name: P.too_much_fruits, elements: [{produce: [Grapefruit, Cantaloupe, Fig, Raspberry, Lemon, Peach, Watermelon]}, "
       "{produce: [Strawberry, Kiwi, Lime, Pear, Plum, Orange, Pomegranate, Cranberry]}, "
       "{produce: [Apricot, Blackberry, Mango, Apple, Blueberry]}]}]"},
      {"None to unknown_output", fruits,
       "{by: \"'vowel_fruits' if produce[0].upper() in 'AEIOU' else ('yummy_fruits' if produce in ['Date', 'Mango'] "
       "else None)\", language: python, outputs: [vowel_fruits, yummy_fruits], unknown_output: unknown_fruits}",
       "[{name: P.vowel_fruits, elements: [{produce: Apple}, {produce: Apricot}, {produce: Orange}]}, "
       "{name: P.yummy_fruits, elements: [{produce: Date}, {produce: Mango}]}, "
       "{name: P.unknown_fruits, elements: [{produce: Blueberry}, {produce: Fig}, {produce: Strawberry}]}]"},
      {"errors to the error output", fruits,
       "{by: \"'vowel_fruits' if produce[100] in 'AEIOU' else 'consonant_fruits'\", language: python, "
       "outputs: [vowel_fruits, consonant_fruits], error_handling: {output: error_output}}",
       "[{name: P.vowel_fruits, elements: []}, {name: P.consonant_fruits, elements: []}, "
       "{name: P.error_output, elements: []}]"},  // (checked below: every fruit is an error row)
  };
  StageRegistry registry = testing::TestRegistry();
  testing::TempDir dir;
  int k = 0;
  for (const BeamCase& c : cases) {
    const std::string yaml = fmt::format(
        "pipeline:\n  transforms:\n    - {{type: Create, config: {{elements: {}}}}}\n"
        "    - {{type: Partition, name: P, input: Create, config: {}}}\n"
        "{}",
        c.create, c.partition,
        std::string(c.partition).find("error_output") != std::string::npos
            ? "    - {type: TestCollect, name: Errors, input: P.error_output}\n"
            : "");
    auto spec = testing::LoadYaml(yaml, registry);
    ASSERT_TRUE(spec.ok()) << c.name << ": " << spec.status().ToString();
    auto tests = ParsePipelineTests(fmt::format("tests:\n  - expected_outputs: {}\n", c.expected), "t.yaml");
    ASSERT_TRUE(tests.ok()) << c.name << ": " << tests.status().ToString();
    auto r = RunPipelineTest(*spec, (*tests)[0], "t.yaml", registry, dir / fmt::format("s{}", k++));
    ASSERT_TRUE(r.ok()) << c.name << ": " << r.status().ToString();
    EXPECT_TRUE(r->run_error.ok()) << c.name << ": " << r->run_error.ToString();
    for (const ExpectationResult& check : r->checks) {
      if (check.expected->name == "P.error_output") {
        ASSERT_EQ(check.actual.size(), 8u) << c.name;
        for (const Value& e : check.actual) EXPECT_TRUE(e.as_row().Find("element")->as_row().Has("produce"));
        EXPECT_NE(check.actual[0].as_row().Find("msg")->as_string().find("IndexError"), std::string::npos)
            << check.actual[0].ToJson();
        continue;
      }
      EXPECT_TRUE(check.passed) << c.name << ": " << check.expected->name << " missing " << check.missing.size()
                                << ", unexpected " << check.unexpected.size();
    }
  }
}

}  // namespace
}  // namespace dfw
