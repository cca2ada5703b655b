// ReadFromParquet / WriteToParquet through pyarrow in the embedded CPython. pyarrow is not a Debian
// package: these tests run where the Python named by DFW_TEST_PYARROW_PYTHON (a venv's bin/python
// with `pip install pyarrow==26.0.1`), or else the system's python3.11, can import pyarrow, and
// skip saying so otherwise.
#include <gmock/gmock.h>

#include <cstdlib>

#include "dfw/python/python.h"
#include "dfw/stages/config.h"
#include "io_test_util.h"
#include "stages/io/parquet_python.h"

namespace dfw {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;
using testing::TempDir;

// Empty when pyarrow can be used; else why not.
std::string PyarrowMissing() {
  static const std::string why = [] {
    python::RuntimeOptions o;
    if (const char* exe = std::getenv("DFW_TEST_PYARROW_PYTHON")) o.python_executable = exe;
    Status configured = python::Configure(o);
    auto py = stages_io::ParquetPython::Get();
    if (py.ok()) return std::string();
    return "pyarrow is not importable by " +
           (o.python_executable.empty() ? std::string("the system's python3.11") : o.python_executable) +
           " (set DFW_TEST_PYARROW_PYTHON to a venv's bin/python with pyarrow==26.0.1): " + py.status().message() +
           (configured.ok() ? "" : " [" + configured.message() + "]");
  }();
  return why;
}

#define SKIP_WITHOUT_PYARROW()                          \
  if (std::string why = PyarrowMissing(); !why.empty()) \
  GTEST_SKIP() << why

Row ParquetRow(const std::string& yaml) { return ConfigToValue(ConfigNodeFromYaml(YAML::Load(yaml))).as_row(); }

// Beam's sdks/python/apache_beam/yaml/tests/parquet.yaml: its Create elements, written by pipeline 1
// and asserted equal after ReadFromParquet by pipeline 2.
TEST(ParquetIo, BeamParquetYamlRowsRoundTrip) {
  SKIP_WITHOUT_PYARROW();
  TempDir dir;
  auto written = testing::WriteShard("WriteToParquet", "{path: '" + (dir / "out.parquet") + "'}",
                                     {ParquetRow("{label: '11a', rank: 0}"), ParquetRow("{label: '37a', rank: 1}"),
                                      ParquetRow("{label: '389a', rank: 2}")},
                                     dir, dir / "out.parquet-00000-of-00001");
  ASSERT_TRUE(written.ok()) << written.status().ToString();
  const std::string bytes = testing::ReadFile(dir / "out.parquet-00000-of-00001");
  ASSERT_GE(bytes.size(), 8u);
  EXPECT_EQ(bytes.substr(0, 4), "PAR1");  // Parquet's magic at both ends
  EXPECT_EQ(bytes.substr(bytes.size() - 4), "PAR1");
  auto read = testing::ReadSource("ReadFromParquet", "{path: '" + (dir / "out.parquet*") + "'}");
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_TRUE(read->errors.empty());
  EXPECT_THAT(testing::AsJson(read->main), UnorderedElementsAre(R"({"label":"11a","rank":0})", R"({"label":"37a","rank":1})",
                                                                R"({"label":"389a","rank":2})"));
}

TEST(ParquetIo, NestedValuesNullsAndMissingFieldsRoundTrip) {
  SKIP_WITHOUT_PYARROW();
  TempDir dir;
  ASSERT_TRUE(testing::WriteShard("WriteToParquet", "{path: '" + (dir / "o") + "', file_name_suffix: .parquet}",
                                  {ParquetRow("{id: 1, score: 0.5, tags: [a, b], who: {name: x, ok: true}}"),
                                   ParquetRow("{id: 2, score: null, tags: [], who: {name: y, ok: false}, note: hi}")},
                                  dir, dir / "o-00000-of-00001.parquet")
                  .ok());
  auto read = testing::ReadSource("ReadFromParquet", "{path: '" + (dir / "*.parquet") + "'}");
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_THAT(testing::AsJson(read->main),
              ElementsAre(R"({"id":1,"score":0.5,"tags":["a","b"],"who":{"name":"x","ok":true},"note":null})",
                          R"({"id":2,"score":null,"tags":[],"who":{"name":"y","ok":false},"note":"hi"})"));
}

// bytes are Parquet binary and a Timestamp a UTC timestamp[us] column; both read back as they were.
TEST(ParquetIo, BytesAndTimestampsRoundTrip) {
  SKIP_WITHOUT_PYARROW();
  TempDir dir;
  Row a;
  a.Append("b", Value::Bytes(std::string("\0\xffz", 3)));
  a.Append("t", Value::Timestamp(-1'500'001));
  Row b;
  b.Append("b", Value());
  b.Append("t", Value::Timestamp(1'700'000'000'123'456));
  ASSERT_TRUE(testing::WriteShard("WriteToParquet", "{path: '" + (dir / "o") + "', file_name_suffix: .parquet}", {a, b},
                                  dir, dir / "o-00000-of-00001.parquet")
                  .ok());
  auto read = testing::ReadSource("ReadFromParquet", "{path: '" + (dir / "*.parquet") + "'}");
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  ASSERT_TRUE(read->errors.empty()) << testing::ErrorMessages(read->errors)[0];
  ASSERT_EQ(read->main.size(), 2u);
  ASSERT_TRUE(read->main[0].Find("b")->is_bytes());
  EXPECT_EQ(read->main[0].Find("b")->as_bytes(), std::string("\0\xffz", 3));
  ASSERT_TRUE(read->main[0].Find("t")->is_timestamp());
  EXPECT_EQ(read->main[0].Find("t")->as_timestamp_us(), -1'500'001);
  EXPECT_TRUE(read->main[1].Find("b")->is_null());
  EXPECT_EQ(read->main[1].Find("t")->as_timestamp_us(), 1'700'000'000'123'456);
}

TEST(ParquetIo, DamagedFilesBecomeErrorRowsNamingTheFile) {
  SKIP_WITHOUT_PYARROW();
  TempDir dir;
  ASSERT_TRUE(testing::WriteShard("WriteToParquet", "{path: '" + (dir / "g") + "'}", {ParquetRow("{a: 1}")}, dir,
                                  dir / "good.parquet")
                  .ok());
  const std::string good = testing::ReadFile(dir / "good.parquet");
  for (const auto& [name, bytes] : std::vector<std::pair<std::string, std::string>>{
           {"garbage.parquet", "not parquet at all"}, {"truncated.parquet", good.substr(0, good.size() / 2)}}) {
    SCOPED_TRACE(name);
    const std::string path = dir.Write("bad/" + name, bytes);
    auto read = testing::ReadSource("ReadFromParquet", "{path: '" + path + "'}");
    ASSERT_TRUE(read.ok()) << read.status().ToString();
    EXPECT_TRUE(read->main.empty());
    ASSERT_EQ(read->errors.size(), 1u);
    EXPECT_THAT(testing::ErrorMessages(read->errors)[0], HasSubstr("pyarrow cannot read it as Parquet"));
    EXPECT_THAT(testing::ErrorMessages(read->errors)[0], HasSubstr(name));
  }
}

}  // namespace
}  // namespace dfw
