// Beam's generic expression language (no `language:`), beam-yaml.md §6.
#include <string>

#include <gtest/gtest.h>

#include "record/expression_test_util.h"

namespace dfw {
namespace {

constexpr char kBeamError[] = "Missing language specification, unknown input fields, or invalid generic expression: ";

TEST(GenericExpression, AtomsAndOneComparison) {
  Row row = testing::SampleRow();
  const std::pair<const char*, const char*> cases[] = {
      {"a", "3"}, {"  t ", "\"abc\""}, {"42", "42"}, {"-7", "-7"}, {"2147483647", "2147483647"},
      {"-2147483647", "-2147483647"}, {"1.5", "1.5"}, {"-2.", "-2.0"}, {"\"hi there\"", "\"hi there\""},
      {"a > 2", "true"}, {"a < 2", "false"}, {"a >= 3", "true"}, {"a <= 2.5", "false"}, {"a == 3", "true"},
      {"a != 3", "false"}, {"label == \"spam\"", "true"}, {"b>4", "true"}, {"\"a<b\" == \"a<b\"", "true"},
      {"a > b", "false"},
  };
  for (const auto& [expr, want] : cases) EXPECT_EQ(testing::Eval(expr, row, ExprLanguage::kGeneric), want) << expr;
}

TEST(GenericExpression, AnythingElseIsRefusedWithBeamsMessage) {
  for (const char* expr : {"a + 1", "len(t)", "'single'", "\"esc\\\"\"", "\"back\\slash\"", "2147483648", "-2147483648",
                           "1e5", ".5", "a < b < c", "a => 1", "a <> 1", "a ==", "== a", "t.lower()", "", "a and b",
                           "not a", "a === 1", "[1]"}) {
    auto e = CompileExpression(expr, ExprLanguage::kGeneric);
    ASSERT_FALSE(e.ok()) << "accepted: " << expr;
    EXPECT_EQ(e.status().message(), std::string(kBeamError) + expr +
                                        ". See https://beam.apache.org/documentation/sdks/yaml-udf/#generic");
  }
}

TEST(GenericExpression, MissingFieldAtRunTimeUsesBeamsMessageAndNamesTheFields) {
  auto e = CompileExpression("nope > 1", ExprLanguage::kGeneric);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ((*e)->referenced_fields(), std::vector<std::string>{"nope"});
  auto v = (*e)->Evaluate(testing::RowFromJson(R"({"x": 1, "y": 2})"));
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().message(), std::string(kBeamError) +
                                      "nope > 1. See https://beam.apache.org/documentation/sdks/yaml-udf/#generic "
                                      "(field 'nope' is not in this row; fields: x, y)");
}

TEST(GenericExpression, ComparisonTypeErrorsAreReported) {
  EXPECT_EQ(testing::Eval("t > 1", testing::SampleRow(), ExprLanguage::kGeneric),
            "error: TypeError: '>' not supported between instances of 'str' and 'int'");
}

}  // namespace
}  // namespace dfw
