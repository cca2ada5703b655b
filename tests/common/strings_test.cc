#include "dfw/common/strings.h"

#include <gtest/gtest.h>

namespace dfw {
namespace {

TEST(Strings, JsonLineColumnCountsAsNlohmannsErrorsDo) {
  // parse_error::byte is 1-based: byte 1 is the first character.
  EXPECT_EQ(JsonLineColumn("{\n  \"a\": x\n}", 1), "1:1");
  EXPECT_EQ(JsonLineColumn("{\n  \"a\": x\n}", 10), "2:8");
  EXPECT_EQ(JsonLineColumn("ab", 99), "1:3");  // past the end: where the text ends
}

TEST(Strings, EditDistanceCountsEdits) {
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3u);
  EXPECT_EQ(EditDistance("", "abc"), 3u);
  EXPECT_EQ(EditDistance("same", "same"), 0u);
}

TEST(Strings, SuggestsCloseCandidatesOnly) {
  std::vector<std::string> c = {"dataflow_service_options", "experiments", "machine_type"};
  EXPECT_EQ(ClosestMatch("dataflow_servce_options", c), "dataflow_service_options");
  EXPECT_EQ(ClosestMatch("zzz", c), std::nullopt);
  EXPECT_EQ(DidYouMeanSuffix("experiment", c), " (did you mean 'experiments'?)");
}

TEST(Strings, ParsesWholeNumbersStrictly) {
  EXPECT_EQ(ParseInt64("42"), 42);
  EXPECT_EQ(ParseInt64("-7"), -7);
  EXPECT_EQ(ParseInt64("4x"), std::nullopt);
  EXPECT_EQ(ParseInt64(""), std::nullopt);
  EXPECT_EQ(ParseDouble("0.5"), 0.5);
  EXPECT_EQ(ParseDouble("1e400"), std::nullopt);
}

TEST(Strings, SplitsKeepingEmptyPieces) {
  EXPECT_EQ(Split("a;;b", ';'), (std::vector<std::string>{"a", "", "b"}));
  EXPECT_EQ(Trim("  x y \n"), "x y");
  EXPECT_EQ(HumanBytes(1536), "1.5 KiB");
}

TEST(Strings, HumanBytesSpeaksBinaryOrDecimalUnits) {
  EXPECT_EQ(HumanBytes(17), "17 B");
  EXPECT_EQ(HumanBytes(3u << 30), "3.0 GiB");
  EXPECT_EQ(HumanBytes(17, ByteUnits::kDecimal), "17 bytes");
  EXPECT_EQ(HumanBytes(1536, ByteUnits::kDecimal), "1.5 KB");
  EXPECT_EQ(HumanBytes(3'200'000'000ULL, ByteUnits::kDecimal), "3.2 GB");
}

TEST(Strings, HexRoundTripsEveryByteAndRejectsNonHex) {
  std::string all;
  for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  const std::string hex = HexEncode(all);
  ASSERT_EQ(hex.size(), 512u);
  EXPECT_EQ(hex.substr(0, 6), "000102");
  EXPECT_EQ(hex.substr(506), "fdfeff");
  EXPECT_EQ(HexDecode(hex), all);
  EXPECT_EQ(HexDecode("ABcd"), std::string("\xab\xcd"));
  EXPECT_EQ(HexDecode(""), std::string());
  EXPECT_EQ(HexDecode("abc"), std::nullopt);   // odd length
  EXPECT_EQ(HexDecode("0g"), std::nullopt);    // not a digit
  EXPECT_EQ(HexDecode("0 "), std::nullopt);
  EXPECT_EQ(HexDecode("-1"), std::nullopt);
}

}  // namespace
}  // namespace dfw
