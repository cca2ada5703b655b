// BERT WordPiece tokenizer: the text → token-id half of a sentence-embedding model.
//
// A vocab.txt (and tokenizer_config.json) is a builder of the tokenizer.json pipeline
// (dfw/tokenizers/tokenizer.h) that transformers' BertTokenizerFast declares for it, so the two
// paths run the same code:
//   1. BertNormalizer: drop NUL, U+FFFD and control characters; whitespace → space; surround CJK
//      ideographs with spaces; strip accents (NFD, drop Mn) and lower-case when `do_lower_case`;
//      BertPreTokenizer: split on whitespace and around every punctuation character (ASCII !-/
//      :-@ [-` {-~ and Unicode P*);
//   2. WordPiece: greedy longest match of each word against the vocabulary, continuation pieces
//      prefixed "##"; a word with no full match, or longer than `max_input_chars_per_word` code
//      points, becomes [UNK];
//   3. BertProcessing: [CLS] pieces… [SEP], pieces truncated so the whole is at most
//      `max_seq_length`.
// It follows the fast (Rust) tokenizer that sentence-transformers loads: accents are stripped
// before lower-casing, character by character (no Greek final-sigma rule, no NFC pass). Known
// differences: special-token strings typed inside the text ("[SEP]") are tokenized as text, not
// as special tokens (the built pipeline declares no added tokens); characters assigned after
// utf8proc's Unicode version may be classed differently.
//
// Threading: a WordPieceTokenizer is immutable after Make/Load; all methods are const and may be
// called concurrently.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dfw/common/status.h"
#include "dfw/tokenizers/tokenizer.h"

namespace dfw {

struct TokenizerOptions {
  // Lower-case and strip accents (uncased models). Load() takes it from tokenizer_config.json's
  // "do_lower_case" when that file has it.
  bool do_lower_case = true;
  // Strip accents (NFD, drop nonspacing marks): tokenizer_config.json's "strip_accents";
  // unset (null there) means "same as do_lower_case", as in Hugging Face.
  std::optional<bool> strip_accents;
  // Split CJK ideographs into one token each ("tokenize_chinese_chars").
  bool tokenize_chinese_chars = true;
  // Words longer than this many code points become [UNK] (BERT's default: 100).
  int max_input_chars_per_word = 100;
};

// Step 1 alone: the words of the normalizer and pre-tokenizer (UTF-8). Invalid UTF-8 →
// InvalidArgument naming the byte offset. Exposed for tests and tools.
Result<std::vector<std::string>> BasicTokenize(std::string_view text, const TokenizerOptions& options);

class WordPieceTokenizer {
 public:
  // `vocab` lists the tokens in id order (vocab.txt line order). It must contain [CLS], [SEP],
  // [UNK] and [PAD] (a missing one → InvalidArgument); a repeated token keeps its last id, as in
  // Hugging Face.
  static Result<WordPieceTokenizer> Make(std::vector<std::string> vocab, TokenizerOptions options);
  // Reads DIR/vocab.txt and, when present, DIR/tokenizer_config.json (do_lower_case,
  // strip_accents, tokenize_chinese_chars override `defaults`).
  static Result<WordPieceTokenizer> Load(const std::string& model_dir, TokenizerOptions defaults = {});

  // Word pieces (strings) of `text`, without [CLS]/[SEP]; for tests and tools.
  Result<std::vector<std::string>> Tokenize(std::string_view text) const;

  // Replaces `ids` with [CLS] pieces… [SEP], truncated to at most `max_seq_length` ids
  // (max_seq_length >= 2). `ids` keeps its capacity so callers can reuse it across rows.
  // Invalid UTF-8 → InvalidArgument (a per-row error: the row is dead-lettered, the batch goes on).
  Status Encode(std::string_view text, int max_seq_length, std::vector<int32_t>& ids) const;

  int32_t cls_id() const { return cls_id_; }
  int32_t sep_id() const { return sep_id_; }
  int32_t pad_id() const { return pad_id_; }
  int32_t unk_id() const { return unk_id_; }
  std::size_t vocab_size() const { return tokenizer_->vocab_size(); }
  const std::string& token(int32_t id) const { return tokenizer_->IdToToken(id); }
  const TokenizerOptions& options() const { return options_; }

 private:
  WordPieceTokenizer() = default;

  TokenizerOptions options_;
  std::shared_ptr<const HfTokenizer> tokenizer_;  // shared: copies of a tokenizer are cheap
  int32_t cls_id_ = -1, sep_id_ = -1, pad_id_ = -1, unk_id_ = -1;
};

}  // namespace dfw
