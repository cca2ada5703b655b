// The stages of a tokenizer.json pipeline (dfw/tokenizers/tokenizer.h), each a small class chosen by
// the file, and what they share. A stage's file depends on this header, utf8.h and unicode_class.h
// only, never on another stage's file.
// Text travels as NormalizedText: code points, each with the byte range of the input character it
// came from, so offsets survive every normalisation and pre-tokenisation step.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "dfw/common/status.h"
#include "dfw/tokenizers/tokenizer.h"
#include "dfw/tokenizers/utf8.h"

namespace dfw::tokenizers {

struct NChar {
  int32_t cp;      // the (normalised) code point
  uint32_t begin;  // byte range in the input of the character it came from
  uint32_t end;
};
using NormalizedText = std::vector<NChar>;

// UTF-8 of a run of NChars (utf8.cc).
std::string ToUtf8(const NChar* chars, std::size_t n);
// Appends the characters of UTF-8 `text` to `out`, their byte ranges offset by `base` (utf8.cc).
// Invalid UTF-8 is InvalidArgument naming the offset of the bad byte within `text`.
Status DecodeUtf8(std::string_view text, uint32_t base, NormalizedText& out);

// A model's output piece: a vocabulary id and the NChar range [first, last) of its word it covers.
struct Piece {
  int32_t id;
  uint32_t first;
  uint32_t last;
};

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  virtual void Normalize(NormalizedText& text) const = 0;
};

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Splits each word of `words` further (or transforms its characters); starts as one word.
  virtual void Split(std::vector<NormalizedText>& words) const = 0;
};

class TokenModel {
 public:
  virtual ~TokenModel() = default;
  // Appends the pieces of one pre-tokenized word (non-empty). An error is a word the model cannot
  // encode (a Unigram model without unk_id meeting an unknown character, as tokenizers refuses it).
  virtual Status Tokenize(const NormalizedText& word, std::vector<Piece>& out) const = 0;
  virtual const std::string& type() const = 0;
  virtual const std::string& continuing_subword_prefix() const {
    static const std::string kNone;
    return kNone;
  }
};

// The vocabulary shared by the model, added tokens and the post-processor (tokenizer_parts.cc).
// The largest token id a tokenizer file may use (vocabularies are far smaller; an id past it is
// refused where it is read, never narrowed).
inline constexpr int64_t kMaxTokenId = int64_t{1} << 24;

struct Vocabulary {
  struct Hash {  // lets Find look up a string_view without copying it
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::vector<std::string> tokens;                                         // by id
  std::unordered_map<std::string, int32_t, Hash, std::equal_to<>> index;  // token → id
  void Add(const std::string& token, int32_t id);     // grows `tokens` as needed
  int32_t Find(std::string_view token) const;         // -1 when absent
};

// Decoded-string stage (tokenizers' Decoder): token strings → text pieces, joined with "".
class Decoder {
 public:
  virtual ~Decoder() = default;
  virtual void Decode(std::vector<std::string>& tokens) const = 0;
};

// One sequence of the encoding before post-processing.
struct SeqTokens {
  std::vector<int32_t> ids;
  std::vector<std::pair<uint32_t, uint32_t>> offsets;
  std::vector<int32_t> word;
  std::vector<uint8_t> special;  // 1: a special added token the text spells
};

class PostProcessor {
 public:
  virtual ~PostProcessor() = default;
  // Special tokens it adds for a single sequence (pair = false) or a pair.
  virtual int AddedTokens(bool pair) const = 0;
  // Frames `a` (and `b` when non-null) into `out` (cleared first).
  virtual void Process(const SeqTokens& a, const SeqTokens* b, TokenEncoding& out) const = 0;
};

// One output character of a normalisation step and tokenizers' "change" for it: 0 replaces the
// next input character, -n replaces it and removes the n after it, +1 is inserted (and takes the
// alignment of the input character before it).
struct CharChange {
  int32_t cp;
  int change;
};
// Rewrites `text` as tokenizers' NormalizedString::transform does: input characters are consumed
// in order by the changes, so each output character gets the original range its change names
// (tokenizer_parts.cc).
void TransformChars(NormalizedText& text, const std::vector<CharChange>& changes);

// Builders: `j` is the component's JSON object (never null here); errors name `origin`, the
// component and the supported types.
Result<std::unique_ptr<Normalizer>> MakeNormalizer(const nlohmann::json& j, const std::string& origin);
Result<std::unique_ptr<PreTokenizer>> MakePreTokenizer(const nlohmann::json& j, const std::string& origin);
Result<std::unique_ptr<TokenModel>> MakeTokenModel(const nlohmann::json& j, const std::string& origin, Vocabulary& vocab);
Result<std::unique_ptr<PostProcessor>> MakePostProcessor(const nlohmann::json& j, const std::string& origin,
                                                         const Vocabulary& vocab);
// The Precompiled normalizer (SentencePiece's precompiled_charsmap; precompiled.cc).
Result<std::unique_ptr<Normalizer>> MakePrecompiled(const nlohmann::json& j, const std::string& origin);
// The models, one file each under models/; MakeTokenModel (models/model.cc) picks one by type.
Result<std::unique_ptr<TokenModel>> MakeWordPiece(const nlohmann::json& j, const std::string& origin, Vocabulary& vocab);
Result<std::unique_ptr<TokenModel>> MakeBpe(const nlohmann::json& j, const std::string& origin, Vocabulary& vocab);
Result<std::unique_ptr<TokenModel>> MakeUnigram(const nlohmann::json& j, const std::string& origin, Vocabulary& vocab);
// A WordPiece or BPE model's "vocab" object ({token: id}), added to `vocab` (models/model.cc).
Status ReadVocabObject(const nlohmann::json& model, const std::string& origin, Vocabulary& vocab);
// j[key] when it is a string, else `dflt`.
std::string StringOr(const nlohmann::json& j, const char* key, const std::string& dflt);
Result<std::unique_ptr<Decoder>> MakeDecoder(const nlohmann::json& j, const std::string& origin);

// Bytes as tokens (byte_level.cc). GPT-2's byte ↔ printable-character table (ByteLevel
// pre-tokenizer, post-processor and decoder):
int32_t ByteToChar(uint8_t b);
int ByteFromChar(int32_t cp);  // -1 when cp is not in the table
// The byte of a "<0xNN>" token (SentencePiece's byte pieces), -1 for any other token.
int ByteToken(std::string_view token);

// "'origin': <component> type 'X' is not supported; supported: A, B" (tokenizer_parts.cc).
Status Unsupported(const std::string& origin, const std::string& component, const nlohmann::json& type,
                   const std::string& supported);

}  // namespace dfw::tokenizers
