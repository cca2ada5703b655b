// HfTokenizer: a tokenizer built from a Hugging Face `tokenizer.json`, as the `tokenizers` library
// builds it: the file declares a pipeline and the tokenizer *is* that pipeline —
//   added tokens split out of the raw text ([MASK], <mask>, …, with their lstrip/rstrip)
//   → normalizer (BertNormalizer, Lowercase, NFD, NFKD, NFC, NFKC, StripAccents, Strip, Replace
//     (a string, or a regex that is a literal or one character repeated), Prepend, Precompiled
//     (SentencePiece's precompiled_charsmap), Sequence)
//   → pre-tokenizer (BertPreTokenizer, Whitespace, WhitespaceSplit, ByteLevel, Metaspace, Punctuation,
//     Sequence)
//   → model (WordPiece; BPE, byte-level or SentencePiece-style with byte_fallback, fuse_unk,
//     ignore_merges; Unigram, with byte_fallback)
//   → post-processor (TemplateProcessing, BertProcessing, RobertaProcessing, ByteLevel)
//   and for Decode a decoder (WordPiece, ByteLevel, Metaspace, Replace, ByteFallback, Fuse, Strip,
//   Sequence).
// Every token carries the byte offsets of the input it came from, through every normalisation
// (a character a normalizer expanded or changed maps back to the original character).
//
// A component type or option the file declares and this tokenizer does not implement is
// kInvalidArgument at load naming it and listing what is supported: a tokenizer that silently
// does something else would produce plausible but wrong ids.
//
// Threading: immutable after Load/Parse; Encode/Decode are const and may run concurrently.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "dfw/common/status.h"

namespace dfw {

// One encoded input (or pair), after the post-processor.
struct TokenEncoding {
  std::vector<int32_t> ids;
  std::vector<int32_t> type_ids;  // token_type_ids (segment ids) as the post-processor sets them
  // Byte offsets [begin, end) into the text the token came from; (0, 0) for added special tokens.
  std::vector<std::pair<uint32_t, uint32_t>> offsets;
  std::vector<int8_t> sequence;  // 0: first text, 1: second text, -1: a special token the post-processor added
  std::vector<int32_t> word;     // index of the pre-tokenizer word within its sequence; -1 for special tokens
  // tokenizers' special_tokens_mask: 1 for a token the post-processor added and for a special added
  // token the text spells ("<mask>"), 0 for the model's pieces (an <unk> made of a word included).
  std::vector<uint8_t> special;

  void Clear() {
    ids.clear();
    type_ids.clear();
    offsets.clear();
    sequence.clear();
    word.clear();
    special.clear();
  }
  std::size_t size() const { return ids.size(); }
};

class HfTokenizer {
 public:
  // Parses tokenizer.json text; `origin` names the file in errors.
  static Result<std::unique_ptr<HfTokenizer>> Parse(std::string_view json_text, const std::string& origin);
  // Reads and parses `path` (a tokenizer.json file).
  static Result<std::unique_ptr<HfTokenizer>> Load(const std::string& path);
  // Builds the tokenizer a parsed tokenizer.json declares (what Parse does once it has parsed;
  // BERT's vocab.txt is turned into such a file, wordpiece_tokenizer.h).
  static Result<std::unique_ptr<HfTokenizer>> FromJson(const nlohmann::json& j, const std::string& origin);
  ~HfTokenizer();

  // Encodes `text` (and `pair` for sequence-pair models, e.g. NLI premise/hypothesis) with the
  // file's post-processor. With `max_length` > 0 the result is truncated to at most that many
  // ids, special tokens kept: the first text's tokens are cut from its end (transformers'
  // "only_first", what the zero-shot pipeline asks for its premise), then the second's.
  // Invalid UTF-8 is kInvalidArgument naming the byte offset; so is a character a Unigram model
  // without unk_id cannot encode (tokenizers refuses such text too).
  Status Encode(std::string_view text, std::optional<std::string_view> pair, int max_length,
                TokenEncoding& out) const;

  // The text of `ids` through the file's decoder (or none: tokens joined by spaces), as tokenizers
  // decodes them; ids that end inside a character (text generation) decode as tokenizers makes
  // them: ByteLevel's bytes through from_utf8_lossy (one U+FFFD per maximal invalid subpart),
  // ByteFallback's byte tokens one U+FFFD each when their run is not valid UTF-8.
  // `skip_special` drops special added tokens. Then transformers'
  // clean_up_tokenization (" ." → "." …) when set_clean_up_tokenization_spaces(true) (not for BPE,
  // as transformers ignores it there).
  std::string Decode(std::span<const int32_t> ids, bool skip_special) const;
  // transformers' convert_tokens_to_string: token strings through the decoder alone.
  std::string TokensToString(std::vector<std::string> tokens) const;

  // The vocabulary token of `id` ("" when out of range), and the id of a token (added ones too).
  const std::string& IdToToken(int32_t id) const;
  std::optional<int32_t> TokenToId(std::string_view token) const;
  bool IsSpecial(int32_t id) const;
  std::size_t vocab_size() const;
  // The model's continuing_subword_prefix ("##" for WordPiece), "" when it has none. transformers'
  // token-classification pipeline uses it to tell sub-words from words.
  const std::string& continuing_subword_prefix() const;
  // The model type: "WordPiece", "BPE" or "Unigram".
  const std::string& model_type() const;

  // transformers' clean_up_tokenization_spaces for Decode (tokenizer_config.json; transformers 5's
  // default, false, until set).
  void set_clean_up_tokenization_spaces(bool on);

  struct Impl;

 private:
  explicit HfTokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace dfw
