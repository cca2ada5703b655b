// MatchAll: Beam's match_all.yaml (pipelines 4 and 5) and the empty-match treatments.
#include <gmock/gmock.h>
#include <sys/stat.h>

#include "io_test_util.h"

namespace dfw {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::TempDir;

Row PatternRow(const std::string& field, const std::string& pattern) {
  Row r;
  r.Append(field, Value::String(pattern));
  return r;
}

Result<testing::Outputs> RunMatchAll(const std::string& config, RowBatch rows) {
  StageConfig c = testing::MakeConfig("MatchAll", config, "errors");
  ASSIGN_OR_RETURN(auto stage, testing::MakeStage(c));
  return testing::RunStage(*stage, c, std::move(rows));
}

// match_all.yaml writes match1.txt, match2.txt and ignore.txt with WriteToText (shard names
// <path>-00000-of-00001), then matches "{TEMP_DIR}/match*.txt*": only the two match files.
TEST(MatchAll, BeamMatchAllYamlFindsTheMatchingShards) {
  TempDir dir;
  dir.Write("match1.txt-00000-of-00001", "a\n");
  dir.Write("match2.txt-00000-of-00001", "bb\n");
  dir.Write("ignore.txt-00000-of-00001", "c\n");
  std::filesystem::create_directories(dir / "match3.txt.d");  // a folder is not a file
  auto out = RunMatchAll("{file_pattern: pattern}", {PatternRow("pattern", dir / "match*.txt*")});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ(out->main.size(), 2u);
  EXPECT_EQ(out->main[0].Find("path")->as_string(), dir / "match1.txt-00000-of-00001");
  EXPECT_EQ(out->main[1].Find("path")->as_string(), dir / "match2.txt-00000-of-00001");
  EXPECT_EQ(out->main[0].Find("size_in_bytes")->as_int(), 2);
  EXPECT_EQ(out->main[1].Find("size_in_bytes")->as_int(), 3);
  struct stat st {};
  ASSERT_EQ(::stat((dir / "match1.txt-00000-of-00001").c_str(), &st), 0);
  EXPECT_DOUBLE_EQ(out->main[0].Find("last_updated_in_seconds")->as_float(),
                   static_cast<double>(st.st_mtim.tv_sec) + static_cast<double>(st.st_mtim.tv_nsec) * 1e-9);
  std::vector<std::string> names;
  for (const Row& r : out->main) names.push_back(r.fields()[0].name + "," + r.fields()[1].name + "," + r.fields()[2].name);
  EXPECT_THAT(names, ElementsAre("path,size_in_bytes,last_updated_in_seconds", "path,size_in_bytes,last_updated_in_seconds"));
}

TEST(MatchAll, EmptyMatchTreatments) {
  TempDir dir;
  const std::string wild = dir / "does_not_exist*.txt*";
  const std::string plain = dir / "does_not_exist.txt";
  struct Case {
    std::string config, pattern;
    bool error;
  };
  for (const Case& c : std::vector<Case>{{"{file_pattern: pattern, empty_match_treatment: ALLOW}", wild, false},
                                         {"{file_pattern: pattern}", wild, false},  // Beam YAML's default is ALLOW
                                         {"{file_pattern: pattern, empty_match_treatment: DISALLOW}", wild, true},
                                         {"{file_pattern: pattern, empty_match_treatment: ALLOW_IF_WILDCARD}", wild, false},
                                         {"{file_pattern: pattern, empty_match_treatment: ALLOW_IF_WILDCARD}", plain, true}}) {
    SCOPED_TRACE(c.config + " " + c.pattern);
    auto out = RunMatchAll(c.config, {PatternRow("pattern", c.pattern)});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_TRUE(out->main.empty());
    EXPECT_EQ(out->errors.size(), c.error ? 1u : 0u);
    EXPECT_EQ(out->filtered, c.error ? 0 : 1);
    if (c.error) {
      EXPECT_THAT(testing::ErrorMessages(out->errors)[0], HasSubstr("matches no files"));
    }
  }
}

TEST(MatchAll, ThePatternFieldIsTheOnlyFieldOrTheNamedOne) {
  TempDir dir;
  dir.Write("a.txt", "x");
  Row two = PatternRow("p", dir / "*.txt");
  two.Append("other", Value::Int(1));
  auto out = RunMatchAll("{}", {PatternRow("anything", dir / "*.txt"), two, PatternRow("p", "gs://bucket/x*")});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->main.size(), 1u);
  EXPECT_THAT(testing::ErrorMessages(out->errors),
              ElementsAre(HasSubstr("the row has 2 fields; set file_pattern"), HasSubstr("remote filesystem")));
  auto missing = RunMatchAll("{file_pattern: q}", {two});
  ASSERT_TRUE(missing.ok());
  EXPECT_THAT(testing::ErrorMessages(missing->errors), ElementsAre(HasSubstr("no field 'q'")));
  auto bad = testing::MakeStage(testing::MakeConfig("MatchAll", "{empty_match_treatment: SOMETIMES}"));
  EXPECT_THAT(bad.status().message(), HasSubstr("'SOMETIMES' is not one of ALLOW, DISALLOW, ALLOW_IF_WILDCARD"));
}

}  // namespace
}  // namespace dfw
