// ReadFromTFRecord / WriteToTFRecord: CRC32C against its standard check value, frames against the
// bytes TensorFlow's writer produced (Beam's tfrecordio tests carry them), round trips with and
// without compression, damaged files as error rows.
#include <gmock/gmock.h>

#include "io_test_util.h"
#include "stages/io/crc32c.h"
#include "stages/io/tfrecord_format.h"

namespace dfw {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::TempDir;

// FOO_BAR_RECORD_BASE64 of Beam's sdks/python/apache_beam/io/tfrecordio_test.py (TensorFlow's
// TFRecordWriter writing b'foo' then b'bar'), decoded.
const std::string kFooBarFrames("\x03\x00\x00\x00\x00\x00\x00\x00\xb0\x99\x49\x0e" "foo" "\x61\x8a\xbe\xfe"
                                "\x03\x00\x00\x00\x00\x00\x00\x00\xb0\x99\x49\x0e" "bar" "\x46\x00\xe5\xc8",
                                38);

Row TfRow(const std::string& field, const std::string& bytes) {
  Row r;
  r.Append(field, Value::String(bytes));
  return r;
}

TEST(Crc32c, MatchesTheStandardCheckValueAndTfRecordMasking) {
  EXPECT_EQ(stages_io::Crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(stages_io::Crc32c(""), 0u);
  // The masked CRC of the 8 length bytes of a 3-byte record, as in TensorFlow's frame above.
  EXPECT_EQ(stages_io::MaskedCrc32c(std::string("\x03\0\0\0\0\0\0\0", 8)), 0x0e4999b0u);
}

TEST(TfRecordFormat, FramesAreTheBytesTensorFlowWrites) {
  std::string out;
  stages_io::AppendTfRecordFrame(out, "foo");
  stages_io::AppendTfRecordFrame(out, "bar");
  EXPECT_EQ(out, kFooBarFrames);
}

// Records are bytes values (Beam's are Python bytes), which JSON shows as base64: Zm9v is b'foo',
// YmFy b'bar'.
TEST(TfRecordIo, ReadsTensorFlowsFileAsRecordRows) {
  TempDir dir;
  dir.Write("foobar.tfrecord", kFooBarFrames);
  auto read = testing::ReadSource("ReadFromTFRecord", "{file_pattern: '" + (dir / "*.tfrecord") + "'}");
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_TRUE(read->errors.empty());
  EXPECT_THAT(testing::AsJson(read->main), ElementsAre(R"({"record":"Zm9v"})", R"({"record":"YmFy"})"));
  ASSERT_FALSE(read->main.empty());
  ASSERT_TRUE(read->main[0].Find("record")->is_bytes());
  EXPECT_EQ(read->main[0].Find("record")->as_bytes(), "foo");
}

// Beam's sdks/python/apache_beam/yaml/tests/tfrecord_write.yaml: rows {record: b'foo'} written with
// file_path_prefix = the temp folder, suffix .tfrecords, UNCOMPRESSED, 1 shard; read back with
// file_pattern "<folder>*" and AUTO, which must skip the folder itself.
TEST(TfRecordIo, BeamTfRecordWriteYamlRoundTrip) {
  TempDir dir;
  const std::string prefix = dir / "tmp";
  std::filesystem::create_directories(prefix);
  auto written = testing::WriteShard("WriteToTFRecord",
                                     "{file_path_prefix: '" + prefix +
                                         "', file_name_suffix: .tfrecords, compression_type: UNCOMPRESSED, num_shards: 1}",
                                     {TfRow("record", "foo")}, dir, prefix + "-00000-of-00001.tfrecords");
  ASSERT_TRUE(written.ok()) << written.status().ToString();
  EXPECT_EQ(testing::ReadFile(prefix + "-00000-of-00001.tfrecords"), kFooBarFrames.substr(0, 19));
  auto read = testing::ReadSource("ReadFromTFRecord",
                                  "{file_pattern: '" + prefix + "*', compression_type: AUTO, validate: true}");
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_TRUE(read->errors.empty());
  EXPECT_THAT(testing::AsJson(read->main), ElementsAre(R"({"record":"Zm9v"})"));
}

TEST(TfRecordIo, CompressedRoundTripsWithBinaryRecords) {
  const std::string binary("\0\xff\x01 zero and high bytes\n", 25);
  for (const char* mode : {"GZIP", "DEFLATE", "AUTO"}) {
    SCOPED_TRACE(mode);
    TempDir dir;
    const std::string shard = dir / "out-00000-of-00001.gz";
    auto written = testing::WriteShard("WriteToTFRecord",
                                       std::string("{file_path_prefix: '") + (dir / "out") + "', file_name_suffix: .gz, compression_type: " + mode + "}",
                                       {TfRow("b", binary), TfRow("b", std::string(100000, 'x')), TfRow("b", "")}, dir, shard);
    ASSERT_TRUE(written.ok()) << written.status().ToString();
    const std::string bytes = testing::ReadFile(shard);
    if (std::string(mode) != "DEFLATE") {
      ASSERT_GE(bytes.size(), 2u);
      EXPECT_EQ(bytes.substr(0, 2), "\x1f\x8b");  // a gzip member
    }
    EXPECT_LT(bytes.size(), 2000u);  // 100000 'x' compressed
    auto read = testing::ReadSource("ReadFromTFRecord", std::string("{file_pattern: '") + shard + "', compression_type: " + mode + "}");
    ASSERT_TRUE(read.ok()) << read.status().ToString();
    ASSERT_EQ(read->main.size(), 3u);
    EXPECT_EQ(read->main[0].Find("record")->as_bytes(), binary);
    EXPECT_EQ(read->main[1].Find("record")->as_bytes(), std::string(100000, 'x'));
    EXPECT_EQ(read->main[2].Find("record")->as_bytes(), "");
  }
}

TEST(TfRecordIo, RowsThatAreNotOneBytesFieldGoToTheErrorOutput) {
  TempDir dir;
  Row two = TfRow("a", "x");
  two.Append("b", Value::Int(1));
  auto written = testing::WriteShard("WriteToTFRecord", "{file_path_prefix: '" + (dir / "o") + "'}",
                                     {two, TfRow("n", ""), Row({Field{"i", Value::Int(3)}})}, dir, dir / "o.tfrecord", "bad");
  ASSERT_TRUE(written.ok()) << written.status().ToString();
  EXPECT_THAT(testing::ErrorMessages(written->errors),
              ElementsAre(HasSubstr("exactly one field, got 2 ('a', 'b')"), HasSubstr("field 'i' is a int")));
}

TEST(TfRecordIo, DamagedFilesBecomeErrorRowsWithTheReason) {
  std::string bad_data_crc = kFooBarFrames;
  bad_data_crc[12] = 'g';  // the first record's data ("foo" -> "goo"): its CRC no longer matches
  std::string bad_len_crc = kFooBarFrames;
  bad_len_crc[9] ^= 1;
  std::string huge = kFooBarFrames;
  huge[5] = '\x01';  // length 2^40 (its CRC no longer matches either)
  struct Case {
    std::string name, bytes;
    std::vector<std::string> rows;
    std::string error;
  };
  const std::vector<Case> cases = {
      {"bad-data-crc", bad_data_crc, {R"({"record":"YmFy"})"}, "record 1 at byte 0: the data's CRC does not match"},
      {"bad-length-crc", bad_len_crc, {}, "record 1 at byte 0: the length's CRC does not match"},
      {"huge-length", huge, {}, "the length's CRC does not match"},
      {"truncated-header", kFooBarFrames.substr(0, 25), {R"({"record":"Zm9v"})"}, "record 2 at byte 19: truncated header (6 of 12 bytes)"},
      {"truncated-data", kFooBarFrames.substr(0, 33), {R"({"record":"Zm9v"})"}, "record 2 at byte 19: length 3 runs past the end"},
      {"truncated-crc", kFooBarFrames.substr(0, 36), {R"({"record":"Zm9v"})"}, "record 2 at byte 19: length 3 runs past the end"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    TempDir dir;
    const std::string path = dir.Write(c.name + ".tfrecord", c.bytes);
    auto read = testing::ReadSource("ReadFromTFRecord", "{file_pattern: '" + path + "'}");
    ASSERT_TRUE(read.ok()) << read.status().ToString();
    EXPECT_EQ(testing::AsJson(read->main), c.rows);
    ASSERT_EQ(read->errors.size(), 1u);
    EXPECT_THAT(testing::ErrorMessages(read->errors)[0], HasSubstr(c.error));
    EXPECT_THAT(testing::ErrorMessages(read->errors)[0], HasSubstr(c.name));
  }
}

TEST(TfRecordIo, TruncatedAndDamagedGzipAreErrorRows) {
  TempDir dir;
  const std::string shard = dir / "o.gz";
  ASSERT_TRUE(testing::WriteShard("WriteToTFRecord", "{file_path_prefix: '" + (dir / "o") + "', compression_type: GZIP}",
                                  {TfRow("r", std::string(5000, 'q'))}, dir, shard)
                  .ok());
  const std::string gz = testing::ReadFile(shard);
  std::string damaged = gz;
  damaged[gz.size() / 2] ^= 0x55;
  for (const auto& [name, bytes] : std::vector<std::pair<std::string, std::string>>{
           {"cut.gz", gz.substr(0, gz.size() / 2)}, {"damaged.gz", damaged}}) {
    SCOPED_TRACE(name);
    const std::string path = dir.Write(name, bytes);
    auto read = testing::ReadSource("ReadFromTFRecord", "{file_pattern: '" + path + "'}");
    ASSERT_TRUE(read.ok()) << read.status().ToString();
    EXPECT_TRUE(read->main.empty());
    ASSERT_FALSE(read->errors.empty());  // a damaged member may also garble a frame before zlib's CRC check
    EXPECT_THAT(testing::ErrorMessages(read->errors).back(), HasSubstr(name));
  }
}

TEST(TfRecordIo, OptionsAreCheckedAtLoad) {
  struct Case {
    const char* type;
    const char* config;
    const char* error;
  };
  for (const Case& c : std::vector<Case>{
           {"ReadFromTFRecord", "{file_pattern: x, compression_type: BZIP2}", "'BZIP2' is a Beam compression type dfworker does not"},
           {"ReadFromTFRecord", "{file_pattern: x, compression_type: zip}", "'zip' is not a compression type"},
           {"ReadFromTFRecord", "{file_pattern: 'gs://b/x'}", "remote filesystem"},
           {"WriteToTFRecord", "{file_path_prefix: o, num_shards: -1}", "must be 0 or more"},
           {"WriteToTFRecord", "{file_path_prefix: ''}", "must not be empty"},
       }) {
    SCOPED_TRACE(c.config);
    auto stage = testing::MakeStage(testing::MakeConfig(c.type, c.config));
    ASSERT_FALSE(stage.ok());
    EXPECT_THAT(stage.status().message(), HasSubstr(c.error));
  }
  TempDir dir;
  auto none = testing::ReadSource("ReadFromTFRecord", "{file_pattern: '" + (dir / "none*") + "', validate: false}");
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_TRUE(none->main.empty());
  EXPECT_EQ(testing::ReadSource("ReadFromTFRecord", "{file_pattern: '" + (dir / "none*") + "'}").status().code(),
            StatusCode::kNotFound);
}

}  // namespace
}  // namespace dfw
