// HfTokenizer on the tokenizer.json layouts of the SentencePiece families (Unigram with a
// precompiled charsmap or NFKC, byte-fallback BPE as Llama-2/Gemma/Mistral lay it out, byte-level
// BPE with ignore_merges), compared with what `tokenizers` returns for the same files
// (testdata/hf/tokenizers, references by scripts/hf_tokenizer_references.py).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "dfw/tokenizers/tokenizer.h"
#include "hf_test_util.h"

namespace dfw {
namespace {

using ::testing::HasSubstr;
using testing::CharIndex;
using testing::HfDir;
using testing::HfReference;

// Ids, segment ids and character offsets exactly as tokenizers encodes each text (and pair).
void ExpectEncodesLike(const HfTokenizer& tok, const nlohmann::json& ref) {
  for (const auto& row : ref["rows"]) {
    const std::string text = row["text"];
    const bool pair = row.contains("pair");
    const std::string second = pair ? row["pair"].get<std::string>() : "";
    SCOPED_TRACE("text '" + text + "'" + (pair ? " + '" + second + "'" : ""));
    TokenEncoding e;
    const Status s = tok.Encode(text, pair ? std::optional<std::string_view>(second) : std::nullopt, 0, e);
    ASSERT_TRUE(s.ok()) << s.ToString();
    EXPECT_EQ(e.ids, row["ids"].get<std::vector<int32_t>>());
    EXPECT_EQ(e.type_ids, row["type_ids"].get<std::vector<int32_t>>());
    std::vector<std::vector<int64_t>> offsets;
    for (std::size_t i = 0; i < e.size(); ++i) {
      const std::string& src = e.sequence[i] == 1 ? second : text;
      offsets.push_back({CharIndex(src, e.offsets[i].first), CharIndex(src, e.offsets[i].second)});
    }
    EXPECT_EQ(offsets, row["offsets"].get<std::vector<std::vector<int64_t>>>());
  }
}

// Decode with and without special tokens, and every prefix of a text's ids (cuts inside a
// character decode to U+FFFD as tokenizers' decoders make them), exactly.
void ExpectDecodesLike(const HfTokenizer& tok, const nlohmann::json& ref) {
  int prefixes = 0;
  for (const auto& row : ref["rows"]) {
    SCOPED_TRACE("text '" + row["text"].get<std::string>() + "'");
    const std::vector<int32_t> ids = row["ids"].get<std::vector<int32_t>>();
    EXPECT_EQ(tok.Decode(ids, /*skip_special=*/false), row["decoded"].get<std::string>());
    EXPECT_EQ(tok.Decode(ids, /*skip_special=*/true), row["decoded_skip"].get<std::string>());
    if (!row.contains("prefixes")) continue;
    for (std::size_t k = 1; k <= ids.size(); ++k, ++prefixes) {
      EXPECT_EQ(tok.Decode(std::span<const int32_t>(ids.data(), k), true), row["prefixes"][k - 1].get<std::string>())
          << "prefix of " << k << " ids";
    }
  }
  EXPECT_GT(prefixes, 0);
}

class HfTokenizerFamilyTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    ref_ = HfReference(GetParam() + "-tokenizer");
    ASSERT_TRUE(ref_.is_object()) << "missing reference for " << GetParam();
    auto tok = HfTokenizer::Load(HfDir() + "/" + ref_["tokenizer"].get<std::string>());
    ASSERT_TRUE(tok.ok()) << tok.status().ToString();
    tok_ = std::move(*tok);
    ASSERT_GE(ref_["rows"].size(), 20u);
  }
  nlohmann::json ref_;
  std::unique_ptr<HfTokenizer> tok_;
};

TEST_P(HfTokenizerFamilyTest, EncodesLikeHuggingFaceTokenizers) { ExpectEncodesLike(*tok_, ref_); }
TEST_P(HfTokenizerFamilyTest, DecodesLikeHuggingFaceTokenizers) { ExpectDecodesLike(*tok_, ref_); }

INSTANTIATE_TEST_SUITE_P(Files, HfTokenizerFamilyTest,
                         ::testing::Values("unigram-xlmr", "unigram-bytes", "bpe-llama2", "bpe-gemma", "bpe-metaspace",
                                           "bpe-bytelevel-ignore-merges", "bpe-llama3-split"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n) c = c == '-' ? '_' : c;
                           return n;
                         });

