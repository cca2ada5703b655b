#include "dfw/tokenizers/tokenizer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "hf_test_util.h"

namespace dfw {
namespace {

using ::testing::HasSubstr;
using testing::CharIndex;
using testing::HfDir;
using testing::HfReference;

class HfTokenizerReferenceTest : public ::testing::TestWithParam<std::string> {};

// Every row of the reference: ids, segment ids and character offsets exactly as `tokenizers`
// encodes the same text (pairs too), across accents, CJK, emoji, RTL and whitespace oddities.
TEST_P(HfTokenizerReferenceTest, EncodesLikeHuggingFaceTokenizers) {
  const nlohmann::json ref = HfReference(GetParam() + "-tokenizer");
  ASSERT_TRUE(ref.is_object()) << "missing reference for " << GetParam();
  auto tok = HfTokenizer::Load(HfDir() + "/" + ref["tokenizer"].get<std::string>());
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  ASSERT_GE(ref["rows"].size(), 10u);
  for (const auto& row : ref["rows"]) {
    const std::string text = row["text"];
    const bool pair = row.contains("pair");
    const std::string second = pair ? row["pair"].get<std::string>() : "";
    TokenEncoding e;
    ASSERT_TRUE((*tok)->Encode(text, pair ? std::optional<std::string_view>(second) : std::nullopt, 0, e).ok());
    SCOPED_TRACE("text '" + text + "'" + (pair ? " + '" + second + "'" : ""));
    EXPECT_EQ(e.ids, row["ids"].get<std::vector<int32_t>>());
    EXPECT_EQ(e.type_ids, row["type_ids"].get<std::vector<int32_t>>());
    std::vector<std::vector<int64_t>> offsets;
    for (std::size_t i = 0; i < e.size(); ++i) {
      const std::string& src = e.sequence[i] == 1 ? second : text;
      offsets.push_back({CharIndex(src, e.offsets[i].first), CharIndex(src, e.offsets[i].second)});
    }
    EXPECT_EQ(offsets, row["offsets"].get<std::vector<std::vector<int64_t>>>());
    if (row.contains("words")) {
      std::vector<int64_t> words;
      for (std::size_t i = 0; i < e.size(); ++i) words.push_back(e.word[i]);
      std::vector<int64_t> want;
      for (const auto& w : row["words"]) want.push_back(w.is_null() ? -1 : w.get<int64_t>());
      EXPECT_EQ(words, want);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Files, HfTokenizerReferenceTest, ::testing::Values("bert", "roberta"));

TEST(HfTokenizer, TruncatesToMaxLengthKeepingSpecialTokens) {
  auto tok = HfTokenizer::Load(HfDir() + "/bert-masked-lm/tokenizer.json");
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  TokenEncoding e;
  ASSERT_TRUE((*tok)->Encode("the quick brown fox jumps over the lazy dog", std::nullopt, 5, e).ok());
  ASSERT_EQ(e.size(), 5u);
  EXPECT_EQ(e.ids.front(), *(*tok)->TokenToId("[CLS]"));
  EXPECT_EQ(e.ids.back(), *(*tok)->TokenToId("[SEP]"));
}

TEST(HfTokenizer, SplitsSpecialTokensTypedInTheText) {
  auto tok = HfTokenizer::Load(HfDir() + "/bert-masked-lm/tokenizer.json");
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  TokenEncoding e;
  ASSERT_TRUE((*tok)->Encode("hello [MASK]!", std::nullopt, 0, e).ok());
  const int32_t mask = *(*tok)->TokenToId("[MASK]");
  ASSERT_EQ(std::count(e.ids.begin(), e.ids.end(), mask), 1);
  EXPECT_TRUE((*tok)->IsSpecial(mask));
}

TEST(HfTokenizer, RefusesInvalidUtf8) {
  auto tok = HfTokenizer::Load(HfDir() + "/roberta-masked-lm/tokenizer.json");
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  TokenEncoding e;
  const Status s = (*tok)->Encode("ok \xff", std::nullopt, 0, e);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("offset 3"));
}

TEST(HfTokenizer, DecodesWordPieceAndByteLevel) {
  for (const char* dir : {"bert-masked-lm", "roberta-masked-lm"}) {
    auto tok = HfTokenizer::Load(HfDir() + "/" + dir + "/tokenizer.json");
    ASSERT_TRUE(tok.ok()) << tok.status().ToString();
    TokenEncoding e;
    ASSERT_TRUE((*tok)->Encode("the capital of france is paris.", std::nullopt, 0, e).ok());
    EXPECT_EQ((*tok)->Decode(e.ids, /*skip_special=*/true), "the capital of france is paris.") << dir;
  }
}

struct BadFile {
  const char* name;
  std::string json;
  std::string error;
};
void PrintTo(const BadFile& c, std::ostream* os) { *os << c.name; }

class HfTokenizerBadFileTest : public ::testing::TestWithParam<BadFile> {};

TEST_P(HfTokenizerBadFileTest, IsRefusedNamingWhatIsSupported) {
  auto tok = HfTokenizer::Parse(GetParam().json, "tok.json");
  ASSERT_FALSE(tok.ok());
  EXPECT_EQ(tok.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(tok.status().message(), HasSubstr(GetParam().error));
}

const std::string kWordPiece = R"("model": {"type": "WordPiece", "unk_token": "[UNK]", "vocab": {"[UNK]": 0, "a": 1}})";

INSTANTIATE_TEST_SUITE_P(
    Table, HfTokenizerBadFileTest,
    ::testing::Values(
        BadFile{"NotJson", "{", "is not a JSON object"},
        BadFile{"NoModel", "{}", "\"model\" must be an object"},
        BadFile{"UnknownModel", R"({"model": {"type": "WordLevel", "vocab": {}}})", "model \"WordLevel\" is not supported; supported: WordPiece, BPE, Unigram"},
        BadFile{"UnknownNormalizer", "{" + kWordPiece + R"(, "normalizer": {"type": "ByteLevel"}})",
                "normalizer \"ByteLevel\" is not supported; supported: BertNormalizer"},
        BadFile{"UnknownPreTokenizer", "{" + kWordPiece + R"(, "pre_tokenizer": {"type": "Digits"}})",
                "pre_tokenizer \"Digits\" is not supported"},
        BadFile{"UnknownPostProcessor", "{" + kWordPiece + R"(, "post_processor": {"type": "Foo"}})",
                "post_processor \"Foo\" is not supported"},
        BadFile{"UnkNotInVocab", R"({"model": {"type": "WordPiece", "unk_token": "[X]", "vocab": {"a": 0}}})",
                "unk_token '[X]' is not in the vocabulary"},
        BadFile{"WrongTypedField",
                R"({"model": {"type": "WordPiece", "max_input_chars_per_word": "x", "vocab": {"[UNK]": 0}}})",
                "unexpected JSON value"},
        BadFile{"TemplateWithoutSequenceB", "{" + kWordPiece +
                R"(, "post_processor": {"type": "TemplateProcessing", "single": [{"Sequence": {"id": "A"}}],
                     "pair": [{"Sequence": {"id": "A"}}, {"Sequence": {"id": "A"}}], "special_tokens": {}}})",
                "pair template must hold sequences A and B once each"},
        BadFile{"BpeDropout", R"({"model": {"type": "BPE", "dropout": 0.1, "vocab": {}, "merges": []}})", "dropout"},
        // Ids past 32 bits were narrowed: 2^40 became 0 ([PAD]), 2^32+150 became 150.
        BadFile{"AddedTokenId2Pow40", "{" + kWordPiece + R"(, "added_tokens": [{"id": 1099511627776, "content": "[X]"}]})",
                "the id of added token '[X]' must be an integer in [0, 16777216], got 1099511627776"},
        BadFile{"AddedTokenId2Pow32Plus150", "{" + kWordPiece + R"(, "added_tokens": [{"id": 4294967446, "content": "[X]"}]})",
                "got 4294967446"},
        BadFile{"AddedTokenIdAboveInt64", "{" + kWordPiece + R"(, "added_tokens": [{"id": 18446744073709551615, "content": "[X]"}]})",
                "got 18446744073709551615"},
        BadFile{"VocabId2Pow40", R"({"model": {"type": "WordPiece", "unk_token": "[UNK]", "vocab": {"[UNK]": 0, "a": 1099511627776}}})",
                "model.vocab id of 'a' must be an integer in [0, 16777216], got 1099511627776"},
        BadFile{"SpecialIdOutsideVocab", "{" + kWordPiece + R"(, "post_processor": {"type": "BertProcessing", "cls": ["[CLS]", 4294967297], "sep": ["[SEP]", 1]}})",
                "post_processor \"cls\" id (an id of its 2-token vocabulary) must be an integer in [0, 1], got 4294967297"},
        BadFile{"TemplateIdOutsideVocab", "{" + kWordPiece +
                R"(, "post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "[CLS]"}}, {"Sequence": {"id": "A"}}],
                     "pair": [{"Sequence": {"id": "A"}}, {"Sequence": {"id": "B"}}], "special_tokens": {"[CLS]": {"ids": [7]}}}})",
                "special_tokens '[CLS]' id (an id of its 2-token vocabulary) must be an integer in [0, 1], got 7"}));

