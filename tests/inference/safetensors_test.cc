// The safetensors reader: a valid file maps without copying; each corruption is a clear error.
#include "dfw/inference/safetensors.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "inference/mlp_test_util.h"

namespace dfw {
namespace {

using testing_util::F32Bytes;
using testing_util::RawTensor;
using testing_util::SafetensorsBytes;
using testing_util::SafetensorsFromHeader;
using testing_util::TempDir;
using testing_util::WriteFile;

TEST(Safetensors, OpensAValidFileAndPointsIntoTheMapping) {
  TempDir dir;
  const std::string path = (dir / "m.safetensors");
  WriteFile(path, SafetensorsBytes({{"w", "F32", {2, 3}, F32Bytes({1, 2, 3, 4, 5, 6})},
                                    {"b", "F16", {2}, std::string("\x00\x3c\x00\xc0", 4)}}));
  auto file = SafetensorsFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  const TensorInfo* w = (*file)->header().Find("w");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->ShapeString(), "[2, 3]");
  EXPECT_EQ(w->num_elements(), 6u);
  const float* data = reinterpret_cast<const float*>((*file)->Data(*w));
  EXPECT_EQ(data[5], 6.0f);
  EXPECT_EQ((*file)->header().Find("b")->dtype, TensorDType::kF16);
  EXPECT_EQ((*file)->header().data_bytes, 28u);
  // Planned at the loaded size: the F16 tensor (2 elements, 4 bytes) becomes 8 bytes of F32.
  EXPECT_EQ((*file)->header().loaded_bytes(), 32u);
  auto bytes = ModelBytesFromHeader(path);
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(*bytes, 32u);
}

TEST(Safetensors, NonFiniteWeightsAreRefusedAtLoadNamingTensorAndIndex) {
  TempDir dir;
  struct Case {
    const char* dtype;
    std::string bytes;
    const char* index;
  };
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  for (const Case& c : {Case{"F32", F32Bytes({1, 2, nan, 4}), "index 2"}, Case{"F32", F32Bytes({-inf, 0, 0, 0}), "index 0"},
                        Case{"F16", std::string("\x00\x3c\x00\x7c\x00\x00\x00\x00", 8), "index 1"},   // 1.0, +Inf
                        Case{"BF16", std::string("\x80\x3f\x80\x3f\x80\x3f\xc0\x7f", 8), "index 3"}}) {  // 1,1,1,NaN
    SCOPED_TRACE(std::string(c.dtype) + " " + c.index);
    const std::string path = (dir / std::string("m_") + c.dtype + c.index + ".safetensors");
    WriteFile(path, SafetensorsBytes({{"ok", "F32", {1}, F32Bytes({1})}, {"fc1.weight", c.dtype, {2, 2}, c.bytes}}));
    auto file = SafetensorsFile::Open(path);
    ASSERT_TRUE(file.ok()) << "the header is fine: " << file.status().ToString();
    Status finite = (*file)->CheckFiniteTensors();
    ASSERT_FALSE(finite.ok());
    EXPECT_EQ(finite.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(finite.message().find("tensor 'fc1.weight' [2, 2]"), std::string::npos) << finite.ToString();
    EXPECT_NE(finite.message().find(c.index), std::string::npos) << finite.ToString();
  }
}

// The check runs over blocks of 4,096 values: a bad value found in a whole block, in the last
// partial one and two in one block (the first is named), F32 and F64; a clean large tensor passes.
TEST(Safetensors, NonFiniteWeightsAreFoundInEveryBlockOfALargeTensor) {
  TempDir dir;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const std::size_t n = 3 * 4096 + 100;
  auto f32 = [&](std::vector<std::pair<std::size_t, float>> bad) {
    std::vector<float> v(n, 0.5f);
    for (auto [i, x] : bad) v[i] = x;
    return F32Bytes(v);
  };
  auto f64 = [&](std::size_t i) {
    std::vector<double> v(n, 0.25);
    v[i] = -std::numeric_limits<double>::infinity();
    return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(double));
  };
  struct Case {
    const char* dtype;
    std::string bytes;
    const char* index;  // nullptr: finite
  };
  for (const Case& c : {Case{"F32", f32({{5000, nan}}), "flat index 5000;"},
                        Case{"F32", f32({{n - 1, inf}}), "flat index 12387;"},
                        Case{"F32", f32({{8200, inf}, {8193, nan}}), "flat index 8193;"},
                        Case{"F32", f32({{4095, -inf}}), "flat index 4095;"}, Case{"F64", f64(4096), "flat index 4096;"},
                        Case{"F32", f32({}), nullptr}}) {
    SCOPED_TRACE(std::string(c.dtype) + " " + (c.index ? c.index : "finite"));
    const std::string path = (dir / (std::string("big_") + c.dtype + (c.index ? c.index : "ok") + ".safetensors"));
    WriteFile(path, SafetensorsBytes({{"w", c.dtype, {static_cast<int64_t>(n)}, c.bytes}}));
    auto file = SafetensorsFile::Open(path);
    ASSERT_TRUE(file.ok()) << file.status().ToString();
    const Status finite = (*file)->CheckFiniteTensors();
    if (c.index == nullptr) {
      EXPECT_TRUE(finite.ok()) << finite.ToString();
      continue;
    }
    ASSERT_FALSE(finite.ok());
    EXPECT_NE(finite.message().find(c.index), std::string::npos) << finite.ToString();
  }
}

TEST(Safetensors, MetadataIsParsed) {
  const std::string header = R"({"__metadata__":{"format":"pt"},"x":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}})";
  const std::string file = SafetensorsFromHeader(header, "ab");
  auto h = ParseSafetensorsHeader(file, file.size());
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_EQ(h->metadata.at("format"), "pt");
  EXPECT_EQ(h->tensors.size(), 1u);
}

struct Corruption {
  const char* name;
  std::string file;  // whole file bytes
  const char* message;
};

void PrintTo(const Corruption& c, std::ostream* os) { *os << c.name; }

std::string LengthPrefix(uint64_t n) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out;
}

