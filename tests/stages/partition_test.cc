// Partition: each row to exactly one named output, Beam's rules for unknown names and non-strings.
#include <gmock/gmock.h>

#include "stages_test_util.h"

namespace dfw {
namespace {

using ::testing::HasSubstr;

Row PartRow(const std::string& kind, int64_t n) {
  Row r;
  r.Append("kind", kind.empty() ? Value() : Value::String(kind));
  r.Append("n", Value::Int(n));
  return r;
}

struct PartitionResult {
  std::vector<RowBatch> tagged;
  RowBatch errors;
};

Result<PartitionResult> RunPartition(const StageConfig& c, RowBatch rows) {
  ASSIGN_OR_RETURN(auto stage, testing::MakeStage(c));
  StageOutput out(&c);
  RETURN_IF_ERROR(stage->Process(rows, out));
  EXPECT_TRUE(out.main().empty()) << "Partition has no main output";
  PartitionResult s{std::move(out.tagged()), std::move(out.errors())};
  return s;
}

std::vector<int64_t> Ns(const std::vector<RowBatch>& tagged, std::size_t k) {
  std::vector<int64_t> ns;
  if (k < tagged.size()) for (const Row& r : tagged[k]) ns.push_back(r.Find("n")->as_int());
  return ns;
}

TEST(Partition, ByFieldSendsEachRowToItsOutputInDeclaredOrder) {
  StageConfig c = testing::MakeConfig("Partition", "{by: kind, outputs: [a, b]}");
  auto s = RunPartition(c, {PartRow("b", 1), PartRow("a", 2), PartRow("b", 3)});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(Ns(s->tagged, 0), (std::vector<int64_t>{2}));
  EXPECT_EQ(Ns(s->tagged, 1), (std::vector<int64_t>{1, 3}));
}

TEST(Partition, AnUnknownNameFailsTheRecordAsBeamDoesUnlessUnknownOutputIsSet) {
  StageConfig strict = testing::MakeConfig("Partition", "{by: kind, outputs: [a, b]}");
  auto failed = RunPartition(strict, {PartRow("a", 1), PartRow("zzz", 2)});
  ASSERT_FALSE(failed.ok());
  EXPECT_THAT(failed.status().message(), HasSubstr("Unknown output name \"zzz\" from kind"));
  EXPECT_THAT(failed.status().message(), HasSubstr("\"n\":2"));  // the row is named, not dropped

  StageConfig handled = testing::MakeConfig("Partition", "{by: kind, outputs: [a, b]}", "bad");
  auto dead = RunPartition(handled, {PartRow("a", 1), PartRow("zzz", 2)});
  ASSERT_TRUE(dead.ok()) << dead.status().ToString();
  ASSERT_EQ(dead->errors.size(), 1u);
  EXPECT_EQ(dead->errors[0].Find("element")->as_row().Find("n")->as_int(), 2);

  StageConfig other = testing::MakeConfig("Partition", "{by: kind, outputs: [a, b], unknown_output: rest}");
  auto rest = RunPartition(other, {PartRow("a", 1), PartRow("zzz", 2), PartRow("", 3)});  // None goes to unknown_output too
  ASSERT_TRUE(rest.ok()) << rest.status().ToString();
  EXPECT_EQ(Ns(rest->tagged, 0), (std::vector<int64_t>{1}));
  EXPECT_EQ(Ns(rest->tagged, 2), (std::vector<int64_t>{2, 3}));
}

TEST(Partition, ANonStringNameIsARecordFailure) {
  StageConfig c = testing::MakeConfig("Partition", "{by: n, outputs: [a]}", "bad");
  auto s = RunPartition(c, {PartRow("a", 7)});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_EQ(s->errors.size(), 1u);
  EXPECT_THAT(s->errors[0].Find("msg")->as_string(), HasSubstr("must be a string"));
  StageConfig none = testing::MakeConfig("Partition", "{by: kind, outputs: [a]}", "bad");  // None without unknown_output
  auto n = RunPartition(none, {PartRow("", 1)});
  ASSERT_TRUE(n.ok());
  ASSERT_EQ(n->errors.size(), 1u);
  EXPECT_THAT(n->errors[0].Find("msg")->as_string(), HasSubstr("\"None\""));
}

TEST(Partition, PythonExpressionsAndCallablesChooseTheOutput) {
  StageConfig expr = testing::MakeConfig("Partition", "{by: \"'big' if n > 2 else 'small'\", language: python, outputs: [small, big]}");
  auto e = RunPartition(expr, {PartRow("a", 1), PartRow("a", 5)});
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(Ns(e->tagged, 0), (std::vector<int64_t>{1}));
  EXPECT_EQ(Ns(e->tagged, 1), (std::vector<int64_t>{5}));
  StageConfig fn = testing::MakeConfig("Partition", "{by: {callable: 'lambda row: row.kind.upper()'}, language: python, outputs: [A, B]}");
  auto f = RunPartition(fn, {PartRow("b", 1)});
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(Ns(f->tagged, 1), (std::vector<int64_t>{1}));
}

TEST(Partition, BadConfigsAreLoadErrorsNamingTheKey) {
  struct Case {
    const char* config;
    const char* message;
  } cases[] = {
      {"{by: kind, outputs: []}", "non-empty list"},
      {"{by: kind, outputs: [a, a]}", "listed twice"},
      {"{by: kind, outputs: [a.b]}", "contains '.'"},
      {"{by: kind, outputs: a}", "non-empty list"},
      {"{by: 'n > 1', outputs: [a]}", "invalid generic expression"},
      {"{by: {callable: 'lambda r: r.kind'}, outputs: [a]}", "Must specify a language"},
      {"{by: 'kind +', language: python, outputs: [a]}", "by"},
  };
  for (const Case& k : cases) {
    auto stage = testing::MakeStage(testing::MakeConfig("Partition", k.config));
    ASSERT_FALSE(stage.ok()) << k.config;
    EXPECT_THAT(stage.status().message(), HasSubstr(k.message)) << k.config;
    EXPECT_THAT(stage.status().message(), HasSubstr("t.yaml:")) << k.config;
  }
}

}  // namespace
}  // namespace dfw
