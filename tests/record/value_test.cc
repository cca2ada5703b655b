#include "dfw/record/value.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <random>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace dfw {
namespace {

TEST(Value, IntAndFloatCompareNumerically) {
  EXPECT_EQ(Value::Int(1), Value::Float(1.0));
  EXPECT_NE(Value::Int(1), Value::Bool(true));
  EXPECT_NE(Value::String("1"), Value::Int(1));
}

// Beam's Timestamp.__eq__ reads a number as seconds; Python's b'x' == 'x' is False.
TEST(Value, TimestampsAndBytesCompareAsBeamsValuesDo) {
  EXPECT_EQ(Value::Timestamp(1'500'000), Value::Float(1.5));
  EXPECT_EQ(Value::Int(2), Value::Timestamp(2'000'000));
  EXPECT_NE(Value::Timestamp(2'000'001), Value::Int(2));
  EXPECT_EQ(Value::Timestamp(-5), Value::Timestamp(-5));
  EXPECT_NE(Value::Timestamp(0), Value::Bool(false));
  EXPECT_EQ(Value::Bytes("ab"), Value::Bytes("ab"));
  EXPECT_NE(Value::Bytes("ab"), Value::String("ab"));
  EXPECT_EQ(Value::Bytes("ab").TypeName(), "bytes");
  EXPECT_EQ(Value::Timestamp(0).TypeName(), "Timestamp");
  Value copy = Value::Bytes(std::string(1000, '\0'));
  Value moved = std::move(copy);
  EXPECT_EQ(moved.as_bytes().size(), 1000u);
}

// JSON has neither: a Timestamp is written as its seconds, bytes as base64 (protobuf's JSON form).
TEST(Value, TimestampsAndBytesInJson) {
  Row r;
  r.Append("t", Value::Timestamp(-9223372036854775000));
  r.Append("b", Value::Bytes(std::string("\x00\xff\x10hi", 5)));
  r.Append("e", Value::Bytes(""));
  r.Append("l", Value::FromList({Value::Bytes("foo"), Value::Timestamp(1'250'000)}));
  EXPECT_EQ(r.ToJson(), R"({"t":-9223372036854.775,"b":"AP8QaGk=","e":"","l":["Zm9v",1.25]})");
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

// Python's repr of a double, built independently of the writer: the shortest round-trip digits
// and exponent from std::to_chars (libstdc++'s Ryu), laid out as repr lays them out (fixed for
// decimal exponents in [-4, 16), else d.ddde+XX).
std::string PythonRepr(double d) {
  if (!std::isfinite(d)) return "null";
  if (d == 0) return std::signbit(d) ? "-0.0" : "0.0";
  char buf[64];
  char* end = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific).ptr;
  std::string sci(buf, end);  // -d.ddde[+-]XX
  const std::string sign = sci[0] == '-' ? "-" : "";
  if (!sign.empty()) sci.erase(0, 1);
  const std::size_t e = sci.find('e');
  const int exp = std::stoi(sci.substr(e + 1));
  std::string digits = sci.substr(0, e);
  digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
  if (exp < -4 || exp >= 16) {
    std::string mant = digits.substr(0, 1) + (digits.size() > 1 ? "." + digits.substr(1) : "");
    return sign + mant + "e" + (exp < 0 ? "-" : "+") + (std::abs(exp) < 10 ? "0" : "") + std::to_string(std::abs(exp));
  }
  const int point = exp + 1;  // digits before the decimal point
  std::string out;
  if (point <= 0) {
    out = "0." + std::string(static_cast<std::size_t>(-point), '0') + digits;
  } else if (static_cast<std::size_t>(point) >= digits.size()) {
    out = digits + std::string(static_cast<std::size_t>(point) - digits.size(), '0') + ".0";
  } else {
    out = digits.substr(0, static_cast<std::size_t>(point)) + "." + digits.substr(static_cast<std::size_t>(point));
  }
  return sign + out;
}

TEST(Value, JsonOfDoublesIsPythonsReprOnShortDecimalsAndEverythingElse) {
  std::mt19937_64 rng(11);
  std::vector<double> ds = {0.001, 0.0015, 999999999999.999, 1e12, 1e12 - 0.5, 0.1 + 0.2, 45.67 * 7, 2.5, 1e-3 * 3,
                            4503599627370495.5, 0.0009999, 123456.789, 0.3, 1.005, 8.675, 1e15 + 0.25};
  for (int i = 0; i < 400000; ++i) {
    const int kind = i % 4;
    double d;
    if (kind == 0) {  // a decimal with 0-4 digits after the point
      const double scale[] = {1, 10, 100, 1000, 10000};
      d = static_cast<double>(rng() % 2000000000000ULL) / scale[rng() % 5];
    } else if (kind == 1) {  // a product of two short decimals, as a map computes
      d = static_cast<double>(rng() % 10000) / 100 * static_cast<double>(rng() % 13);
    } else if (kind == 2) {  // any bit pattern
      uint64_t bits = rng();
      std::memcpy(&d, &bits, sizeof d);
    } else {  // around the fast path's bounds
      d = std::ldexp(static_cast<double>(rng() % 1000000) + 0.5, static_cast<int>(rng() % 60) - 30);
    }
    if (rng() % 2) d = -d;
    ds.push_back(d);
  }
  int mismatches = 0;
  for (double d : ds) {
    const std::string got = Value::Float(d).ToJson();
    const std::string want = PythonRepr(d);
    if (got != want && ++mismatches <= 5) ADD_FAILURE() << "double " << std::hexfloat << d << ": " << got << " vs " << want;
  }
  EXPECT_EQ(mismatches, 0);
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

// Short strings (keys and most values: up to 16 bytes) take a fast path; every length around its
// limit, with a byte needing care at every position or none, must give what the general string
// writer gives, as a value, as a key, and short strings written back to back (the fast path's
// 16-byte store lands on what follows and must leave it intact).
TEST(Value, ShortStringsInJsonMatchTheGeneralWriter) {
  std::mt19937 rng(17);
  const std::string specials = std::string("\"\\\x01\x1f\x7f\x80\xc3\xa9\xff", 10);
  for (std::size_t n = 0; n <= 20; ++n) {
    for (int round = 0; round < 200; ++round) {
      std::string s(n, 'a');
      for (char& c : s) c = static_cast<char>('a' + rng() % 26);
      if (round % 2 == 1 && n > 0) s[rng() % n] = specials[rng() % specials.size()];
      std::string want;
      AppendJsonString(want, s);
      EXPECT_EQ(Value::String(s).ToJson(), want) << "length " << n;
      Row r;
      r.Append(s, Value::String(s));
      r.Append("k", Value::String(s.substr(0, n / 2)));
      std::string half;
      AppendJsonString(half, s.substr(0, n / 2));
      EXPECT_EQ(r.ToJson(), "{" + want + ":" + want + ",\"k\":" + half + "}") << "length " << n;
    }
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

// Value is a tagged union: every construction, copy, move and assignment between every pair of
// kinds must leave both sides holding what they should (ASan in CI catches a leak or double free).
TEST(Value, CopiesMovesAndAssignsBetweenEveryKind) {
  Row row;
  row.Append("a", Value::String("a long string that does not fit in the small-string buffer"));
  auto samples = [&] {
    return std::vector<Value>{Value(),
                              Value::Bool(true),
                              Value::Int(-42),
                              Value::Float(2.5),
                              Value::String("short"),
                              Value::String(std::string(100, 'x')),
                              Value::FromList({Value::Int(1), Value::String(std::string(40, 'y'))}),
                              Value::FromRow(row)};
  };
  const std::vector<Value> want = samples();
  for (std::size_t i = 0; i < want.size(); ++i) {
    // Copy and move construction.
    Value copy(want[i]);
    EXPECT_EQ(copy, want[i]) << i;
    EXPECT_EQ(copy.kind(), want[i].kind());
    Value moved(std::move(copy));
    EXPECT_EQ(moved, want[i]) << i;
    for (std::size_t j = 0; j < want.size(); ++j) {
      // Copy- and move-assignment over a value of every other kind.
      Value target = samples()[j];
      target = want[i];
      EXPECT_EQ(target, want[i]) << i << " over " << j;
      Value source = samples()[i];
      Value target2 = samples()[j];
      target2 = std::move(source);
      EXPECT_EQ(target2, want[i]) << i << " moved over " << j;
    }
    // Self-assignment keeps the value.
    Value self = want[i];
    Value& alias = self;
    self = alias;
    EXPECT_EQ(self, want[i]) << i;
    self = std::move(alias);
    EXPECT_EQ(self.kind(), want[i].kind()) << i;
  }
  // Shared lists and rows are shared, not deep-copied.
  Value list = want[6];
  EXPECT_EQ(&list.as_list(), &want[6].as_list());
  // In-place assignment from any kind, including a string over a string (reuses the buffer).
  for (std::size_t j = 0; j < want.size(); ++j) {
    Value v = samples()[j];
    v.AssignString("now a string");
    EXPECT_EQ(v, Value::String("now a string")) << j;
    v.AssignString(std::string(64, 'z'));
    EXPECT_EQ(v.as_string(), std::string(64, 'z'));
    v.AssignInt(7);
    EXPECT_EQ(v, Value::Int(7));
    v.AssignFloat(-0.5);
    EXPECT_EQ(v.as_float(), -0.5);
    v.AssignBool(false);
    EXPECT_TRUE(v.is_bool());
    EXPECT_FALSE(v.as_bool());
  }
  // A row field filled in place.
  Row filled;
  filled.AppendNull("s").AssignString("v");
  filled.AppendNull("n");
  EXPECT_EQ(filled.ToJson(), R"({"s":"v","n":null})");
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
