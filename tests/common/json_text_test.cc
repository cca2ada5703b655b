// CheckJsonDepth measures any depth without recursion; JsonIntIn never narrows.
#include "dfw/common/json_text.h"

#include <gtest/gtest.h>

#include <string>

namespace dfw {
namespace {

TEST(CheckJsonDepth, RefusesNestingPastTheLimitAtAnyDepth) {
  std::string deep;
  for (int i = 0; i < 200000; ++i) deep += "[{\"a\":";
  deep += "1";
  for (int i = 0; i < 200000; ++i) deep += "}]";
  nlohmann::json j = nlohmann::json::parse(deep);  // nlohmann parses without recursion
  Status s = CheckJsonDepth(j, "x.json");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("'x.json' nests arrays/objects more than 100 levels deep"), std::string::npos) << s.ToString();
  EXPECT_TRUE(CheckJsonDepth(nlohmann::json::parse(R"({"a": [[{"b": [1]}]]})"), "y.json").ok());
  EXPECT_FALSE(ParseJsonText("z.json", deep).ok());
}

TEST(JsonIntIn, RefusesWhatGetWouldTruncate) {
  auto v = JsonIntIn(nlohmann::json::parse("1099511627776"), 0, INT32_MAX, "id");
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().message(), "id must be an integer in [0, 2147483647], got 1099511627776");
  EXPECT_FALSE(JsonIntIn(nlohmann::json::parse("18446744073709551615"), INT64_MIN, INT64_MAX, "n").ok());
  EXPECT_FALSE(JsonIntIn(nlohmann::json::parse("-1"), 0, 10, "n").ok());
  EXPECT_FALSE(JsonIntIn(nlohmann::json::parse("1.5"), 0, 10, "n").ok());
  EXPECT_FALSE(JsonIntIn(nlohmann::json::parse("\"3\""), 0, 10, "n").ok());
  EXPECT_EQ(*JsonIntIn(nlohmann::json::parse("10"), 0, 10, "n"), 10);
  EXPECT_EQ(*JsonIntIn(nlohmann::json::parse("-5"), -5, 10, "n"), -5);
}

}  // namespace
}  // namespace dfw
