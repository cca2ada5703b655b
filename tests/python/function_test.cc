// Callables run by the embedded CPython: Beam's rules for choosing the function, rows as Beam hands
// them to Python, results back as dfworker values, errors as Python's.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "dfw/python/python.h"

namespace dfw::python_function_test {

using python::Function;

Row SampleRow() {
  Row r;
  r.AppendNull("name") = Value::String("Ada Lovelace");
  r.AppendNull("n") = Value::Int(7);
  r.AppendNull("x") = Value::Float(2.5);
  r.AppendNull("tags") = Value::FromList({Value::String("a"), Value::String("b")});
  Row inner;
  inner.AppendNull("k") = Value::Int(1);
  r.AppendNull("nested") = Value::FromRow(std::move(inner));
  return r;
}

std::string Eval(std::unique_ptr<Function> fn, const Row& row) {
  Result<Value> v = fn->CallRow(row);
  return v.ok() ? v->ToJson() : "error: " + v.status().message();
}

std::string Callable(const std::string& source, const Row& row = SampleRow()) {
  auto fn = Function::FromCallable(source);
  if (!fn.ok()) return "compile: " + fn.status().message();
  return Eval(std::move(fn).value(), row);
}

TEST(PythonFunction, LambdaSeesTheRowAsANamedTuple) {
  EXPECT_EQ(Callable("lambda row: row.n * 2"), "14");
  EXPECT_EQ(Callable("lambda row: row[1] + len(row)"), "12");
  EXPECT_EQ(Callable("lambda row: sorted(row._asdict())"), R"(["n","name","nested","tags","x"])");
  EXPECT_EQ(Callable("lambda row: row.nested.k + 1"), "2");
  EXPECT_EQ(Callable("lambda row: row.nested['k'] + row['n']"), "8");  // as a dict of Beam's would be
  EXPECT_EQ(Callable("lambda row: row['nope']"), "error: KeyError: 'nope' (<callable> line 1)");
  EXPECT_EQ(Callable("lambda row: row.tags + ['c']"), R"(["a","b","c"])");
}

TEST(PythonFunction, ScriptsPickTheLastTopLevelDefOrLine) {
  EXPECT_EQ(Callable("import re\n"
                     "def helper(s):\n"
                     "  return s.upper()\n"
                     "def last(row):\n"
                     "  return helper(re.sub(r'\\s+', '_', row.name))\n"),
            R"("ADA_LOVELACE")");
  EXPECT_EQ(Callable("import math\n# a comment\nlambda row: math.floor(row.x)"), "2");
  EXPECT_EQ(Callable("    def indented(row):\n        return row.n\n"), "7");
  EXPECT_EQ(Callable("class Upper:\n  def __init__(self, row):\n    self.v = row.name\n"),
            "error: TypeError: a result of type 'Upper' is not a dfworker value (None, bool, int, float, str, bytes, "
            "Timestamp, list, tuple, dict, a named tuple or beam.Row)");
}

TEST(PythonFunction, ExtensionModulesOfTheEnvironmentImport) {
  // _decimal and _ctypes are C extensions in lib-dynload: they need libpython's symbols global.
  EXPECT_EQ(Callable("import decimal, ctypes\nlambda r: str(decimal.Decimal(r.n) / 4) + str(ctypes.sizeof(ctypes.c_int))"),
            R"("1.754")");
}

TEST(PythonFunction, BuiltinsAndDottedNames) {
  EXPECT_EQ(Callable("len"), "5");
  EXPECT_EQ(Callable("str"), R"j("BeamSchema(name='Ada Lovelace', n=7, x=2.5, tags=['a', 'b'], nested=BeamSchema(k=1))")j")
      << "the row's repr is a named tuple's";
}

TEST(PythonFunction, ResultsComeBackAsValues) {
  EXPECT_EQ(Callable("lambda r: {'a': 1, 'b': [True, None, 1.5, (2, 'x')]}"), R"({"a":1,"b":[true,null,1.5,[2,"x"]]})");
  EXPECT_EQ(Callable("lambda r: beam.Row(s=r.name[:3], m=r.n % 4)"), R"({"s":"Ada","m":3})");
  EXPECT_EQ(Callable("lambda r: 2 ** 63"), "error: OverflowError: int too large for a 64-bit integer");
  EXPECT_EQ(Callable("lambda r: -2 ** 63"), "-9223372036854775808");
  EXPECT_EQ(Callable("lambda r: {1: 2}"), "error: TypeError: a dict key of type 'int' cannot be a field name (str keys only)");
}

// Beam hands a window's bounds and an element's timestamp to Python as
// apache_beam.utils.timestamp.Timestamp, and TFRecord records as bytes; both come back as they went.
TEST(PythonFunction, TimestampsAndBytesAreBeamsValueTypes) {
  Row r;
  r.AppendNull("ts") = Value::Timestamp(-9223372036854775000);
  r.AppendNull("end") = Value::Timestamp(9223371950454775000);
  r.AppendNull("whole") = Value::Timestamp(-3'000'000);
  r.AppendNull("b") = Value::Bytes("foo");
  // Beam's extract_windowing_Info.yaml expects exactly these strings.
  EXPECT_EQ(Callable("lambda x: str(x.ts)", r), R"x("Timestamp(-9223372036854.775000)")x");
  EXPECT_EQ(Callable("lambda x: str(x.end)", r), R"x("Timestamp(9223371950454.775000)")x");
  EXPECT_EQ(Callable("lambda x: repr(x.whole)", r), R"x("Timestamp(-3)")x");
  EXPECT_EQ(Callable("lambda x: [x.whole == -3, x.whole < 0, float(x.whole), x.whole.micros]", r), "[true,true,-3.0,-3000000]");
  EXPECT_EQ(Callable("lambda x: x.ts", r), "-9223372036854.775");  // back as a Timestamp: JSON writes its seconds
  ASSERT_TRUE(Function::FromCallable("lambda x: x.whole + 1.5").ok());
  auto shifted = Function::FromCallable("lambda x: x.whole + 1.5").value()->CallRow(r);
  ASSERT_TRUE(shifted.ok() && shifted->is_timestamp()) << shifted.status().ToString();
  EXPECT_EQ(shifted->as_timestamp_us(), -1'500'000);
  EXPECT_EQ(Callable("lambda x: x.b.decode('utf-8')", r), R"("foo")");
  auto encoded = Function::FromCallable("def process(row):\n  return row.b + 'é'.encode('utf-8')\n").value()->CallRow(r);
  ASSERT_TRUE(encoded.ok() && encoded->is_bytes()) << encoded.status().ToString();
  EXPECT_EQ(encoded->as_bytes(), "foo\xc3\xa9");
  EXPECT_EQ(Callable("lambda x: bytearray(b'\\x00')", r), R"("AA==")");
}

TEST(PythonFunction, ErrorsArePythonsWithTheLine) {
  EXPECT_EQ(Callable("def f(row):\n  x = 1\n  return row.n / 0\n"), "error: ZeroDivisionError: division by zero (<callable> line 3)");
  EXPECT_EQ(Callable("lambda row: row.missing"), "error: AttributeError: 'BeamSchema' object has no attribute 'missing' (<callable> line 1)");
  std::string bad = Callable("def f(row):\n  return (\n");
  EXPECT_EQ(bad.rfind("compile: SyntaxError: ", 0), 0u) << bad;
  EXPECT_NE(bad.find("line 2"), std::string::npos) << bad;
}

TEST(PythonFunction, SelfHoldingAndHugeResultsAreRefused) {
  EXPECT_EQ(Callable("def f(r):\n  a = []\n  a.append(a)\n  return a\n").rfind("error: ValueError: result nested deeper than", 0), 0u);
  const std::string shared = Callable("def f(r):\n  a = [1]\n  for _ in range(61):\n    a = [a, a]\n  return a\n");
  EXPECT_EQ(shared.rfind("error: ValueError: result holds more than", 0), 0u) << shared;
}

TEST(PythonFunction, ExpressionsBindTheFieldsTheyMention) {
  auto fn = Function::FromExpression("n * 2 + len(tags)");
  ASSERT_TRUE(fn.ok()) << fn.status().message();
  EXPECT_EQ(Eval(std::move(fn).value(), SampleRow()), "16");
  auto missing = Function::FromExpression("nope + 1");
  ASSERT_TRUE(missing.ok());
  EXPECT_EQ(Eval(std::move(missing).value(), SampleRow()),
            "error: ValueError: name 'nope' is not defined. Valid values include ['name', 'n', 'x', 'tags', 'nested']");
  EXPECT_FALSE(Function::FromExpression("1 +").ok());
}

TEST(PythonFunction, ModuleFunctionsTakeRowsAndReturnRows) {
  auto fn = Function::FromModule("def split(rows, sep):\n"
                                 "    return [{'part': p, 'i': i} for r in rows for i, p in enumerate(r.name.split(sep))]\n",
                                 "split");
  ASSERT_TRUE(fn.ok()) << fn.status().message();
  Result<std::vector<Row>> rows = (*fn)->CallForRows({Value::FromList({Value::FromRow(SampleRow())}), Value::String(" ")});
  ASSERT_TRUE(rows.ok()) << rows.status().message();
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ(Value::FromRow((*rows)[1]).ToJson(), R"({"part":"Lovelace","i":1})");
  auto missing = Function::FromModule("x = 1\n", "nothere");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("nothere"), std::string::npos) << missing.status().message();
}

