// ReadFromAvro / WriteToAvro: Beam's own test rows round-trip, the schema derived from rows, files
// written by avro-c directly (types the writer never makes), damaged files as error rows.
#include <avro.h>
#include <gmock/gmock.h>

#include "io_test_util.h"
#include "dfw/stages/config.h"
#include "stages/io/avro_rows.h"

namespace dfw {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;
using testing::TempDir;

Row AvroRowFromJson(const std::string& yaml) { return ConfigToValue(ConfigNodeFromYaml(YAML::Load(yaml))).as_row(); }

// Writes `rows` with avro-c's own API under `schema_json` (an Avro file dfworker's writer did not make).
void WriteWithAvroC(const std::string& path, const std::string& schema_json,
                    const std::function<void(avro_value_t*, int)>& fill, int count) {
  avro_schema_t schema = nullptr;
  ASSERT_EQ(avro_schema_from_json_length(schema_json.data(), schema_json.size(), &schema), 0) << avro_strerror();
  avro_file_writer_t writer = nullptr;
  ASSERT_EQ(avro_file_writer_create_with_codec(path.c_str(), schema, &writer, "null", 0), 0) << avro_strerror();
  avro_value_iface_t* iface = avro_generic_class_from_schema(schema);
  avro_value_t value;
  ASSERT_EQ(avro_generic_value_new(iface, &value), 0);
  for (int i = 0; i < count; ++i) {
    avro_value_reset(&value);
    fill(&value, i);
    ASSERT_EQ(avro_file_writer_append_value(writer, &value), 0) << avro_strerror();
  }
  avro_value_decref(&value);
  avro_value_iface_decref(iface);
  avro_file_writer_close(writer);
  avro_schema_decref(schema);
}

// Beam's sdks/python/apache_beam/yaml/tests/avro.yaml: its Create elements, written by pipeline 1
// and asserted equal after ReadFromAvro by pipeline 2.
TEST(AvroIo, BeamAvroYamlRowsRoundTrip) {
  TempDir dir;
  RowBatch rows = {AvroRowFromJson("{label: '11a', rank: 0}"), AvroRowFromJson("{label: '37a', rank: 1}"),
                   AvroRowFromJson("{label: '389a', rank: 2}")};
  auto written = testing::WriteShard("WriteToAvro", "{path: '" + (dir / "out.avro") + "'}", rows, dir,
                                     dir / "out.avro-00000-of-00001");
  ASSERT_TRUE(written.ok()) << written.status().ToString();
  const std::string bytes = testing::ReadFile(dir / "out.avro-00000-of-00001");
  ASSERT_GE(bytes.size(), 4u);
  EXPECT_EQ(bytes.substr(0, 4), std::string("Obj\x01", 4));  // an Avro object container
  EXPECT_THAT(bytes, HasSubstr("deflate"));                  // Beam's default codec
  auto read = testing::ReadSource("ReadFromAvro", "{path: '" + (dir / "out.avro*") + "'}");
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_TRUE(read->errors.empty());
  EXPECT_THAT(testing::AsJson(read->main), UnorderedElementsAre(R"({"label":"11a","rank":0})", R"({"label":"37a","rank":1})",
                                                                R"({"label":"389a","rank":2})"));
}

TEST(AvroSchema, DerivedFromTheRowsAsBeamMapsItsTypes) {
  struct Case {
    std::vector<std::string> rows;
    std::string schema;
  };
  const std::vector<Case> cases = {
      {{"{a: 1, b: x}", "{a: 2.5}"},
       R"({"type":"record","name":"R","fields":[{"name":"a","type":"double"},{"name":"b","type":["null","string"]}]})"},
      {{"{n: null, t: true}"}, R"({"type":"record","name":"R","fields":[{"name":"n","type":"null"},{"name":"t","type":"boolean"}]})"},
      {{"{l: [1, 2]}", "{l: []}"}, R"({"type":"record","name":"R","fields":[{"name":"l","type":{"type":"array","items":"long"}}]})"},
      {{"{r: {x: 1}}", "{r: null}"},
       R"({"type":"record","name":"R","fields":[{"name":"r","type":["null",{"type":"record","name":"R_r","fields":[{"name":"x","type":"long"}]}]}]})"},
  };
  for (const Case& c : cases) {
    stages_io::AvroSchemaBuilder b;
    for (const std::string& r : c.rows) ASSERT_TRUE(b.Add(AvroRowFromJson(r)).ok()) << r;
    EXPECT_EQ(b.ToJson("R"), c.schema);
  }
  stages_io::AvroSchemaBuilder conflict;
  ASSERT_TRUE(conflict.Add(AvroRowFromJson("{a: 1}")).ok());
  Status st = conflict.Add(AvroRowFromJson("{a: x}"));
  EXPECT_THAT(st.message(), HasSubstr("field 'a' is a string in this row but a long in earlier rows"));
}

TEST(AvroIo, NestedValuesNullsAndMissingFieldsRoundTrip) {
  TempDir dir;
  RowBatch rows = {AvroRowFromJson("{id: 1, score: 0.5, tags: [a, b], who: {name: x, ok: true}, note: hi}"),
                   AvroRowFromJson("{id: 2, score: 3, tags: [], who: {name: y, ok: false}, note: null}"),
                   AvroRowFromJson("{id: 3, score: -1.25, tags: [c], who: null}")};
  ASSERT_TRUE(testing::WriteShard("WriteToAvro", "{path: '" + (dir / "o") + "', file_name_suffix: .avro}", rows, dir,
                                  dir / "o-00000-of-00001.avro")
                  .ok());
  auto read = testing::ReadSource("ReadFromAvro", "{path: '" + (dir / "*.avro") + "'}");
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_THAT(testing::AsJson(read->main),
              ElementsAre(R"({"id":1,"score":0.5,"tags":["a","b"],"who":{"name":"x","ok":true},"note":"hi"})",
                          R"({"id":2,"score":3.0,"tags":[],"who":{"name":"y","ok":false},"note":null})",
                          R"({"id":3,"score":-1.25,"tags":["c"],"who":null,"note":null})"));
}

// bytes are Avro bytes and come back as bytes; a Timestamp is a long of its microseconds (avro-c
// writes no logical types: a timestamp-micros annotation would be dropped from the file's schema).
TEST(AvroIo, BytesAndTimestampsRoundTrip) {
  TempDir dir;
  Row row;
  row.Append("b", Value::Bytes(std::string("\0\xffz", 3)));
  row.Append("t", Value::Timestamp(-1'500'000));
  ASSERT_TRUE(testing::WriteShard("WriteToAvro", "{path: '" + (dir / "o") + "', file_name_suffix: .avro}", {row}, dir,
                                  dir / "o-00000-of-00001.avro")
                  .ok());
  EXPECT_THAT(testing::ReadFile(dir / "o-00000-of-00001.avro"),
              HasSubstr(R"([{"name":"b","type":{"type":"bytes"}},{"name":"t","type":{"type":"long"}}])"));
  auto read = testing::ReadSource("ReadFromAvro", "{path: '" + (dir / "*.avro") + "'}");
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  ASSERT_EQ(read->main.size(), 1u);
  ASSERT_TRUE(read->main[0].Find("b")->is_bytes());
  EXPECT_EQ(read->main[0].Find("b")->as_bytes(), std::string("\0\xffz", 3));
  EXPECT_EQ(read->main[0].Find("t")->as_int(), -1'500'000);
}

TEST(AvroIo, RowsThatConflictWithTheSchemaGoToTheErrorOutput) {
  TempDir dir;
  auto written = testing::WriteShard("WriteToAvro", "{path: '" + (dir / "o") + "'}",
                                     {AvroRowFromJson("{a: 1}"), AvroRowFromJson("{a: x, b: 2}"), AvroRowFromJson("{a: 2}")},
                                     dir, dir / "o-00000-of-00001", "bad");
  ASSERT_TRUE(written.ok()) << written.status().ToString();
  EXPECT_THAT(testing::ErrorMessages(written->errors), ElementsAre(HasSubstr("field 'a' is a string")));
  auto read = testing::ReadSource("ReadFromAvro", "{path: '" + (dir / "o-*") + "'}");
  ASSERT_TRUE(read.ok());
  // The failed row's field 'b' is not in the file's schema: the schema is rebuilt from the rows kept.
  EXPECT_THAT(testing::AsJson(read->main), ElementsAre(R"({"a":1})", R"({"a":2})"));
}

TEST(AvroIo, ReadsTheAvroTypesOtherWritersUse) {
  TempDir dir;
  const std::string schema = R"({"type":"record","name":"T","fields":[
      {"name":"i","type":"int"},{"name":"f","type":"float"},
      {"name":"e","type":{"type":"enum","name":"E","symbols":["RED","GREEN"]}},
      {"name":"b","type":"bytes"},{"name":"fx","type":{"type":"fixed","name":"F","size":2}},
      {"name":"m","type":{"type":"map","values":"long"}},{"name":"u","type":["null","string"]},
      {"name":"arr","type":{"type":"array","items":"int"}}]})";
  WriteWithAvroC(dir / "t.avro", schema, [](avro_value_t* v, int i) {
    avro_value_t f, item;
    avro_value_get_by_name(v, "i", &f, nullptr);
    avro_value_set_int(&f, 7 + i);
    avro_value_get_by_name(v, "f", &f, nullptr);
    avro_value_set_float(&f, 1.5f);
    avro_value_get_by_name(v, "e", &f, nullptr);
    avro_value_set_enum(&f, 1);
    avro_value_get_by_name(v, "b", &f, nullptr);
    avro_value_set_bytes(&f, const_cast<char*>("ab"), 2);
    avro_value_get_by_name(v, "fx", &f, nullptr);
    avro_value_set_fixed(&f, const_cast<char*>("zz"), 2);
    avro_value_get_by_name(v, "m", &f, nullptr);
    avro_value_add(&f, "k", &item, nullptr, nullptr);
    avro_value_set_long(&item, 5);
    avro_value_get_by_name(v, "u", &f, nullptr);
    avro_value_set_branch(&f, 1, &item);
    avro_value_set_string(&item, "s");
    avro_value_get_by_name(v, "arr", &f, nullptr);
    avro_value_append(&f, &item, nullptr);
    avro_value_set_int(&item, 9);
  }, 2);
  auto read = testing::ReadSource("ReadFromAvro", "{path: '" + (dir / "t.avro") + "'}");
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_THAT(testing::AsJson(read->main),
              ElementsAre(R"({"i":7,"f":1.5,"e":"GREEN","b":"YWI=","fx":"eno=","m":{"k":5},"u":"s","arr":[9]})",
                          R"({"i":8,"f":1.5,"e":"GREEN","b":"YWI=","fx":"eno=","m":{"k":5},"u":"s","arr":[9]})"));
  // bytes and fixed are bytes values (JSON shows them as base64: YWI= is b'ab', eno= b'zz').
  ASSERT_FALSE(read->main.empty());
  EXPECT_EQ(read->main[0].Find("b")->as_bytes(), "ab");
  EXPECT_EQ(read->main[0].Find("fx")->as_bytes(), "zz");
}

