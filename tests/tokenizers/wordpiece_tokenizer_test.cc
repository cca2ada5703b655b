#include "dfw/tokenizers/wordpiece_tokenizer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace dfw {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

struct BasicCase {
  const char* name;
  std::string text;
  bool lower;
  std::vector<std::string> words;
};

void PrintTo(const BasicCase& c, std::ostream* os) { *os << c.name; }

class BasicTokenizeTest : public ::testing::TestWithParam<BasicCase> {};

TEST_P(BasicTokenizeTest, SplitsAndNormalisesLikeBert) {
  const BasicCase& c = GetParam();
  TokenizerOptions o;
  o.do_lower_case = c.lower;
  auto words = BasicTokenize(c.text, o);
  ASSERT_TRUE(words.ok()) << words.status().ToString();
  EXPECT_EQ(*words, c.words);
}

INSTANTIATE_TEST_SUITE_P(
    Table, BasicTokenizeTest,
    ::testing::Values(
        BasicCase{"Empty", "", true, {}},
        BasicCase{"OnlySpaces", " \t\r\n ", true, {}},
        BasicCase{"LowerCases", "Hello WORLD", true, {"hello", "world"}},
        BasicCase{"KeepsCaseWhenCased", "Hello WORLD", false, {"Hello", "WORLD"}},
        BasicCase{"AsciiPunctuation", "a,b.c!?", true, {"a", ",", "b", ".", "c", "!", "?"}},
        BasicCase{"AsciiSymbolsArePunctuation", "1+1=2 $5 a^b `x` ~", true,
                  {"1", "+", "1", "=", "2", "$", "5", "a", "^", "b", "`", "x", "`", "~"}},
        BasicCase{"UnicodePunctuation", "\xC2\xBFQu\xC3\xA9?\xE2\x80\x94ok\xE2\x80\xA6", true,  // ¿Qué?—ok…
                  {"\xC2\xBF", "que", "?", "\xE2\x80\x94", "ok", "\xE2\x80\xA6"}},
        BasicCase{"StripsAccents", "Cr\xC3\xA8me Br\xC3\xBBl\xC3\xA9\x65 na\xC3\xAFve", true,  // Crème Brûlée naïve
                  {"creme", "brulee", "naive"}},
        BasicCase{"KeepsAccentsWhenCased", "Cr\xC3\xA8me", false, {"Cr\xC3\xA8me"}},
        BasicCase{"DecomposedInputStripped", "e\xCC\x81t\xC3\xA9", true, {"ete"}},  // e + U+0301, é
        BasicCase{"CjkSplitPerCharacter", "\xE6\x88\x91\xE7\x88\xB1" "ab\xE5\x8C\x97\xE4\xBA\xAC", true,  // 我爱ab北京
                  {"\xE6\x88\x91", "\xE7\x88\xB1", "ab", "\xE5\x8C\x97", "\xE4\xBA\xAC"}},
        BasicCase{"KanaIsNotSplit", "\xE3\x81\x8B\xE3\x81\xAA", true, {"\xE3\x81\x8B\xE3\x81\xAA"}},  // かな
        BasicCase{"HangulDecomposedToJamo", "\xED\x95\x9C", true,  // 한 → ᄒ ᅡ ᆫ
                  {"\xE1\x84\x92\xE1\x85\xA1\xE1\x86\xAB"}},
        BasicCase{"ControlCharsDropped", std::string("a\x01\x7F") + "b\xE2\x80\x8B" + "c", true, {"abc"}},  // ZWSP (Cf)
        BasicCase{"NulAndReplacementDropped", std::string("a\0b\xEF\xBF\xBD", 6) + "c", true, {"abc"}},
        BasicCase{"UnicodeSpacesSplit", "a\xC2\xA0" "b\xE3\x80\x80" "c\xE2\x80\xA8" "d", true,  // NBSP, ideographic, LS
                  {"a", "b", "c", "d"}},
        BasicCase{"EmojiIsAWord", "hi \xF0\x9F\x98\x80!", true, {"hi", "\xF0\x9F\x98\x80", "!"}},
        BasicCase{"VariationSelectorStripped", "\xE2\x9D\xA4\xEF\xB8\x8F", true, {"\xE2\x9D\xA4"}},  // ❤️
        BasicCase{"GreekLowered", "\xCE\x9F\xCE\x94\xCE\x9F\xCE\xA3", true,  // ΟΔΟΣ → οδοσ (no final sigma)
                  {"\xCE\xBF\xCE\xB4\xCE\xBF\xCF\x83"}},
        BasicCase{"DottedCapitalI", "\xC4\xB0stanbul", true, {"istanbul"}}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(BasicTokenize, InvalidUtf8IsAnErrorNamingTheOffset) {
  for (const std::string& bad : {std::string("ok \xFF"), std::string("ab\xC3"), std::string("\xED\xA0\x80"),
                                std::string("x\xC0\xAF")}) {
    auto words = BasicTokenize(bad, TokenizerOptions{});
    ASSERT_FALSE(words.ok()) << bad;
    EXPECT_EQ(words.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(words.status().message(), HasSubstr("not valid UTF-8"));
    EXPECT_THAT(words.status().message(), HasSubstr("offset"));
  }
}

std::vector<std::string> SmallVocab() {
  return {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "un", "##aff", "##able", "aff", "runn", "##ing",
          ",",     "!",     "want",  "##ed",  "a",  "##b",   "##c",    "\xE4\xBD\xA0"};
}

WordPieceTokenizer MakeSmall(int max_chars = 100) {
  TokenizerOptions o;
  o.max_input_chars_per_word = max_chars;
  auto t = WordPieceTokenizer::Make(SmallVocab(), o);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return *t;
}

struct PieceCase {
  const char* name;
  std::string text;
  std::vector<std::string> pieces;
};

void PrintTo(const PieceCase& c, std::ostream* os) { *os << c.name; }

class WordPieceTest : public ::testing::TestWithParam<PieceCase> {};

TEST_P(WordPieceTest, GreedyLongestMatch) {
  auto pieces = MakeSmall().Tokenize(GetParam().text);
  ASSERT_TRUE(pieces.ok()) << pieces.status().ToString();
  EXPECT_EQ(*pieces, GetParam().pieces);
}

INSTANTIATE_TEST_SUITE_P(Table, WordPieceTest,
                         ::testing::Values(PieceCase{"Continuations", "unaffable", {"un", "##aff", "##able"}},
                                           PieceCase{"SeveralWords", "UNwanted, running!",
                                                     {"[UNK]", ",", "runn", "##ing", "!"}},
                                           PieceCase{"WholeWordUnknown", "unaffx", {"[UNK]"}},
                                           PieceCase{"LongestPrefixFirst", "abc", {"a", "##b", "##c"}},
                                           PieceCase{"MultiByteChars", "\xE4\xBD\xA0\xE5\xA5\xBD",
                                                     {"\xE4\xBD\xA0", "[UNK]"}},
                                           PieceCase{"Empty", "", {}}),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(WordPieceTokenizer, WordsLongerThanTheLimitAreUnknown) {
  auto t = MakeSmall(/*max_chars=*/3);
  EXPECT_THAT(*t.Tokenize("abc"), ElementsAre("a", "##b", "##c"));
  EXPECT_THAT(*t.Tokenize("abcb"), ElementsAre("[UNK]"));
}

TEST(WordPieceTokenizer, EncodeFramesWithClsSepAndTruncates) {
  auto t = MakeSmall();
  std::vector<int32_t> ids;
  ASSERT_TRUE(t.Encode("unaffable running", 128, ids).ok());
  EXPECT_THAT(ids, ElementsAre(2, 4, 5, 6, 8, 9, 3));
  ASSERT_TRUE(t.Encode("unaffable running", 4, ids).ok());
  EXPECT_THAT(ids, ElementsAre(2, 4, 5, 3));
  ASSERT_TRUE(t.Encode("", 4, ids).ok());
  EXPECT_THAT(ids, ElementsAre(2, 3));
  ASSERT_TRUE(t.Encode("unaffable", 2, ids).ok());
  EXPECT_THAT(ids, ElementsAre(2, 3));
  EXPECT_EQ(t.Encode("a", 1, ids).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(t.Encode("bad \xFF", 16, ids).code(), StatusCode::kInvalidArgument);
}

TEST(WordPieceTokenizer, MissingSpecialTokensAreNamed) {
  auto t = WordPieceTokenizer::Make({"[PAD]", "[UNK]", "hello"}, TokenizerOptions{});
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(t.status().message(), HasSubstr("token(s) [CLS], [SEP] ("));
  EXPECT_THAT(t.status().message(), ::testing::Not(HasSubstr("[SEP], [PAD] (")));
}

class TokenizerDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("dfw_tok_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void Write(const std::string& name, const std::string& text) { std::ofstream(dir_ / name) << text; }
  std::filesystem::path dir_;
};

TEST_F(TokenizerDirTest, LoadsVocabAndConfig) {
  Write("vocab.txt", "[PAD]\r\n[UNK]\r\n[CLS]\r\n[SEP]\r\nHello\r\nhello");  // CRLF, no final newline
  Write("tokenizer_config.json", R"({"do_lower_case": false, "strip_accents": null})");
  auto t = WordPieceTokenizer::Load(dir_.string());
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->vocab_size(), 6u);
  EXPECT_FALSE(t->options().do_lower_case);
  EXPECT_THAT(*t->Tokenize("Hello hello"), ElementsAre("Hello", "hello"));
}

TEST_F(TokenizerDirTest, DefaultsToLowerCaseWithoutConfig) {
  Write("vocab.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\nhello\n");
  auto t = WordPieceTokenizer::Load(dir_.string());
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_THAT(*t->Tokenize("HELLO"), ElementsAre("hello"));
}

TEST_F(TokenizerDirTest, LoadErrorsNameTheFile) {
  auto missing = WordPieceTokenizer::Load(dir_.string());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("vocab.txt"));

  Write("vocab.txt", "[PAD]\n[UNK]\n[SEP]\n");
  auto no_cls = WordPieceTokenizer::Load(dir_.string());
  EXPECT_EQ(no_cls.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(no_cls.status().message(), HasSubstr("[CLS]"));
  EXPECT_THAT(no_cls.status().message(), HasSubstr("vocab.txt"));

  Write("vocab.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\n");
  Write("tokenizer_config.json", R"({"do_lower_case": "yes"})");
  auto bad_type = WordPieceTokenizer::Load(dir_.string());
  EXPECT_EQ(bad_type.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(bad_type.status().message(), HasSubstr("do_lower_case"));

  Write("tokenizer_config.json", "{not json");
  EXPECT_EQ(WordPieceTokenizer::Load(dir_.string()).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace dfw
