// ReadFromText / ReadFromJson / ReadFromCsv / Create: table-driven input → rows and failures.
#include <gmock/gmock.h>
#include <sys/stat.h>

#include "stages_test_util.h"

namespace dfw {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;

struct ReadCase {
  const char* name;
  const char* type;
  const char* extra_config;  // appended to {path: ...}
  std::string input;
  std::vector<std::string> rows_json;  // expected main rows, as JSON
  std::vector<std::string> error_fragments;  // one per expected error row, in order
};

std::vector<ReadCase> Cases() {
  return {
      {"text lines, CRLF, blank line, no final newline", "ReadFromText", "", "a\r\nb\n\nc",
       {R"({"line":"a"})", R"({"line":"b"})", R"({"line":"c"})"}, {}},
      {"text with invalid UTF-8", "ReadFromText", "", "ok\n\xff\xfe\n", {R"({"line":"ok"})"}, {"line 2 of", "not valid UTF-8"}},
      {"json with invalid UTF-8 (validated by simdjson, not twice)", "ReadFromJson", "", "{\"a\": 1}\n{\"a\": \"\xff\xfe\"}\n",
       {R"({"a":1})"}, {"line 2 of", "not valid UTF-8"}},
      {"json repeated key keeps the last value", "ReadFromJson", "", "{\"a\": 1, \"b\": 2, \"a\": 3}\n",
       {R"({"a":3,"b":2})"}, {}},
      {"json lines with types and nesting", "ReadFromJson", "",
       "{\"a\": 1, \"b\": 2.5, \"c\": \"x\", \"d\": [1, {\"e\": null}], \"f\": true}\n",
       {R"({"a":1,"b":2.5,"c":"x","d":[1,{"e":null}],"f":true})"}, {}},
      {"json malformed and non-object lines", "ReadFromJson", "", "{\"a\": 1}\n{\"a\": \n[1, 2]\n\"s\"\n",
       {R"({"a":1})"}, {"line 2 of", "line 3 of", "line 4 of"}},
      {"json duplicate key keeps the last", "ReadFromJson", "", "{\"a\": 1, \"a\": 2}\n", {R"({"a":2})"}, {}},
      {"csv header, quotes, escapes, embedded newline, typed values", "ReadFromCsv", "",
       "id,name,score\n1,\"Smith, J\",2.5\n2,\"say \"\"hi\"\"\",\n3,\"two\nlines\",7\n",
       {R"({"id":1,"name":"Smith, J","score":2.5})", R"({"id":2,"name":"say \"hi\"","score":null})",
        R"({"id":3,"name":"two\nlines","score":7})"},
       {}},
      {"csv wrong field count and unterminated quote", "ReadFromCsv", "", "a,b\n1,2\n1,2,3\n4,\"x\n",
       {R"({"a":1,"b":2})"}, {"line 3 of", "3 fields, but the header has 2", "line 4 of", "unterminated quoted field"}},
      {"csv delimiter and comment", "ReadFromCsv", ", delimiter: ';', comment: '#'", "# c\na;b\n# skip\nx;y\n",
       {R"({"a":"x","b":"y"})"}, {}},
      {"empty json file", "ReadFromJson", "", "", {}, {}},
  };
}

TEST(Readers, TableOfInputs) {
  for (const ReadCase& rc : Cases()) {
    SCOPED_TRACE(rc.name);
    TempDir dir;
    dir.Write("in.data", rc.input);
    StageConfig c = testing::MakeConfig(rc.type, "{path: '" + (dir / "in.data") + "'" + rc.extra_config + "}", "errors");
    auto stage = testing::MakeStage(c);
    ASSERT_TRUE(stage.ok()) << stage.status().ToString();
    auto out = testing::ReadAll(**stage, c);
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    std::vector<std::string> got;
    for (const Row& r : out->main) got.push_back(r.ToJson());
    EXPECT_EQ(got, rc.rows_json);
    std::string all_errors;
    for (const Row& r : out->errors) {
      ASSERT_NE(r.Find("msg"), nullptr);
      ASSERT_NE(r.Find("element"), nullptr);
      ASSERT_NE(r.Find("stack"), nullptr);
      EXPECT_EQ(r.Find("transform")->as_string(), rc.type);
      all_errors += r.Find("msg")->as_string() + "\n";
    }
    for (const std::string& f : rc.error_fragments) EXPECT_THAT(all_errors, HasSubstr(f));
    if (rc.error_fragments.empty()) {
      EXPECT_TRUE(out->errors.empty()) << all_errors;
    }
  }
}

TEST(Readers, SplitsReadTheSameRowsAsOneSplit) {
  TempDir dir;
  std::string csv = "k,v\n";
  for (int i = 0; i < 100; ++i) csv += std::to_string(i) + ",\"v\n" + std::to_string(i) + "\"\n";
  dir.Write("a.csv", csv);
  StageConfig c = testing::MakeConfig("ReadFromCsv", "{path: '" + (dir / "a.csv") + "'}");
  auto stage = testing::MakeStage(c);
  ASSERT_TRUE(stage.ok());
  auto whole = testing::ReadAll(**stage, c);
  auto pieces = testing::ReadAll(**stage, c, 64);
  ASSERT_TRUE(whole.ok() && pieces.ok());
  ASSERT_EQ(whole->main.size(), 100u);
  EXPECT_EQ(whole->main, pieces->main);
}