TEST(AvroIo, DamagedFilesBecomeErrorRowsNamingTheFile) {
  TempDir dir;
  RowBatch rows;
  for (int i = 0; i < 3000; ++i) rows.push_back(AvroRowFromJson("{k: " + std::to_string(i) + ", s: some text}"));
  ASSERT_TRUE(testing::WriteShard("WriteToAvro", "{path: '" + (dir / "good") + "'}", rows, dir, dir / "good.avro").ok());
  const std::string good = testing::ReadFile(dir / "good.avro");
  ASSERT_GT(good.size(), 200u);
  WriteWithAvroC(dir / "long.avro", R"("long")", [](avro_value_t* v, int i) { avro_value_set_long(v, i); }, 3);
  struct Case {
    std::string name, bytes, error;
    bool some_rows = false;  // blocks before the damage are read
  };
  std::string bad_sync = good;
  bad_sync[bad_sync.size() - 3] ^= 0x5a;  // inside the sync marker that ends the last block
  const std::vector<Case> cases = {
      {"garbage.avro", "this is not avro at all", "cannot read it as an Avro container file"},
      {"header-only.avro", good.substr(0, 3), "cannot read it as an Avro container file"},
      {"truncated.avro", good.substr(0, good.size() - 40), "Cannot read file block", true},
      {"bad-sync.avro", bad_sync, "Avro record", true},
      {"long.avro", testing::ReadFile(dir / "long.avro"), "not a record"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string path = dir.Write("bad/" + c.name, c.bytes);
    auto read = testing::ReadSource("ReadFromAvro", "{path: '" + path + "'}");
    ASSERT_TRUE(read.ok()) << read.status().ToString();
    ASSERT_EQ(read->errors.size(), 1u);
    EXPECT_THAT(testing::ErrorMessages(read->errors)[0], HasSubstr(c.error));
    EXPECT_THAT(testing::ErrorMessages(read->errors)[0], HasSubstr(c.name));
    EXPECT_EQ(!read->main.empty(), c.some_rows);
    // A bad sync marker is found after its block's records (all 3000 here); a cut block loses its rows.
    if (c.name == "truncated.avro") {
      EXPECT_LT(read->main.size(), 3000u);
    }
  }
  // Without an error output the first damaged file stops the read with the same reason.
  StageConfig c = testing::MakeConfig("ReadFromAvro", "{path: '" + (dir / "bad/garbage.avro") + "'}");
  auto stage = testing::MakeStage(c);
  ASSERT_TRUE(stage.ok());
  auto read = testing::ReadAll(**stage, c);
  EXPECT_THAT(read.status().message(), HasSubstr("cannot read it as an Avro container file"));
}

TEST(AvroIo, EmptyFilesAreSkippedAndAPatternMatchingNothingIsNotFound) {
  TempDir dir;
  dir.Write("empty.avro", "");
  auto read = testing::ReadSource("ReadFromAvro", "{path: '" + (dir / "*.avro") + "'}");
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_TRUE(read->main.empty());
  EXPECT_TRUE(read->errors.empty());
  auto none = testing::ReadSource("ReadFromAvro", "{path: '" + (dir / "nothing*") + "'}");
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(none.status().message(), HasSubstr("matches no files"));
}

}  // namespace
}  // namespace dfw
