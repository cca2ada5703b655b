// Accounting beyond 1:1 transforms: Explode fan-out, a main output read by two transforms, and a
// main output nobody reads. For each, read + fanned_out = written + dead-lettered + filtered +
// unconsumed holds exactly, and each term has the value the input dictates.
#include <gmock/gmock.h>

#include <fmt/format.h>

#include "pipeline_test_util.h"

namespace dfw {
namespace {

using testing::ReadShardLines;
using testing::TempDir;

// 5 lines: list sizes 0, 1, 3, 2 and one line whose `xs` is not a list (dead-lettered by Explode).
constexpr char kInput[] =
    "{\"id\": 1, \"xs\": []}\n"
    "{\"id\": 2, \"xs\": [10]}\n"
    "{\"id\": 3, \"xs\": [10, 20, 30]}\n"
    "{\"id\": 4, \"xs\": [10, 20]}\n"
    "{\"id\": 5, \"xs\": \"oops\"}\n";

struct Case {
  std::string name;
  std::string transforms;  // YAML list items under `transforms:`; {0} is the temp dir
  Accounting want;         // every term
  std::map<std::string, int64_t> lines;  // output prefix -> lines in its shards
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

const std::string kRead = R"(
    - type: ReadFromJson
      name: Read
      config: {{path: "{0}/in/*.jsonl"}}
)";

std::vector<Case> Cases() {
  return {
      {"ExplodeFanOut", kRead + R"(
    - type: Explode
      name: Ex
      input: Read
      config:
        fields: xs
        error_handling: {{output: bad}}
    - type: WriteToJson
      name: Out
      input: Ex
      config: {{path: "{0}/out/rows"}}
    - type: WriteToJson
      name: Errors
      input: Ex.bad
      config: {{path: "{0}/out/errors"}}
)",
       Accounting{.read = 5, .written = 6, .dead_lettered = 1, .filtered = 1, .fanned_out = 3, .unconsumed = 0},
       {{"rows", 6}, {"errors", 1}}},
      {"TwoSinksReadOneOutput", kRead + R"(
    - type: WriteToJson
      name: A
      input: Read
      config: {{path: "{0}/out/a"}}
    - type: WriteToJson
      name: B
      input: Read
      config: {{path: "{0}/out/b"}}
)",
       Accounting{.read = 5, .written = 10, .dead_lettered = 0, .filtered = 0, .fanned_out = 5, .unconsumed = 0},
       {{"a", 5}, {"b", 5}}},
      {"DanglingMainOutputIsCountedNotLost", kRead + R"(
    - type: Filter
      name: Keep
      input: Read
      config: {{keep: "id > 2", language: python}}
    - type: LogForTesting
      name: Log
      input: Keep
)",
       Accounting{.read = 5, .written = 0, .dead_lettered = 0, .filtered = 2, .fanned_out = 0, .unconsumed = 3},
       {}},
  };
}

class FanOutAccounting : public ::testing::TestWithParam<Case> {};

TEST_P(FanOutAccounting, EveryTermIsExactAndTheLedgerBalances) {
  const Case& c = GetParam();
  TempDir dir;
  testing::WriteFile(dir / "in/a.jsonl", kInput);
  StageRegistry registry = testing::TestRegistry();
  auto spec = testing::LoadYaml(fmt::format(fmt::runtime("pipeline:\n  transforms:" + c.transforms), dir.path()), registry);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  for (int threads : {1, 4}) {
    TempDir staging;
    MetricsRegistry metrics;
    RunnerOptions options;
    options.threads = threads;
    options.batch_size = 2;
    auto summary = RunAllBundles(*spec, registry, options, staging.path(), &metrics);
    ASSERT_TRUE(summary.ok()) << summary.status().ToString();
    const Accounting& a = summary->accounting;
    EXPECT_EQ(a.read, c.want.read) << a.ToString();
    EXPECT_EQ(a.written, c.want.written) << a.ToString();
    EXPECT_EQ(a.dead_lettered, c.want.dead_lettered) << a.ToString();
    EXPECT_EQ(a.filtered, c.want.filtered) << a.ToString();
    EXPECT_EQ(a.fanned_out, c.want.fanned_out) << a.ToString();
    EXPECT_EQ(a.unconsumed, c.want.unconsumed) << a.ToString();
    EXPECT_TRUE(a.Balanced()) << a.ToString();
    for (const auto& [prefix, n] : c.lines) {
      EXPECT_EQ(static_cast<int64_t>(ReadShardLines(dir / ("out/" + prefix)).size()), n) << prefix;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Pipelines, FanOutAccounting, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

TEST(AccountingText, NamesTheExtraTermsOnlyWhenPresent) {
  Accounting plain{.read = 3, .written = 2, .dead_lettered = 0, .filtered = 1};
  EXPECT_EQ(plain.ToString(), "read 3 = written 2 + dead-lettered 0 + filtered 1");
  Accounting extra{.read = 3, .written = 4, .dead_lettered = 0, .filtered = 0, .fanned_out = 2, .unconsumed = 1};
  EXPECT_EQ(extra.ToString(), "read 3 + fanned out 2 = written 4 + dead-lettered 0 + filtered 0 + unconsumed 1");
  Accounting lost{.read = 3, .written = 1};
  EXPECT_FALSE(lost.Balanced());
  EXPECT_THAT(lost.ToString(), ::testing::HasSubstr("UNBALANCED by 2"));
}

}  // namespace
}  // namespace dfw