// XLM-R's own normalizer: sentencepiece's full nmt_nfkc charsmap (240 KB, so not committed;
// `scripts/hf_tokenizer_references.py --nmt-nfkc DIR` writes it and its reference, and
// DFW_HF_NMT_NFKC_DIR=DIR runs this).
TEST(HfTokenizerFamilies, MatchesTheFullNmtNfkcCharsmap) {
  const char* dir = std::getenv("DFW_HF_NMT_NFKC_DIR");
  if (dir == nullptr) GTEST_SKIP() << "DFW_HF_NMT_NFKC_DIR is not set";
  const nlohmann::json ref = nlohmann::json::parse(testing::ReadFile(std::string(dir) + "/references/unigram-nmt-tokenizer.json"), nullptr, false);
  ASSERT_TRUE(ref.is_object());
  auto tok = HfTokenizer::Load(std::string(dir) + "/" + ref["tokenizer"].get<std::string>());
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  ExpectEncodesLike(**tok, ref);
  ExpectDecodesLike(**tok, ref);
}

TEST(HfTokenizerFamilies, ReportsTheirModelType) {
  auto uni = HfTokenizer::Load(HfDir() + "/tokenizers/unigram-xlmr.json");
  ASSERT_TRUE(uni.ok()) << uni.status().ToString();
  EXPECT_EQ((*uni)->model_type(), "Unigram");
  EXPECT_EQ((*uni)->IdToToken(3), "<unk>");
}

// A Unigram model without unk_id cannot encode a character none of its pieces covers: tokenizers
// refuses the text, and so does Encode.
TEST(HfTokenizerFamilies, UnigramWithoutUnkRefusesUnknownCharacters) {
  auto tok = HfTokenizer::Parse(R"({"model": {"type": "Unigram", "unk_id": null, "vocab": [["a", -1.0], ["b", -2.0]]}})", "u.json");
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  TokenEncoding e;
  ASSERT_TRUE((*tok)->Encode("ab", std::nullopt, 0, e).ok());
  EXPECT_EQ(e.ids, (std::vector<int32_t>{0, 1}));
  const Status s = (*tok)->Encode("axb", std::nullopt, 0, e);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("no unk_id"));
}

// Viterbi picks the best total score, fuses adjacent unknowns into one unk and, with byte_fallback,
// spells an unknown piece as its bytes (each with the piece's offsets).
TEST(HfTokenizerFamilies, UnigramScoresFusesUnknownsAndFallsBackToBytes) {
  const std::string vocab = R"([["<unk>", 0.0], ["a", -1.0], ["b", -1.0], ["ab", -1.5], ["abc", -9.0], ["c", -1.0],
                                ["<0xC3>", -5.0], ["<0xA9>", -5.0]])";
  auto plain = HfTokenizer::Parse(R"({"model": {"type": "Unigram", "unk_id": 0, "vocab": )" + vocab + "}}", "u.json");
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  TokenEncoding e;
  ASSERT_TRUE((*plain)->Encode("abcxyab", std::nullopt, 0, e).ok());
  EXPECT_EQ(e.ids, (std::vector<int32_t>{3, 5, 0, 3}));  // "ab" (-1.5) + "c" beats "abc" (-9); "xy" fused
  EXPECT_EQ(e.offsets[2], (std::pair<uint32_t, uint32_t>{3, 5}));
  auto bytes = HfTokenizer::Parse(R"({"model": {"type": "Unigram", "unk_id": 0, "byte_fallback": true, "vocab": )" + vocab + "}}", "u.json");
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  ASSERT_TRUE((*bytes)->Encode("a\xC3\xA9", std::nullopt, 0, e).ok());
  EXPECT_EQ(e.ids, (std::vector<int32_t>{1, 6, 7}));
  EXPECT_EQ(e.offsets[1], (std::pair<uint32_t, uint32_t>{1, 3}));
  EXPECT_EQ(e.offsets[2], (std::pair<uint32_t, uint32_t>{1, 3}));
}