TEST(Readers, WithoutErrorHandlingABadRecordStopsWithFileAndLine) {
  TempDir dir;
  dir.Write("in.jsonl", "{}\nnope\n");
  StageConfig c = testing::MakeConfig("ReadFromJson", "{path: '" + (dir / "in.jsonl") + "'}");
  auto stage = testing::MakeStage(c);
  ASSERT_TRUE(stage.ok());
  auto out = testing::ReadAll(**stage, c);
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), HasSubstr("t.yaml:3:5: transform 'ReadFromJson'"));
  EXPECT_THAT(out.status().message(), HasSubstr("line 2 of '" + (dir / "in.jsonl") + "'"));
}

TEST(Readers, GlobMatchingNothingNamesThePattern) {
  StageConfig c = testing::MakeConfig("ReadFromText", "{path: '/nonexistent/dir/*.txt'}");
  auto stage = testing::MakeStage(c);
  ASSERT_TRUE(stage.ok());
  auto splits = (*stage)->Split(100);
  ASSERT_FALSE(splits.ok());
  EXPECT_EQ(splits.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(splits.status().message(), HasSubstr("'/nonexistent/dir/*.txt' matches no files"));
}

TEST(Readers, AFifoMatchedByTheGlobIsRefusedAtPlanningNamingIt) {
  TempDir dir;
  dir.Write("a.jsonl", "{}\n");
  ASSERT_EQ(::mkfifo((dir / "b.jsonl").c_str(), 0600), 0);
  StageConfig c = testing::MakeConfig("ReadFromJson", "{path: '" + (dir / "*.jsonl") + "'}");
  auto stage = testing::MakeStage(c);
  ASSERT_TRUE(stage.ok());
  auto splits = (*stage)->Split(100);  // must not block on the FIFO
  ASSERT_FALSE(splits.ok());
  EXPECT_EQ(splits.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(splits.status().message(), HasSubstr("input '" + (dir / "b.jsonl") + "'"));
  EXPECT_THAT(splits.status().message(), HasSubstr("is a FIFO"));
}

TEST(Readers, ACsvHeaderThatRepeatsAColumnIsRefusedNamingIt) {
  TempDir dir;
  dir.Write("in.csv", "id,name,id\n1,a,2\n");
  StageConfig c = testing::MakeConfig("ReadFromCsv", "{path: '" + (dir / "in.csv") + "'}");
  auto stage = testing::MakeStage(c);
  ASSERT_TRUE(stage.ok());
  auto out = testing::ReadAll(**stage, c);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(out.status().message(), HasSubstr("repeats column 'id' (columns 1 and 3)"));
}

TEST(Readers, ACsvHeaderProblemIsFoundWhenTheBundlesArePlanned) {
  TempDir dir;
  dir.Write("dup.csv", "id,id\n1,2\n");
  dir.Write("empty_name.csv", "id,\n1,2\n");
  for (const auto& [file, expected] : std::vector<std::pair<std::string, std::string>>{
           {"dup.csv", "repeats column 'id' (columns 1 and 2)"}, {"empty_name.csv", "column 2 has no name"}}) {
    StageConfig c = testing::MakeConfig("ReadFromCsv", "{path: '" + (dir / file) + "'}");
    auto stage = testing::MakeStage(c);
    ASSERT_TRUE(stage.ok());
    auto splits = (*stage)->Split(1 << 20);  // planning: no bundle has run
    ASSERT_FALSE(splits.ok()) << file;
    EXPECT_EQ(splits.status().code(), StatusCode::kInvalidArgument) << file;
    EXPECT_THAT(splits.status().message(), HasSubstr(expected));
  }
}

TEST(Create, MappingsFillMissingKeysAndPrimitivesBecomeElement) {
  StageConfig c = testing::MakeConfig("Create", "{elements: [{a: 1}, {b: 'x'}]}");
  auto stage = testing::MakeStage(c);
  ASSERT_TRUE(stage.ok());
  auto out = testing::ReadAll(**stage, c);
  ASSERT_TRUE(out.ok());
  ASSERT_EQ(out->main.size(), 2u);
  EXPECT_EQ(out->main[0].ToJson(), R"({"a":1,"b":null})");
  EXPECT_EQ(out->main[1].ToJson(), R"({"b":"x","a":null})");
  StageConfig p = testing::MakeConfig("Create", "{elements: [1, '2', 2.5, true]}");
  auto prim = testing::MakeStage(p);
  ASSERT_TRUE(prim.ok());
  auto rows = testing::ReadAll(**prim, p);
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->main.size(), 4u);
  EXPECT_EQ(rows->main[0].ToJson(), R"({"element":1})");
  EXPECT_EQ(rows->main[1].ToJson(), R"({"element":"2"})");
  EXPECT_EQ(rows->main[2].ToJson(), R"({"element":2.5})");
  EXPECT_EQ(rows->main[3].ToJson(), R"({"element":true})");
}

TEST(Create, ElementsMustBeAList) {
  auto stage = testing::MakeStage(testing::MakeConfig("Create", "{elements: 3}"));
  ASSERT_FALSE(stage.ok());
  EXPECT_THAT(stage.status().message(), HasSubstr("config 'elements': expected a list"));
}

}  // namespace
}  // namespace dfw
