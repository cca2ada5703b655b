// Python-subset semantics, one table row per construct: expression -> result as compact JSON.
#include <thread>

#include <gtest/gtest.h>

#include "record/expression_test_util.h"

namespace dfw {
namespace {

struct Case {
  const char* expr;
  const char* want;  // Value::ToJson() of the result
};

void RunTable(const std::vector<Case>& cases) {
  Row row = testing::SampleRow();
  for (const Case& c : cases) EXPECT_EQ(testing::Eval(c.expr, row), c.want) << "expression: " << c.expr;
}

TEST(PythonExpression, LiteralsAndNames) {
  RunTable({{"42", "42"}, {"0x1F", "31"}, {"0o17", "15"}, {"0b101", "5"}, {"1_000", "1000"}, {"2.5", "2.5"},
            {"1e3", "1000.0"}, {"1.5E-3", "0.0015"}, {".5", "0.5"}, {"5.", "5.0"}, {"'x'", "\"x\""},
            {"\"d\"", "\"d\""}, {"'''tri'''", "\"tri\""}, {"\"\"\"a\"b\"\"\"", "\"a\\\"b\""},
            {R"('a\tb\n')", R"("a\tb\n")"}, {R"('\x41\u00e9')", "\"A\xc3\xa9\""}, {R"(r'\d+')", R"("\\d+")"},
            {"'ab' 'cd'", "\"abcd\""}, {"True", "true"}, {"False", "false"}, {"None", "null"}, {"a", "3"},
            {"t", "\"abc\""}, {"n", "null"}, {"[1, 'a', None]", "[1,\"a\",null]"}, {"(1, 2)", "[1,2]"},
            {"()", "[]"}, {"[]", "[]"}, {"[a, b]", "[3,4.5]"}, {"1, 2", "[1,2]"}, {"a  # trailing comment", "3"}, {"(a +\n 1)", "4"}});
}

// The subset gives CPython's answer for Beam's Timestamp and bytes, or an error (and the stage hands
// the row to CPython): never a different answer.
TEST(PythonExpression, TimestampsAndBytesPrintAsPythonOrHandOver) {
  Row row;
  row.Append("ts", Value::Timestamp(-9223372036854775000));
  row.Append("whole", Value::Timestamp(42'000'000));
  row.Append("b", Value::Bytes(std::string("a'\x00\xff\n", 5)));
  row.Append("q", Value::Bytes("it's \"x\""));
  EXPECT_EQ(testing::Eval("str(ts)", row), R"x("Timestamp(-9223372036854.775000)")x");
  EXPECT_EQ(testing::Eval("str(whole)", row), R"x("Timestamp(42)")x");
  EXPECT_EQ(testing::Eval("str(b)", row), R"("b\"a'\\x00\\xff\\n\"")");  // b"a'\x00\xff\n"
  EXPECT_EQ(testing::Eval("str(q)", row), R"("b'it\\'s \"x\"'")");       // b'it\'s "x"'
  EXPECT_EQ(testing::Eval("b == 'a'", row), "false");
  EXPECT_EQ(testing::Eval("whole == 42", row), "true");
  for (const char* handed_over : {"ts + 1", "b + 'x'", "b.decode()", "ts < 3", "len(b)", "int(whole)", "b[0]"}) {
    const std::string got = testing::Eval(handed_over, row);
    EXPECT_TRUE(got.rfind("error: ", 0) == 0 || got.rfind("compile error: ", 0) == 0) << handed_over << " -> " << got;
  }
}

TEST(PythonExpression, Arithmetic) {
  RunTable({{"a * 2 + b", "10.5"}, {"1 + 2 * 3", "7"}, {"(1 + 2) * 3", "9"}, {"2 ** 10", "1024"},
            {"2 ** -1", "0.5"}, {"-2 ** 2", "-4"}, {"2 ** 3 ** 2", "512"}, {"7 / 2", "3.5"}, {"4 / 2", "2.0"},
            {"-7 // 2", "-4"}, {"7 // -2", "-4"}, {"-7 % 2", "1"}, {"7 % -2", "-1"}, {"-7.5 // 2", "-4.0"},
            {"-7.5 % 2", "0.5"}, {"7.5 % -2", "-0.5"}, {"a - b", "-1.5"}, {"-a", "-3"}, {"+a", "3"},
            {"--a", "3"}, {"True + True", "2"}, {"flag * 3", "3"}, {"~5", "-6"}, {"6 & 3", "2"}, {"6 | 3", "7"},
            {"6 ^ 3", "5"}, {"1 << 4", "16"}, {"-16 >> 2", "-4"}, {"neg // 2", "-4"}, {"neg % 3", "2"},
            {"big - 1", "9223372036854775806"}, {"1 - 2 - 3", "-4"}, {"2 * 3 % 4", "2"}});
}

TEST(PythonExpression, StringsAndListsOperators) {
  RunTable({{"t + 'd'", "\"abcd\""}, {"t * 2", "\"abcabc\""}, {"2 * t", "\"abcabc\""}, {"t * -1", "\"\""},
            {"xs + [4]", "[1,2,3,4]"}, {"[0] * 3", "[0,0,0]"}, {"[] * 1000000000000", "[]"}, {"empty * 1000000000000", "\"\""}, {"'b' in t", "true"}, {"'z' not in t", "true"},
            {"2 in xs", "true"}, {"2.0 in xs", "true"}, {"'a' in nested", "false"}, {"'x' in nested", "true"},
            {"'' in t", "true"}});
}

TEST(PythonExpression, Comparisons) {
  RunTable({{"1 < 2 < 3", "true"}, {"1 < 3 < 2", "false"}, {"3 > 2 >= 2", "true"}, {"a == 3.0", "true"},
            {"a != 3", "false"}, {"'abc' < 'abd'", "true"}, {"[1, 2] < [1, 3]", "true"}, {"[1, 2] < [1, 2, 0]", "true"},
            {"1 == '1'", "false"}, {"None == None", "true"}, {"n is None", "true"}, {"a is not None", "true"},
            {"True == 1", "true"}, {"xs == [1, 2, 3]", "true"}, {"big > 9.2e18", "true"},
            {"big == 9223372036854775808.0", "false"}, {"1 < 2 == 2 < 3", "true"},
            {"'a' not in t not in ['x']", "false"}, {"'q' not in t not in ['x']", "true"}, {"0.1 + 0.2 == 0.3", "false"}});
}

TEST(PythonExpression, BooleanLogic) {
  RunTable({{"0 or 'x'", "\"x\""}, {"'' or 0", "0"}, {"3 and 'y'", "\"y\""}, {"0 and missing_field", "0"},
            {"1 or missing_field", "1"}, {"not a", "false"}, {"not empty", "true"}, {"not not xs", "true"},
            {"a > 1 and b < 5", "true"}, {"a > 5 or b < 5 and not flag", "false"}, {"n or [] or 'last'", "\"last\""}});
}

TEST(PythonExpression, ConditionalAndIndexing) {
  RunTable({{"'big' if a > 2 else 'small'", "\"big\""}, {"'big' if a > 5 else 'small'", "\"small\""},
            {"1 if 0 else 2 if 0 else 3", "3"}, {"t[0]", "\"a\""}, {"t[-1]", "\"c\""}, {"xs[-3]", "1"},
            {"t[::-1]", "\"cba\""}, {"t[1:]", "\"bc\""}, {"t[:-1]", "\"ab\""}, {"t[::2]", "\"ac\""},
            {"xs[1:]", "[2,3]"}, {"xs[::-1]", "[3,2,1]"}, {"xs[-2::-1]", "[2,1]"}, {"xs[10:]", "[]"},
            {"xs[-100:100]", "[1,2,3]"}, {"'abcdef'[4:1:-1]", "\"edc\""}, {"xs[True]", "2"},
            {"nested.x", "1"}, {"nested.inner.y", "\"deep\""}, {"nested['inner']['y']", "\"deep\""},
            {"nested['x'] + 1", "2"}, {"u[1]", "\"\xc3\xa9\""}, {"u[-5:]", "\"w\xc3\xb6rld\""}, {"len(u)", "11"},
            {"u[::-1][0]", "\"d\""}, {"words[0]", "\"b\""},
            // Steps near int64's end: the index past the last element must not overflow.
            {"t[1::4611686018427387904]", "\"b\""}, {"xs[::9223372036854775807]", "[1]"},
            {"u[2::4611686018427387904]", "\"l\""}, {"t[-1::-9223372036854775807]", "\"c\""},
            {"xs[2::-9223372036854775807]", "[3]"}});
}

TEST(PythonExpression, Builtins) {
  RunTable({{"len(t)", "3"}, {"len(xs)", "3"}, {"len(nested)", "2"}, {"str(a)", "\"3\""}, {"str(1.0)", "\"1.0\""},
            {"str(1e16)", "\"1e+16\""}, {"str(1e15)", "\"1000000000000000.0\""}, {"str(0.0001)", "\"0.0001\""},
            {"str(0.00001)", "\"1e-05\""}, {"str(None)", "\"None\""}, {"str(flag)", "\"True\""},
            {"str([1, 'a'])", "\"[1, 'a']\""}, {"str(nested)", "\"Row(x=1, inner=Row(y='deep'))\""},
            {"int('42')", "42"}, {"int(' -7 ')", "-7"}, {"int(3.9)", "3"}, {"int(-3.9)", "-3"}, {"int(flag)", "1"},
            {"float('2.5')", "2.5"}, {"float(' 1e2 ')", "100.0"}, {"float(a)", "3.0"}, {"bool('')", "false"},
            {"bool(xs)", "true"}, {"round(2.5)", "2"}, {"round(3.5)", "4"}, {"round(-2.5)", "-2"},
            {"round(2.675, 2)", "2.67"}, {"round(1.25, 1)", "1.2"}, {"round(1234, -2)", "1200"},
            {"round(1250, -2)", "1200"}, {"round(1350, -2)", "1400"}, {"round(7)", "7"}, {"round(b)", "4"},
            {"round(1.5, None)", "2"}, {"round(number=2.5, ndigits=0)", "2.0"}, {"abs(neg)", "7"},
            {"abs(-2.5)", "2.5"}, {"min(3, 1, 2)", "1"}, {"max(xs)", "3"}, {"max('abc')", "\"c\""},
            {"min([2.5, 1, 3])", "1"}, {"max(1, 1.0)", "1"}, {"sum(xs)", "6"}, {"sum(xs, 10)", "16"},
            {"sum([0.5, 1])", "1.5"}, {"sum([[1], [2]], [])", "[1,2]"}, {"any([0, '', 3])", "true"},
            {"all([1, 'x'])", "true"}, {"all([])", "true"}, {"any([])", "false"}, {"sorted(words)", "[\"a\",\"b\",\"c\"]"},
            {"sorted(xs, reverse=True)", "[3,2,1]"}, {"sorted([2, 1.5, True])", "[true,1.5,2]"}, {"list(t)", "[\"a\",\"b\",\"c\"]"},
            {"list()", "[]"}, {"str()", "\"\""}});
}

TEST(PythonExpression, StringMethods) {
  RunTable({{"s.strip().lower()", "\"hello world\""}, {"s.upper().strip()", "\"HELLO WORLD\""},
            {"s.lstrip()", "\"Hello World  \""}, {"s.rstrip()", "\"  Hello World\""}, {"'xxhixx'.strip('x')", "\"hi\""},
            {"s.split()", "[\"Hello\",\"World\"]"}, {"csv.split(',')", "[\"x\",\"y\",\"\",\"z\"]"},
            {"csv.split(',', 1)", "[\"x\",\"y,,z\"]"}, {"csv.split(sep=',', maxsplit=2)", "[\"x\",\"y\",\",z\"]"},
            {"' a  b c '.split(None, 1)", "[\"a\",\"b c \"]"}, {"''.split()", "[]"}, {"''.split(',')", "[\"\"]"},
            {"t.startswith('ab')", "true"}, {"t.endswith(('x', 'bc'))", "true"}, {"t.replace('b', 'BB')", "\"aBBc\""},
            {"'aaa'.replace('a', 'b', 2)", "\"bba\""}, {"'ab'.replace('', '-')", "\"-a-b-\""}, {"'-'.join(words)", "\"b-a-c\""},
            {"', '.join(t)", "\"a, b, c\""}, {"t.find('c')", "2"}, {"t.find('z')", "-1"}, {"u.find('w')", "6"},
            {"'banana'.count('an')", "2"}, {"xs.count(2)", "1"}, {"\"they're bill's\".title()", "\"They'Re Bill'S\""},
            {"'123'.isdigit()", "true"}, {"'12a'.isdigit()", "false"}, {"''.isdigit()", "false"}, {"'abc'.isalpha()", "true"},
            {"'a1'.isalnum()", "true"}, {"' \\t'.isspace()", "true"}, {"u.upper()", "\"H\xc3\x89LLO W\xc3\x96RLD\""},
            {"nested.get('x')", "1"}, {"nested.get('zz', 5)", "5"}, {"len(s.split())", "2"}, {"label == 'spam'", "true"}});
}

TEST(PythonExpression, ReferencedFieldsAreFreeNamesInFirstUseOrder) {
  auto e = CompileExpression("len(t) + a if flag else b + a + nested.x", ExprLanguage::kPython);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ((*e)->referenced_fields(), (std::vector<std::string>{"t", "a", "flag", "b", "nested"}));
  EXPECT_EQ((*e)->source(), "len(t) + a if flag else b + a + nested.x");
}

TEST(PythonExpression, IsTruthyFollowsPython) {
  EXPECT_FALSE(IsTruthy(Value()));
  EXPECT_FALSE(IsTruthy(Value::Int(0)));
  EXPECT_FALSE(IsTruthy(Value::Float(0.0)));
  EXPECT_FALSE(IsTruthy(Value::String("")));
  EXPECT_FALSE(IsTruthy(Value::FromList({})));
  EXPECT_FALSE(IsTruthy(Value::FromRow(Row())));
  EXPECT_TRUE(IsTruthy(Value::Int(-1)));
  EXPECT_TRUE(IsTruthy(Value::String("0")));
  EXPECT_TRUE(IsTruthy(Value::FromList({Value()})));
}

TEST(PythonExpression, OneCompiledExpressionServesManyRows) {
  auto e = CompileExpression("x * 2 if x % 2 else x // 2", ExprLanguage::kPython);
  ASSERT_TRUE(e.ok());
  for (int64_t i = -5; i <= 5; ++i) {
    Row row;
    row.Append("x", Value::Int(i));
    auto v = (*e)->Evaluate(row);
    ASSERT_TRUE(v.ok());
    int64_t floor_half = i >= 0 ? i / 2 : -((-i + 1) / 2);
    EXPECT_EQ(v->as_int(), (i % 2 != 0) ? i * 2 : floor_half) << i;
  }
}

TEST(PythonExpression, OneCompiledExpressionIsSharedByConcurrentThreads) {
  auto e = CompileExpression("str(x).strip() + '-' + ','.join(sorted(tags)) if x % 3 else x // 3", ExprLanguage::kPython);
  ASSERT_TRUE(e.ok());
  const CompiledExpression& expr = **e;
  std::vector<std::string> results[4];
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&expr, &out = results[t]] {
      for (int64_t i = 0; i < 500; ++i) {
        Row row;
        row.Append("x", Value::Int(i));
        row.Append("tags", Value::FromList({Value::String("b"), Value::String("a")}));
        auto v = expr.Evaluate(row);
        out.push_back(v.ok() ? v->ToJson() : v.status().message());
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int t = 0; t < 4; ++t) {
    ASSERT_EQ(results[t].size(), 500u);
    EXPECT_EQ(results[t], results[0]);
  }
  EXPECT_EQ(results[0][4], "\"4-a,b\"");
  EXPECT_EQ(results[0][9], "3");
}

}  // namespace
}  // namespace dfw
