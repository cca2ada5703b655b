// Pipelines whose callables run in the embedded CPython: Beam's regex_matches example end to end,
// the transforms that take a callable (MapToFields, Filter, Partition) with a def, and a file UDF.
#include <gmock/gmock.h>

#include <algorithm>

#include "dfw/pipeline/fused_stages.h"
#include "pipeline_test_util.h"

namespace dfw::python_callable_pipeline_test {

using testing::Collected;
using testing::TempDir;

// Runs `yaml` and returns, sorted, the JSON of the rows its TestCollect sink `sink` got.
Result<std::vector<std::string>> RunCollect(const std::string& yaml, const std::string& sink = "Out") {
  TempDir dir;
  StageRegistry registry = testing::TestRegistry();
  ASSIGN_OR_RETURN(PipelineSpec spec, testing::LoadYaml(yaml, registry));
  {
    std::lock_guard<std::mutex> lock(Collected::Get().mu);
    Collected::Get().rows.erase(sink);
  }
  MetricsRegistry metrics;
  ASSIGN_OR_RETURN(RunSummary summary, RunAllBundles(spec, registry, RunnerOptions{}, dir / "staging", &metrics));
  EXPECT_TRUE(summary.accounting.Balanced()) << summary.accounting.ToString();
  std::vector<std::string> out;
  std::lock_guard<std::mutex> lock(Collected::Get().mu);
  for (const Row& r : Collected::Get().rows[sink]) out.push_back(r.ToJson());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(PythonCallablePipeline, BeamRegexMatchesExampleGivesItsExpectedRows) {
  std::string yaml = testing::ReadFile(std::string(DFW_SOURCE_DIR) + "/testdata/beam_examples/regex_matches.yaml");
  // Collect what LogForTesting would log.
  std::size_t at = yaml.find("- type: LogForTesting");
  ASSERT_NE(at, std::string::npos);
  yaml.replace(at, std::string("- type: LogForTesting").size(), "- type: TestCollect\n      name: Out");
  auto rows = RunCollect(yaml);
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  // The example's "# Expected:" rows.
  std::vector<std::string> want = {
      R"({"plant":"🍓, Strawberry, perennial"})", R"({"plant":"🥕, Carrot, biennial"})",
      R"({"plant":"🍆, Eggplant, perennial"})",   R"({"plant":"🍅, Tomato, annual"})",
      R"({"plant":"🥔, Potato, perennial"})"};
  std::sort(want.begin(), want.end());
  EXPECT_EQ(*rows, want);
}

TEST(PythonCallablePipeline, FilterAndPartitionTakeDefCallables) {
  const std::string yaml = R"(
pipeline:
  transforms:
    - type: Create
      config:
        elements: [{w: apple}, {w: kiwi}, {w: banana}, {w: fig}]
    - type: Filter
      input: Create
      config:
        language: python
        keep:
          callable: |
            def long_enough(row):
              n = 0
              for ch in row.w:
                n += 1
              return n > 3
    - type: Partition
      input: Filter
      config:
        language: python
        outputs: [vowel, other]
        by:
          callable: |
            import re
            VOWELS = re.compile('^[aeiou]', re.I)
            def first_letter(row):
              return 'vowel' if VOWELS.match(row.w) else 'other'
    - type: TestCollect
      name: Vowel
      input: Partition.vowel
    - type: TestCollect
      name: Other
      input: Partition.other
)";
  {
    std::lock_guard<std::mutex> lock(Collected::Get().mu);
    Collected::Get().rows.erase("Other");
  }
  auto vowel = RunCollect(yaml, "Vowel");
  ASSERT_TRUE(vowel.ok()) << vowel.status().ToString();
  EXPECT_EQ(*vowel, std::vector<std::string>{R"({"w":"apple"})"});
  std::lock_guard<std::mutex> lock(Collected::Get().mu);
  std::vector<std::string> other;
  for (const Row& r : Collected::Get().rows["Other"]) other.push_back(r.ToJson());
  std::sort(other.begin(), other.end());
  EXPECT_EQ(other, (std::vector<std::string>{R"({"w":"banana"})", R"({"w":"kiwi"})"}));
}

TEST(PythonCallablePipeline, FileUdfsAndExpressionsTheSubsetCannotCompileRunInCPython) {
  TempDir dir;
  const std::string udf = dir.Write("udf.py", "import collections\n\ndef vowels(row):\n"
                                              "    return sum(collections.Counter(row.w)[v] for v in 'aeiou')\n");
  const std::string yaml = R"(
pipeline:
  type: chain
  transforms:
    - type: Create
      config:
        elements: [{w: banana}, {w: kiwi}, {w: fig}]
    - type: MapToFields
      config:
        language: python
        fields:
          w: w
          n: {path: ")" + udf + R"(", name: vowels}
          first: "{c for c in w} and w[0]"
    - type: TestCollect
      name: Out
)";
  auto rows = RunCollect(yaml);
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  EXPECT_EQ(*rows, (std::vector<std::string>{R"({"w":"banana","n":3,"first":"b"})", R"({"w":"fig","n":1,"first":"f"})",
                                             R"({"w":"kiwi","n":2,"first":"k"})"}));
}

}  // namespace dfw::python_callable_pipeline_test