std::vector<Corruption> Corruptions() {
  const std::string d8(8, '\0');
  auto one = [](const std::string& entry, const std::string& data) {
    return SafetensorsFromHeader("{\"t\":" + entry + "}", data);
  };
  return {
      {"EmptyFile", "", "shorter than the 8-byte header length"},
      {"ShortLength", "abc", "shorter than the 8-byte header length"},
      {"HeaderPastEof", LengthPrefix(100) + "{}", "header length 100 runs past the end of the file (10 bytes)"},
      {"HugeHeader", LengthPrefix(1ull << 40) + "{}", "exceeds the limit"},
      {"NotJson", SafetensorsFromHeader("{not json", ""), "header is not valid JSON"},
      {"NotObject", SafetensorsFromHeader("[1,2]", ""), "header must be a JSON object"},
      {"UnknownDtype", one(R"({"dtype":"F31","shape":[2],"data_offsets":[0,8]})", d8), "unknown dtype 'F31' (did you mean 'F32'?)"},
      {"Int4Dtype", one(R"({"dtype":"Q4_0","shape":[2],"data_offsets":[0,8]})", d8), "safetensors dtypes are BOOL, U8"},
      {"ShapeSizeMismatch", one(R"({"dtype":"F32","shape":[3],"data_offsets":[0,8]})", d8),
       "shape [3] of F32 needs 12 bytes but data_offsets [0, 8] span 8"},
      {"NegativeDim", one(R"({"dtype":"F32","shape":[-2],"data_offsets":[0,8]})", d8), "must be a non-negative integer, got -2"},
      {"ShapeOverflow", one(R"({"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]})", d8), "overflows"},
      {"EndBeforeBegin", one(R"({"dtype":"U8","shape":[0],"data_offsets":[8,0]})", d8), "is before begin"},
      {"OutOfRange", one(R"({"dtype":"F32","shape":[4],"data_offsets":[0,16]})", d8),
       "data_offsets end 16 is past the end of the data section (8 bytes)"},
      {"Overlap", SafetensorsFromHeader(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                        R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", d8),
       "overlap the previous tensor"},
      {"Hole", one(R"({"dtype":"F32","shape":[1],"data_offsets":[4,8]})", d8), "leaves a hole"},
      {"TrailingBytes", one(R"({"dtype":"F32","shape":[1],"data_offsets":[0,4]})", d8), "trailing bytes are not allowed"},
      {"MissingOffsets", one(R"({"dtype":"F32","shape":[1]})", d8), "missing \"data_offsets\""},
      {"UnknownKey", one(R"({"dtype":"F32","shape":[2],"data_offsets":[0,8],"strides":[1]})", d8), "unknown key 'strides'"},
      {"FloatOffset", one(R"({"dtype":"F32","shape":[2],"data_offsets":[0,8.5]})", d8), "data_offsets end must be a non-negative integer"},
      {"BadMetadata", SafetensorsFromHeader(R"({"__metadata__":{"k":1}})", ""), "\"__metadata__\" value for 'k' must be a string"},
  };
}

class SafetensorsCorruption : public ::testing::TestWithParam<Corruption> {};

TEST_P(SafetensorsCorruption, IsAClearError) {
  const Corruption& c = GetParam();
  auto h = ParseSafetensorsHeader(c.file, c.file.size());
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(h.status().message().find(c.message), std::string::npos) << h.status().message();
  // Through a real file too: the path is named, and ModelBytesFromHeader agrees.
  TempDir dir;
  const std::string path = (dir / "bad.safetensors");
  WriteFile(path, c.file);
  auto file = SafetensorsFile::Open(path);
  ASSERT_FALSE(file.ok());
  EXPECT_NE(file.status().message().find("'" + path + "'"), std::string::npos) << file.status().message();
  EXPECT_NE(file.status().message().find(c.message), std::string::npos) << file.status().message();
  EXPECT_FALSE(ModelBytesFromHeader(path).ok());
}

INSTANTIATE_TEST_SUITE_P(Table, SafetensorsCorruption, ::testing::ValuesIn(Corruptions()),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(Safetensors, MissingFileNamesThePath) {
  auto file = SafetensorsFile::Open("/nonexistent/model.safetensors");
  ASSERT_FALSE(file.ok());
  EXPECT_NE(file.status().message().find("/nonexistent/model.safetensors"), std::string::npos);
}

TEST(Safetensors, TruncatedDataSectionIsCaught) {
  // A valid file cut short: the last tensor now runs past the data section.
  std::string bytes = SafetensorsBytes({{"w", "F32", {4}, F32Bytes({1, 2, 3, 4})}});
  bytes.resize(bytes.size() - 3);
  auto h = ParseSafetensorsHeader(bytes, bytes.size());
  ASSERT_FALSE(h.ok());
  EXPECT_NE(h.status().message().find("past the end of the data section (13 bytes)"), std::string::npos)
      << h.status().message();
}

}  // namespace
}  // namespace dfw
