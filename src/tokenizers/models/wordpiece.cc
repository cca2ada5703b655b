// The WordPiece model (BERT's vocabularies): greedy longest match of each word against the
// vocabulary, continuation pieces prefixed (by "##"); a word with no full match, or longer than
// max_input_chars_per_word characters, is the unk token.
#include <string>
#include <vector>

#include "tokenizers/tokenizer_parts.h"

namespace dfw::tokenizers {
namespace {

class WordPiece final : public TokenModel {
 public:
  WordPiece(const Vocabulary& v, int32_t unk, std::string prefix, int max_chars)
      : v_(v), unk_(unk), prefix_(std::move(prefix)), max_chars_(max_chars) {}

  Status Tokenize(const NormalizedText& word, std::vector<Piece>& out) const override {
    const uint32_t n = static_cast<uint32_t>(word.size());
    if (static_cast<int>(n) > max_chars_) {
      out.push_back({unk_, 0, n});
      return Status::OK();
    }
    // Byte offset of each character in the word's UTF-8, so a candidate is a substring.
    utf8_.clear();
    starts_.assign(n + 1, 0);
    for (uint32_t i = 0; i < n; ++i) {
      starts_[i] = utf8_.size();
      utf8::Append(utf8_, word[i].cp);
    }
    starts_[n] = utf8_.size();
    const std::size_t first_piece = out.size();
    for (uint32_t start = 0; start < n;) {
      int32_t found = -1;
      uint32_t end = n;
      for (; end > start; --end) {
        candidate_.assign(start > 0 ? prefix_ : "");
        candidate_.append(utf8_, starts_[start], starts_[end] - starts_[start]);
        found = v_.Find(candidate_);
        if (found >= 0) break;
      }
      if (found < 0) {  // a suffix matches nothing: the whole word is unknown
        out.resize(first_piece);
        out.push_back({unk_, 0, n});
        return Status::OK();
      }
      out.push_back({found, start, end});
      start = end;
    }
    return Status::OK();
  }
  const std::string& type() const override {
    static const std::string kType = "WordPiece";
    return kType;
  }
  const std::string& continuing_subword_prefix() const override { return prefix_; }

 private:
  const Vocabulary& v_;
  int32_t unk_;
  std::string prefix_;
  int max_chars_;
  // Scratch (a tokenizer is shared across threads: thread_local would do; mutable members are
  // not safe, so each call uses locals through these thread-local buffers).
  static thread_local std::string utf8_, candidate_;
  static thread_local std::vector<std::size_t> starts_;
};
thread_local std::string WordPiece::utf8_, WordPiece::candidate_;
thread_local std::vector<std::size_t> WordPiece::starts_;

}  // namespace

Result<std::unique_ptr<TokenModel>> MakeWordPiece(const nlohmann::json& j, const std::string& origin, Vocabulary& vocab) {
  RETURN_IF_ERROR(ReadVocabObject(j, origin, vocab));
  const std::string unk = StringOr(j, "unk_token", "[UNK]");
  const int32_t unk_id = vocab.Find(unk);
  if (unk_id < 0) return InvalidArgument("'" + origin + "': WordPiece unk_token '" + unk + "' is not in the vocabulary");
  const int max_chars = j.value("max_input_chars_per_word", 100);
  return std::unique_ptr<TokenModel>(
      std::make_unique<WordPiece>(vocab, unk_id, StringOr(j, "continuing_subword_prefix", "##"), max_chars));
}

}  // namespace dfw::tokenizers
