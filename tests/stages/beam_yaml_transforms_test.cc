// Transforms and options of Beam YAML that Beam's own YAML tests use
// (sdks/python/apache_beam/yaml/tests): ReadFromCsv's filename_column (csv.yaml, third pipeline:
// each row's `source_file` is the path of the file it came from), Reshuffle (reshuffle.yaml: rows
// unchanged), ExtractWindowingInfo's window_object and pane_info and the timestamp of an element
// that never got one (extract_windowing_Info.yaml's AssertEqual elements: GlobalWindow, Beam's
// MIN_TIMESTAMP -9223372036854.775 s, the global window's end 9223371950454.775 s), WindowInto with
// sliding windows (Beam's SlidingWindows.assign: every window of `size` starting at a multiple of
// `period` that holds the timestamp, latest first).
#include <gmock/gmock.h>

#include "stages_test_util.h"

namespace dfw {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;

TEST(BeamYamlTransforms, ReadFromCsvFilenameColumnHoldsTheFilePath) {
  TempDir dir;
  dir.Write("out.csv-00000-of-00001", "label,rank\n11a,0\n37a,1\n");
  const std::string path = dir / "out.csv-00000-of-00001";
  StageConfig c = testing::MakeConfig("ReadFromCsv", "{path: '" + (dir / "out.csv*") + "', filename_column: source_file}");
  auto stage = testing::MakeStage(c);
  ASSERT_TRUE(stage.ok()) << stage.status().ToString();
  auto out = testing::ReadAll(**stage, c);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ(out->main.size(), 2u);
  EXPECT_EQ(out->main[0].ToJson(), "{\"label\":\"11a\",\"rank\":0,\"source_file\":\"" + path + "\"}");
  EXPECT_EQ(out->main[1].Find("source_file")->as_string(), path);
}

TEST(BeamYamlTransforms, ReshufflePassesRowsThroughAndChecksNumBuckets) {
  StageConfig c = testing::MakeConfig("Reshuffle", "{num_buckets: 4}");
  auto stage = testing::MakeStage(c);
  ASSERT_TRUE(stage.ok()) << stage.status().ToString();
  RowBatch in;
  for (int i = 1; i <= 3; ++i) in.push_back(Row({{"id", Value::Int(i)}}));
  StageOutput out(&c);
  ASSERT_TRUE((*stage)->Process(in, out).ok());
  ASSERT_EQ(out.main().size(), 3u);
  EXPECT_EQ(out.main()[2].ToJson(), "{\"id\":3}");
  auto bad = testing::MakeStage(testing::MakeConfig("Reshuffle", "{num_buckets: 0}"));
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("num_buckets"));
}

TEST(BeamYamlTransforms, ExtractWindowingInfoOfAnElementWithoutTimestampIsBeams) {
  StageConfig c = testing::MakeConfig(
      "ExtractWindowingInfo", "{fields: [timestamp, window_start, window_end, window_string, window_type, window_object, pane_info]}");
  auto stage = testing::MakeStage(c);
  ASSERT_TRUE(stage.ok()) << stage.status().ToString();
  RowBatch in;
  Row row({{"label", Value::String("11a")}});
  row.set_window(INT64_MIN, INT64_MAX);  // the global window, as a source leaves it
  in.push_back(row);
  StageOutput out(&c);
  ASSERT_TRUE((*stage)->Process(in, out).ok());
  ASSERT_EQ(out.main().size(), 1u);
  const Row& r = out.main()[0];
  // Timestamp values: Beam's MIN_TIMESTAMP and the global window's end, to the microsecond.
  EXPECT_EQ(r.Find("timestamp")->as_timestamp_us(), -9223372036854775000);
  EXPECT_EQ(r.Find("window_start")->as_timestamp_us(), -9223372036854775000);
  EXPECT_EQ(r.Find("window_end")->as_timestamp_us(), 9223371950454775000);
  EXPECT_EQ(r.Find("window_string")->as_string(), "GlobalWindow");
  EXPECT_EQ(r.Find("window_type")->as_string(), "GlobalWindow");
  EXPECT_EQ(r.Find("window_object")->as_string(), "GlobalWindow");
  EXPECT_EQ(r.Find("pane_info")->as_string(),
            "PaneInfoTuple(is_first=True, is_last=True, timing='UNKNOWN', index=0, nonspeculative_index=0)");
}