// An unknown character costs min_score - 10: here that makes "qa" (-18) beat unk "q" + "a"
// (-20 - 10 + 5), which a smaller penalty would not.
TEST(HfTokenizerFamilies, UnigramChargesTheUnknownPenalty) {
  auto tok = HfTokenizer::Parse(
      R"({"model": {"type": "Unigram", "unk_id": 0, "vocab": [["<unk>", 0.0], ["a", 5.0], ["zz", -20.0], ["qa", -18.0]]}})", "u.json");
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  TokenEncoding e;
  ASSERT_TRUE((*tok)->Encode("qa", std::nullopt, 0, e).ok());
  EXPECT_EQ(e.ids, (std::vector<int32_t>{3}));
}

// BPE without byte tokens: unknown characters become unk, one per character or (fuse_unk) one per
// run, with the run's offsets.
TEST(HfTokenizerFamilies, BpeFusesUnknownCharactersWhenAsked) {
  const std::string model = R"({"model": {"type": "BPE", "unk_token": "<unk>", "vocab": {"<unk>": 0, "a": 1}, "merges": [], "fuse_unk": )";
  auto fused = HfTokenizer::Parse(model + "true}}", "b.json");
  auto apart = HfTokenizer::Parse(model + "false}}", "b.json");
  ASSERT_TRUE(fused.ok() && apart.ok());
  TokenEncoding e;
  ASSERT_TRUE((*fused)->Encode("xya", std::nullopt, 0, e).ok());
  EXPECT_EQ(e.ids, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(e.offsets[0], (std::pair<uint32_t, uint32_t>{0, 2}));
  ASSERT_TRUE((*apart)->Encode("xya", std::nullopt, 0, e).ok());
  EXPECT_EQ(e.ids, (std::vector<int32_t>{0, 0, 1}));
}

// Metaspace with prepend_scheme "never": no replacement character before the first word, and the
// decoder keeps the first token's (where "always" drops it).
TEST(HfTokenizerFamilies, MetaspaceNeverPrependsNorStrips) {
  auto make = [](const char* scheme) {
    const std::string ms = std::string(R"({"type": "Metaspace", "replacement": "▁", "prepend_scheme": ")") + scheme + R"(", "split": true})";
    return HfTokenizer::Parse(R"({"model": {"type": "Unigram", "unk_id": 0, "vocab": [["<unk>", 0.0], ["a", -1.0], ["▁a", -1.0], ["▁b", -1.0]]},
        "pre_tokenizer": )" + ms + R"(, "decoder": )" + ms + "}", "m.json");
  };
  auto never = make("never");
  auto always = make("always");
  ASSERT_TRUE(never.ok() && always.ok());
  TokenEncoding e;
  ASSERT_TRUE((*never)->Encode("a b", std::nullopt, 0, e).ok());
  EXPECT_EQ(e.ids, (std::vector<int32_t>{1, 3}));
  EXPECT_EQ((*never)->Decode(std::vector<int32_t>{2, 3}, false), " a b");
  ASSERT_TRUE((*always)->Encode("a b", std::nullopt, 0, e).ok());
  EXPECT_EQ(e.ids, (std::vector<int32_t>{2, 3}));
  EXPECT_EQ((*always)->Decode(std::vector<int32_t>{2, 3}, false), "a b");
}

// ByteFallback decoding: a valid run of byte tokens is its text; a run that is not valid UTF-8 is
// one U+FFFD per byte token, even where part of it would decode.
TEST(HfTokenizerFamilies, ByteFallbackDecodesInvalidRunsToOneReplacementPerByte) {
  auto tok = HfTokenizer::Parse(R"({"model": {"type": "BPE", "vocab": {"<0xE2>": 0, "<0x82>": 1, "<0xAC>": 2, "x": 3, "<0x41>": 4},
      "merges": []}, "decoder": {"type": "Sequence", "decoders": [{"type": "ByteFallback"}, {"type": "Fuse"}]}})", "b.json");
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  EXPECT_EQ((*tok)->Decode(std::vector<int32_t>{0, 1, 2, 3}, false), "\xE2\x82\xAC" "x");
  EXPECT_EQ((*tok)->Decode(std::vector<int32_t>{4, 0, 1}, false), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ((*tok)->Decode(std::vector<int32_t>{0, 1, 3, 4}, false), "\xEF\xBF\xBD\xEF\xBF\xBD" "xA");
}

