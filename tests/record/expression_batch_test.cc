// EvaluateBatch against Evaluate, row by row: the column-at-a-time path (expression_batch.cc) must
// give every row exactly what the tree walker gives it, value or error, whatever the batch mixes.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "expression_test_util.h"
#include "record/expression_ast.h"

namespace dfw {
namespace {

using testing::RowFromJson;

// A result as text that tells kinds apart (1 vs 1.0 vs true, a NaN) and carries the error.
std::string Describe(const Result<Value>& r) {
  if (!r.ok()) return "error: " + r.status().message();
  if (r->is_float() && std::isnan(r->as_float())) return "float nan";
  return std::to_string(static_cast<int>(r->kind())) + " " + r->ToJson();
}

// Rows of different layouts and types, so one batch holds fields in other places, fields of other
// types, missing fields and values an operator refuses.
std::vector<Row> MixedRows() {
  std::vector<Row> rows;
  rows.push_back(testing::SampleRow());
  rows.push_back(RowFromJson(R"({"qty": 3, "price": 1.5, "name": "item-2", "a": "text", "b": 2, "s": null, "t": "xyz", "xs": []})"));
  rows.push_back(RowFromJson(R"({"price": 2.25, "qty": 4, "name": "item-1", "a": 1, "b": 0.5, "t": "\u00c0\u00e9", "xs": [4]})"));
  rows.push_back(Row());
  rows.push_back(RowFromJson(R"({"a": 9223372036854775807, "b": -0.0, "s": "x,y", "t": "", "qty": 0, "price": 1e308})"));
  Row odd;
  odd.Append("a", Value::Float(std::numeric_limits<double>::quiet_NaN()));
  odd.Append("b", Value::Float(std::numeric_limits<double>::infinity()));
  odd.Append("price", Value::Int(int64_t{1} << 60));
  odd.Append("qty", Value::Float(3.0));
  odd.Append("name", Value::String("\xff bad"));
  odd.Append("t", Value::Bool(true));
  odd.Append("xs", Value::FromList({Value::Int(1), Value::String("a")}));
  rows.push_back(std::move(odd));
  return rows;
}

// Batches of several sizes drawn from `rows` in a scrambled order (so neighbours differ).
std::vector<std::vector<Row>> Batches(const std::vector<Row>& rows) {
  std::vector<std::vector<Row>> out;
  for (std::size_t size : {std::size_t{1}, std::size_t{7}, std::size_t{8}, std::size_t{61}}) {
    std::vector<Row> batch;
    for (std::size_t i = 0; i < size; ++i) batch.push_back(rows[(i * 5 + size) % rows.size()]);
    out.push_back(std::move(batch));
  }
  return out;
}

void ExpectBatchMatchesRows(const std::string& source, ExprLanguage lang) {
  auto compiled = CompileExpression(source, lang);
  ASSERT_TRUE(compiled.ok()) << source << ": " << compiled.status().message();
  for (const std::vector<Row>& batch : Batches(MixedRows())) {
    std::vector<Result<Value>> got;
    (*compiled)->EvaluateBatch(batch.data(), batch.size(), got);
    ASSERT_EQ(got.size(), batch.size()) << source;
    for (std::size_t i = 0; i < batch.size(); ++i) {
      EXPECT_EQ(Describe(got[i]), Describe((*compiled)->Evaluate(batch[i])))
          << source << ", row " << i << " of a batch of " << batch.size() << ": " << batch[i].ToJson();
    }
  }
}

TEST(ExpressionBatch, EveryRowGetsWhatTheWalkerGivesIt) {
  const std::vector<std::string> python = {
      // The column forms: constants, fields, operators, single comparisons, calls.
      "a", "7", "'const'", "price * qty", "price * qty > 10", "name.upper()", "a + b", "a * b", "a - 1",
      "b / 0", "a // b", "a % 3", "a ** 2", "-a", "not a", "~a", "a > 2", "a == b", "a != None", "a < 'x'",
      "a in xs", "t not in xs", "a is None", "s.upper()", "t.lower()", "s.strip()", "s.split(',')", "len(t)",
      "str(a) + t", "t * 3", "abs(a)", "round(b, 1)", "max(a, b, 2)", "t.replace('a', 'b')", "missing + 1",
      "int(b) + len(name)", "float(qty) * 2", "name.startswith('item')", "(price - 1) * (qty + 1) >= 3",
      "t * 40000000", "a << 70", "big + 1", "str(xs)", "a & 1",
      // Kinds that keep the walker: and, or, if, indexing, slices, attributes, lists, chains.
      "a and b", "a or 'none'", "a if b else 0", "xs[0]", "t[1:]", "nested.x", "[a, b]", "1 < a < 10"};
  for (const std::string& source : python) ExpectBatchMatchesRows(source, ExprLanguage::kPython);
  for (const char* source : {"price > 10", "qty < a", "missing", "name", "b >= 0.5"}) {
    ExpectBatchMatchesRows(source, ExprLanguage::kGeneric);
  }
}

// A row's allocation budget runs across its nodes, as in the walker: "abc" builds 18 MB twice and
// then their 36 MB sum (72 MB, over the 64 MiB a row may build: MemoryError), "ab" 48 MB (fine).
TEST(ExpressionBatch, ARowsBudgetRunsAcrossItsNodes) {
  auto compiled = CompileExpression("len((t * 6000000) + (t * 6000000))", ExprLanguage::kPython);
  ASSERT_TRUE(compiled.ok());
  std::vector<Row> batch;
  for (int i = 0; i < 8; ++i) batch.push_back(RowFromJson(i % 2 ? R"({"t": "abc"})" : R"({"t": "ab"})"));
  std::vector<Result<Value>> got;
  (*compiled)->EvaluateBatch(batch.data(), batch.size(), got);
  ASSERT_EQ(got.size(), batch.size());
  for (std::size_t i = 0; i < batch.size(); ++i) {
    EXPECT_EQ(Describe(got[i]), Describe((*compiled)->Evaluate(batch[i]))) << i;
    EXPECT_EQ(got[i].ok(), i % 2 == 0) << i;
  }
}

TEST(ExpressionBatch, ColumnsTakeOperatorsAndCallsAndLeaveShortCircuitsToTheWalker) {
  auto plan = [](const std::string& source) {
    auto program = expr::ParsePython(source);
    EXPECT_TRUE(program.ok()) << source;
    expr::ColumnPlan p;
    return expr::PlanColumns(*program, p) ? p.order.size() : std::size_t{0};
  };
  EXPECT_EQ(plan("price * qty > 10"), 5u);  // price, qty, *, 10, >
  EXPECT_EQ(plan("name.upper()"), 2u);
  EXPECT_EQ(plan("round(b, 1) + len(t)"), 6u);  // b, 1, round, t, len, +
  EXPECT_EQ(plan("a"), 1u);
  for (const char* walker_only : {"a and b", "a or b", "a if b else c", "xs[0]", "t[1:]", "nested.x", "[a]", "1 < a < 10",
                                         "len([a])", "(a or 1) + 2"}) {
    EXPECT_EQ(plan(walker_only), 0u) << walker_only;
  }
}

// Names compared 16 bytes at a time: every length up to past 16, a difference in the last byte,
// and a short name living in a heap buffer (a string that was long once).
TEST(ExpressionBatch, NamesCompareExactlyWhateverTheirLengthOrBuffer) {
  for (std::size_t n = 0; n <= 40; ++n) {
    const std::string a(n, 'x');
    std::string b = a;
    EXPECT_TRUE(SameString(a, b)) << n;
    EXPECT_FALSE(SameString(a, a + "x")) << n;
    if (n > 0) {
      b[n - 1] = 'y';
      EXPECT_FALSE(SameString(a, b)) << n;
      b = a;
      b[0] = 'y';
      EXPECT_FALSE(SameString(a, b)) << n;
    }
  }
  std::string was_long(100, 'q');
  was_long = "qty";  // keeps its heap buffer
  ASSERT_GT(was_long.capacity(), 15u);
  EXPECT_TRUE(SameString(was_long, std::string("qty")));
  EXPECT_FALSE(SameString(was_long, std::string("qtz")));
}

// Each row may build up to 64 MiB of strings (the walker's budget, one row at a time); the
// columns hold a whole batch, so the batch's building is capped at the same 64 MiB and a batch
// past it goes row by row. 40 rows of a 30 MB intermediate: the peak stays far below the 1.2 GB
// the uncapped columns would hold (600 MB leaves room for ASan's quarantine of freed blocks).
// Measured in a child process (its own peak RSS, from wait4).
TEST(ExpressionBatch, ABatchHoldsNoMoreThanAboutTwoRowsWorthOfBuiltStrings) {
  auto compiled = CompileExpression("len(t * 15000000)", ExprLanguage::kPython);
  ASSERT_TRUE(compiled.ok());
  std::vector<Row> batch(40, RowFromJson(R"({"t": "ab"})"));
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::vector<Result<Value>> got;
    (*compiled)->EvaluateBatch(batch.data(), batch.size(), got);
    bool right = got.size() == batch.size();
    for (const Result<Value>& r : got) right = right && r.ok() && r->is_int() && r->as_int() == 30000000;
    _exit(right ? 0 : 1);
  }
  int status = 0;
  struct rusage usage {};
  ASSERT_EQ(wait4(pid, &status, 0, &usage), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "a row's length was wrong";
  EXPECT_LT(usage.ru_maxrss, 600L * 1024) << "peak RSS " << usage.ru_maxrss << " KiB";  // ru_maxrss is in KiB
}

}  // namespace
}  // namespace dfw