TEST(PythonFunction, ABatchIsOneRequestAndRowsFailAlone) {
  auto fn = Function::FromCallable("lambda r: 10 // r.n");
  ASSERT_TRUE(fn.ok());
  std::vector<Row> rows(5);
  for (int i = 0; i < 5; ++i) rows[i].AppendNull("n") = Value::Int(i);
  std::vector<Result<Value>> out;
  (*fn)->CallRows(rows.data(), rows.size(), out);
  ASSERT_EQ(out.size(), 5u);
  EXPECT_EQ(out[0].status().message(), "ZeroDivisionError: integer division or modulo by zero (<callable> line 1)");
  EXPECT_EQ(out[3]->as_int(), 3);
}

TEST(PythonFunction, MemoryPastTheCapIsAMemoryError) {
  auto fn = Function::FromCallable("lambda r: len('x' * (1 << 31))");
  ASSERT_TRUE(fn.ok());
  Result<Value> v = (*fn)->CallRow(SampleRow());
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(v.status().message().rfind("MemoryError", 0), 0u) << v.status().message();
}

TEST(PythonFunction, DeepRecursionIsARecursionError) {
  auto fn = Function::FromCallable("def f(r, d=0):\n  return f(r, d + 1)\n");
  ASSERT_TRUE(fn.ok());
  Result<Value> v = (*fn)->CallRow(SampleRow());
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().message().rfind("RecursionError: maximum recursion depth exceeded", 0), 0u) << v.status().message();
}

TEST(PythonFunction, ConcurrentCallersEachGetTheirOwnRowsAnswers) {
  auto fn = Function::FromCallable("import json\nSEEN = []\ndef f(row):\n  SEEN.append(row.i)\n  return json.dumps({'i': row.i * 3})\n");
  ASSERT_TRUE(fn.ok()) << fn.status().message();
  std::vector<std::thread> threads;
  std::vector<int> wrong(8, 0);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      std::vector<Row> rows(64);
      for (int i = 0; i < 64; ++i) rows[i].AppendNull("i") = Value::Int(t * 1000 + i);
      for (int round = 0; round < 20; ++round) {
        std::vector<Result<Value>> out;
        (*fn)->CallRows(rows.data(), rows.size(), out);
        for (int i = 0; i < 64; ++i) {
          if (!out[i].ok() || out[i]->as_string() != "{\"i\": " + std::to_string((t * 1000 + i) * 3) + "}") ++wrong[t];
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < 8; ++t) EXPECT_EQ(wrong[t], 0) << "thread " << t;
}

}  // namespace dfw::python_function_test