// An id outside the vocabulary is left out, as tokenizers leaves it out: it does not become an
// empty first token (which would make Metaspace keep the next token's leading space).
TEST(HfTokenizerFamilies, DecodeLeavesOutUnknownIds) {
  auto tok = HfTokenizer::Load(HfDir() + "/tokenizers/unigram-xlmr.json");
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  TokenEncoding e;
  ASSERT_TRUE((*tok)->Encode("the dog", std::nullopt, 0, e).ok());
  std::vector<int32_t> ids(e.ids.begin() + 1, e.ids.end() - 1);  // without <s> and </s>
  ids.insert(ids.begin(), 1 << 20);
  EXPECT_EQ((*tok)->Decode(ids, true), "the dog");
}

// ByteLevel decoding ends in from_utf8_lossy: one U+FFFD per maximal invalid subpart.
TEST(HfTokenizerFamilies, ByteLevelDecodesLikeFromUtf8Lossy) {
  auto tok = HfTokenizer::Load(HfDir() + "/tokenizers/bpe-bytelevel-ignore-merges.json");
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  // GPT-2 characters of the bytes E2 82 (a cut euro sign), F0 (a lone lead byte), 41.
  std::vector<int32_t> ids;
  for (const char* t : {"\xC3\xA2", "\xC4\xA4", "\xC3\xB0", "A"}) {
    auto id = (*tok)->TokenToId(t);
    ASSERT_TRUE(id.has_value()) << t;
    ids.push_back(*id);
  }
  EXPECT_EQ((*tok)->Decode(ids, false), "\xEF\xBF\xBD\xEF\xBF\xBD" "A");
}

// NFC composes and NFKC folds compatibility forms; a composed character's offsets are those of its
// base letter (the mark it absorbed is removed), as tokenizers aligns them.
TEST(HfTokenizerFamilies, NfcAndNfkcNormalizeWithOffsets) {
  const std::string model = R"("model": {"type": "Unigram", "unk_id": 0, "vocab": [["<unk>", 0.0], ["\u00e9", -1.0], ["fi", -1.0], ["e", -1.0]]})";
  auto nfc = HfTokenizer::Parse("{" + model + R"(, "normalizer": {"type": "NFC"}})", "n.json");
  auto nfkc = HfTokenizer::Parse("{" + model + R"(, "normalizer": {"type": "NFKC"}})", "n.json");
  ASSERT_TRUE(nfc.ok() && nfkc.ok());
  TokenEncoding e;
  ASSERT_TRUE((*nfc)->Encode("e\xCC\x81", std::nullopt, 0, e).ok());  // e + U+0301
  EXPECT_EQ(e.ids, (std::vector<int32_t>{1}));
  EXPECT_EQ(e.offsets[0], (std::pair<uint32_t, uint32_t>{0, 1}));
  ASSERT_TRUE((*nfc)->Encode("\xEF\xAC\x81", std::nullopt, 0, e).ok());  // U+FB01 stays under NFC
  EXPECT_EQ(e.ids, (std::vector<int32_t>{0}));
  ASSERT_TRUE((*nfkc)->Encode("\xEF\xAC\x81", std::nullopt, 0, e).ok());
  EXPECT_EQ(e.ids, (std::vector<int32_t>{2}));
  EXPECT_EQ(e.offsets[0], (std::pair<uint32_t, uint32_t>{0, 3}));
}

struct FamilyBadFile {
  const char* name;
  std::string json;
  std::string error;
};
void PrintTo(const FamilyBadFile& c, std::ostream* os) { *os << c.name; }

class HfTokenizerFamilyBadFileTest : public ::testing::TestWithParam<FamilyBadFile> {};