TEST(BeamYamlTransforms, SlidingWindowIntoCopiesARowIntoEachWindow) {
  StageConfig c = testing::MakeConfig("WindowInto", "{}");
  c.windowing = testing::MakeConfig("WindowInto", "{type: sliding, size: 20s, period: 10s}").config;
  auto stage = testing::MakeStage(c);
  ASSERT_TRUE(stage.ok()) << stage.status().ToString();
  RowBatch in;
  Row row({{"t", Value::Int(11)}});
  row.set_timestamp_us(11'000'000);
  in.push_back(row);
  StageOutput out(&c);
  ASSERT_TRUE((*stage)->Process(in, out).ok());
  ASSERT_EQ(out.main().size(), 2u);  // windowing.yaml: t = 11 is in [10, 30) and [0, 20)
  EXPECT_EQ(out.main()[0].window_start_us(), 10'000'000);
  EXPECT_EQ(out.main()[0].window_end_us(), 30'000'000);
  EXPECT_EQ(out.main()[1].window_start_us(), 0);
  EXPECT_EQ(out.main()[1].window_end_us(), 20'000'000);
  EXPECT_EQ(out.fanned_out(), 1);
}

// validate_with_schema.yaml, second pipeline: Alice and Bob match the schema, the other three go to
// the error output with their rows as `element` (that pipeline's two AssertEqual lists).
TEST(BeamYamlTransforms, ValidateWithSchemaSendsRowsThatDoNotMatchToTheErrorOutput) {
  StageConfig c = testing::MakeConfig("ValidateWithSchema", R"({schema: {type: object, properties: {name: {type: string},
      age: {type: integer}, score: {type: number}}, required: [name, age, score]}})", "invalid_rows");
  auto stage = testing::MakeStage(c);
  ASSERT_TRUE(stage.ok()) << stage.status().ToString();
  RowBatch in;
  auto person = [](Value name, Value age, Value score) {
    return Row({{"name", std::move(name)}, {"age", std::move(age)}, {"score", std::move(score)}});
  };
  in.push_back(person(Value::String("Alice"), Value::Int(30), Value::Float(95.5)));
  in.push_back(person(Value::String("Bob"), Value::Int(25), Value::Float(88.0)));
  in.push_back(person(Value::String("Charlie"), Value::Int(27), Value::String("apple")));
  in.push_back(person(Value::String("David"), Value::String("twenty"), Value::Float(90.0)));
  in.push_back(person(Value::Int(30), Value::Int(40), Value::Float(100.0)));
  auto out = testing::RunStage(**stage, c, std::move(in));
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ(out->main.size(), 2u);
  EXPECT_EQ(out->main[0].Find("name")->as_string(), "Alice");
  EXPECT_EQ(out->main[1].Find("name")->as_string(), "Bob");
  ASSERT_EQ(out->errors.size(), 3u);
  EXPECT_EQ(out->errors[0].Find("element")->ToJson(), R"({"name":"Charlie","age":27,"score":"apple"})");
  EXPECT_EQ(out->errors[1].Find("element")->ToJson(), R"({"name":"David","age":"twenty","score":90.0})");
  EXPECT_EQ(out->errors[2].Find("element")->ToJson(), R"({"name":30,"age":40,"score":100.0})");
  EXPECT_THAT(out->errors[0].Find("msg")->as_string(), HasSubstr("score"));
  // Without error_handling the first bad row stops the run, naming it.
  StageConfig strict = c;
  strict.error_output.clear();
  auto strict_stage = testing::MakeStage(strict);
  ASSERT_TRUE(strict_stage.ok());
  RowBatch one{person(Value::String("Eve"), Value::Int(1), Value::String("x"))};
  auto stopped = testing::RunStage(**strict_stage, strict, std::move(one));
  ASSERT_FALSE(stopped.ok());
  EXPECT_THAT(stopped.status().message(), HasSubstr("does not match the schema"));
  // A schema that is no schema is refused when the stage is made.
  auto bad = testing::MakeStage(testing::MakeConfig("ValidateWithSchema", "{schema: {type: 7}}"));
  EXPECT_FALSE(bad.ok());
  // A reference could lead back to itself (valijson would recurse without end): refused.
  auto ref = testing::MakeStage(testing::MakeConfig("ValidateWithSchema", "{schema: {allOf: [{$ref: '#'}]}}"));
  ASSERT_FALSE(ref.ok());
  EXPECT_EQ(ref.status().code(), StatusCode::kUnimplemented);
  EXPECT_THAT(ref.status().message(), HasSubstr("'$ref' is not supported"));
}

// create.yaml's output_schema pipelines: valid elements load; an element that does not match is
// refused at load with its place.
TEST(BeamYamlTransforms, CreateOutputSchemaChecksEveryElement) {
  const std::string schema = "output_schema: {type: object, properties: {sdk: {type: string}, year: {type: integer}}}";
  auto good = testing::MakeStage(testing::MakeConfig(
      "Create", "{elements: [{sdk: MapReduce, year: 2004}, {sdk: MillWheel, year: 2008}], " + schema + "}"));
  ASSERT_TRUE(good.ok()) << good.status().ToString();
  auto bad = testing::MakeStage(testing::MakeConfig(
      "Create", "{elements: [{sdk: MapReduce, year: 2004}, {sdk: CheeseWheel, year: apple}], " + schema + "}"));
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("element {\"sdk\":\"CheeseWheel\",\"year\":\"apple\"} does not match output_schema"));
}

}  // namespace
}  // namespace dfw
