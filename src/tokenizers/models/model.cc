// tokenizer.json's "model": its type picks the model (wordpiece.cc, bpe.cc, unigram.cc), each of
// which turns one pre-tokenized word into vocabulary pieces; and what WordPiece and BPE both read.
#include <string>

#include "dfw/common/json_text.h"
#include "tokenizers/tokenizer_parts.h"

namespace dfw::tokenizers {

std::string StringOr(const nlohmann::json& j, const char* key, const std::string& dflt) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : dflt;
}

Status ReadVocabObject(const nlohmann::json& j, const std::string& origin, Vocabulary& vocab) {
  auto it = j.find("vocab");
  if (it == j.end() || !it->is_object()) return InvalidArgument("'" + origin + "': model.vocab must be an object {token: id}");
  for (const auto& [token, id] : it->items()) {
    ASSIGN_OR_RETURN(int64_t v, JsonIntIn(id, 0, kMaxTokenId, "'" + origin + "': model.vocab id of '" + token + "'"));
    vocab.Add(token, static_cast<int32_t>(v));
  }
  return Status::OK();
}

Result<std::unique_ptr<TokenModel>> MakeTokenModel(const nlohmann::json& j, const std::string& origin, Vocabulary& vocab) {
  const nlohmann::json type = j.value("type", nlohmann::json());
  const std::string t = type.is_string() ? type.get<std::string>() : (j.contains("merges") ? "BPE" : "");
  if (t == "WordPiece") return MakeWordPiece(j, origin, vocab);
  if (t == "BPE") return MakeBpe(j, origin, vocab);
  if (t == "Unigram") return MakeUnigram(j, origin, vocab);
  return Unsupported(origin, "model", type, "WordPiece, BPE, Unigram");
}

}  // namespace dfw::tokenizers
