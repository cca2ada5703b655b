// read = written + dead-lettered + filtered, exactly, with 10% bad rows at two stages.
#include <gmock/gmock.h>

#include <fmt/format.h>

#include "pipeline_test_util.h"

namespace dfw {
namespace {

using ::testing::HasSubstr;
using testing::ReadShardLines;
using testing::TempDir;

// 1000 lines: every 10th is malformed JSON (50), every 10th+5 has a string amount (TypeError in
// MapToFields, 50 more); of the rest, amounts < 0 are filtered out.
struct Input {
  std::string text;
  int64_t malformed = 0, type_errors = 0, filtered = 0, good = 0;
};

Input MakeInput() {
  Input in;
  for (int i = 0; i < 1000; ++i) {
    if (i % 20 == 0) {
      in.text += "{\"id\": " + std::to_string(i) + ", \"amount\": \n";  // truncated object
      ++in.malformed;
    } else if (i % 20 == 5) {
      in.text += fmt::format("{{\"id\": {}, \"amount\": \"n/a\"}}\n", i);
      ++in.type_errors;
    } else {
      int amount = (i % 3 == 0) ? -i : i;
      in.text += fmt::format("{{\"id\": {}, \"amount\": {}}}\n", i, amount);
      (amount * 2 > 0 ? in.good : in.filtered)++;
    }
  }
  return in;
}

std::string Pipeline(const TempDir& dir, double threshold) {
  return fmt::format(R"(
pipeline:
  type: chain
  source:
    type: ReadFromJson
    name: Read
    config:
      path: "{0}/in/*.jsonl"
      error_handling: {{output: bad_json}}
  transforms:
    - type: MapToFields
      name: Double
      config:
        language: python
        append: true
        fields: {{doubled: "float(amount) * 2"}}
        error_handling: {{output: bad_rows, threshold: {1}}}
    - type: Filter
      config: {{keep: "doubled > 0"}}
  sink:
    type: WriteToJson
    config: {{path: "{0}/out/good"}}
  extra_transforms:
    - type: WriteToJson
      name: Errors
      input: [Read.bad_json, Double.bad_rows]
      config: {{path: "{0}/out/errors"}}
)", dir.path(), threshold);
}

TEST(Accounting, ReadEqualsWrittenPlusDeadLetteredPlusFilteredWithTenPercentBadRows) {
  TempDir dir;
  Input in = MakeInput();
  std::size_t cut = in.text.find('\n', in.text.size() / 2) + 1;
  testing::WriteFile(dir / "in/a.jsonl", in.text.substr(0, cut));
  testing::WriteFile(dir / "in/b.jsonl", in.text.substr(cut));
  StageRegistry registry = testing::TestRegistry();
  auto spec = testing::LoadYaml(Pipeline(dir, 0.5), registry);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  MetricsRegistry metrics;
  RunnerOptions options;
  options.threads = 4;
  options.batch_size = 32;
  options.bundle_bytes = 4096;
  auto summary = RunAllBundles(*spec, registry, options, dir / "staging", &metrics);
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  const Accounting& a = summary->accounting;
  EXPECT_EQ(a.read, 1000);
  EXPECT_EQ(a.dead_lettered, in.malformed + in.type_errors);
  EXPECT_EQ(a.filtered, in.filtered);
  EXPECT_EQ(a.written, in.good);
  EXPECT_TRUE(a.Balanced()) << a.ToString();
  // The files agree with the counters.
  EXPECT_EQ(static_cast<int64_t>(ReadShardLines(dir / "out/good").size()), in.good);
  std::vector<std::string> errors = ReadShardLines(dir / "out/errors");
  ASSERT_EQ(static_cast<int64_t>(errors.size()), in.malformed + in.type_errors);
  int malformed_rows = 0;
  for (const std::string& e : errors) {
    EXPECT_THAT(e, HasSubstr("\"element\":"));
    EXPECT_THAT(e, HasSubstr("\"msg\":"));
    EXPECT_THAT(e, HasSubstr("\"stack\":"));
    if (e.find("malformed JSON") != std::string::npos) {
      ++malformed_rows;
      EXPECT_THAT(e, HasSubstr(".jsonl'"));  // names the file (and line)
      EXPECT_THAT(e, HasSubstr("\"transform\":\"Read\""));
    }
  }
  EXPECT_EQ(malformed_rows, in.malformed);
  MetricsSnapshot snap = metrics.Snapshot();
  EXPECT_EQ(snap.CounterOr("Errors", "errors_written"), in.malformed + in.type_errors);
}

TEST(Accounting, ExceedingTheThresholdFailsTheRunWithTheCounts) {
  TempDir dir;
  Input in = MakeInput();
  testing::WriteFile(dir / "in/a.jsonl", in.text);
  StageRegistry registry = testing::TestRegistry();
  auto spec = testing::LoadYaml(Pipeline(dir, 0.01), registry);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  MetricsRegistry metrics;
  auto summary = RunAllBundles(*spec, registry, RunnerOptions{}, dir / "staging", &metrics);
  ASSERT_FALSE(summary.ok());
  EXPECT_EQ(summary.status().code(), StatusCode::kAborted);
  EXPECT_THAT(summary.status().message(), HasSubstr("transform 'Double'"));
  EXPECT_THAT(summary.status().message(), HasSubstr(fmt::format("{} of {} records failed", in.type_errors, 1000 - in.malformed)));
  EXPECT_THAT(summary.status().message(), HasSubstr("threshold 0.01"));
}

}  // namespace
}  // namespace dfw
