#include "dfw/record/value.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

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

TEST(Value, JsonOfEveryScalarAndEscapeTable) {
  struct Case {
    Value value;
    std::string json;
  };
  const Case cases[] = {
      {Value(), "null"},
      {Value::Bool(false), "false"},
      {Value::Int(0), "0"},
      {Value::Int(INT64_MIN), "-9223372036854775808"},
      {Value::Int(INT64_MAX), "9223372036854775807"},
      {Value::Float(0.1), "0.1"},
      {Value::Float(-0.0), "-0.0"},
      {Value::Float(1e300), "1e+300"},
      {Value::Float(-1.7976931348623157e308), "-1.7976931348623157e+308"},
      {Value::Float(5e-324), "5e-324"},
      {Value::Float(1e17), "1e+17"},
      // Python's repr: fixed notation for exponents in [-4, 16), scientific outside.
      {Value::Float(100000.0), "100000.0"},
      {Value::Float(1e15), "1000000000000000.0"},
      {Value::Float(1e16), "1e+16"},
      {Value::Float(123456789012345678.0), "1.2345678901234568e+17"},
      {Value::Float(0.0001), "0.0001"},
      {Value::Float(0.00001), "1e-05"},
      {Value::Float(12.34 * 3), "37.019999999999996"},
      {Value::Float(std::numeric_limits<double>::infinity()), "null"},
      {Value::Float(std::nan("")), "null"},
      {Value::String(""), R"("")"},
      {Value::String(std::string("\x01\b\f\t\r\n\"\\/\x1f\x7f", 11)), R"("\u0001\b\f\t\r\n\"\\/\u001f")"},
      {Value::String("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"), "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\""},
      {Value::String("\xc0\xaf|\xed\xa0\x80|\xf4\x90\x80\x80"), "\"\xEF\xBF\xBD\xEF\xBF\xBD|\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD|"
                                                                 "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\""},
      {Value::FromList({}), "[]"},
      {Value::FromRow(Row()), "{}"},
      {Value::FromList({Value::FromList({Value::Int(1)}), Value::FromRow(Row())}), "[[1],{}]"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(c.value.ToJson(), c.json) << "kind " << c.value.TypeName();
    std::string appended = "prefix ";
    c.value.AppendJson(appended);
    EXPECT_EQ(appended, "prefix " + c.json) << "appending keeps what the string held";
  }
}

TEST(Value, JsonOfWorstCaseEscapingIsComplete) {
  // Every byte a control character: each becomes six bytes, the writer's worst case.
  std::string controls(1000, '\x02');
  std::string want = "\"";
  for (int i = 0; i < 1000; ++i) want += "\\u0002";
  want += "\"";
  Row r;
  r.Append(controls, Value::String(controls));
  EXPECT_EQ(r.ToJson(), "{" + want + ":" + want + "}");
}

// A list shared by several fields (RunInference's example aliases the input field) is written once
// and copied: the JSON must be exactly that of unshared equal lists, at every depth.
TEST(Value, SharedListsSerializeLikeCopies) {
  auto make_list = [](int n, double base) {
    List items;
    for (int i = 0; i < n; ++i) items.push_back(Value::Float(base + i * 0.125));
    items.push_back(Value::String("q\"x"));
    return Value::FromList(std::move(items));
  };
  for (int n : {1, 7, 8, 64}) {
    const Value shared = make_list(n, -3.5);
    const Value other = make_list(n, 9.0);
    Row inner;
    inner.Append("example", shared);
    inner.Append("other", other);
    inner.Append("again", shared);
    Row row;
    row.Append("x", shared);
    row.Append("nested", Value::FromRow(inner));
    row.Append("list_of_lists", Value::FromList(List{shared, other, shared}));
    Row copies;  // the same values, built separately (no shared storage)
    Row inner_copies;
    inner_copies.Append("example", make_list(n, -3.5));
    inner_copies.Append("other", make_list(n, 9.0));
    inner_copies.Append("again", make_list(n, -3.5));
    copies.Append("x", make_list(n, -3.5));
    copies.Append("nested", Value::FromRow(inner_copies));
    copies.Append("list_of_lists", Value::FromList(List{make_list(n, -3.5), make_list(n, 9.0), make_list(n, -3.5)}));
    EXPECT_EQ(row.ToJson(), copies.ToJson()) << n;
    std::string appended = "prefix:";
    row.AppendJson(appended);
    EXPECT_EQ(appended, "prefix:" + copies.ToJson()) << n;
    EXPECT_EQ(Value::FromRow(row).ToJson(), copies.ToJson()) << n;
  }
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
