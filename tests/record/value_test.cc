#include "dfw/record/value.h"

#include <gtest/gtest.h>

namespace dfw {
namespace {

TEST(Value, IntAndFloatCompareNumerically) {
  EXPECT_EQ(Value::Int(1), Value::Float(1.0));
  EXPECT_NE(Value::Int(1), Value::Bool(true));
  EXPECT_NE(Value::String("1"), Value::Int(1));
}

TEST(Value, SerializesToCompactJson) {
  Row inner;
  inner.Append("k", Value::String("v\"\n"));
  Row r;
  r.Append("i", Value::Int(-3));
  r.Append("f", Value::Float(2.0));
  r.Append("l", Value::FromList({Value::Bool(true), Value()}));
  r.Append("r", Value::FromRow(inner));
  EXPECT_EQ(r.ToJson(), R"({"i":-3,"f":2.0,"l":[true,null],"r":{"k":"v\"\n"}})");
}

TEST(Value, ReplacesInvalidUtf8InJson) {
  std::string out;
  AppendJsonString(out, std::string("a\xff" "b\xc3\xa9", 5));
  EXPECT_EQ(out, "\"a\xEF\xBF\xBD" "b\xc3\xa9\"");
}

TEST(Row, SetReplacesEraseRemovesEqualityIgnoresOrder) {
  Row a;
  a.Set("x", Value::Int(1));
  a.Set("y", Value::Int(2));
  a.Set("x", Value::Int(3));
  EXPECT_EQ(a.size(), 2u);
  EXPECT_EQ(*a.Find("x"), Value::Int(3));
  Row b;
  b.Append("y", Value::Int(2));
  b.Append("x", Value::Int(3));
  EXPECT_EQ(a, b);
  EXPECT_TRUE(b.Erase("x"));
  EXPECT_FALSE(b.Erase("x"));
  EXPECT_NE(a, b);
}

}  // namespace
}  // namespace dfw