TEST_P(HfTokenizerFamilyBadFileTest, IsRefusedSayingWhy) {
  auto tok = HfTokenizer::Parse(GetParam().json, "tok.json");
  ASSERT_FALSE(tok.ok());
  EXPECT_EQ(tok.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(tok.status().message(), HasSubstr(GetParam().error));
}

const std::string kUnigram = R"("model": {"type": "Unigram", "unk_id": 0, "vocab": [["<unk>", 0.0], ["a", -1.0]]})";
std::string WithNormalizer(const std::string& n) { return "{" + kUnigram + R"(, "normalizer": )" + n + "}"; }

INSTANTIATE_TEST_SUITE_P(
    Table, HfTokenizerFamilyBadFileTest,
    ::testing::Values(
        FamilyBadFile{"UnigramVocabNotPairs", R"({"model": {"type": "Unigram", "vocab": [["a", -1.0], "b"]}})",
                "Unigram model.vocab entry 1 (\"b\") is not a [piece, score] pair"},
        FamilyBadFile{"UnigramVocabNotList", R"({"model": {"type": "Unigram", "vocab": {"a": 0}}})", "must be a list of [piece, score] pairs"},
        FamilyBadFile{"UnigramScoreNotNumber", R"({"model": {"type": "Unigram", "vocab": [["a", "x"]]}})", "is not a [piece, score] pair"},
        FamilyBadFile{"UnigramUnkOutOfRange", R"({"model": {"type": "Unigram", "unk_id": 2, "vocab": [["a", -1.0]]}})",
                "unk_id 2 is not an id of its 1-piece vocabulary"},
        FamilyBadFile{"CharsmapNotBase64", WithNormalizer(R"({"type": "Precompiled", "precompiled_charsmap": "@@@@"})"), "is not base64"},
        FamilyBadFile{"CharsmapMissing", WithNormalizer(R"({"type": "Precompiled", "precompiled_charsmap": null})"), "must be a base64 string"},
        FamilyBadFile{"CharsmapTooShort", WithNormalizer(R"({"type": "Precompiled", "precompiled_charsmap": "AAA="})"), "less than its 4-byte header"},
        // trie size 0x100 bytes, but only 4 bytes follow
        FamilyBadFile{"CharsmapTrieTooLarge", WithNormalizer(R"({"type": "Precompiled", "precompiled_charsmap": "AAEAAAAAAAA="})"),
                "trie size 256 is not a multiple of 4 within its 4 bytes"},
        // empty trie, then the byte 0xFF
        FamilyBadFile{"CharsmapStringsNotUtf8", WithNormalizer(R"({"type": "Precompiled", "precompiled_charsmap": "AAAAAP8="})"),
                "normalized strings are not UTF-8"},
        FamilyBadFile{"RegexReplace", WithNormalizer(R"({"type": "Replace", "pattern": {"Regex": "\\s+"}, "content": " "})"),
                "normalizer Replace with pattern {\"Regex\":\"\\\\s+\"} is not supported"},
        FamilyBadFile{"UnknownDecoder", "{" + kUnigram + R"(, "decoder": {"type": "CTC"}})",
                "decoder \"CTC\" is not supported; supported: WordPiece, ByteLevel, Metaspace, Replace (string pattern), ByteFallback, Fuse, Strip, Sequence"},
        FamilyBadFile{"UnknownDecoderInSequence", "{" + kUnigram + R"(, "decoder": {"type": "Sequence", "decoders": [{"type": "Fuse"}, {"type": "BPEDecoder"}]}})",
                "decoder \"BPEDecoder\" is not supported"},
        FamilyBadFile{"BadStripDecoder", "{" + kUnigram + R"(, "decoder": {"type": "Strip", "content": "ab", "start": 1, "stop": 0}})",
                "decoder Strip needs one \"content\" character"},
        FamilyBadFile{"UnknownMetaspaceScheme", "{" + kUnigram + R"(, "decoder": {"type": "Metaspace", "prepend_scheme": "sometimes"}})",
                "prepend_scheme \"sometimes\" is not supported; supported: always, first, never"},
        FamilyBadFile{"BpeDropoutNotNumber", R"({"model": {"type": "BPE", "dropout": "x", "vocab": {}, "merges": []}})", "supported: null"},
        FamilyBadFile{"UnknownModel", R"({"model": {"type": "WordLevel", "vocab": {}}})", "supported: WordPiece, BPE, Unigram"}));

}  // namespace
}  // namespace dfw
