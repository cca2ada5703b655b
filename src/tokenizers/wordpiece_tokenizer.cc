// WordPiece: vocabulary loading, greedy longest-match pieces, [CLS]/[SEP] framing and truncation.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dfw/tokenizers/wordpiece_tokenizer.h"
#include "dfw/tokenizers/utf8.h"

#include "dfw/common/file.h"
#include "dfw/common/json_text.h"

namespace dfw {
namespace {

// Reads an optional bool member; `null` counts as absent.
Status ReadBool(const nlohmann::json& j, const char* key, const std::string& path, std::optional<bool>& out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return Status::OK();
  if (!it->is_boolean()) {
    return InvalidArgument("'" + path + "': \"" + key + "\" must be true, false or null, got " + it->dump());
  }
  out = it->get<bool>();
  return Status::OK();
}

// tokenizer_config.json when there is one (a FIFO, device or folder in its place is an error).
Status ApplyTokenizerConfig(const std::string& path, TokenizerOptions& options) {
  ASSIGN_OR_RETURN(std::optional<std::string> text, ReadFileIfPresent(path, kTokenizerConfigFile));
  if (!text) return Status::OK();
  nlohmann::json j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return InvalidArgument("'" + path + "' is not a JSON object");
  RETURN_IF_ERROR(CheckJsonDepth(j, path));
  std::optional<bool> lower, strip, cjk;
  RETURN_IF_ERROR(ReadBool(j, "do_lower_case", path, lower));
  RETURN_IF_ERROR(ReadBool(j, "strip_accents", path, strip));
  RETURN_IF_ERROR(ReadBool(j, "tokenize_chinese_chars", path, cjk));
  if (lower) options.do_lower_case = *lower;
  if (strip) options.strip_accents = strip;
  if (cjk) options.tokenize_chinese_chars = *cjk;
  return Status::OK();
}

}  // namespace

Result<WordPieceTokenizer> WordPieceTokenizer::Make(std::vector<std::string> vocab, TokenizerOptions options) {
  if (options.max_input_chars_per_word < 1) {
    return InvalidArgument("max_input_chars_per_word must be >= 1, got " +
                           std::to_string(options.max_input_chars_per_word));
  }
  auto v = std::make_shared<Vocab>();
  v->index.reserve(vocab.size());
  for (std::size_t i = 0; i < vocab.size(); ++i) {
    // A repeated token keeps its last id, as Hugging Face's vocab loader does.
    v->index.insert_or_assign(vocab[i], static_cast<int32_t>(i));
  }
  v->tokens = std::move(vocab);
  WordPieceTokenizer t;
  t.options_ = options;
  t.vocab_ = std::move(v);
  std::vector<std::string> missing;
  auto special = [&](const char* name, int32_t& id) {
    id = t.Find(name);
    if (id < 0) missing.emplace_back(name);
  };
  special("[CLS]", t.cls_id_);
  special("[SEP]", t.sep_id_);
  special("[UNK]", t.unk_id_);
  special("[PAD]", t.pad_id_);
  if (!missing.empty()) {
    std::string names;
    for (const auto& m : missing) names += (names.empty() ? "" : ", ") + m;
    return InvalidArgument("vocabulary lacks the special token(s) " + names + " (" +
                           std::to_string(t.vocab_size()) +
                           " tokens); a BERT vocab.txt needs [CLS], [SEP], [UNK] and [PAD]");
  }
  return t;
}

Result<WordPieceTokenizer> WordPieceTokenizer::Load(const std::string& model_dir, TokenizerOptions defaults) {
  const std::string vocab_path = model_dir + "/vocab.txt";
  ASSIGN_OR_RETURN(std::string text, ReadWholeFile(vocab_path, kVocabFile));
  std::vector<std::string> vocab;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::size_t stop = end;
    if (stop > start && text[stop - 1] == '\r') --stop;  // CRLF files
    vocab.emplace_back(text, start, stop - start);
    start = end + 1;
  }
  const std::string config_path = model_dir + "/tokenizer_config.json";
  RETURN_IF_ERROR(ApplyTokenizerConfig(config_path, defaults));
  auto t = Make(std::move(vocab), defaults);
  if (!t.ok()) return t.status().WithContext("'" + vocab_path + "'");
  return t;
}

int32_t WordPieceTokenizer::Find(std::string_view piece) const {
  auto it = vocab_->index.find(piece);
  return it == vocab_->index.end() ? -1 : it->second;
}

void WordPieceTokenizer::AppendWordPieces(std::string_view word, std::string& scratch,
                                          std::vector<int32_t>& ids) const {
  if (utf8::CountCodePoints(word) > static_cast<std::size_t>(options_.max_input_chars_per_word)) {
    ids.push_back(unk_id_);
    return;
  }
  // Pieces end on code-point boundaries (byte offsets), so they never cut a character.
  const std::size_t first_piece = ids.size();
  std::size_t start = 0;
  while (start < word.size()) {
    std::size_t end = word.size();
    int32_t found = -1;
    while (end > start) {
      scratch.assign(start > 0 ? "##" : "");
      scratch.append(word.substr(start, end - start));
      found = Find(scratch);
      if (found >= 0) break;
      do --end;  // back up one whole code point
      while (end > start && utf8::IsContinuation(word[end]));
    }
    if (found < 0) {  // some suffix matches nothing: the whole word is unknown
      ids.resize(first_piece);
      ids.push_back(unk_id_);
      return;
    }
    ids.push_back(found);
    start = end;
  }
}

Result<std::vector<std::string>> WordPieceTokenizer::Tokenize(std::string_view text) const {
  ASSIGN_OR_RETURN(std::vector<std::string> words, BasicTokenize(text, options_));
  std::vector<int32_t> ids;
  std::string scratch;
  for (const auto& w : words) AppendWordPieces(w, scratch, ids);
  std::vector<std::string> pieces;
  pieces.reserve(ids.size());
  for (int32_t id : ids) pieces.push_back(token(id));
  return pieces;
}

Status WordPieceTokenizer::Encode(std::string_view text, int max_seq_length, std::vector<int32_t>& ids) const {
  if (max_seq_length < 2) {
    return InvalidArgument("max_seq_length must be >= 2 ([CLS] and [SEP]), got " + std::to_string(max_seq_length));
  }
  ASSIGN_OR_RETURN(std::vector<std::string> words, BasicTokenize(text, options_));
  ids.clear();
  ids.push_back(cls_id_);
  const std::size_t limit = static_cast<std::size_t>(max_seq_length) - 1;  // room for [SEP]
  std::string scratch;
  for (const auto& w : words) {
    if (ids.size() >= limit) break;  // the rest would be truncated anyway
    AppendWordPieces(w, scratch, ids);
  }
  if (ids.size() > limit) ids.resize(limit);
  ids.push_back(sep_id_);
  return Status::OK();
}

}  // namespace dfw
