// Compile errors (syntax, unsupported constructs) and run-time errors with Python's wording.
#include <string>

#include <gtest/gtest.h>

#include "record/expression_test_util.h"

namespace dfw {
namespace {

struct ErrorCase {
  const char* expr;
  const char* want;  // substring of the message
};

TEST(PythonExpressionErrors, UnsupportedConstructsAreCompileErrorsNamingTheConstructAndColumn) {
  const ErrorCase cases[] = {
      {"lambda x: x", "column 1: lambda is not supported"},
      {"[x for x in xs]", "column 4: comprehensions are not supported"},
      {"(x for x in xs)", "comprehensions are not supported"},
      {"f'{a}'", "column 1: f-strings are not supported"},
      {"b'x'", "bytes literals are not supported"},
      {"(y := 3)", "walrus"},
      {"a = 1", "column 3: assignment is not supported"},
      {"a += 1", "augmented assignment '+=' is not supported"},
      {"import os", "column 1: statements are not supported"},
      {"def f(): pass", "statements are not supported"},
      {"foo(a)", "column 1: call to unknown function 'foo()'"},
      {"lenn(t)", "(did you mean 'len'?)"},
      {"t.lowr()", "column 3: unknown method 'lowr()' (did you mean 'lower'?)"},
      {"t.format(1)", "unknown method 'format()'"},
      {"max(xs, key=len)", "max() got an unexpected keyword argument 'key'"},
      {"len(*xs)", "*args unpacking is not supported"},
      {"str(**nested)", "**kwargs unpacking is not supported"},
      {"len()", "len() takes 1 argument (0 given)"},
      {"t.replace('a')", "replace() takes 2 to 3 arguments (1 given)"},
      {"round(1, 2, 3)", "round() takes 1 to 2 arguments (3 given)"},
      {"{'a': 1}", "dict and set displays are not supported"},
      {"xs[0](1)", "calling the result of an expression is not supported"},
      {"a; b", "multiple statements are not supported"},
      {"a @ b", "'@' is not supported"},
      {"1j", "complex number literal '1j' is not supported"},
      {"a if b", "conditional expression needs 'else'"},
      {"(a", "expected ')' before the end of expression"},
      {"a +", "unexpected end of expression"},
      {"", "empty expression"},
      {"'abc", "column 1: unterminated string literal"},
      {"'a\nb'", "unterminated string literal"},
      {"a $ b", "column 3: unexpected character '$'"},
      {"012", "leading zeros in decimal integer literals are not permitted"},
      {"99999999999999999999", "does not fit in 64 bits"},
      {"'\\N{DASH}'", "\\N{...} escapes are not supported"},
      {"'\\ud800'", "surrogate code points are not supported"},
      {"a b", "column 3: unexpected name 'b'"},
      {"t.", "expected an attribute name after '.'"},
      {"xs[]", "column 4: unexpected ']'"},
      {"len(t, x=1)", "len() got an unexpected keyword argument 'x'"},
      {"round(ndigits=1, number=2.5, ndigits=2)", "multiple values for argument 'ndigits'"},
      {"round(ndigits=1, 2.5)", "positional argument follows keyword argument"},
      {"...", "Ellipsis"},
  };
  for (const ErrorCase& c : cases) {
    auto e = CompileExpression(c.expr, ExprLanguage::kPython);
    ASSERT_FALSE(e.ok()) << "expression compiled but should not: " << c.expr;
    EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument) << c.expr;
    EXPECT_NE(e.status().message().find(c.want), std::string::npos)
        << "expression: " << c.expr << "\nmessage: " << e.status().message() << "\nwanted: " << c.want;
  }
}

TEST(PythonExpressionErrors, RunTimeErrorsUsePythonWording) {
  const ErrorCase cases[] = {
      {"a + t", "TypeError: unsupported operand type(s) for +: 'int' and 'str'"},
      {"t + a", "TypeError: can only concatenate str (not \"int\") to str"},
      {"xs + 1", "can only concatenate list (not \"int\") to list"},
      {"n + 1", "unsupported operand type(s) for +: 'NoneType' and 'int'"},
      {"t * 1.5", "can't multiply sequence by non-int of type 'float'"},
      {"-t", "TypeError: bad operand type for unary -: 'str'"},
      {"1 / 0", "ZeroDivisionError: division by zero"},
      {"1.0 / 0", "ZeroDivisionError: float division by zero"},
      {"1 // zero", "ZeroDivisionError: integer division or modulo by zero"},
      {"1 % 0", "ZeroDivisionError: integer modulo by zero"},
      {"1.5 // 0.0", "float floor division by zero"},
      {"0 ** -1", "0.0 cannot be raised to a negative power"},
      {"(-8) ** 0.5", "complex results are not supported"},
      {"10.0 ** 400", "OverflowError"},
      {"big + 1", "OverflowError: integer result of 9223372036854775807 + 1 does not fit in 64 bits"},
      {"big * 2", "OverflowError"},
      {"-small", "OverflowError"},
      {"small // -1", "OverflowError"},
      {"2 ** 64", "OverflowError"},
      {"1 << 64", "OverflowError"},
      {"1 << -1", "ValueError: negative shift count"},
      {"abs(small)", "OverflowError"},
      {"a < t", "TypeError: '<' not supported between instances of 'int' and 'str'"},
      {"n >= 1", "'>=' not supported between instances of 'NoneType' and 'int'"},
      {"a in t", "TypeError: 'in <string>' requires string as left operand, not int"},
      {"1 in a", "TypeError: argument of type 'int' is not iterable"},
      {"missing", "NameError: name 'missing' is not defined; fields of this row: a, b, s, t"},
      {"labl == 'spam'", "NameError: name 'labl' is not defined (did you mean 'label'?)"},
      {"xs[3]", "IndexError: list index out of range"},
      {"t[-4]", "IndexError: string index out of range"},
      {"xs['a']", "TypeError: list indices must be integers or slices, not str"},
      {"t['a']", "TypeError: string indices must be integers, not 'str'"},
      {"a[0]", "TypeError: 'int' object is not subscriptable"},
      {"nested['zz']", "KeyError: 'zz'"},
      {"xs[::0]", "ValueError: slice step cannot be zero"},
      {"xs[1.5:]", "slice indices must be integers or None"},
      {"nested.zz", "AttributeError: row has no field 'zz'; fields: x, inner"},
      {"t.zz", "AttributeError: 'str' object has no attribute 'zz'"},
      {"a.lower()", "AttributeError: 'int' object has no attribute 'lower'"},
      {"len(a)", "TypeError: object of type 'int' has no len()"},
      {"int('4.5')", "ValueError: invalid literal for int() with base 10: '4.5'"},
      {"int('1e999999999999999999999')", "invalid literal for int()"},
      {"int('99999999999999999999')", "does not fit in 64 bits"},
      {"int(float('nan'))", "ValueError: cannot convert float NaN to integer"},
      {"int(float('inf'))", "OverflowError: cannot convert float infinity to integer"},
      {"int(n)", "int() argument must be a string or a real number, not 'NoneType'"},
      {"float('abc')", "ValueError: could not convert string to float: 'abc'"},
      {"float('0x10')", "could not convert string to float"},
      {"round(1e300)", "OverflowError"},
      {"round(t)", "type str doesn't define __round__ method"},
      {"round(2.5, 'x')", "'str' object cannot be interpreted as an integer"},
      {"max([])", "ValueError: max() iterable argument is empty"},
      {"min(1, 'a')", "'<' not supported between instances of 'str' and 'int'"},
      {"sum(words)", "unsupported operand type(s) for +: 'int' and 'str'"},
      {"sum(xs, '')", "sum() can't sum strings"},
      {"sorted([1, 'a', 2])", "not supported between instances of"},
      {"sorted(a)", "TypeError: 'int' object is not iterable"},
      {"','.join(xs)", "TypeError: sequence item 0: expected str instance, int found"},
      {"t.split('')", "ValueError: empty separator"},
      {"t.split(1)", "must be str or None, not int"},
      {"t.startswith(1)", "startswith first arg must be str or a tuple of str, not int"},
      {"t.replace(1, 'x')", "replace() argument 1 must be str, not int"},
      {"t.strip(1)", "strip arg must be None or str"},
      {"'%d' % a", "%-formatting of strings is not supported here"},
      {"'x' * 100000000", "MemoryError"},
      {"[0] * 100000000", "MemoryError"},
  };
  Row row = testing::SampleRow();
  for (const ErrorCase& c : cases) {
    auto e = CompileExpression(c.expr, ExprLanguage::kPython);
    ASSERT_TRUE(e.ok()) << c.expr << ": " << e.status().ToString();
    auto v = (*e)->Evaluate(row);
    ASSERT_FALSE(v.ok()) << "expression evaluated but should fail: " << c.expr << " = " << v->ToJson();
    EXPECT_NE(v.status().message().find(c.want), std::string::npos)
        << "expression: " << c.expr << "\nmessage: " << v.status().message() << "\nwanted: " << c.want;
  }
}

TEST(PythonExpressionErrors, DeepNestingIsRefusedNotAStackOverflow) {
  for (const char* open : {"(", "[", "-", "not ", "f(", "a.b["}) {
    std::string deep;
    for (int i = 0; i < 20000; ++i) deep += open;
    deep += "1";
    auto e = CompileExpression(deep, ExprLanguage::kPython);
    ASSERT_FALSE(e.ok()) << open;
  }
  std::string sum = "1";
  for (int i = 0; i < 20000; ++i) sum += " + 1";  // a flat chain is a deep tree
  auto e = CompileExpression(sum, ExprLanguage::kPython);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("nests deeper than 200 levels"), std::string::npos) << e.status().message();
  std::string ok = "1";
  for (int i = 0; i < 150; ++i) ok += " + 1";
  auto fine = CompileExpression(ok, ExprLanguage::kPython);
  ASSERT_TRUE(fine.ok()) << fine.status().ToString();
  EXPECT_EQ(testing::Eval(ok, Row()), "151");
  std::string parens = std::string(150, '(') + "[-1]" + std::string(150, ')');
  EXPECT_EQ(testing::Eval(parens, Row()), "[-1]");
}

TEST(PythonExpressionErrors, EachRowGetsItsOwnAllocationBudget) {
  // 40 MiB per row fits the 64 MiB budget; a shared budget would fail on the second row.
  auto e = CompileExpression("len('x' * 40000000)", ExprLanguage::kPython);
  ASSERT_TRUE(e.ok());
  for (int i = 0; i < 3; ++i) {
    auto v = (*e)->Evaluate(Row());
    ASSERT_TRUE(v.ok()) << v.status().ToString();
    EXPECT_EQ(v->as_int(), 40000000);
  }
}

}  // namespace
}  // namespace dfw
