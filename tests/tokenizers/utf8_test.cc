#include "dfw/tokenizers/utf8.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace dfw {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(Utf8, DecodesOneCodePointAndItsLength) {
  const std::string s = "a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80";  // a é € 😀
  std::vector<std::pair<int32_t, std::size_t>> got;
  for (std::size_t pos = 0; pos < s.size();) {
    const utf8::CodePoint c = utf8::Decode(s, pos);
    ASSERT_GT(c.size, 0u) << pos;
    got.emplace_back(c.cp, c.size);
    pos += c.size;
  }
  EXPECT_THAT(got, ElementsAre(std::pair<int32_t, std::size_t>{'a', 1}, std::pair<int32_t, std::size_t>{0xE9, 2},
                               std::pair<int32_t, std::size_t>{0x20AC, 3}, std::pair<int32_t, std::size_t>{0x1F600, 4}));
  EXPECT_EQ(utf8::Decode(s, s.size()).size, 0u);  // at the end
}

TEST(Utf8, RefusesWhatUtf8procRefuses) {
  // A lone continuation byte, a truncated sequence, an overlong '/', a surrogate, past U+10FFFF.
  for (const std::string& bad : {std::string("\x80"), std::string("\xC3"), std::string("\xC0\xAF"),
                                std::string("\xED\xA0\x80"), std::string("\xF4\x90\x80\x80")}) {
    EXPECT_EQ(utf8::Decode(bad, 0).size, 0u) << bad;
    EXPECT_EQ(utf8::FirstInvalid("ok" + bad), std::optional<std::size_t>(2)) << bad;
  }
  EXPECT_EQ(utf8::FirstInvalid("caf\xC3\xA9"), std::nullopt);
}

TEST(Utf8, CheckNamesTheBadByteAndItsOffset) {
  EXPECT_TRUE(utf8::Check("plain \xE6\x9D\xB1").ok());
  const Status s = utf8::Check("ab \xFF" "cd");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("bad byte 0xff at offset 3 of 6"));
}

TEST(Utf8, AppendEncodesAndCodePointsDecode) {
  std::string out;
  for (int32_t cp : {0x41, 0x3B1, 0x6771, 0x1F600}) utf8::Append(out, cp);
  EXPECT_EQ(out, "A\xCE\xB1\xE6\x9D\xB1\xF0\x9F\x98\x80");
  EXPECT_THAT(utf8::CodePoints(out), ElementsAre(0x41, 0x3B1, 0x6771, 0x1F600));
  EXPECT_THAT(utf8::CodePoints("ab\xFF" "cd"), ElementsAre('a', 'b'));  // up to the first invalid sequence
  EXPECT_EQ(utf8::CountCodePoints(out), 4u);
  EXPECT_TRUE(utf8::IsContinuation(out[2]));
  EXPECT_FALSE(utf8::IsContinuation(out[1]));
}

TEST(Utf8, LossyReplacesEachMaximalInvalidSubpartOnce) {
  // As Rust's from_utf8_lossy: a truncated 3-byte sequence is one U+FFFD, each stray byte one more.
  EXPECT_EQ(utf8::Lossy("a\xE2\x82" "b"), "a\xEF\xBF\xBD" "b");
  EXPECT_EQ(utf8::Lossy("\x80\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(utf8::Lossy("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // a surrogate: three
  EXPECT_EQ(utf8::Lossy("ok \xE2\x82\xAC"), "ok \xE2\x82\xAC");
}

}  // namespace
}  // namespace dfw
