// The shuffle encoding of Values (dfw/record/value_codec.h): exact round trips, rows encoded and
// decoded without a Value around them, and damaged bytes refused.
#include "dfw/record/value_codec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace dfw {
namespace {

using ::testing::HasSubstr;

Row SampleRow() {
  List tags;
  tags.push_back(Value::String("a"));
  tags.push_back(Value());
  Row inner({{"x", Value::Int(-7)}});
  return Row({{"id", Value::Int(std::numeric_limits<int64_t>::min())},
              {"name", Value::String(std::string("caf\xc3\xa9\0z", 7))},
              {"score", Value::Float(std::nan(""))},
              {"ok", Value::Bool(true)},
              {"none", Value()},
              {"tags", Value::FromList(std::move(tags))},
              {"inner", Value::FromRow(std::move(inner))}});
}

TEST(ValueCodec, RowsEncodeAsTheirValueAndDecodeExactly) {
  const Row row = SampleRow();
  std::string direct;
  AppendEncodedRow(direct, row);
  EXPECT_EQ(direct, EncodeValue(Value::FromRow(row)));
  auto back = DecodeWholeRow(direct);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  std::string again;
  AppendEncodedRow(again, *back);
  EXPECT_EQ(again, direct);  // bit for bit: the NaN and the NUL inside the string too
  ASSERT_EQ(back->size(), row.size());
  EXPECT_EQ(back->fields()[1].value.as_string().size(), 7u);
  EXPECT_TRUE(std::isnan(back->fields()[2].value.as_float()));
  auto value = DecodeWholeValue(direct);
  ASSERT_TRUE(value.ok() && value->is_row());
}

// A row's chosen fields encode as the row of just those fields would (the Join's shuffle of an
// input named in `fields`), for flat rows and rows with a list (the general writer), keeping the
// row's order; a field past the end of the mask is left out.
TEST(ValueCodec, ChosenFieldsOfARowEncodeAsThatRow) {
  Row flat;
  flat.Append("a", Value::Int(1));
  flat.Append("b", Value::String("two"));
  flat.Append("c", Value::Float(3.5));
  flat.Append("d", Value());
  Row nested = SampleRow();
  nested.Append("list", Value::FromList(List{Value::Int(1), Value::String("x")}));
  for (const Row* row : {&flat, &nested}) {
    for (const std::vector<uint8_t>& keep : {std::vector<uint8_t>{1, 0, 1, 0}, std::vector<uint8_t>{0, 1},
                                             std::vector<uint8_t>(row->size(), 1), std::vector<uint8_t>{},
                                             std::vector<uint8_t>{0, 0, 0, 1, 1, 1, 1, 1}}) {
      Row want;
      for (std::size_t i = 0; i < row->size() && i < keep.size(); ++i) {
        if (keep[i] != 0) want.Append(row->fields()[i].name, row->fields()[i].value);
      }
      std::string got, expected;
      AppendEncodedRowFields(got, *row, keep);
      AppendEncodedRow(expected, want);
      EXPECT_EQ(got, expected) << "fields kept " << want.size() << " of " << row->size();
      auto back = DecodeWholeRow(got);
      ASSERT_TRUE(back.ok()) << back.status().ToString();
      EXPECT_EQ(back->size(), want.size());
    }
  }
}

// Kinds survive the shuffle: a Timestamp stays a Timestamp (not its seconds), bytes stay bytes.
TEST(ValueCodec, TimestampsAndBytesKeepTheirKind) {
  Row row;
  row.Append("t", Value::Timestamp(-9223372036854775000));
  row.Append("b", Value::Bytes(std::string("\0\x80z", 3)));
  row.Append("s", Value::String("z"));
  std::string bytes;
  AppendEncodedRow(bytes, row);
  auto back = DecodeWholeRow(bytes);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ASSERT_TRUE(back->fields()[0].value.is_timestamp());
  EXPECT_EQ(back->fields()[0].value.as_timestamp_us(), -9223372036854775000);
  ASSERT_TRUE(back->fields()[1].value.is_bytes());
  EXPECT_EQ(back->fields()[1].value.as_bytes(), std::string("\0\x80z", 3));
  EXPECT_TRUE(back->fields()[2].value.is_string());
  auto list = DecodeWholeValue(EncodeValue(Value::FromList({Value::Bytes("q"), Value::Timestamp(7)})));
  ASSERT_TRUE(list.ok());
  EXPECT_TRUE(list->as_list()[0].is_bytes() && list->as_list()[1].is_timestamp());
  std::string cut = EncodeValue(Value::Timestamp(7));
  cut.pop_back();
  EXPECT_FALSE(DecodeWholeValue(cut).ok());
}

// A reused row (a reader decoding many) ends up as a new one would: the earlier fields and the
// metadata are gone, whatever it held.
TEST(ValueCodec, DecodingIntoAUsedRowLeavesNothingOfItsPast) {
  std::string small;
  Row one;
  one.Append("k", Value::Int(1));
  AppendEncodedRow(small, one);
  Row reused = SampleRow();
  reused.Append("extra", Value::String("left over from before"));
  reused.set_timestamp_us(42);
  reused.set_window(0, 10);
  ASSERT_TRUE(DecodeWholeRowInto(small, reused).ok());
  EXPECT_EQ(reused.ToJson(), R"({"k":1})");
  EXPECT_EQ(reused.timestamp_us(), Row::kNoTimestamp);
  EXPECT_TRUE(reused.in_global_window());
  std::string full;
  AppendEncodedRow(full, SampleRow());
  ASSERT_TRUE(DecodeWholeRowInto(full, reused).ok());
  std::string again;
  AppendEncodedRow(again, reused);
  EXPECT_EQ(again, full);  // bit for bit (the sample's NaN is not == itself)
  EXPECT_EQ(DecodeWholeRowInto("", reused).code(), StatusCode::kDataLoss);
}

// A shuffle key's one-write form gives AppendEncodedValue's bytes for lists of ints and strings
// (long strings take a two-byte length), and leaves `out` alone for any other kind.
TEST(ValueCodec, FlatListsOfIntsAndStringsEncodeAsTheirList) {
  const std::vector<std::vector<Value>> lists = {
      {},
      {Value::Int(7)},
      {Value::Int(std::numeric_limits<int64_t>::min()), Value::String("")},
      {Value::String("user-1"), Value::Int(-1), Value::String(std::string(200, 'k'))},
      {Value::String(std::string("a\0b", 3)), Value::Int(std::numeric_limits<int64_t>::max())}};
  for (const std::vector<Value>& items : lists) {
    std::vector<const Value*> ptrs;
    for (const Value& v : items) ptrs.push_back(&v);
    std::string got = "prefix";
    ASSERT_TRUE(AppendEncodedFlatList(got, ptrs.data(), ptrs.size()));
    EXPECT_EQ(got, "prefix" + EncodeValue(Value::FromList(List(items.begin(), items.end()))));
  }
  for (const Value& other : {Value::Float(1.0), Value::Bool(true), Value(), Value::FromList({Value::Int(1)})}) {
    const Value one = Value::Int(1);
    const Value* ptrs[] = {&one, &other};
    std::string untouched = "prefix";
    EXPECT_FALSE(AppendEncodedFlatList(untouched, ptrs, 2));
    EXPECT_EQ(untouched, "prefix");
  }
}

TEST(ValueCodec, DamagedOrForeignBytesAreDataLossNeverARead) {
  std::string bytes;
  AppendEncodedRow(bytes, SampleRow());
  EXPECT_THAT(DecodeWholeRow(EncodeValue(Value::Int(3))).status().message(), HasSubstr("not a row"));
  EXPECT_THAT(DecodeWholeRow("").status().message(), HasSubstr("not a row"));
  EXPECT_THAT(DecodeWholeRow(bytes + "x").status().message(), HasSubstr("1 trailing bytes"));
  for (std::size_t cut = 1; cut < bytes.size(); ++cut) {
    auto r = DecodeWholeRow(std::string_view(bytes).substr(0, cut));
    EXPECT_FALSE(r.ok()) << cut;
    EXPECT_EQ(r.status().code(), StatusCode::kDataLoss) << cut;
  }
}

}  // namespace
}  // namespace dfw