// A pre_tokenizer Sequence nested 50,000 deep (1.6 MB) crashed the process with SIGSEGV in the
// recursive build of its parts; the depth is now bounded before any part is built.
TEST(HfTokenizer, RefusesADeeplyNestedSequenceInsteadOfOverflowingTheStack) {
  std::string deep;
  constexpr int kDepth = 50000;
  for (int i = 0; i < kDepth; ++i) deep += R"({"type": "Sequence", "pretokenizers": [)";
  deep += R"({"type": "Whitespace"})";
  for (int i = 0; i < kDepth; ++i) deep += "]}";
  auto tok = HfTokenizer::Parse("{" + kWordPiece + R"(, "pre_tokenizer": )" + deep + "}", "tok.json");
  ASSERT_FALSE(tok.ok());
  EXPECT_EQ(tok.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(tok.status().message(), HasSubstr("'tok.json' nests arrays/objects more than 100 levels deep"));
  // A real depth (a Sequence of Sequences) still loads.
  auto ok = HfTokenizer::Parse("{" + kWordPiece + R"(, "pre_tokenizer": {"type": "Sequence", "pretokenizers": [)"
                               R"({"type": "Sequence", "pretokenizers": [{"type": "Whitespace"}]}]}})", "tok.json");
  EXPECT_TRUE(ok.ok()) << ok.status().ToString();
}

}  // namespace
}  // namespace dfw
